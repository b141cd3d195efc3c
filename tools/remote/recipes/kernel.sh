# shellcheck shell=bash disable=SC2034,SC2154  # sourced by proof.sh, after lib.sh
# proof.sh kernel [BASELINE]: the proof of a kernel or runner change. Stages (STAGES, default
# "check perf slot_order default"): check: recipe check's GPU tests, configs/validation.yaml and
# the bad-input demo; perf: configs/perf.yaml; slot_order: configs/studies/slot_order.yaml;
# default: configs/default.yaml with what is left of BUDGET_S (default 560; at least 60 s). Then
# perf.csv against BASELINE (default results/h200/perf.csv) by `kvbench compare`, and the targets
# (tools/perf_targets.py --peers). Everything in OUT_DIR (default results/gpu_proof), packed into
# OUT_DIR/proof.tar after every stage, so a run cut short still leaves an archive.
# Exit status 1 if a GPU test, a validation or a run failed, or compare found incorrect or missing
# cases; slower cases are listed but do not fail it (boards differ by a few percent).
# shellcheck source=tools/remote/recipes/check.sh
source "$(dirname "${BASH_SOURCE[0]}")/check.sh"
BUDGET_S=${BUDGET_S:-560}
RESERVE_S=0 ARCHIVE=proof.tar
DEFAULT_STAGES="check perf slot_order default"
STAGES=${STAGES:-$DEFAULT_STAGES}
MIN_S[default]=60
BASELINE=${1:-results/h200/perf.csv}
remote_setup results/gpu_proof
"$KV" --version
stage_check() { check_configs configs/validation.yaml; rm -rf "$W"/tensors_*; pack; }
stage_perf() { box perf 0 "$KV" run configs/perf.yaml -o "$W/perf.csv"; }
stage_slot_order() { box slot_order 0 "$KV" run configs/studies/slot_order.yaml -o "$W/slot_order.csv"; }
stage_default() { box default 0 "$KV" run configs/default.yaml -o "$W/default.csv"; }
run_stages
"$KV" compare --allow-device-mismatch "$BASELINE" "$W/perf.csv" >"$W/compare.md" 2>&1
rc=$?
echo "kvbench compare $BASELINE: rc=$rc (0 same, 1 slower cases, 2 incorrect or missing cases, 3 usage)"
[ $rc -ge 2 ] && status=1
grep -E '^### ' "$W/compare.md"
grep -E '^\| \*\*(slower|incorrect|missing)' "$W/compare.md" | cut -d'|' -f3-12 | head -30
python3 tools/perf_targets.py "$W/perf.csv" --peers 2>/dev/null | grep -A8 '^| target'
pack
exit $status
