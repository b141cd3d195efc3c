#!/usr/bin/env bash
# Runs on a host with cuobjdump (the GPU host): which kernels of FILE (an object, library or
# binary built here) issue a global load before their PDL wait. A kernel launched with PDL may
# start while the previous kernel still runs; griddepcontrol.wait (ACQBULK in SASS) is where the
# previous kernel's writes become visible, and a load of the slots, the scales or the inputs ahead
# of it can read stale data. ptxas may move a non-coherent load (ld.global.nc, __ldg) above the
# wait. Prints one line per kernel that has a wait: the loads before it, the kernel's name.
#   tools/remote/pdl_order.sh FILE
# Exit status: 0 if no kernel loads before its wait, 1 if one does or cuobjdump fails, 2 on bad
# usage.
set -uo pipefail
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: tools/remote/pdl_order.sh FILE" >&2; exit 2; }
sass=$(mktemp)
trap 'rm -f "$sass"' EXIT
cuobjdump -sass "$1" >"$sass" || { echo "pdl_order.sh: cuobjdump -sass $1 failed" >&2; exit 1; }
awk '
  function flush() { if (name != "" && waited) { print before "\t" name; if (before > 0) bad++ ; n++ } }
  /Function : / { flush(); name = $NF; waited = 0; before = 0; next }
  /ACQBULK/ { waited = 1 }
  /[^A-Z](LDG|LD)\./ && !waited { before++ }
  END { flush(); printf "%d kernels with a PDL wait, %d load before it\n", n, bad > "/dev/stderr"; exit bad > 0 }
' "$sass" | sort -rn | { command -v c++filt >/dev/null && c++filt || cat; }
