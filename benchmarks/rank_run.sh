#!/usr/bin/env bash
# Time every config of ranked spaces on a GPU with `irscope run --snapshot`, as a user would: each
# config's own cubin, checked against torch, then timed against torch's baseline; each result recorded
# beside its snapshot (runs.json), which `irscope rank --measured` then scores the ranking against
# (docs/rank.md, "Checked with irscope run").
#   bash benchmarks/rank_run.sh OUT BUNDLE KERNEL SIZE [KERNEL SIZE ...]
# BUNDLE holds snapshot folders named ROOT-RELATIVE-PATH with / as __ (benchmarks/rank_bundle.py); the
# runs.json files are packed into OUT/runs.tar.gz (FOLDER/runs.json) to be put back beside the snapshots.
set -u
out=$1 bundle=$2
shift 2
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
while [ $# -ge 2 ]; do
  kernel=$1 size=$2
  shift 2
  args=()
  for d in "$bundle/${kernel}__"*; do args+=(--snapshot "$d"); done
  name=$(echo "$kernel.$size" | tr '=,' '-_')  # plain file names
  started=$(date +%s)
  python3 -m irscope --color never run "${args[@]}" --size "$size" --json "$out/$name.json" > "$out/$name.log" 2>&1
  rc=$?
  echo "$kernel $size: $(( ${#args[@]} / 2 )) snapshots, exit $rc, $(( $(date +%s) - started )) s, $(grep -c '^PASS' "$out/$name.log") passed"
done
(cd "$bundle" && ls -d */runs.json 2>/dev/null | tar czf - -T -) > "$out/runs.tar.gz"
