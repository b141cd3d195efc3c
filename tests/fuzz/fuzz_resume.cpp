// Fuzzes `run --resume`'s reader of its own CSV: every input either reads (its rows then matched
// against two case keys) or throws ResultCsvError naming the file and line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/result_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::vector<std::string>> cases = {
      {"concat_and_cast_mha_k", "seed_port", "s", "1", "128", "128", "64", "16", "bf16", "bf16",
       "nhd", "none", "false", "false", "contiguous", "random"},
      {"reshape_and_cache_flash", "optimized", "s", "1", "8", "128", "0", "16", "bf16", "bf16",
       "nhd", "none", "false", "false", "contiguous", "random"}};
  try {
    const kvbench::ResumeRows rows = kvbench::parse_resume_rows(text, "fuzz.csv");
    if (rows.keep_bytes > size) __builtin_trap();  // never cuts past the end
    kvbench::match_resume_rows(rows, cases, "fuzz.csv");
  } catch (const kvbench::ResultCsvError&) {
  }
  return 0;
}
