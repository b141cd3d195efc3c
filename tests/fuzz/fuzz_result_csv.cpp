// Fuzzes the result-CSV reader and the gate behind it: every input either reads or throws
// ResultCsvError; a table that reads is gated against itself (GateError is its refusal).
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "core/gate.hpp"
#include "core/result_csv.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const kvbench::ResultTable t = kvbench::parse_results(text, "fuzz.csv");
    const kvbench::GateReport r = kvbench::run_gate(t, t, {});
    std::ostringstream out;
    kvbench::markdown_report(r, out);
    kvbench::junit_report(r);
    if (r.exit_code() == kvbench::kGateRegression)
      __builtin_trap();  // a file is never slower than itself
  } catch (const kvbench::ResultCsvError&) {
  } catch (const kvbench::GateError&) {
  }
  return 0;
}
