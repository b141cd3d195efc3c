#!/usr/bin/env bash
# The CPU tests (test_core, test_reference, test_planted: src/core and the reference, no CUDA)
# built with ASan + UBSan into build-asan/ and run through ctest. This build links the shared
# C++ runtime (KVBENCH_CPU_ONLY): the main build's -static-libstdc++ would hide libstdc++'s
# allocations and calls from the sanitizers' interceptors.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${KVBENCH_ASAN_BUILD:-$root/build-asan}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKVBENCH_CPU_ONLY=ON \
  -DKVBENCH_SANITIZE=ON >/dev/null
cmake --build "$build" --parallel
cd "$build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --output-on-failure --parallel "$(nproc)"
