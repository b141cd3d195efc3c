#!/usr/bin/env bash
# cmake/check_layers.cmake refuses the fixture tree tests/layers/upward, whose every include
# (bar the command line's) reaches above its floor: the check fails and names each one.
# Usage: catches_upward.sh CMAKE SOURCE_DIR
set -uo pipefail
cmake=${1:?usage: catches_upward.sh CMAKE SOURCE_DIR}
src=${2:?usage: catches_upward.sh CMAKE SOURCE_DIR}
out=$("$cmake" -DROOT="$src/tests/layers/upward" -P "$src/cmake/check_layers.cmake" 2>&1)
rc=$?
echo "$out"
found=$(echo "$out" | grep -c -e 'above the [a-z]* floor' -e 'floor is plain C++' -e 'named for its floor')
expected=9  # the fixture's upward includes and its one file of no floor
if [ $rc -eq 0 ]; then
  echo "the check passed a tree that reaches up"
  exit 1
fi
if [ "$found" -ne $expected ]; then
  echo "named $found problems, the fixture has $expected"
  exit 1
fi
echo "refused, naming all $expected"
