#!/usr/bin/env bash
# Proton profiles beside do_bench (docs/gpu.md, "Proton profiles"), from the repository root on a machine
# with an NVIDIA GPU: compile snapshots to record the runs in, then check, time (do_bench) and profile
# (Proton) the fp32 matmul's 16-wide and 128-wide tiles, add, softmax and matmul, and a committed golden's
# cubin. Everything lands in $OUT: log.txt, the --json results, and proton-run.tar.gz (Proton's .hatchet
# files, the snapshots with their runs.json). Needs no network; about two minutes on an H200.
#   OUT=results bash benchmarks/gpu_profile.sh
set -u
OUT=${OUT:-gpu-profile}
mkdir -p "$OUT"
W=$(mktemp -d /tmp/irscope-proton.XXXXXX)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
ir() { python3 -m irscope --color never "$@"; echo "[exit $?] irscope $*"; }
P="--profile --profile-dir $W/proton --out $W/snaps"
{
  date -u
  python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv
  ir compile matmul.fp32 --config all --target sm_90a --out "$W/snaps"
  ir compile add softmax matmul blur.row --target sm_90a --out "$W/snaps"
  # The seed talk's point: the same fp32 matmul with 16-wide and 128-wide tiles, at three sizes.
  ir run matmul.fp32 --config m16n16k16.w4.s2 --config m128n128k32.w8.s3 --size 2048 --size bench --size 8192 \
         $P --json "$OUT/fp32.json"
  # Memory-bound kernels, and blur.row: one workload of three kernels (Proton times each).
  ir run add softmax blur.row $P --json "$OUT/suite.json"
  # The fp16 matmul at two sizes: Proton's kernel time against do_bench's events, 5 repeats.
  ir run matmul --size bench --size 8192 --repeats 5 $P --json "$OUT/matmul.json"
  # A cubin compiled elsewhere (Triton 3.9, CPU-only machine), profiled the same way.
  cp -r snapshots/matmul/default/sm_90a "$W/golden-matmul"
  ir run --snapshot "$W/golden-matmul" $P --json "$OUT/snapshot.json"
  ir show "$W/snaps/matmul.fp32/m16n16k16.w4.s2/sm_90a"
  ir show "$W/golden-matmul"
  python3 -m pytest -q -m gpu tests/test_profile.py -p no:cacheprovider
  ls -l "$W/proton"
  echo "--- add's Proton file, as written:"
  head -c 3000 "$W"/proton/add-default-*.hatchet; echo
} 2>&1 | tee "$OUT/log.txt"
rm -rf "$W"/snaps/*/*/*/passes
tar -C "$W" -czf "$OUT/proton-run.tar.gz" $(cd "$W" && ls -d proton snaps golden-matmul/runs.json 2>/dev/null)
ls -l "$OUT"
rm -rf "$W"
