#!/usr/bin/env bash
# Runs on a host with cuobjdump (the GPU host): the memory-order skeleton of kernels in
# an object or binary built here. For each function whose mangled name contains PATTERN, the
# PDL wait (ACQBULK), global loads and stores and exits in program order, as cuobjdump prints
# them; the whole SASS goes to $OUT_DIR/<file>.sass.xz (OUT_DIR defaults to results/gpu_sass).
#   tools/remote/gpu_sass.sh FILE PATTERN [PATTERN ...]
# Build FILE with the flags of the CMake build, e.g. for the cache write:
#   nvcc -O3 -DNDEBUG -arch=sm_90 --expt-relaxed-constexpr -std=c++17 -I. -Isrc \
#     -c kernels/cache_write/optimized.cu -o dist/obj/cache_write.o
# and copy it to the host. Mangled names: c++filt reads them.
# Exit status: 1 if cuobjdump fails or a pattern matches nothing, 2 on bad usage.
set -uo pipefail
usage() { echo "gpu_sass.sh: $1" >&2; echo "usage: tools/remote/gpu_sass.sh FILE PATTERN [PATTERN ...]" >&2; exit 2; }
[ $# -ge 2 ] || usage "a file and at least one pattern"
file=$1
shift
[ -f "$file" ] || usage "no such file: $file"
OUT_DIR=${OUT_DIR:-results/gpu_sass}
mkdir -p "$OUT_DIR"
sass=$(mktemp)
trap 'rm -f "$sass"' EXIT
cuobjdump -sass "$file" >"$sass" || { echo "gpu_sass.sh: cuobjdump -sass $file failed" >&2; exit 1; }
xz -c "$sass" >"$OUT_DIR/$(basename "$file").sass.xz"
status=0
for pat in "$@"; do
  # Function headers look like "Function : <mangled name>"; print the skeleton of each match.
  awk -v pat="$pat" '
    /Function : / { on = index($0, pat) > 0; if (on) { n++; print "== " $NF } next }
    on && /ACQBULK|LDG|STG|EXIT|BAR/ {
      line = $0; gsub(/ +/, " ", line); sub(/ *\/\* 0x[0-9a-f]+ \*\/ *$/, "", line); print line
    }
    END { exit n == 0 }' "$sass" || { echo "gpu_sass.sh: no function matches $pat" >&2; status=1; }
done
exit $status
