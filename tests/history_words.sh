#!/usr/bin/env bash
# The tree speaks of kvbench alone: no tracked file may name the unit of work that produced a
# change (history lives in git and in docs/perf-notes/, keyed by date and commit). The word is
# assembled here so that this file does not contain it.
# Usage: history_words.sh SOURCE_DIR. Exit 0 clean, 1 with every offending file:line printed,
# 77 (reported by ctest as skipped) when SOURCE_DIR is not a git checkout.
set -uo pipefail
src=${1:?usage: history_words.sh SOURCE_DIR}
word="ses""sion"
if ! why=$(git -C "$src" rev-parse --is-inside-work-tree 2>&1); then
  echo "skipped: $src is not a git checkout that git can read (git grep needs one): $why"
  exit 77
fi
hits=$(git -C "$src" grep -n -I -i -e "$word" -- .)
rc=$?
if [ $rc -eq 1 ]; then
  echo "no tracked file contains the word"
  exit 0
elif [ $rc -ne 0 ]; then
  echo "git grep failed (exit $rc)"
  exit 1
fi
echo "$hits" | cut -c1-200
echo "$(echo "$hits" | wc -l) line(s) above contain '$word' (any case): say what kvbench does, in the present tense"
exit 1
