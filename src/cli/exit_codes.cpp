#include "cli/exit_codes.hpp"

#include <exception>
#include <stdexcept>

#include "runtime/cuda_check.hpp"
#include "runtime/runner.hpp"

namespace kvbench::cli {

Failure current_failure() {
  try {
    throw;
  } catch (const NoDeviceError& e) {
    return {kDevice, e.what()};
  } catch (const CudaError& e) {
    return {kDevice, std::string("CUDA error: ") + e.what()};
  } catch (const std::exception& e) {
    return {kBadInput, e.what()};
  } catch (...) {
    return {kBadInput, "unknown error"};
  }
}

}  // namespace kvbench::cli
