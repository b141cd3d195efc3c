#!/usr/bin/env bash
# Shared by run.sh and test.sh: install the Debian packages that are missing (only those), then
# configure and build into build/. Sourced, not executed.
set -euo pipefail

KVBENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KVBENCH_BUILD=${KVBENCH_BUILD:-$KVBENCH_ROOT/build}
KVBENCH_PACKAGES=(cmake ninja-build g++ libcli11-dev libeigen3-dev libyaml-cpp-dev libfccp-dev
                  libgtest-dev nlohmann-json3-dev python3-matplotlib)
# CI only (scripts/test.sh): clang's libFuzzer for scripts/fuzz.sh, and clang-format 14 for the
# format check (repo.clang_format); the main build needs no clang.
KVBENCH_CI_PACKAGES=(clang-14 libclang-rt-14-dev clang-format-14)

# Installs the missing ones of KVBENCH_PACKAGES and of the package names given as arguments.
kvbench_install_missing() {
  local missing=()
  for p in "${KVBENCH_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "kvbench: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "kvbench: the CUDA toolkit is missing (no nvcc on PATH or in /usr/local/cuda/bin);" \
         "install it from NVIDIA, it is not a Debian package here" >&2
    exit 1
  fi
}

kvbench_build() {
  cmake -S "$KVBENCH_ROOT" -B "$KVBENCH_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$KVBENCH_BUILD" --parallel
}
