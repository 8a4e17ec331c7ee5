"""Where a Location MLP's training CPU time goes, one model at a time against stacked: torch.profiler's self CPU
time per operator, one torch thread, one process.

    MIAUDIT_DATA_DIR=../shared/data python benchmarks/together/train_cpu_profile.py

The default Location reference (``model: mlp``, batch 64, lr 0.1, 1,000 records per model, seeded), 2 epochs:
4 models trained alone and a stack of 16 (``training/stacked.py``), after a warm-up of both; prints, per model,
the profiled self CPU seconds in total and for the 14 costliest operators (docs/scale-and-models.md,
"Reference models trained together", quotes one run of it). Profiling adds its own overhead: compare the two
ways, not with wall times.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from miaudit import data
from miaudit.config.run import TrainConfig
from miaudit.models import build_model
from miaudit.training.loop import seeded_model, train
from miaudit.training.stacked import Member, train_together

ALONE, STACK = 4, 16


def main() -> None:
    torch.set_num_threads(1)
    ds = data.load("location")
    cfg = TrainConfig(epochs=2, batch_size=64, lr=0.1)
    rng = np.random.default_rng(0)
    jobs = [rng.choice(len(ds.y), 1000, replace=False) for _ in range(STACK)]

    def factory() -> torch.nn.Module:
        return build_model("mlp", ds.x.shape[1:], ds.n_classes)

    def alone() -> None:
        for k in range(ALONE):
            train(seeded_model(factory, k), ds.x[jobs[k]], ds.y[jobs[k]], cfg, k)

    def stack() -> None:
        train_together([Member(seeded_model(factory, k), ds.x[jobs[k]], ds.y[jobs[k]], k) for k in range(STACK)], cfg)

    alone()
    stack()
    for name, fn, n in ((f"alone ({ALONE} models)", alone, ALONE), (f"stack ({STACK} models)", stack, STACK)):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        events = prof.key_averages()
        total = sum(e.self_cpu_time_total for e in events)
        print(f"== {name}: {total / 1e6 / n:.3f} s self CPU per model (profiled)")
        for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:14]:
            share = 100 * e.self_cpu_time_total / total
            print(f"  {e.key:45s} {e.self_cpu_time_total / 1e6 / n:7.3f} s/model {share:5.1f}%  calls {e.count}")


if __name__ == "__main__":
    main()
