#!/usr/bin/env bash
# FlagGems on an NVIDIA GPU, for docs/capture.md: capture its ops with the real JIT, compile every captured
# launch device-less and compare it with the JIT's compile stage by stage (line info off), then capture the
# same program emulated (`--as sm_90a`, what runs without a GPU) on the same machine and Triton and check it
# recorded the same specialisations. No network: FlagGems comes from wheels in $WHEELS.
#   OUT=results WHEELS=path/to/wheels bash benchmarks/flaggems_h200.sh
set -u
OUT=${OUT:-flaggems-h200}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for w in "${WHEELS:-}" w3-lib2-whl shared/w3-lib2-whl ../devreq/w3-lib2-whl /work/wt/devreq/w3-lib2-whl; do
  if [ -n "$w" ] && ls "$w"/flag_gems-*.whl >/dev/null 2>&1; then WHEELS=$w; break; fi
done
SITE=$(mktemp -d /tmp/flaggems-site-XXXX)
export PYTHONPATH=$PWD:$SITE PYTHONUNBUFFERED=1 TRITON_DISABLE_LINE_INFO=1
export TRITON_CACHE_DIR=$(mktemp -d /tmp/flaggems-triton-cache-XXXX)  # a cold cache: the JIT really compiles
{
  date -u
  echo "wheels: ${WHEELS:-NOT FOUND}"
  # FlagGems and SQLAlchemy always from the wheels; packaging and PyYAML only where the machine lacks them.
  wheels="$(ls "$WHEELS"/flag_gems-*.whl "$WHEELS"/sqlalchemy-*.whl)"
  python3 -c "import packaging" 2>/dev/null || wheels="$wheels $(ls "$WHEELS"/packaging-*.whl)"
  python3 -c "import yaml" 2>/dev/null || wheels="$wheels $(ls "$WHEELS"/[Pp]y[Yy][Aa][Mm][Ll]-*.whl)"
  # A wheel is a zip archive: unpacked onto PYTHONPATH it is importable (no pip, no index, nothing else touched).
  for w in $wheels; do python3 -m zipfile -e "$w" "$SITE" || echo "could not unpack $w"; done; echo "unpacked: $wheels"
  GEMS_VENDOR=nvidia python3 -c "import sys, torch, triton, flag_gems; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'flag_gems', flag_gems.__version__, torch.cuda.get_device_name())"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "== 1. capture on the GPU (real JIT)"
  timeout 150 python3 -m irscope --color never capture --no-compile --out "$OUT/gpu" -- python3 tests/capture_programs/flaggems_ops.py; echo "[exit $?] capture on the GPU"
  echo "== 2. each captured launch compiled device-less vs the JIT's stages"
  timeout 120 python3 benchmarks/capture_vs_jit.py "$OUT/gpu/launches.json" --md "$OUT/table.md"; echo "[exit $?] capture_vs_jit"
  echo "== 3. the same program captured emulated (--as sm_90a), same machine and Triton"
  timeout 90 python3 -m irscope --color never capture --as sm_90a --no-compile --out "$OUT/emulated" -- python3 \
    tests/capture_programs/flaggems_ops.py; echo "[exit $?] emulated capture"
  python3 benchmarks/compare_captures.py "$OUT/gpu/launches.json" "$OUT/emulated/launches.json" \
    --md "$OUT/emulated-vs-gpu.md"; echo "[exit $?] compare_captures"
  date -u
} 2>&1 | tee "$OUT/log.txt"
