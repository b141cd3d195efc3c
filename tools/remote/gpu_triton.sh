#!/usr/bin/env bash
# Runs on the GPU host: kvbench's CUDA kernels and the seed's Triton kernels over one config
# (default configs/default.yaml), then plots them together. Writes under $OUT_DIR (default
# results/gpu_triton): <name>.csv (kvbench run), <name>_triton.csv (scripts/triton_baseline.py),
# their logs, and the PNGs when matplotlib is importable there (else plot the CSVs afterwards
# with scripts/plot.py; the commands are printed). Binaries (kvbench, libkvbench.so) come from
# $KVBENCH_BIN (default dist/bin, see tools/remote/pack_gpu.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BIN=${KVBENCH_BIN:-dist/bin}
OUT_DIR=${OUT_DIR:-results/gpu_triton}
PY=${PYTHON:-python3}
cfg=${1:-configs/default.yaml}
name=$(basename "$cfg" .yaml)
mkdir -p "$OUT_DIR"
status=0

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
"$BIN/kvbench" run "$cfg" -o "$OUT_DIR/$name.csv" >"$OUT_DIR/$name.log" 2>&1
rc=$?; echo "kvbench run $cfg: rc=$rc; $(tail -1 "$OUT_DIR/$name.log")"
[ $rc -ne 0 ] && { status=1; grep -v ' passed ' "$OUT_DIR/$name.log" | tail -20; }

# The adapter runs `kvbench run` through libkvbench.so, which is packed beside kvbench.
KVBENCH_LIB=${KVBENCH_LIB:-$BIN/libkvbench.so} "$PY" scripts/triton_baseline.py "$cfg" \
  -o "$OUT_DIR/${name}_triton.csv" >"$OUT_DIR/${name}_triton.log" 2>&1
rc=$?; echo "triton_baseline.py $cfg: rc=$rc; $(tail -1 "$OUT_DIR/${name}_triton.log")"
[ $rc -ne 0 ] && { status=1; grep -vE ' (passed|not_supported) ' "$OUT_DIR/${name}_triton.log" | tail -20; }

plots=(
  "scripts/plot.py bandwidth $OUT_DIR/$name.csv $OUT_DIR/${name}_triton.csv"
  "scripts/plot.py compare $OUT_DIR/${name}_triton.csv $OUT_DIR/$name.csv --ignore-variant"
)
if "$PY" -c 'import matplotlib' 2>/dev/null; then
  for p in "${plots[@]}"; do $PY $p || status=1; done
else
  echo "matplotlib is not importable here: plot on the development machine with"
  for p in "${plots[@]}"; do echo "  python3 $p"; done
fi

# CUDA beside Triton, per case both ran: median us and the CUDA/Triton time ratio.
KVBENCH=${KVBENCH:-$BIN/kvbench} "$PY" - "$OUT_DIR/$name.csv" "$OUT_DIR/${name}_triton.csv" <<'PYEOF'
import csv, sys
sys.path.insert(0, "scripts")
import kvbench_schema
cols = [c for c in kvbench_schema.case_key_columns() if c != "variant"]
def timed(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] == "passed" and r["median_us"]]
    key = lambda r: tuple(r[c] for c in cols)
    return {(key(r), r["variant"]): float(r["median_us"]) for r in rows}
cuda, tri = timed(sys.argv[1]), timed(sys.argv[2])
tri = {k: v for (k, _), v in tri.items()}
print("== CUDA variant vs seed Triton: median us, cuda/triton")
for (k, variant), us in cuda.items():
    if k in tri:
        c = dict(zip(cols, k))
        print(f"{variant:>10} {us:10.3f} {tri[k]:10.3f} {us / tri[k]:6.2f}  {c['sweep']} "
              f"T={c['num_tokens']} H={c['num_heads']} D={c['head_dim']} {c['in_dtype']}->{c['out_dtype']}")
PYEOF
ls -la "$OUT_DIR"
exit $status
