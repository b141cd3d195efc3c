#!/usr/bin/env bash
# Usage: expect_exit.sh CODE REGEX COMMAND...
# Runs COMMAND; passes when it exits with CODE and its stderr is exactly one line matching REGEX
# (extended grep syntax). Used by ctest for the CLI's failure paths.
set -u
want=$1 regex=$2
shift 2
err=$(mktemp)
"$@" >/dev/null 2>"$err"
got=$?
lines=$(wc -l <"$err")
msg=$(cat "$err")
rm -f "$err"
if [ "$got" -ne "$want" ]; then
  echo "exit code $got, expected $want; stderr: $msg"
  exit 1
fi
if [ "$lines" -ne 1 ] || ! grep -Eq -- "$regex" <<<"$msg"; then
  echo "stderr is not one line matching /$regex/: $msg"
  exit 1
fi
echo "ok: exit $got, stderr: $msg"
