#!/usr/bin/env bash
# The standard benchmark on one GPU (issue 35, item 5; never run by CI, and NOT RUN YET: no session so far
# was lent a device): full CIFAR-10 (the shared data's JPEG copy, not bit-exact with the original PNGs), the
# target plus 64 reference CNNs trained together (train.models_at_once: auto), online LiRA and RMIA with 64
# references; then offline LiRA and RMIA with 1 and 4 references (4 more models on the population alone).
# Writes benchmarks/results/cifar10_together_gpu/{online,offline}/results.json and timings.txt.
#   MIAUDIT_DATA_DIR=../shared/data benchmarks/cifar10_together_gpu.sh [cuda:0]
# Sizing: SmallCNN, 20 epochs, batch 512, flip only (flip-crop's per-image crops run on the CPU, one
# Python slice per image: too slow for 64 models' batches); meant to fit 10 minutes of one GPU.
# The published numbers to set beside it (WRN28-2, 254 references, flip-crop): LiRA online AUC 72.0,
# RMIA online AUC 72.25 and TPR@0.01% 4.31% (RMIA paper, Table 2).
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:-cuda}
out=benchmarks/results/cifar10_together_gpu
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: nothing to run')"
mkdir -p "$out"
common="dataset: cifar10
model: cnn
seed: 0
device: $device
split: {target_train: 0.25, target_test: 0.25, population: 0.5, validation: 0.0}
train: {epochs: 20, batch_size: 512, lr: 0.1, augment: flip, models_at_once: auto, stack_memory_mb: 60000}
queries: {augment: flip}
calibration: none
min_fpr: 0.0001"
printf '%s\nmode: online\nreferences: 64\nattacks: [{name: lira, references: 64}, {name: rmia, references: 64}]\n' \
  "$common" >"$out/online.yaml"
printf '%s\nmode: offline\nreferences: 4\nattacks: [{name: lira, references: 1}, {name: rmia, references: 1}, {name: lira, references: 4}, {name: rmia, references: 4}]\n' \
  "$common" >"$out/offline.yaml"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >"$out/gpu.txt" || true
for run in online offline; do
  start=$(date +%s)
  miaudit run "$out/$run.yaml" --out "$out/$run" --force
  echo "$run: $(($(date +%s) - start)) s" >>"$out/timings.txt"
done
cat "$out/timings.txt"
