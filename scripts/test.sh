#!/usr/bin/env bash
# Set up, build, and run the whole test suite through ctest. Without a CUDA device the GPU tests
# are reported as skipped. Then the CPU tests under ASan + UBSan (scripts/sanitize.sh) and each
# fuzz target for FUZZ_SECONDS (scripts/fuzz.sh, default 60). Non-zero exit on any failure.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
kvbench_install_missing "${KVBENCH_CI_PACKAGES[@]}"
kvbench_build
(cd "$KVBENCH_BUILD" && ctest --output-on-failure --parallel "$(nproc)")
bash "$KVBENCH_ROOT/scripts/sanitize.sh"
bash "$KVBENCH_ROOT/scripts/fuzz.sh"
