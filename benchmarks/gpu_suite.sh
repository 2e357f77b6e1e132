#!/usr/bin/env bash
# The GPU suite behind docs/gpu.md, run from the repository root on a machine with an NVIDIA GPU:
# verify the device-less compiles against the JIT, run snapshots compiled elsewhere (snapshots/ holds
# goldens made by Triton 3.9 on a CPU-only machine), then check and time every kernel against torch.
#   OUT=results bash benchmarks/gpu_suite.sh
set -u
OUT=${OUT:-gpu-results}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
ir() { python3 -m irscope --color never "$@"; echo "[exit $?] irscope $*"; }
ATTN_SIZES=""
for n in 1024 2048 4096 8192; do for d in 64 128; do ATTN_SIZES="$ATTN_SIZES --size n$n.d$d"; done; done
{
  date -u
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv
  ir verify add softmax matmul matmul.tma blur blur.gray blur.row blur.col attention attention.causal --json "$OUT/verify.json"
  ir run --snapshot snapshots/add/default/sm_90a --snapshot snapshots/softmax/default/sm_90a \
         --snapshot snapshots/matmul/default/sm_90a --snapshot snapshots/matmul.tma/default/sm_90a \
         --snapshot snapshots/blur.row/default/sm_90a \
         --snapshot snapshots/attention/default/sm_90a --json "$OUT/snapshot-runs.json"
  ir run add softmax --json "$OUT/memory.json"
  ir run matmul matmul.tma --size bench --size 8192 --repeats 5 --json "$OUT/matmul.json"
  ir run matmul --config all --size bench --json "$OUT/matmul-configs.json"
  ir run blur blur.row --json "$OUT/blur.json"
  ir run attention attention.causal attention.bf16 attention.bf16.causal $ATTN_SIZES --json "$OUT/attention.json"
  python3 -m pytest -q -m gpu tests/test_gpu_run.py -p no:cacheprovider
} 2>&1 | tee "$OUT/log.txt"
