"""The multi-run audit (``miaudit dp-audit --runs R``; Jagielski, Ullman & Oprea 2020; Nasr et al. 2021): R models
trained with one canary and R without it, each pair on the same data otherwise, with its own seed.

Each model is one independent run of the mechanism, so its decision ("canary in" when the score is at or above a
threshold) is one Bernoulli trial at the mechanism's TPR or FPR: the two-run bound's Clopper-Pearson formula
(``bounds.rate_bound``) then holds with no assumption on the model. The threshold is chosen on a seeded half of
the runs and the bound is computed on the other half. The score is black-box: the model's log-probability of
the canary's label (the same canary in every run, so no per-record calibration is needed). The canary is the
first of the config's canaries (its kind: random-label, natural or crafted). Not done here: the crafted starting
model of Annamalai & De Cristofaro (2024), every run starting from a model pre-trained to make the canary stand
out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from .. import data
from ..config.run import RunConfig
from ..errors import ConfigError
from ..experiment import datasets
from ..experiment.recipes import builtin_recipe, model_seed, obtain, open_store
from ..progress import ModelProgress
from . import audit, bounds, canaries, verdict
from . import training as dp_training

RUN_ROLE = 5000  # model seeds of the runs: model_seed(seed, RUN_ROLE + i), apart from the references'


def multi_run_bound(
    scores: np.ndarray, included: np.ndarray, delta: float, confidence: float, seed: int
) -> dict[str, Any]:
    """The bound from one score per run and whether that run had the canary; threshold on a seeded half."""
    scores, included = np.asarray(scores, dtype=np.float64), np.asarray(included, dtype=bool)
    select = audit.halves(included, seed)
    threshold = audit.select_threshold(scores[select], included[select], delta, confidence)
    flagged, member = (scores >= threshold)[~select], included[~select]
    tp, fp, n1, n0 = (
        int((flagged & member).sum()),
        int((flagged & ~member).sum()),
        int(member.sum()),
        int((~member).sum()),
    )
    found = bounds.rate_bound(tp, n1, fp, n0, delta, confidence)
    return {
        "analysis": "multi-run",
        "epsilon_lower_bound": found.epsilon_lb,
        "max_attainable": bounds.rate_bound(n1, n1, 0, n0, delta, confidence).epsilon_lb,
        "confidence": confidence,
        "delta": delta,
        "runs": len(scores),
        "guesses": n1 + n0,
        "correct": tp + n0 - fp,
        "threshold": threshold,
        "tpr": found.tpr,
        "fpr": found.fpr,
        "source": bounds.SOURCE_TWO_RUN,
    }


def run(cfg: RunConfig, runs: int) -> dict[str, Any]:
    """Train ``runs`` models with the canary and ``runs`` without; bound epsilon from their canary scores."""
    spec = cfg.canaries
    if spec is None or spec.implied_threat_model != "black-box":
        raise ConfigError(
            "canaries: the multi-run audit needs a black-box canary kind (random-label, natural, crafted)"
        )
    if runs < 2:
        raise ConfigError(f"--runs: at least 2 runs with and 2 without the canary, got {runs}")
    ds = datasets.load(cfg)
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    ds_c, c = canaries.draw(cfg, ds, split.nonmembers)
    canary, label = int(c["idx"][0]), int(c["labels"][0])
    recipe, store = builtin_recipe(cfg, ds_c, cfg.model, dp=cfg.train.dp), open_store(cfg)
    scores, included, privacy = [], [], None
    with ModelProgress(2 * runs) as tracker:
        for i in range(2 * runs):
            with_canary = i % 2 == 0
            idx = np.sort(np.append(split.members, canary)) if with_canary else split.members
            model = obtain(store, recipe, ds_c, f"run {i + 1}/{2 * runs}", model_seed(cfg.seed, RUN_ROLE + i), idx,
                           tracker, cfg.device)  # fmt: skip
            scores.append(float(special.log_softmax(model.logits[canary].astype(np.float64))[label]))
            included.append(with_canary)
            privacy = model.privacy
    confidence, delta = audit.one_run_level(cfg)
    entry = {
        **multi_run_bound(np.array(scores), np.array(included), delta, confidence, cfg.seed),
        "threat_model": "black-box",
        "canary_kind": spec.kind,
        "observer": "log-probability of the canary's label",
        "canaries": 1,
        "included": runs,
    }
    privacy = dp_training.with_accountants(privacy)
    declared = audit.declared_epsilon(cfg.dp_audit, cfg)
    claim = audit.tightest(privacy, declared)
    return {
        "dataset": ds_c,
        "privacy": privacy,
        "scores": np.array(scores),
        "included": np.array(included),
        "dp_audit": {
            "kind": "multi-run",
            "bounds": [entry],
            "epsilon_lb": entry["epsilon_lower_bound"],
            "max_attainable": entry["max_attainable"],
            "confidence": confidence,
            "delta": delta,
            "declared_epsilon": declared,
            "accounted_epsilon": (privacy or {}).get("accounted_epsilon"),
            "accounted": (privacy or {}).get("accounted"),
            **verdict.multi_run(entry, claim, privacy),
            "planted_fault": (privacy or {}).get("planted_fault"),
            "how": f"{2 * runs} models ({runs} with the canary), threshold on half of them",
        },
    }
