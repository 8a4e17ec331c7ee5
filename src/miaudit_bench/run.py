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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from miaudit import audits
from miaudit._version import __version__
from miaudit.config import run as config
from miaudit.membership import decide
from miaudit.results import AttackRow, AuditReport, BlindBaseline, Metrics, ReferenceModel

from . import dp as dp_bench
from .suites import (  # noqa: F401  (re-exported: bench.SUITES, bench.LOCATION ...)
    AG_NEWS,
    CIFAR10,
    DIGITS,
    FRONTIER_CANDIDATES,
    LOCATION,
    SUITES,
    Suite,
    table1_rows,
)

Log = Callable[[str], None]


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


def _summary(values: Sequence[Any]) -> dict[str, float]:
    a = np.asarray(values, dtype=np.float64)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if a.size > 1 else 0.0}


def _row_intervals(entries: Sequence[Metrics]) -> dict[str, list[float]]:
    """Per metric, the mean over seeds of each seed's 95% interval: how uncertain one run's number is,
    to read beside the seed spread (intervals of older results.json without them: none)."""
    per_seed = [
        {"auc": e.auc_ci, **{f"tpr@{k}": v for k, v in e.tpr_at_fpr_ci.items()}}
        for e in entries
        if e.auc_ci is not None and e.tpr_at_fpr_ci
    ]
    if len(per_seed) < len(entries):
        return {}
    return {f"{k}_ci": np.mean([s[k] for s in per_seed], axis=0).tolist() for k in per_seed[0]}


def _row_metrics(entry: AttackRow, refs: Sequence[ReferenceModel]) -> dict[str, Any]:
    """One row's numbers; the overhead ratio divides by the mean training time of one of the run's references."""
    m = {
        "auc": entry.auc,
        **{f"tpr@{k}": v for k, v in (entry.tpr_at_fpr or {}).items()},
        "reference_training_s": entry.seconds.reference_training,
        "attack_s": entry.seconds.attack,
    }
    for kind, levels in (entry.fpr_at_alpha or {}).items():
        m.update({f"fpr_{kind}@{a}": v for a, v in levels.items()})
    one_ref = float(np.mean([r.seconds for r in refs])) if refs else float("nan")
    m["attack_over_one_reference"] = entry.seconds.attack / one_ref if refs else float("nan")
    return m


def run_dataset(suite: Suite, label: str, seed: int, cache_dir: Path | None) -> AuditReport:
    base = dict(suite.datasets[label])
    rows = suite.rows_for.get(label, suite.rows)(base.get("references", 0))
    cfg = config.from_dict(
        {**base, "seed": seed, "attacks": rows, **({"cache_dir": str(cache_dir)} if cache_dir else {})}
    )
    return decide.audit_report(audits.run_config(cfg))


def aggregate(per_seed: list[AuditReport]) -> dict[str, Any]:
    first = per_seed[0]
    rows = []
    for i, entry in enumerate(first.attacks):
        metrics = [_row_metrics(r.attacks[i], r.reference_models or []) for r in per_seed]
        rows.append(
            {
                "name": entry.name,
                "label": entry.label,
                "references": entry.references,
                "unreliable_fpr_levels": entry.unreliable_fpr_levels,
                **{k: _summary([m[k] for m in metrics]) for k in metrics[0]},
                **_row_intervals([r.attacks[i] for r in per_seed]),
            }
        )
    if first.blind_baseline is not None:  # an LM audit: the text-only classifier as one more row
        rows.append(blind_row([r.blind_baseline for r in per_seed if r.blind_baseline is not None]))
    fits = [dict(r.target.fit()) for r in per_seed]
    return {
        "n_records": first.n_records,
        "n_members": first.n_members,
        "n_nonmembers": first.n_nonmembers,
        "model": first.model,
        "reference_model": first.reference_model,
        "config": first.config,
        "seeds": [r.seed for r in per_seed],
        **{  # a classifier's accuracy, an LM's perplexity
            f"target_{k}": _summary([fit[k] for fit in fits])
            for k in ("train_accuracy", "test_accuracy", "train_perplexity", "test_perplexity")
            if k in fits[0]
        },
        "reference_seconds_each": _summary([m.seconds for r in per_seed for m in r.reference_models or []]),
        "rows": rows,
    }


def blind_row(entries: Sequence[BlindBaseline]) -> dict[str, Any]:
    """The blind baseline's row (no references, no attack time: a text classifier, never the model)."""
    metrics = [{"auc": e.auc, **{f"tpr@{k}": v for k, v in (e.tpr_at_fpr or {}).items()}} for e in entries]
    blank = {"mean": float("nan"), "sd": float("nan")}
    return {
        "name": "blind-baseline",
        "label": "blind baseline (TF-IDF + LR, text only)",
        "references": 0,
        "unreliable_fpr_levels": entries[0].unreliable_fpr_levels,
        **{k: _summary([m[k] for m in metrics]) for k in metrics[0]},
        **{k: blank for k in ("reference_training_s", "attack_s", "attack_over_one_reference")},
        **_row_intervals(entries),
    }


def _dp(out_dir: Path, cache_dir: Path | None, datasets: list[str] | None, seeds: list[int] | None, log: Log) -> dict:
    """DP-SGD targets and epsilon lower bounds (``miaudit_bench/dp.py``)."""
    return dp_bench.run_suite(out_dir, hardware(), cache_dir, datasets, seeds, log)


def _speed(quick: bool) -> Callable[..., dict]:
    """Scoring cost on synthetic logits, beside the numpy floor and the peers (``miaudit_bench/speed.py``)."""

    def run(
        out_dir: Path, cache_dir: Path | None, datasets: list[str] | None, seeds: list[int] | None, log: Log
    ) -> dict:
        from . import speed

        return speed.run_suite(out_dir, hardware(), quick=quick, log=log)

    return run


def _training(quick: bool) -> Callable[..., dict]:
    """Reference training one at a time against together, with the attacks' TPRs (``miaudit_bench/training.py``)."""

    def run(
        out_dir: Path, cache_dir: Path | None, datasets: list[str] | None, seeds: list[int] | None, log: Log
    ) -> dict:
        from . import training

        return training.run_suite(out_dir, hardware(), quick, datasets, seeds, log)

    return run


# Suites with a protocol of their own (not pipeline runs over data sets and seeds): name -> runner
OWN_PROTOCOL: dict[str, Callable[..., dict]] = {
    "dp": _dp,
    "speed": _speed(False),
    "speed-quick": _speed(True),
    "training": _training(False),
    "training-quick": _training(True),
}


def suite_names() -> list[str]:
    """Every suite ``miaudit bench`` runs."""
    return [*SUITES, *OWN_PROTOCOL]


def run_suite(
    name: str,
    out_dir: Path = Path("benchmarks/results"),
    cache_dir: Path | None = None,
    datasets: list[str] | None = None,
    seeds: list[int] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    if name in OWN_PROTOCOL:
        return OWN_PROTOCOL[name](out_dir, cache_dir, datasets, seeds, log=log)
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
        if label in suite.prepare:
            suite.prepare[label]()
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
        f"Command: `{results['command']}`. Hardware: {hw['cpu']}, {hw['cores']} cores, {hw.get('gpu') or 'no GPU'}, "
        f"torch {hw['torch']} "
        f"({hw['torch_threads']} threads). Wall time {results['wall_seconds'] / 60:.1f} min "
        "(trained models are cached: a rerun only recomputes attacks).",
        "",
    ]
    for label, d in results["datasets"].items():
        lines += [
            f"## {label}",
            "",
            f"{d['n_records']} records, {d['n_members']} members / {d['n_nonmembers']} non-members; "
            f"target {d['model']} (references {d['reference_model']}): "
            + (
                f"perplexity train {_fmt(d['target_train_perplexity'], 1, 1)}, "
                f"test {_fmt(d['target_test_perplexity'], 1, 1)}"
                if "target_train_perplexity" in d
                else f"train accuracy {_fmt(d['target_train_accuracy'], 1, 3)}, "
                f"test accuracy {_fmt(d['target_test_accuracy'], 1, 3)}"
            )
            + "; "
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
