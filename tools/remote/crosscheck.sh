#!/usr/bin/env bash
# The name docs and tests still use for `tools/remote/proof.sh crosscheck` (tools/remote/recipes/crosscheck.sh).
exec bash "$(dirname "${BASH_SOURCE[0]}")/proof.sh" crosscheck "$@"
