#!/usr/bin/env bash
# One proof on the GPU host, in a checkout of the commit whose binaries tools/remote/pack_gpu.sh
# packed (dist/kvbench-bin.tar.xz, unpacked here when newer than dist/bin):
#   tools/remote/proof.sh RECIPE [ARG...]
# RECIPE names a file of tools/remote/recipes/, whose head says what it runs, its stages and its
# settings; tools/remote/lib.sh holds what they share (docs/dev/remote-gpu.md lists them all).
# Exit status: the recipe's; 2 for an unknown recipe; 3 when it cannot start (GPU_NAME, binaries).
recipes=$(cd "$(dirname "${BASH_SOURCE[0]}")/recipes" && pwd)
if [ $# -eq 0 ] || [ ! -f "$recipes/$1.sh" ]; then
  echo "usage: tools/remote/proof.sh RECIPE [ARG...]; recipes: $(cd "$recipes" && ls -- *.sh | sed 's/\.sh$//' | tr '\n' ' ')" >&2
  exit 2
fi
# shellcheck disable=SC2034  # a recipe's path arguments are relative to CALLER_DIR
recipe=$1 CALLER_DIR=$PWD
shift
# shellcheck source=tools/remote/lib.sh
source "$recipes/../lib.sh"
# shellcheck disable=SC1090
source "$recipes/$recipe.sh"
