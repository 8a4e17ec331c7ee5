#!/usr/bin/env bash
# The standard benchmark on one GPU (issue 35, item 5; never run by CI, and NOT RUN YET: no session so far
# was lent a device): full CIFAR-10 (the shared data's JPEG copy, not bit-exact with the original PNGs), the
# target plus 64 references trained together (train.models_at_once: auto), online LiRA and RMIA with 64
# references; then offline LiRA and RMIA with 1 and 4 references (4 more models on the population alone).
# Writes benchmarks/together/cifar10_together_gpu/{online,offline}/results.json and timings.txt.
#   MIAUDIT_DATA_DIR=../shared/data benchmarks/together/cifar10_together_gpu.sh [cuda:0]
# The recipe: the fast CIFAR-10 recipe (docs/scale-and-models.md, "A fast CIFAR-10 recipe"; examples/configs/cifar10-airbench.yaml):
# airbench94's network (model: airbench), 10 epochs of batches of 512, airbench's learning rate per 1,024 images
# (0.75 at 512), momentum 0.85, its weight decay, label smoothing 0.2, the triangle schedule, flips and crops,
# bf16. Each model trains on 15,000 images (the target on a quarter of the 60,000, each reference on half of the
# population's 30,000); airbench94 itself takes ~3.8 s for 50,000 images x 10 epochs on an A100, so 65 models of
# 15,000 images should take a few minutes of one H100/H200 if the stack keeps the device as busy (untested).
# The published numbers to set beside it (WRN28-2, 254 references, flip-crop): LiRA online AUC 72.0,
# RMIA online AUC 72.25 and TPR@0.01% 4.31% (RMIA paper, Table 2).
set -euo pipefail
cd "$(dirname "$0")/../.."  # the repository root
device=${1:-cuda}
out=benchmarks/together/cifar10_together_gpu
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device: nothing to run')"
mkdir -p "$out"
common="dataset: cifar10
model: airbench
seed: 0
device: $device
split: {target_train: 0.25, target_test: 0.25, population: 0.5, validation: 0.0}
train: {epochs: 10, batch_size: 512, lr: 0.75, momentum: 0.85, weight_decay: 0.00133, label_smoothing: 0.2,
  schedule: triangle, augment: flip-crop, precision: bf16, models_at_once: auto, stack_memory_mb: 60000}
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
