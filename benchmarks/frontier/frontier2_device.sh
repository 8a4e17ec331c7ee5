#!/usr/bin/env bash
# The frontier2 reporting run on one machine with a GPU and many cores (protocol amendment 2):
# pass 1 trains every model of every (data set, seed) on the GPU into the cache, one process each;
# pass 2 runs the suite's attacks on the CPU from the cache (the cache key holds no device), one
# single-threaded process per data set and seed; benchmarks/frontier/merge_runs.py pools the seeds.
#   MIAUDIT_DATA_DIR=../shared/data benchmarks/frontier/frontier2_device.sh [OUT] [SEEDS] [DATASETS]
# (FRONTIER2_PARTS: the folder for the per-run parts, kept; default a temporary one)
set -u
cd "$(dirname "$0")/../.."  # the repository root
out=${1:-benchmarks/results}; seeds=${2:-3 4 5}; datasets=${3:-location digits cifar10 ag_news}
parts=${FRONTIER2_PARTS:-$(mktemp -d)}; mkdir -p "$parts"; export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
export MIAUDIT_CACHE_DIR=${MIAUDIT_CACHE_DIR:-$parts/cache}
device=$(python3 -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')")
train() {  # train DATASET SEED: the target and the references of the suite's run, into the cache
  python3 - "$1" "$2" "$device" <<'PY'
import sys, time
from miaudit import pipeline
from miaudit_bench.suites import SUITES
from miaudit.config import run as config
label, seed, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
suite = SUITES["frontier2"]
base = suite.datasets[label]
start = time.perf_counter()
cfg = config.from_dict({**base, "seed": seed, "device": device, "attacks": suite.rows(base["references"])})
exp = pipeline.prepare(cfg)
print(f"{label} seed {seed}: {1 + len(exp.references)} models on {device} in {time.perf_counter() - start:.0f} s")
PY
}
attacks() {  # attacks DATASET SEED: the suite's rows on the cached models, on the CPU
  python3 -c "from pathlib import Path; from miaudit_bench import run
run.run_suite('frontier2', Path('$parts/$1-$2'), datasets=['$1'], seeds=[$2], log=print)"
}
start=$(date +%s)
for d in $datasets; do for s in $seeds; do train "$d" "$s" & done; done; wait
echo "pass 1 (training on $device): $(($(date +%s) - start)) s"
for d in $datasets; do for s in $seeds; do attacks "$d" "$s" >"$parts/$d-$s.log" 2>&1 & done; done; wait
echo "pass 2 (attacks): $(($(date +%s) - start)) s"
for d in $datasets; do for s in $seeds; do [ -f "$parts/$d-$s/frontier2.json" ] || { echo "$d seed $s failed:"; tail -3 "$parts/$d-$s.log"; }; done; done
mkdir -p "$out"
python3 -c "import sys; sys.path.insert(0, 'benchmarks/frontier'); from pathlib import Path; import merge_runs
merge_runs.merge(sys.argv[1:], Path('$out'))" "$parts"/*/frontier2.json
