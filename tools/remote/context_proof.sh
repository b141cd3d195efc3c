#!/usr/bin/env bash
# The name docs and tests still use for `tools/remote/proof.sh context` (tools/remote/recipes/context.sh).
exec bash "$(dirname "${BASH_SOURCE[0]}")/proof.sh" context "$@"
