"""``miaudit bench training``: the models' cost, trained one at a time against together
(``train.models_at_once``), with the attacks' TPR@1% of every way side by side.

For each data set, each K and each seed the same audit runs three ways, each from a fresh cache: ``one at a
time`` (``train.models_at_once: 1``), ``auto`` (the default: on a CPU the target and references in worker
processes of one torch thread each, on an accelerator stacks) and ``stacked`` (``models_at_once: K``, all
references in one stack). The ways of a cell follow each other (their order rotates with the seed), so on a
machine shared with other work all see about the same load; the load average is recorded before each run.
Per run: the training phase's wall time (data, target and references: ``pipeline.prepare``), models per minute
from it, the whole run's wall and CPU seconds (CPU: this process and its finished workers), and each attack's
TPR at 1% FPR. ``training-quick`` is the grid that fits a shared 2-core machine in minutes.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from miaudit import audits, config, pipeline
from miaudit._version import __version__
from miaudit.membership import decide

from .suites import DIGITS, LOCATION

Log = Callable[[str], None]
# the CIFAR-10 subset is smaller than the suites' (5,000 records, 35 epochs): its K = 16 must fit a shared machine
CIFAR10_SMALL: dict[str, Any] = {
    "dataset": {"name": "cifar10", "subset": 1000},
    "model": "cnn",
    "train": {"epochs": 10, "batch_size": 32, "lr": 0.05},
}
DATASETS: dict[str, dict[str, Any]] = {"digits": DIGITS, "location": LOCATION, "cifar10-subset": CIFAR10_SMALL}
GRID: dict[str, tuple[int, ...]] = {label: (4, 16, 64) for label in ("digits", "cifar10-subset", "location")}
QUICK_GRID: dict[str, tuple[int, ...]] = {"digits": (4, 16), "location": (4,), "cifar10-subset": (4,)}
# the ways: models_at_once 1, auto (None: the default), and K (0: all references in one stack)
WAYS: dict[str, int | str] = {"one at a time": 1, "auto": "auto", "stacked": 0}
FPR = "0.01"


ATTACKS = ("attack-p", "lira", "rmia")  # LiRA and RMIA offline with all K references


def attack_rows(k: int) -> list[dict[str, Any]]:
    return [{"name": name, **({"references": k} if name != "attack-p" else {})} for name in ATTACKS]


def one_run(base: Mapping[str, Any], k: int, seed: int, at_once: int | str) -> dict[str, Any]:
    """The audit from a fresh cache: its timings, accuracies and each attack's TPR@1%."""
    with tempfile.TemporaryDirectory(prefix="miaudit-bench-training-") as cache:
        train = {**base.get("train", {}), "models_at_once": at_once}
        cfg = config.from_dict(
            {**base, "train": train, "seed": seed, "references": k, "attacks": attack_rows(k), "cache_dir": cache}
        )
        load_before = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), _cpu_seconds()
        exp = pipeline.prepare(cfg)
        training = time.perf_counter() - wall
        res = audits.run_experiment(exp)
        wall, cpu = time.perf_counter() - wall, _cpu_seconds() - cpu
        out = decide.audit_report(res)
    refs = res.experiment.references
    return {
        "models_at_once": at_once,
        "training_wall_s": training,
        "models_per_minute": 60.0 * (len(refs) + 1) / training,
        "run_wall_s": wall,
        "run_cpu_s": cpu,
        "load_average_before": load_before,
        "target_test_accuracy": out.target.test_accuracy,
        "reference_train_accuracy": float(np.mean([r.train_accuracy for r in refs])),
        "tpr_at_1pct": {a.name: (a.tpr_at_fpr or {})[FPR] for a in out.attacks},
    }


def _cpu_seconds() -> float:
    """CPU time of this process and of its children that have ended (the worker processes)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_suite(
    out_dir: Path,
    hardware: dict[str, Any],
    quick: bool,
    datasets: list[str] | None = None,
    seeds: list[int] | None = None,
    log: Log = print,
) -> dict[str, Any]:
    grid = QUICK_GRID if quick else GRID
    name = "training-quick" if quick else "training"
    start = time.perf_counter()
    results: dict[str, Any] = {
        "suite": name,
        "description": __doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else "",
        "miaudit_version": __version__,
        "command": f"miaudit bench {name}",
        "hardware": hardware,
        "cells": [],
    }
    # the smallest K of every data set first: a run cut short still compares every data set
    cells = sorted((k, d, s) for d in datasets or list(grid) for k in grid[d] for s in seeds or [0])
    for k, label, seed in cells:
        order = list(WAYS.items())
        order = order[seed % len(order) :] + order[: seed % len(order)]
        runs = {}
        for way, at_once in order:
            log(f"[{name}] {label} K={k} seed {seed}: {way}")
            runs[way] = one_run(DATASETS[label], k, seed, at_once or k)
        apart = runs["one at a time"]
        results["cells"].append(
            {
                "dataset": label,
                "references": k,
                "seed": seed,
                "config": DATASETS[label],
                "runs": {way: runs[way] for way in WAYS},
                "speedup": {
                    way: {
                        "training_wall": apart["training_wall_s"] / r["training_wall_s"],
                        "run_wall": apart["run_wall_s"] / r["run_wall_s"],
                        "run_cpu": apart["run_cpu_s"] / r["run_cpu_s"],
                    }
                    for way, r in runs.items()
                    if way != "one at a time"
                },
            }
        )
        results["wall_seconds"] = time.perf_counter() - start
        write(out_dir, name, results)  # after every cell: a long run interrupted keeps what it measured
    return results


def write(out_dir: Path, name: str, results: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(results, indent=1))
    (out_dir / f"{name}.md").write_text(markdown(results))


def markdown(results: dict[str, Any]) -> str:
    hw = results["hardware"]
    lines = [
        f"# `{results['command']}`",
        "",
        f"miaudit {results['miaudit_version']}; {hw.get('cores')} cores ({hw.get('cpu')}), torch "
        f"{hw.get('torch')} with {hw.get('torch_threads')} thread(s); {results['wall_seconds'] / 60:.1f} min.",
        "",
        "Each cell is one audit run three ways from fresh caches: one model at a time (`train.models_at_once: 1`), "
        "`auto` (the default: on a CPU worker processes of one torch thread each) and stacked (`models_at_once: K`, "
        "all references in one stack). Training: the training phase's wall time (data, target and references); "
        "models/min: the target and references over it; run: the whole audit (training and attacks), wall and "
        "CPU. Speed-ups are over one at a time. Load: the 1-minute load average before each run. TPR at 1% FPR, "
        "one at a time / auto / stacked; one seed per cell (no spread).",
        "",
        "| data set | K | seed | way | training s | models/min | training speed-up | run wall s | run wall speed-up "
        "| run CPU speed-up | load | " + " | ".join(f"{name} TPR@1%" for name in ATTACKS) + " |",
        "|" + "---|" * (11 + len(ATTACKS)),
    ]
    for c in results["cells"]:
        for way, r in c["runs"].items():
            up = c["speedup"].get(way)
            ups = ["-", "-", "-"] if up is None else [f"{up[k]:.2f}x" for k in ("training_wall", "run_wall", "run_cpu")]
            tprs = [_percent(r["tpr_at_1pct"].get(label)) for label in ATTACKS]
            lines.append(
                f"| {c['dataset']} | {c['references']} | {c['seed']} | {way} | {r['training_wall_s']:.1f} "
                f"| {r['models_per_minute']:.1f} | {ups[0]} | {r['run_wall_s']:.0f} | {ups[1]} | {ups[2]} "
                f"| {r['load_average_before']:.1f} | " + " | ".join(tprs) + " |"
            )
    return "\n".join(lines) + "\n"


def _percent(a: float | None) -> str:
    return "-" if a is None else f"{100 * a:.1f}"
