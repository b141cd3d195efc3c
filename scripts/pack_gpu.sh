#!/usr/bin/env bash
# Builds, then copies the binaries the GPU host needs into .carry/bin (git-ignored), for the
# device tool's `carry`. They link libstdc++, yaml-cpp and GoogleTest statically (GPU.md).
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
kvbench_build
mkdir -p "$KVBENCH_ROOT/.carry/bin"
cp "$KVBENCH_BUILD"/kvbench "$KVBENCH_BUILD"/tests/test_{core,reference,gpu,convert_gpu,planted,planted_gpu} "$KVBENCH_ROOT/.carry/bin/"
strip "$KVBENCH_ROOT"/.carry/bin/* 2>/dev/null || true
du -sh "$KVBENCH_ROOT/.carry/bin"
