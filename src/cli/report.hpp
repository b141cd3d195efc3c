// Lines kvbench prints about the device and the run, shared by `run` and `calibrate`.
#pragma once

#include <string>

#include "runtime/calibrate.hpp"

namespace kvbench::cli {

void print_calibration(const CalibrationResult& r);

// This machine's host name, for the sidecar.
std::string host_name();

}  // namespace kvbench::cli
