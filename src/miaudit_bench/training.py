"""``miaudit bench training``: the reference models' cost, trained one at a time against together
(``train.models_at_once``), with the attacks' TPR@1% of both ways side by side.

For each data set, each K and each seed the same audit runs twice, each from a fresh cache: with
``train.models_at_once: 1`` and with ``models_at_once: K`` (one stack). The two runs of a cell follow each other
(their order alternates with the seed), so on a machine shared with other work both see about the same
load; the load average is recorded before and after each run. Per run: the references' training wall
time (the sum of their training times: one stack's time is shared among its members), models per minute
from it, the whole run's wall and CPU seconds (process time: less sensitive to the load), and each
attack's TPR at 1% FPR. ``training-quick`` is the grid that fits a shared 2-core machine in minutes.
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

from miaudit import config, pipeline, report
from miaudit._version import __version__

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
# together: all K in one stack (models_at_once = K), what auto does for an MLP, and for a CNN on an accelerator
# (on a CPU auto trains CNNs one at a time: this bench measured their stack slower)
WAYS: dict[str, int | None] = {"one at a time": 1, "together": None}
FPR = "0.01"


ATTACKS = ("attack-p", "lira", "rmia")  # LiRA and RMIA offline with all K references


def attack_rows(k: int) -> list[dict[str, Any]]:
    return [{"name": name, **({"references": k} if name != "attack-p" else {})} for name in ATTACKS]


def one_run(base: Mapping[str, Any], k: int, seed: int, at_once: int) -> dict[str, Any]:
    """The audit from a fresh cache: its timings, accuracies and each attack's TPR@1%."""
    with tempfile.TemporaryDirectory(prefix="miaudit-bench-training-") as cache:
        train = {**base.get("train", {}), "models_at_once": at_once}
        cfg = config.from_dict(
            {**base, "train": train, "seed": seed, "references": k, "attacks": attack_rows(k), "cache_dir": cache}
        )
        load_before = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        res = pipeline.run_config(cfg)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        out = report.audit_report(res)
    refs = res.experiment.references
    training = float(sum(r.seconds for r in refs))
    return {
        "models_at_once": at_once,
        "references_training_s": training,
        "models_per_minute": 60.0 * len(refs) / training if training > 0 else None,
        "run_wall_s": wall,
        "run_cpu_s": cpu,
        "load_average": [load_before, os.getloadavg()[0]],
        "target_test_accuracy": out.target.test_accuracy,
        "reference_train_accuracy": float(np.mean([r.train_accuracy for r in refs])),
        "tpr_at_1pct": {a.name: (a.tpr_at_fpr or {})[FPR] for a in out.attacks},
    }


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
        ways = list(WAYS.items()) if seed % 2 == 0 else list(WAYS.items())[::-1]
        runs = {}
        for way, at_once in ways:
            log(f"[{name}] {label} K={k} seed {seed}: {way}")
            runs[way] = one_run(DATASETS[label], k, seed, at_once or k)
        apart, together = runs["one at a time"], runs["together"]
        results["cells"].append(
            {
                "dataset": label,
                "references": k,
                "seed": seed,
                "config": DATASETS[label],
                "runs": runs,
                "training_speedup": apart["references_training_s"] / together["references_training_s"],
                "run_wall_speedup": apart["run_wall_s"] / together["run_wall_s"],
                "run_cpu_speedup": apart["run_cpu_s"] / together["run_cpu_s"],
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
        "Each cell is one audit run twice from fresh caches: one model at a time (`train.models_at_once: 1`) and "
        "together (`models_at_once: K`, all references in one stack). Training: the references' training time "
        "(a stack's time shared among its "
        "members); run: the whole `miaudit run` (target, references, attacks), wall and CPU. Load: the 1-minute "
        "load average before each run (the machine was shared: wall ratios are indicative, CPU ratios less "
        "sensitive to the load). TPR at 1% FPR, one at a time / together; one seed per cell (no spread).",
        "",
        "| data set | K | seed | training s (1 / together) | models/min (1 / together) | training speed-up "
        "| run wall s | run wall speed-up | run CPU speed-up | load | "
        + " | ".join(f"{name} TPR@1%" for name in ATTACKS)
        + " |",
        "|" + "---|" * (10 + len(ATTACKS)),
    ]
    for c in results["cells"]:
        a, t = c["runs"]["one at a time"], c["runs"]["together"]
        tprs = [_pair(a["tpr_at_1pct"].get(label), t["tpr_at_1pct"].get(label)) for label in ATTACKS]
        lines.append(
            f"| {c['dataset']} | {c['references']} | {c['seed']} "
            f"| {a['references_training_s']:.1f} / {t['references_training_s']:.1f} "
            f"| {a['models_per_minute']:.1f} / {t['models_per_minute']:.1f} | {c['training_speedup']:.2f}x "
            f"| {a['run_wall_s']:.0f} / {t['run_wall_s']:.0f} | {c['run_wall_speedup']:.2f}x "
            f"| {c['run_cpu_speedup']:.2f}x | {a['load_average'][0]:.1f} / {t['load_average'][0]:.1f} | "
            + " | ".join(tprs)
            + " |"
        )
    return "\n".join(lines) + "\n"


def _pair(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{100 * a:.1f} / {100 * b:.1f}"
