#!/usr/bin/env bash
# GPU check (not run in CI): the target and 8 reference ResNets on the full CIFAR-10 copy on one GPU, then
# the Table 1 attacks; writes the timings and the Table 1 rows to benchmarks/gpu_check/out/.
#   MIAUDIT_DATA_DIR=../shared/data benchmarks/gpu_check/gpu_check.sh [cuda:0]
# Needs a CUDA build of torch. The run is cached (MIAUDIT_CACHE_DIR): a second call only re-scores.
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root
device=${1:-cuda}
out=benchmarks/gpu_check/out
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: nothing to check')"
mkdir -p "$out"
cat >"$out/config.yaml" <<YAML
dataset: cifar10
model: resnet
seed: 0
device: $device
train: {epochs: 30, batch_size: 256, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4}
references: 8
attacks:
  - {name: attack-p}
  - {name: qmia}
  - {name: bmia, references: 1, samples: 1000}
  - {name: lira, references: 1}
  - {name: rmia, references: 1}
  - {name: lira, references: 8}
  - {name: mr-bmia, references: 8, samples: 1000}
YAML
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$out/gpu.txt" || true
start=$(date +%s)
miaudit run "$out/config.yaml" --out "$out/run" --force
end=$(date +%s)
python - "$out" "$((end - start))" <<'PY'
import json, sys
out, wall = sys.argv[1], int(sys.argv[2])
r = json.load(open(f"{out}/run/results.json"))
lines = [f"# GPU check: CIFAR-10 (full), ResNet, 8 references, {open(f'{out}/gpu.txt').read().strip() or 'GPU'}", "",
         f"wall {wall} s; target training {r['target']['training_seconds']:.1f} s; reference training "
         f"{sum(m['seconds'] for m in r['reference_models']):.1f} s in all; target train/test accuracy "
         f"{r['target']['train_accuracy']:.3f}/{r['target']['test_accuracy']:.3f}", "",
         "| attack | AUC | TPR@0.1% | TPR@1% | attack s |", "|---|---|---|---|---|"]
for a in r["attacks"]:
    t = a["tpr_at_fpr"]
    lines.append(f"| {a['label']} | {a['auc']:.4f} | {100 * t['0.001']:.2f} | {100 * t['0.01']:.2f} | {a['seconds']['attack']:.1f} |")
open(f"{out}/table1.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
