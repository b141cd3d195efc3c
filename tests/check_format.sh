#!/usr/bin/env bash
# Every tracked C, C++ and CUDA file (but tests/layers/, fixtures whose line numbers the layering
# test names) is formatted as .clang-format says, so diffs are about
# substance. clang-format 14 (Debian's clang-format-14, which scripts/test.sh installs) is the
# reference: other versions format some constructs differently.
# Usage: check_format.sh SOURCE_DIR. Exit 0 clean, 1 naming every file that differs (fix them
# with `clang-format -i FILE`), 77 (reported by ctest as skipped) outside a git checkout.
set -uo pipefail
src=${1:?usage: check_format.sh SOURCE_DIR}
if ! git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "skipped: $src is not a git checkout (the tracked files are git's list)"
  exit 77
fi
fmt=$(command -v clang-format-14 || echo /usr/lib/llvm-14/bin/clang-format)
if [ ! -x "$fmt" ]; then
  echo "clang-format 14 is missing: install Debian's clang-format-14 (scripts/test.sh does)"
  exit 1
fi
cd "$src" || exit 1
bad=0
while IFS= read -r -d '' f; do
  if ! "$fmt" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "$f: not formatted (clang-format -i $f)"
    bad=$((bad + 1))
  fi
done < <(git ls-files -z -- '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' ':!tests/layers/')
[ "$bad" -eq 0 ] && echo "every tracked C/C++/CUDA file is formatted" && exit 0
echo "$bad file(s) differ from .clang-format"
exit 1
