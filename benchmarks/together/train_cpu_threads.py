"""CPU cost of training K Location MLPs, one at a time against stacked (``train.models_at_once``), with one and two
torch threads, and as two worker processes of one thread each.

    MIAUDIT_DATA_DIR=../shared/data python benchmarks/together/train_cpu_threads.py        # the fixed protocol below
    python benchmarks/together/train_cpu_threads.py --records 200 --epochs 1 --models 4 --rounds 1 --synthetic  # smoke

Protocol (fixed before any measurement; rerun it on an idle machine, nothing else running):
- the default Location reference: ``model: mlp`` (446-1024-512-256-128-30, tanh), ``train: {epochs, batch_size:
  64, lr: 0.1}`` (momentum 0.9, weight decay 5e-4, cosine), 1,000 training records per model (a reference's share
  of the default split: half of 40% of 5,010), K = 16 models, each on its own seeded records and seed;
  3 epochs instead of the audit's 30 (the cost per epoch is constant: every epoch takes the same steps);
- five ways, each training the same K models from the same seeds:
  ``alone-1t``  one at a time, 1 torch thread (the project's default for a worker);
  ``alone-2t``  one at a time, 2 torch threads;
  ``stack-1t``  all K in one stack (``training/stacked.py``), 1 thread;
  ``stack-2t``  all K in one stack, 2 threads;
  ``2proc-1t``  one at a time in 2 worker processes of 1 thread each (K/2 models each; what two executor
                workers do), started before the clock and warmed up;
- one warm-up of every way (2 models, 1 epoch), then ``--rounds`` rounds (default 3); round r runs the ways in
  the order rotated by r, so a drift in the machine's load falls on every way alike;
- per way and round: wall seconds per model (what a user waits) and CPU seconds per model (this process's
  process time, plus the workers' for ``2proc-1t``), and the 1-minute load average before and after;
- reported: the median over rounds, and each way's wall speed-up over ``alone-1t`` and ``alone-2t``.
With two threads, CPU time also counts OpenMP threads spinning while they wait; wall time on an idle machine is
the measure there. Writes ``benchmarks/together/train_cpu_threads.{json,md}`` (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from miaudit.config.run import TrainConfig

WAYS = ("alone-1t", "alone-2t", "stack-1t", "stack-2t", "2proc-1t")
RESULTS = Path(__file__).parent  # this study's folder: its results


def arrays(synthetic: bool) -> tuple[np.ndarray, np.ndarray]:
    """Location's records and labels (or random ones of the same shape, for a smoke run without the data)."""
    if synthetic:
        rng = np.random.default_rng(0)
        return rng.integers(0, 2, (5010, 446)).astype(np.float32), rng.integers(0, 30, 5010)
    from miaudit import data

    ds = data.load("location")
    return ds.x, ds.y


_STATE: dict = {}


def _setup(synthetic: bool, records: int, models: int) -> None:
    """Each process's data and jobs (the workers' too): model k trains on its own seeded records, seed k."""
    x, y = arrays(synthetic)
    rng = np.random.default_rng(0)
    jobs = [rng.choice(len(y), records, replace=False) for _ in range(models)]
    _STATE.update(x=x, y=y, jobs=jobs, classes=int(y.max()) + 1)


def _config(epochs: int) -> TrainConfig:
    return TrainConfig(epochs=epochs, batch_size=64, lr=0.1)


def _factory() -> Callable:
    from miaudit.models import build_model

    shape, classes = _STATE["x"].shape[1:], _STATE["classes"]
    return lambda: build_model("mlp", shape, classes)


def train_alone(ks: list[int], epochs: int, threads: int = 1) -> float:
    """Train models ``ks`` one at a time; this process's CPU seconds."""
    import torch

    from miaudit.training.loop import seeded_model, train

    torch.set_num_threads(threads)
    start = time.process_time()
    x, y, jobs, factory = _STATE["x"], _STATE["y"], _STATE["jobs"], _factory()
    for k in ks:
        train(seeded_model(factory, k), x[jobs[k]], y[jobs[k]], _config(epochs), k)
    return time.process_time() - start


def train_stack(ks: list[int], epochs: int) -> None:
    from miaudit.training.loop import seeded_model
    from miaudit.training.stacked import Member, train_together

    x, y, jobs, factory = _STATE["x"], _STATE["y"], _STATE["jobs"], _factory()
    train_together([Member(seeded_model(factory, k), x[jobs[k]], y[jobs[k]], k) for k in ks], _config(epochs))


def run_way(way: str, ks: list[int], epochs: int, pool: ProcessPoolExecutor) -> tuple[float, float, float]:
    """(wall s, CPU s, the load average before) of training models ``ks`` the way ``way``."""
    import torch

    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    if way == "2proc-1t":
        halves = [ks[0::2], ks[1::2]]
        worker_cpu = sum(f.result() for f in [pool.submit(train_alone, h, epochs) for h in halves])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu + worker_cpu
    else:
        torch.set_num_threads(2 if way.endswith("2t") else 1)
        (train_stack if way.startswith("stack") else train_alone)(ks, epochs)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, load


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=16)
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--synthetic", action="store_true", help="random records of Location's shape (smoke run)")
    ap.add_argument("--out", type=Path, default=RESULTS / "train_cpu_threads")
    args = ap.parse_args()
    from torch import __version__ as torch_version

    _setup(args.synthetic, args.records, args.models)
    ks = list(range(args.models))
    rows: dict[str, list[dict]] = {w: [] for w in WAYS}
    setup = (args.synthetic, args.records, args.models)
    with ProcessPoolExecutor(2, initializer=_setup, initargs=setup) as pool:
        for way in WAYS:  # warm-up: every way once, two models, one epoch (starting the workers too)
            run_way(way, [0, 1], 1, pool)
        for r in range(args.rounds):
            for way in WAYS[r % len(WAYS) :] + WAYS[: r % len(WAYS)]:
                wall, cpu, load = run_way(way, ks, args.epochs, pool)
                rows[way].append(
                    {"round": r, "wall_s": wall, "cpu_s": cpu, "load_before": load, "load_after": os.getloadavg()[0]}
                )
                print(f"round {r} {way}: {wall / len(ks):.3f} s wall, {cpu / len(ks):.3f} s CPU per model", flush=True)
    per_model = {
        w: {
            "wall_s_per_model": statistics.median(x["wall_s"] for x in rows[w]) / len(ks),
            "cpu_s_per_model": statistics.median(x["cpu_s"] for x in rows[w]) / len(ks),
        }
        for w in WAYS
    }
    for w in WAYS:
        for base in ("alone-1t", "alone-2t"):
            ratio = per_model[base]["wall_s_per_model"] / per_model[w]["wall_s_per_model"]
            per_model[w][f"wall_speedup_vs_{base}"] = ratio
    out = {
        "protocol": {k: getattr(args, k) for k in ("models", "records", "epochs", "rounds", "synthetic")},
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "torch": torch_version},
        "per_model": per_model,
        "rounds": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(out, indent=2) + "\n")
    lines = [
        f"# Training {args.models} Location MLPs on the CPU: one at a time, stacked, threads",
        "",
        f"`python benchmarks/together/train_cpu_threads.py` ({args.records} records per model, {args.epochs} epochs, "
        "median of "
        f"{args.rounds} rounds; {out['machine']['cores']} cores, torch {torch_version}; load average "
        f"{min(x['load_before'] for w in WAYS for x in rows[w]):.1f}-"
        f"{max(x['load_after'] for w in WAYS for x in rows[w]):.1f})",
        "",
        "| way | wall s per model | CPU s per model | wall speed-up vs alone-1t | vs alone-2t |",
        "|---|---|---|---|---|",
    ]
    for w in WAYS:
        p = per_model[w]
        lines.append(
            f"| {w} | {p['wall_s_per_model']:.3f} | {p['cpu_s_per_model']:.3f} | "
            f"{p['wall_speedup_vs_alone-1t']:.2f}x | {p['wall_speedup_vs_alone-2t']:.2f}x |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
