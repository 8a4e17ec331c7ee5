"""Benchmark suites: the BMIA paper's Table 1 protocol on our data, at equal compute.

A suite is a list of data-set configurations, attack rows and seeds. Each
(data set, seed) pair is one run of the pipeline (the target and its K reference
models are trained once, or loaded from the cache, and shared by every attack
row), so an interrupted suite resumes where it stopped. Results are aggregated
over seeds (mean and standard deviation; each seed is a different split and
different models) into ``<out>/<suite>.json`` and ``<out>/<suite>.md``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import config, pipeline, report
from ._version import __version__
from .dp import bench as dp_bench

PEERS = ("attack-r", "lira", "rmia")


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    datasets: dict[str, dict[str, Any]]  # label -> base config (everything but seed and attacks)
    rows: Callable[[int], list[dict[str, Any]]]  # attack rows for a run with K references
    seeds: tuple[int, ...] = (0, 1, 2)
    seeds_for: dict[str, tuple[int, ...]] = field(default_factory=dict)  # fewer seeds where a data set is costly
    rows_for: dict[str, Callable[[int], list[dict[str, Any]]]] = field(default_factory=dict)  # per data set


def table1_rows(k_max: int, budgets: tuple[int, ...] = (1, 2, 4, 8, 16)) -> list[dict[str, Any]]:
    """Table 1 of the BMIA paper, extended to every reference budget up to k_max."""
    ks = [k for k in budgets if k <= k_max]
    rows: list[dict[str, Any]] = [
        {"name": "attack-p"},
        {"name": "qmia"},
        {"name": "gls"},
        {"name": "bmia", "references": 1},
    ]
    rows += [{"name": n, "references": k} for n in PEERS for k in ks]
    rows += [{"name": n, "references": k} for n in ("bavaria-n", "bavaria-t") for k in ks]
    # BASE2-4 need per-record IN estimates, so they run online only; these suites are offline (SPEC).
    rows += [{"name": "base1", "references": k_max}]
    rows += [{"name": "mr-bmia", "references": k} for k in ks if k >= 2]
    return rows


def ablation_rows(k_max: int) -> list[dict[str, Any]]:
    """BMIA's knobs one at a time around the default (M=1000, kron, marglik, weight sampling)."""
    bmia = {"name": "bmia", "references": 1}
    rows = [{**bmia, "samples": m, "label": f"bmia M={m}"} for m in (10, 100, 1000)]
    rows += [{**bmia, "hessian": h, "label": f"bmia hessian={h}"} for h in ("diag", "kron", "full")]
    rows += [
        {**bmia, "prior": "validation", "label": "bmia prior=validation"},
        {**bmia, "predictive": "glm", "label": "bmia predictive=glm"},
        {"name": "lira", "references": 1},
        {"name": "lira", "references": k_max},
        # the published LiRA code centres on the median of the reference scores; ours defaults to the mean
        {"name": "lira", "references": k_max, "center": "median", "label": f"lira (n={k_max}) center=median"},
    ]
    return rows


FRONTIER_BUDGETS = (1, 2, 4, 8, 16)
FRONTIER_CANDIDATES = ("eb-bmia", "lr-bmia", "rmia-draws")  # attacks/frontier.py
FRONTIER_SEEDS = (3, 4, 5)  # reporting seeds, fixed in benchmarks/frontier_protocol.md; development used 0-2


def frontier_rows(k_max: int) -> list[dict[str, Any]]:
    """Offline, every reference budget up to k_max: the frontier candidates and the best existing attacks."""
    ks = [k for k in FRONTIER_BUDGETS if k <= k_max]
    rows: list[dict[str, Any]] = [{"name": "bmia", "references": 1}]
    rows += [{"name": "mr-bmia", "references": k} for k in ks if k >= 2]
    rows += [{"name": n, "references": k} for n in ("lira", "rmia", "bavaria-n", *FRONTIER_CANDIDATES) for k in ks]
    return rows


def ceiling_rows(k_max: int) -> list[dict[str, Any]]:
    """Online (each query IN for half the references): LiRA and BaVarIA-n with 16 and, where trained, 64."""
    return [{"name": n, "references": k} for n in ("lira", "bavaria-n") for k in (16, 64) if k <= k_max]


LOCATION = {"dataset": "location", "model": "mlp", "train": {"epochs": 30, "batch_size": 64, "lr": 0.1}}
# 5,000 records: 1,000 members, 1,000 non-members, references on 1,000 each; sized so that
# one model trains in one to two minutes on 2 cores and overfits as in the paper.
CIFAR10 = {
    "dataset": {"name": "cifar10", "subset": 5000},
    "model": "cnn",
    "train": {"epochs": 35, "batch_size": 32, "lr": 0.1},
}
AG_NEWS = {"dataset": "ag_news", "model": "mlp", "train": {"epochs": 30, "batch_size": 64, "lr": 0.1}}
DIGITS = {"dataset": "digits", "model": "mlp", "train": {"epochs": 40, "batch_size": 32, "lr": 0.05}}


def posterior_rows(k: int) -> list[dict[str, Any]]:
    """BMIA paper Table 5: BMIA with each last-layer posterior (one reference model)."""
    return [
        {"name": "bmia", "references": 1, "posterior": p, "label": f"bmia posterior={p}"}
        for p in ("laplace", "mc-dropout", "swag", "ensemble")
    ]


FAMILIES = ("exponential", "gamma", "beta", "gaussian", "gaussian-equal-var")
ROBUST = {"median": {"center": "median"}, "trimmed": {"center": "trimmed"}, "winsorized": {"spread": "winsorized"}}
ROBUST |= {"iqr": {"spread": "iqr"}, "logsumexp": {"pool": "logsumexp"}}


def family_rows(k_max: int) -> list[dict[str, Any]]:
    """BaVarIA paper section 3.1 / B.6: each family, and each robust estimator of the Gaussian family, at
    K = 2, 8, 16 references (online)."""
    rows: list[dict[str, Any]] = []
    for k in (2, 8, 16):
        if k <= k_max:
            rows += [{"name": "exp-family", "references": k, "family": f, "label": f"{f} (n={k})"} for f in FAMILIES]
            rows += [
                {"name": "exp-family", "references": k, "family": "gaussian", **opts, "label": f"gaussian {r} (n={k})"}
                for r, opts in ROBUST.items()
            ]
    return rows


def shift_rows(k: int) -> list[dict[str, Any]]:
    """BMIA paper section 4.4: BMIA against LiRA (1 and 4 references) and RMIA (1) under a shift."""
    rows = [{"name": "bmia", "references": 1}, {"name": "lira", "references": 1}]
    return rows + [{"name": "lira", "references": 4}, {"name": "rmia", "references": 1}]


# The seeds suite at the scale 2 shared CPU cores allow (see benchmarks/README.md): small subsets, few epochs.
SEED_CIFAR = {"dataset": {"name": "cifar10", "subset": 1000}, "model": "cnn", "train": {"epochs": 8, "lr": 0.05}}
SEED_CIFAR_SMALL = {**SEED_CIFAR, "dataset": {"name": "cifar10", "subset": 500}}
SEED_LOCATION = {"dataset": {"name": "location", "subset": 500}, "model": "mlp", "train": {"epochs": 10}}
SEEDS_SUITE = Suite(
    "seeds",
    "the seeds' methods at small scale: (a) BMIA per posterior on CIFAR-10 (Table 5), 3 seeds; (b) each "
    "exponential family and robust estimator online at K = 2/8/16 on location and CIFAR-10, 1 seed; (c) BMIA, "
    "LiRA, RMIA with references on noisy CIFAR-10 and with noisy CIFAR-10 non-members, 1 seed",
    {
        "cifar10-posteriors": {**SEED_CIFAR, "references": 1, "min_fpr": 0.005},
        "location-online": {**SEED_LOCATION, "mode": "online", "references": 16},
        "cifar10-online": {**SEED_CIFAR_SMALL, "mode": "online", "references": 16},
        "cifar10-shifted-population": {**SEED_CIFAR_SMALL, "references": 4, "reference_data": "cifar10-noise"},
        "cifar10-ood-nonmembers": {**SEED_CIFAR_SMALL, "references": 4, "nonmember_data": "cifar10-noise"},
    },
    lambda k: shift_rows(k),
    seeds_for={d: (0,) for d in ("location-online", "cifar10-online", "cifar10-shifted-population")}
    | {"cifar10-ood-nonmembers": (0,)},
    rows_for={"cifar10-posteriors": posterior_rows, "location-online": family_rows, "cifar10-online": family_rows},
)

SUITES: dict[str, Suite] = {
    s.name: s
    for s in [
        Suite(
            "smoke",
            "a seconds-long run for CI: tiny digits subset, 2 references, every attack family",
            {
                "digits": {
                    "dataset": {"name": "digits", "subset": 400},
                    "model": "mlp",
                    "references": 2,
                    "train": {"epochs": 3, "batch_size": 32, "lr": 0.05},
                }
            },
            lambda k: table1_rows(k),
            seeds=(0, 1),
        ),
        Suite(
            "quick",
            "digits and location, 4 references, Table 1 rows, 3 seeds (minutes)",
            {"digits": {**DIGITS, "references": 4}, "location": {**LOCATION, "references": 4}},
            lambda k: table1_rows(k),
        ),
        Suite(
            "paper",
            "Table 1 on every offline data set: location (16 refs), cifar10 subset, ag_news, digits (8 refs)",
            {
                "location": {**LOCATION, "references": 16},
                "cifar10": {**CIFAR10, "references": 8},
                "ag_news": {**AG_NEWS, "references": 8},
                "digits": {**DIGITS, "references": 8},
            },
            lambda k: table1_rows(k),
        ),
        Suite(
            "ablations",
            "BMIA: posterior samples M, Hessian structure, prior precision, predictive; "
            "architecture mismatch (target cnn, references resnet) as in the paper's Table 4",
            {
                "location": {**LOCATION, "references": 8},
                "cifar10": {**CIFAR10, "references": 8},
                "cifar10-mismatch": {**CIFAR10, "reference_model": "resnet", "references": 4},
            },
            # location on one seed: its full-Hessian row (3,870 last-layer parameters) costs minutes per seed here
            lambda k: ablation_rows(k),
            seeds_for={"location": (0,), "cifar10-mismatch": (0,)},
        ),
        SEEDS_SUITE,
    ]
}


SUITES["frontier"] = Suite(
    "frontier",
    "the strongest offline attack per reference budget K = 1-16 (the frontier candidates and the best existing "
    "attacks) against the ceiling, online LiRA and BaVarIA-n with K = 16 and 64; reporting seeds 3-5 "
    "(benchmarks/frontier_protocol.md)",
    {
        "location": {**LOCATION, "references": 16},
        "digits": {**DIGITS, "references": 16},
        "cifar10": {**CIFAR10, "references": 16},
        "ag_news": {**AG_NEWS, "references": 16},
        "location-online": {**LOCATION, "mode": "online", "references": 64},
        "digits-online": {**DIGITS, "mode": "online", "references": 64},
        "cifar10-online": {**CIFAR10, "mode": "online", "references": 16},
    },
    frontier_rows,
    seeds=FRONTIER_SEEDS,
    rows_for={label: ceiling_rows for label in ("location-online", "digits-online", "cifar10-online")},
)


def hardware() -> dict[str, Any]:
    cpu = (
        next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            platform.processor(),
        )
        if Path("/proc/cpuinfo").exists()
        else platform.processor()
    )
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "gpu": None,
    }


def _summary(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if a.size > 1 else 0.0}


def _row_intervals(entries: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Per metric, the mean over seeds of each seed's 95% interval: how uncertain one run's number is,
    to read beside the seed spread (intervals of older results.json without them: none)."""
    per_seed = [
        {"auc": e["auc_ci"], **{f"tpr@{k}": v for k, v in e["tpr_at_fpr_ci"].items()}}
        for e in entries
        if e.get("auc_ci") is not None and e.get("tpr_at_fpr_ci")
    ]
    if len(per_seed) < len(entries):
        return {}
    return {f"{k}_ci": np.mean([s[k] for s in per_seed], axis=0).tolist() for k in per_seed[0]}


def _row_metrics(entry: dict[str, Any], refs: list[dict[str, Any]]) -> dict[str, float]:
    """One row's numbers; the overhead ratio divides by the mean training time of one of the run's references."""
    m = {
        "auc": entry["auc"],
        **{f"tpr@{k}": v for k, v in entry["tpr_at_fpr"].items()},
        "reference_training_s": entry["seconds"]["reference_training"],
        "attack_s": entry["seconds"]["attack"],
    }
    for kind, levels in entry.get("fpr_at_alpha", {}).items():
        m.update({f"fpr_{kind}@{a}": v for a, v in levels.items()})
    one_ref = float(np.mean([r["seconds"] for r in refs])) if refs else float("nan")
    m["attack_over_one_reference"] = entry["seconds"]["attack"] / one_ref if refs else float("nan")
    return m


def run_dataset(suite: Suite, label: str, seed: int, cache_dir: Path | None) -> dict[str, Any]:
    base = dict(suite.datasets[label])
    rows = suite.rows_for.get(label, suite.rows)(base.get("references", 0))
    cfg = config.from_dict(
        {**base, "seed": seed, "attacks": rows, **({"cache_dir": str(cache_dir)} if cache_dir else {})}
    )
    return report.results_json(pipeline.run_config(cfg))


def aggregate(per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    first = per_seed[0]
    rows = []
    for i, entry in enumerate(first["attacks"]):
        metrics = [_row_metrics(r["attacks"][i], r["reference_models"]) for r in per_seed]
        rows.append(
            {
                "name": entry["name"],
                "label": entry["label"],
                "references": entry["references"],
                "unreliable_fpr_levels": entry["unreliable_fpr_levels"],
                **{k: _summary([m[k] for m in metrics]) for k in metrics[0]},
                **_row_intervals([r["attacks"][i] for r in per_seed]),
            }
        )
    return {
        "n_records": first["n_records"],
        "n_members": first["n_members"],
        "n_nonmembers": first["n_nonmembers"],
        "model": first["model"],
        "reference_model": first["reference_model"],
        "config": first["config"],
        "seeds": [r["seed"] for r in per_seed],
        "target_train_accuracy": _summary([r["target"]["train_accuracy"] for r in per_seed]),
        "target_test_accuracy": _summary([r["target"]["test_accuracy"] for r in per_seed]),
        "reference_seconds_each": _summary([m["seconds"] for r in per_seed for m in r["reference_models"]]),
        "rows": rows,
    }


def run_suite(
    name: str,
    out_dir: Path = Path("benchmarks/results"),
    cache_dir: Path | None = None,
    datasets: list[str] | None = None,
    seeds: list[int] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    if name == "dp":  # its own protocol: DP-SGD targets and epsilon lower bounds
        return dp_bench.run_suite(out_dir, hardware(), cache_dir, datasets, seeds, log)
    suite = SUITES[name]
    start = time.perf_counter()
    results: dict[str, Any] = {
        "suite": name,
        "description": suite.description,
        "miaudit_version": __version__,
        "command": f"miaudit bench {name}",
        "hardware": hardware(),
        "datasets": {},
    }
    for label in datasets or list(suite.datasets):
        per_seed = []
        for seed in seeds or suite.seeds_for.get(label, suite.seeds):
            log(f"[{name}] {label} seed {seed}")
            per_seed.append(run_dataset(suite, label, seed, cache_dir))
        results["datasets"][label] = aggregate(per_seed)
    results["wall_seconds"] = time.perf_counter() - start
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(results, indent=1))
    (out_dir / f"{name}.md").write_text(markdown(results))
    return results


def _fmt(stat: dict[str, float], scale: float = 100.0, digits: int = 2, ci: list[float] | None = None) -> str:
    """'mean ± sd' over seeds, then the mean per-seed 95% interval in brackets where known."""
    out = f"{scale * stat['mean']:.{digits}f} ± {scale * stat['sd']:.{digits}f}"
    return out if ci is None else f"{out} [{scale * ci[0]:.{digits - 1}f}, {scale * ci[1]:.{digits - 1}f}]"


def markdown(results: dict[str, Any]) -> str:
    hw = results["hardware"]
    lines = [
        f"# Benchmark suite `{results['suite']}`",
        "",
        results["description"],
        "",
        f"Command: `{results['command']}`. Hardware: {hw['cpu']}, {hw['cores']} cores, no GPU, torch {hw['torch']} "
        f"({hw['torch_threads']} threads). Wall time {results['wall_seconds'] / 60:.1f} min "
        "(trained models are cached: a rerun only recomputes attacks).",
        "",
    ]
    for label, d in results["datasets"].items():
        lines += [
            f"## {label}",
            "",
            f"{d['n_records']} records, {d['n_members']} members / {d['n_nonmembers']} non-members; "
            f"target {d['model']} (references {d['reference_model']}): train accuracy "
            f"{_fmt(d['target_train_accuracy'], 1, 3)}, test accuracy {_fmt(d['target_test_accuracy'], 1, 3)}; "
            f"one reference model trains in {d['reference_seconds_each']['mean']:.1f} s; seeds {d['seeds']}.",
            "",
            "| attack | n | TPR@0.1% | TPR@1% | TPR@5% | AUC | FPR at p<1%: raw / cal. | FPR at p<5%: raw / cal. "
            "| ref. training s | attack s | attack / one ref. |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in d["rows"]:
            dag = " †" if "0.001" in r["unreliable_fpr_levels"] else ""
            fpr = [
                " / ".join(_fmt(r[k], 100, 1) for k in (f"fpr_raw@{a}", f"fpr_calibrated@{a}") if k in r) or "-"
                for a in ("0.01", "0.05")
            ]
            tpr = {k: _fmt(r[f"tpr@{k}"], ci=r.get(f"tpr@{k}_ci")) for k in ("0.001", "0.01", "0.05")}
            lines.append(
                f"| {r['label']} | {r['references']} | {tpr['0.001']}{dag} | {tpr['0.01']} | "
                f"{tpr['0.05']} | {_fmt(r['auc'], 1, 3, r.get('auc_ci'))} | {fpr[0]} | {fpr[1]} | "
                f"{r['reference_training_s']['mean']:.1f} | {r['attack_s']['mean']:.2f} | "
                f"{r['attack_over_one_reference']['mean']:.3f} |"
            )
        lines.append("")
    lines.append(
        "Mean ± standard deviation over seeds; TPR and FPR in percent. [brackets]: the mean over seeds of "
        "each run's 95% interval (exact Clopper-Pearson for TPR, stratified bootstrap for AUC), the "
        "uncertainty of one run's number: a seed spread well inside it is sampling noise. † TPR@0.1% rests "
        "on fewer than 10 false positives (FPR below 10/n non-members): unreliable. 'attack s' excludes work "
        "that an earlier row of the same run cached (reference features, fitted Laplace posteriors), so "
        "BMIA's full cost is the first BMIA row's; 'attack / one ref.' divides it by one reference model's "
        "training time."
    )
    return "\n".join(lines) + "\n"
