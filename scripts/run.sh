#!/usr/bin/env bash
# The main job: set up, build, then run the default sweep (configs/default.yaml) on the GPU and
# write results/default.csv. Extra arguments go to `kvbench run`.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
kvbench_install_missing
kvbench_build
cd "$KVBENCH_ROOT"
exec "$KVBENCH_BUILD/kvbench" run configs/default.yaml -o results/default.csv "$@"
