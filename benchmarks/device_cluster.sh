#!/usr/bin/env bash
# bench_cluster.py on a machine whose cores outnumber the workers (the H200 machine: 16 cores), where
# Dask's own processes do not take CPU from the compiles: the overhead of going through Dask on a node like
# a real cluster's, beside the 2-core figure in docs/benchmarks.md (an additional data point, not a
# replacement). Device-less compiles, as everywhere (the GPU is not used).
#
#   bash benchmarks/device_cluster.sh [WHEEL_DIR]      # from the repository root; writes under $OUT
#
# WHEEL_DIR (or $WHEELS; else the first of ./w4-dask-whl, shared/w4-dask-whl, ../devreq/w4-dask-whl,
# /work/wt/devreq/w4-dask-whl) holds the cp312 wheels of dask[distributed] and its dependencies,
# pyyaml, pygments and psutil (pip download, see docs/benchmarks.md); they are installed with no network
# into a --target folder put first on PYTHONPATH, so the machine's own packages are left alone.
# Writes $OUT/env.txt, $OUT/bench_w2.jsonl (--workers 2), $OUT/bench_w8.jsonl (--workers 8, if time is
# left) and $OUT/log.txt, and prints a summary; stops itself before 6 minutes.
set -uo pipefail
started=$(date +%s)
OUT=${OUT:?set OUT to the folder to write into}
WHEELS=${1:-${WHEELS:-}}
if [ -z "$WHEELS" ]; then
  for d in w4-dask-whl shared/w4-dask-whl ../devreq/w4-dask-whl /work/wt/devreq/w4-dask-whl; do
    [ -d "$d" ] && WHEELS=$d && break
  done
fi
[ -d "${WHEELS:-}" ] || { echo "no wheel folder: pass it, or put it at ./w4-dask-whl"; exit 2; }
PY=${PYTHON:-python3}
DEPS=${TMPDIR:-/tmp}/irscope-dask-deps
rm -rf "$DEPS"
ARGS=${BENCH_ARGS:-}  # e.g. "--file benchmarks/sweep-10.yaml --pairs 0" for a quick try elsewhere
mkdir -p "$OUT"
log="$OUT/log.txt"
left() { echo $(( 345 - ($(date +%s) - started) )); }

{
  echo "date: $(date -u +%FT%TZ)"; echo "nproc: $(nproc)"; uptime
  $PY --version
  lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket|CPU max MHz)' || true
} >"$OUT/env.txt" 2>&1

$PY -m pip install --no-index --find-links "$WHEELS" --target "$DEPS" --quiet --disable-pip-version-check \
    'dask[distributed]==2026.8.0' pyyaml pygments psutil >>"$log" 2>&1 || { echo "pip install failed: see log.txt"; tail -5 "$log"; exit 1; }
export PYTHONPATH="$PWD:$DEPS${PYTHONPATH:+:$PYTHONPATH}"
$PY -c 'import irscope, triton, distributed; print("irscope", getattr(irscope, "__version__", "?"), "triton", triton.__version__,
  "distributed", distributed.__version__)' >>"$OUT/env.txt" 2>>"$log" || { echo "imports failed: see log.txt"; tail -5 "$log"; exit 1; }
echo "installed and imported after $(( $(date +%s) - started )) s" >>"$OUT/env.txt"

# 2 workers (the 2-core comparison, here with 14 idle cores; one pair, as the machine is quiet), then 8
# if the time allows: each line is printed as its measurement ends, so a run cut short keeps what it has.
timeout "$(left)" $PY benchmarks/bench_cluster.py --workers 2 --pairs 1 $ARGS >"$OUT/bench_w2.jsonl" 2>>"$log"
echo "w2 exit $? after $(( $(date +%s) - started )) s" >>"$OUT/env.txt"
if [ "$(left)" -gt 100 ]; then
  timeout "$(left)" $PY benchmarks/bench_cluster.py --workers 8 --pairs 2 $ARGS >"$OUT/bench_w8.jsonl" 2>>"$log"
  echo "w8 exit $? after $(( $(date +%s) - started )) s" >>"$OUT/env.txt"
else
  echo "w8 skipped: $(left) s left" >>"$OUT/env.txt"
fi
uptime >>"$OUT/env.txt"

cat "$OUT/env.txt"
for f in "$OUT"/bench_w*.jsonl; do
  [ -s "$f" ] || continue
  echo "== $(basename "$f")"
  $PY - "$f" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    m = r.get("measurement")
    if m == "pair":
        print(f"pair {r['index']}: local {r['local_wall_s']} s / sched {r['sched_wall_s']} s ({r['overhead_pct']:+}% wall,"
              f" {r['cpu_overhead_pct']:+}% cpu)")
    elif m == "projection":
        print("projection:", json.dumps(r))
    elif "wall_s" in r:
        print(f"{m}: {r['wall_s']} s wall, {r['cpu_s']} cpu-s, {r['compiled']} compiled")
EOF
done
