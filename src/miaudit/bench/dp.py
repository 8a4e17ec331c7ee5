"""``miaudit bench dp``: DP-SGD targets at several epsilons, their accuracy and accounted epsilon, and the
empirical lower bounds of the strongest attacks, two-run (threshold on one half, bound on the other) and one-run
(canaries). Sized for 2 CPU cores: digits and a location subset, few epochs, few references, one seed.

Per (data set, seed, epsilon) two pipeline runs: the usual audit (members / non-members, every attack's bound
from its scores) and the one-run audit (canaries). The reference models are not DP and never see a canary, so
they are trained once per data set and seed (the cache key ignores the target's DP settings) and shared.
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import pipeline
from ..config import run as config
from ..config.run import DPAuditConfig
from ..dp import audit, one_run

EPSILONS: tuple[float | None, ...] = (1.0, 4.0, 8.0, None)  # None: not private (epsilon = inf)
DELTA = 1e-5
ATTACKS = [{"name": "lira", "references": 2}, {"name": "rmia", "references": 2}, {"name": "bmia", "references": 1}]
DATASETS: dict[str, dict[str, Any]] = {
    "digits": {
        "dataset": "digits",
        "model": "mlp",
        "train": {"epochs": 20, "batch_size": 32, "lr": 0.05},
        "references": 2,
        "canaries": {"count": 200, "kind": "random-label"},
    },
    "location": {
        "dataset": {"name": "location", "subset": 2000},
        "model": "mlp",
        "train": {"epochs": 15, "batch_size": 64, "lr": 0.1},
        "references": 2,
        "canaries": {"count": 300, "kind": "random-label"},
    },
}
DESCRIPTION = (
    "DP-SGD (Opacus, RDP accountant, delta 1e-5, clip 1.0) targets at epsilon 1, 4, 8 and a non-private one; "
    "two-run and one-run epsilon lower bounds (95% confidence) of LiRA, RMIA and BMIA"
)


def _config(base: dict[str, Any], seed: int, eps: float | None, canaries: bool, cache_dir: Path | None) -> Any:
    raw = copy.deepcopy(base)
    if not canaries:
        raw.pop("canaries")
    if eps is not None:
        raw["train"]["dp"] = {"epsilon": eps, "delta": DELTA, "max_grad_norm": 1.0}
    return config.from_dict(
        {**raw, "seed": seed, "attacks": ATTACKS, **({"cache_dir": str(cache_dir)} if cache_dir else {})}
    )


def run_point(base: dict[str, Any], seed: int, eps: float | None, cache_dir: Path | None) -> dict[str, Any]:
    """One epsilon: the target's accuracy and accounted epsilon, per attack TPR@1% and both bounds."""
    cfg = _config(base, seed, eps, False, cache_dir)
    res = pipeline.run_config(cfg)
    exp = res.experiment
    assert exp.is_member is not None  # miaudit trained the target: its membership is known
    privacy = exp.target.privacy or {}
    rows = {}
    for r in res.attacks:
        spec = DPAuditConfig.model_validate({"attack": r.attack.label, "delta": DELTA})
        two = audit.two_run(r.result.scores, exp.is_member, spec, cfg, r.attack.label)
        m = r.metrics.to_json() if r.metrics is not None else {}
        rows[r.attack.name] = {
            "label": r.attack.label,
            "tpr_at_1pct": m.get("tpr_at_fpr", {}).get("0.01"),
            "tpr_at_1pct_ci": m.get("tpr_at_fpr_ci", {}).get("0.01"),
            "auc": m.get("auc"),
            "two_run": {k: two[k] for k in ("epsilon_lb", "threshold", "realized_fpr", "tpr", "fpr_upper")},
        }
    canary = one_run.run(_config(base, seed, eps, True, cache_dir))
    one = canary.dp_audit or {}
    for entry in one.get("bounds", []):
        if entry["analysis"] != "binomial":
            continue
        name = next(r.attack.name for r in canary.attacks if r.attack.label == entry["observer"])
        rows[name]["one_run"] = {
            "epsilon_lb": entry["epsilon_lower_bound"],
            **{k: entry[k] for k in ("correct", "guesses")},
        }
    return {
        "epsilon": eps,
        "accounted_epsilon": privacy.get("accounted_epsilon"),
        "noise_multiplier": privacy.get("noise_multiplier"),
        **exp.target_accuracy(),
        "canaries": {k: one.get(k) for k in ("canaries", "included", "canary_accuracy_in", "canary_accuracy_out")},
        "attacks": rows,
    }


def run_suite(
    out_dir: Path,
    hardware: dict[str, Any],
    cache_dir: Path | None = None,
    datasets: list[str] | None = None,
    seeds: list[int] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    start = time.perf_counter()
    results: dict[str, Any] = {"suite": "dp", "description": DESCRIPTION, "command": "miaudit bench dp"}
    results.update({"hardware": hardware, "delta": DELTA, "datasets": {}})
    for label in datasets or list(DATASETS):
        for seed in seeds or [0]:
            points = []
            for eps in EPSILONS:
                log(f"dp: {label} seed {seed} epsilon {eps if eps is not None else 'inf'}")
                points.append(run_point(DATASETS[label], seed, eps, cache_dir))
            results["datasets"][f"{label} seed {seed}"] = {"config": DATASETS[label], "points": points}
    results["wall_seconds"] = time.perf_counter() - start
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "dp.json").write_text(json.dumps(results, indent=1))
    (out_dir / "dp.md").write_text(markdown(results))
    return results


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def markdown(results: dict[str, Any]) -> str:
    hw = results["hardware"]
    lines = [
        "# Benchmark suite `dp`",
        "",
        results["description"] + ".",
        "",
        f"Command: `{results['command']}`. Hardware: {hw['cpu']}, {hw['cores']} cores, no GPU, torch {hw['torch']} "
        f"({hw['torch_threads']} threads), shared with other jobs. Wall time {results['wall_seconds'] / 60:.1f} min.",
        "",
        "| data set | epsilon | accounted epsilon | train / test acc. | attack | TPR@1% [95% CI] | AUC "
        "| two-run eps_lb | one-run eps_lb (correct / guesses) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, d in results["datasets"].items():
        for p in d["points"]:
            eps = "inf" if p["epsilon"] is None else f"{p['epsilon']:g}"
            for a in p["attacks"].values():
                ci = a["tpr_at_1pct_ci"]
                tpr = f"{100 * a['tpr_at_1pct']:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else "-"
                one = a.get("one_run", {})
                one_txt = f"{_num(one.get('epsilon_lb'))} ({one.get('correct')} / {one.get('guesses')})" if one else "-"
                lines.append(
                    f"| {label} | {eps} | {_num(p['accounted_epsilon'])} | {_num(p.get('train_accuracy'), 3)} / "
                    f"{_num(p.get('test_accuracy'), 3)} | {a['label']} | {tpr} | {_num(a['auc'], 3)} | "
                    f"{_num(a['two_run']['epsilon_lb'])} | {one_txt} |"
                )
    lines += [
        "",
        "Bounds at 95% confidence with delta = 1e-5 (the targets' delta; for the non-private target too). Two-run: "
        "threshold chosen on a seeded half of the members and non-members, exact Clopper-Pearson bounds on the "
        "other half (miaudit.dp.bounds). One-run: Steinke, Nasr & Jagielski (2023), (epsilon, delta) version, the "
        "auditor guessing on the 10% highest and 10% lowest canary scores. Each attack's bound is valid alone; "
        "the maximum over attacks is not (no correction for the three tries). One seed: no spread is reported.",
    ]
    return "\n".join(lines) + "\n"
