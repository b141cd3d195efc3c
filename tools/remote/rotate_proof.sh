#!/usr/bin/env bash
# rotate_proof.sh BIN_DIR OUT_DIR: `tools/remote/proof.sh rotate` with KVBENCH_BIN and OUT_DIR as arguments.
[ $# -eq 2 ] && mkdir -p "$2" || { echo "usage: rotate_proof.sh BIN_DIR OUT_DIR" >&2; exit 3; }
KVBENCH_BIN=$(cd "$1" && pwd) OUT_DIR=$(cd "$2" && pwd) exec bash "$(dirname "${BASH_SOURCE[0]}")/proof.sh" rotate
