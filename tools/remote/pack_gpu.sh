#!/usr/bin/env bash
# Builds, then packs the binaries a GPU host needs: kvbench, the test binaries and the probes, into
# $KVBENCH_BIN (default dist/bin, git-ignored) and one tarball, dist/kvbench-bin.tar.xz, to copy
# to the host and unpack at the repository root there. They link libstdc++, yaml-cpp and
# GoogleTest statically, so a host without those libraries runs them.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/setup.sh"
kvbench_build
BIN=${KVBENCH_BIN:-dist/bin}
cd "$KVBENCH_ROOT" || exit 1
mkdir -p "$BIN"
cp "$KVBENCH_BUILD"/kvbench "$KVBENCH_BUILD"/libkvbench.so "$KVBENCH_BUILD"/tests/test_{core,reference,gpu,cupti,convert_gpu,planted,planted_gpu} \
  "$KVBENCH_BUILD"/tools/probes/probe_{context,concat_plan,timer_step} \
  "$KVBENCH_BUILD"/examples/plugin/kvbench_example_plugin.so "$BIN/"
strip "$BIN"/* 2>/dev/null || true
tar -cJf dist/kvbench-bin.tar.xz "$BIN"
du -sh "$BIN" dist/kvbench-bin.tar.xz
