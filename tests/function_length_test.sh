#!/usr/bin/env bash
# function_length.py fails on a function over the limit, passes it when the allowlist names it,
# and fails on an allowlist entry that is no longer over the limit. Usage: function_length_test.sh
# FUNCTION_LENGTH_PY
set -uo pipefail
check=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/tests" "$d/src"
{
  echo "int long_one(int x) {"
  for i in $(seq 1 70); do echo "  x += $i;"; done
  echo "  return x;"
  echo "}"
  echo "int short_one(int x) { return x; }"
} >"$d/src/a.cpp"
fail() { echo "FAIL: $*"; exit 1; }
out=$(python3 "$check" 60 "$d/src/a.cpp") && fail "a 73-line function passed: $out"
grep -q "src/a.cpp:1: a function of 73 lines" <<<"$out" || fail "unexpected message: $out"
echo "src/a.cpp long_one" >"$d/tests/allow.txt"
out=$(python3 "$check" 60 --allow "$d/tests/allow.txt" "$d/src/a.cpp") || fail "an allowed function failed: $out"
echo "src/a.cpp short_one" >>"$d/tests/allow.txt"
out=$(python3 "$check" 60 --allow "$d/tests/allow.txt" "$d/src/a.cpp") && fail "a stale entry passed: $out"
grep -q "short_one is in the allowlist but not over 60 lines" <<<"$out" || fail "unexpected message: $out"
echo "function_length.py: catches a long function, honours and shrinks its allowlist"
