"""``miaudit plan CONFIG``: the audit's power and cost before it runs (``stats.power``), from the split sizes
and one timed epoch of the target's training; nothing is cached or written."""

from __future__ import annotations

import time
from typing import Any

from .. import data
from ..config.run import RunConfig
from ..plan import Plan
from ..stats import power
from . import datasets
from .recipes import builtin_recipe

RANKINGS = frozenset({"gls"})  # risk rankings: not tests of the verdict
LEVELS = (0.001, 0.01)


def _timed_epoch(cfg: RunConfig, ds: data.Dataset, members: Any) -> float:
    one = cfg.model_copy(update={"train": cfg.train.model_copy(update={"epochs": 1})})
    recipe = builtin_recipe(one, ds, cfg.model, dp=cfg.train.dp)
    warm = members[: cfg.train.batch_size]  # the first steps pay for imports and allocation: not timed
    recipe.fit(recipe.build(), ds.x[warm], ds.y[warm], cfg.seed, lambda *_: None)
    model = recipe.build()
    start = time.perf_counter()
    recipe.fit(model, ds.x[members], ds.y[members], cfg.seed, lambda *_: None)
    return time.perf_counter() - start


def forecast(cfg: RunConfig, plan: Plan, halfwidth: float = 0.01, at_tpr: float = 0.05) -> dict[str, Any]:
    """Split sizes, the intervals and detectable TPR at 0.1% and 1% FPR, records needed, and the run time."""
    ds = datasets.load(cfg)
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    n1, n0 = len(split.members), len(split.nonmembers)
    tests = sum(a.name not in RANKINGS for a in plan.attacks) * 3  # 3 FPR levels: 0.1%, 1%, 5%
    per_level = {
        str(a): {
            "tpr_halfwidth_at_tpr": {f"{t:g}": power.tpr_halfwidth(t, n1) for t in (a, at_tpr, 0.2)},
            "smallest_detectable_tpr": power.smallest_detectable_tpr(n1, n0, a, tests),
            "false_positives_allowed": int(a * n0 + 1e-9),
            "nonmembers_for_reliable_level": power.nonmembers_for_level(a),
        }
        for a in LEVELS
    }
    epoch = _timed_epoch(cfg, ds, split.members)
    models = 1 + plan.references
    return {
        "dataset": ds.name,
        "n_members": n1,
        "n_nonmembers": n0,
        "n_population": len(split.population),
        "attacks": [a.label for a in plan.attacks],
        "verdict_tests": tests,
        "levels": per_level,
        "members_for_halfwidth": {
            "halfwidth": halfwidth,
            "at_tpr": at_tpr,
            "members": power.members_for_halfwidth(at_tpr, halfwidth),
        },  # fmt: skip
        "seconds_per_epoch": epoch,
        "estimated_training_seconds": epoch * cfg.train.epochs * models,
        "models": models,
    }


def lines(f: dict[str, Any]) -> list[str]:
    """What ``miaudit plan`` prints."""
    out = [
        f"{f['dataset']}: {f['n_members']} members, {f['n_nonmembers']} non-members, {f['n_population']} population; "
        f"attacks {', '.join(f['attacks'])} ({f['verdict_tests']} verdict tests)",
    ]
    for level, p in f["levels"].items():
        widths = ", ".join(f"+-{100 * w:.1f} at TPR {100 * float(t):g}%" for t, w in p["tpr_halfwidth_at_tpr"].items())
        need = p["smallest_detectable_tpr"]
        out.append(
            f"TPR@{100 * float(level):g}%: interval {widths}; smallest TPR called a leak "
            + ("none (too few records)" if need is None else f"{100 * need:.1f}%")
            + f"; {p['false_positives_allowed']} false positives allowed"
            + (
                f" (unreliable: 10 need {p['nonmembers_for_reliable_level']} non-members)"
                if p["false_positives_allowed"] < 10
                else ""
            )
        )
    m = f["members_for_halfwidth"]
    out.append(f"members for TPR {100 * m['at_tpr']:g}% +-{100 * m['halfwidth']:g}: {m['members']}")
    out.append(
        f"training: {f['seconds_per_epoch']:.2f} s per epoch (timed), about {f['estimated_training_seconds']:.0f} s "
        f"for {f['models']} models (less for models already in the cache)"
    )
    return out
