// UTF-8 at the byte level, for text kvbench did not write (a plugin's messages, a CSV's reasons)
// that it passes on into JSON, XML or a terminal.
#pragma once

#include <cstddef>
#include <string_view>

namespace kvbench {

// The length of the UTF-8 character at s[i] (well formed: no overlong form, surrogate or code
// point past U+10FFFF), or 0 when the bytes there are not one.
inline std::size_t utf8_char(const std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if ((c == 0xE0 && b(1) < 0xA0) || (c == 0xED && b(1) > 0x9F)) return 0;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if ((c == 0xF0 && b(1) < 0x90) || (c == 0xF4 && b(1) > 0x8F)) return 0;
    return 4;
  }
  return 0;
}

}  // namespace kvbench
