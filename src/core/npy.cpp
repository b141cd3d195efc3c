#include "core/npy.hpp"

#include <fstream>
#include <stdexcept>

namespace kvbench {

std::string npy_descr(DType t) {
  switch (t) {
    case DType::f32:
      return "<f4";
    case DType::f16:
      return "<f2";
    case DType::bf16:
      return "<u2";
    case DType::fp8_e4m3:
    case DType::fp8_e5m2:
      return "|u1";
  }
  return "|u1";
}

std::string npy_header(const std::string& descr, const std::vector<std::int64_t>& shape) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";  // a Python 1-tuple
  std::string dict =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  constexpr std::size_t kPrefix = 10;  // magic (6) + version (2) + header length (2)
  const std::size_t total = (kPrefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - kPrefix - dict.size() - 1, ' ');
  dict += '\n';
  const auto len = static_cast<std::uint16_t>(dict.size());
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(len & 0xFF);
  out += static_cast<char>(len >> 8);
  return out + dict;
}

void write_npy(const std::string& path, const std::string& descr,
               const std::vector<std::int64_t>& shape, const void* data, std::size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  const std::string header = npy_header(descr, shape);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw std::runtime_error(path + ": cannot write .npy file");
}

}  // namespace kvbench
