#!/usr/bin/env bash
# The name docs and tests still use for `tools/remote/proof.sh gate` (tools/remote/recipes/gate.sh).
exec bash "$(dirname "${BASH_SOURCE[0]}")/proof.sh" gate "$@"
