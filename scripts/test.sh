#!/usr/bin/env bash
# Set up, build, and run the whole test suite through ctest. Without a CUDA device the GPU tests
# are reported as skipped. Non-zero exit on any failure.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
kvbench_install_missing
kvbench_build
cd "$KVBENCH_BUILD"
ctest --output-on-failure --parallel "$(nproc)"
