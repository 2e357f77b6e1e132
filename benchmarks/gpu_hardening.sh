#!/usr/bin/env bash
# The GPU checks of the 2026-12-04 hardening rounds (docs/gpu.md, "Hardening checks on the GPU"), from the
# repository root on a machine with an NVIDIA GPU:  OUT=results bash benchmarks/gpu_hardening.sh
set -u
OUT=${OUT:-gpu-hardening}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
ir() { python3 -m irscope --color never "$@"; echo "[exit $?] irscope $*"; }
S=$(mktemp -d)/snapshots
cp -r snapshots "$S"   # runs.json is written beside each snapshot run: a copy, not the goldens
rm -f "$S/.irscope-goldens"  # the copy is ours: under a golden root's marker a run is reported, not recorded
{
  date -u
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "== verify: device-less against the JIT, a Gluon kernel's descriptors and glir included"
  ir verify add softmax matmul matmul.tma attention_ws --json "$OUT/verify.json"
  echo "== snapshots compiled elsewhere (Triton 3.9), run here"
  ir run --snapshot "$S/add/default/sm_90a" --snapshot "$S/matmul/default/sm_90a" \
         --snapshot "$S/attention_ws/default/sm_90a" --json "$OUT/snapshot-runs.json"
  echo "== a run of a committed golden is reported, not recorded: the repository's goldens are left as they are"
  ir run --snapshot snapshots/add/default/sm_90a --check
  echo "runs.json/verify.json files in snapshots/: $(find snapshots -name runs.json -o -name verify.json | wc -l) (0: nothing written)"
  echo "== a snapshot of another target is refused when planned (exit 4)"
  ir run --snapshot "$S/add/default/sm_80"
  echo "== four runs at once on one snapshot: every record kept"
  before=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$S/add/default/sm_90a/runs.json")
  for i in 1 2 3 4; do python3 -m irscope --color never run --snapshot "$S/add/default/sm_90a" >/dev/null 2>&1 & done; wait
  python3 -c "import json,sys; n=len(json.load(open(sys.argv[1]))); print('records', sys.argv[2], '->', n, 'ok' if n == int(sys.argv[2]) + 4 else 'LOST')" "$S/add/default/sm_90a/runs.json" "$before"
  echo "== TRITON_INTERPRET=1 in the environment is refused (exit 5)"
  TRITON_INTERPRET=1 python3 -m irscope --color never run add; echo "[exit $?] TRITON_INTERPRET=1 irscope run add"
  echo "== --profile twice into one folder: the second takes the next name"
  ir run add --profile --profile-dir "$OUT/prof" --json "$OUT/profile1.json"
  ir run add --profile --profile-dir "$OUT/prof" --json "$OUT/profile2.json"
  ls "$OUT/prof"
  echo "== the GPU-marked tests"
  python3 -m pytest -q -m gpu tests/test_gpu_run.py tests/test_run.py tests/test_profile.py tests/test_run_hardening.py -p no:cacheprovider 2>&1 | tail -15
} 2>&1 | tee "$OUT/log.txt"
