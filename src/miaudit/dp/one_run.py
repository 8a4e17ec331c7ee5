"""The one-run audit (``miaudit dp-audit``; Steinke, Nasr & Jagielski 2023): canaries in one training run.

m canaries are drawn (seeded) from the target's test part; with ``kind: random-label`` each gets a random wrong
label (the hardest records to learn without memorising), with ``natural`` it keeps its own. Each is put into the
target's training set with probability 1/2 (an independent seeded coin), and the target is trained once. The
reference models train on the population only, so they never contain a canary (online mode, whose references
train on the queries, is refused). Every planned attack scores the canaries; the auditor guesses "in" for the k
highest scores and "out" for the k lowest and abstains on the rest (ties broken by a seeded order, NaN scores
abstain); the number of correct guesses gives the epsilon lower bound of ``bounds.one_run_epsilon_lb``, pure DP
and (epsilon, delta), at the stated confidence. The headline is ``dp_audit.attack`` (default: the first attack);
the others are listed, each valid at that confidence alone (their maximum is not).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .. import data
from ..config.run import RunConfig
from ..errors import ConfigError
from ..experiment.build import (
    AuditRecords,
    load_dataset,
    open_store,
    reference_recipe,
    trained_target,
    with_calibration_records,
    with_references,
)
from ..pipeline import AttackRun, RunResult, run_attack
from ..plan import build as build_plan
from ..training.loop import accuracy
from . import audit, bounds

CANARY_SEED = 0xCA7


def guesses(scores: np.ndarray, k: int, seed: int) -> np.ndarray:
    """(m,) in {-1, 0, +1}: +1 ("in") for the k highest scores, -1 ("out") for the k lowest, 0 (abstain) else.
    Ties are broken by a seeded random order (never by membership); NaN scores always abstain."""
    scores = np.asarray(scores, dtype=np.float64)
    valid = np.flatnonzero(~np.isnan(scores))
    k = min(k, len(valid) // 2)
    shuffled = np.random.default_rng(np.random.SeedSequence([seed, CANARY_SEED, 1])).permutation(valid)
    ranked = shuffled[np.argsort(-scores[shuffled], kind="stable")]
    out = np.zeros(len(scores), dtype=int)
    if k:
        out[ranked[:k]], out[ranked[-k:]] = 1, -1
    return out


def canary_bound(
    scores: np.ndarray, included: np.ndarray, k: int, confidence: float, delta: float, seed: int
) -> dict[str, Any]:
    """Guesses, their count r and correct count v, and the one-run bounds (pure DP and with delta)."""
    g = guesses(scores, k, seed)
    truth = np.where(np.asarray(included, dtype=bool), 1, -1)
    m, r, v = len(g), int((g != 0).sum()), int(((g != 0) & (g == truth)).sum())
    return {
        "canaries": m,
        "guesses": r,
        "correct": v,
        "guess_accuracy": v / r if r else float("nan"),
        "epsilon_lb": bounds.one_run_epsilon_lb(m, r, v, confidence, delta),
        "epsilon_lb_pure_dp": bounds.one_run_epsilon_lb(m, r, v, confidence, 0.0),
    }


def draw_canaries(cfg: RunConfig, candidates: np.ndarray, y: np.ndarray, n_classes: int) -> dict[str, np.ndarray]:
    """The canaries (record indices), their labels and which go into training (each with probability 1/2)."""
    spec = cfg.canaries
    assert spec is not None
    if spec.count > len(candidates):
        raise ConfigError(
            f"canaries.count: {spec.count} exceeds the {len(candidates)} records of the target's test part "
            "(split.target_test) they are drawn from"
        )
    rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, CANARY_SEED]))
    idx = np.sort(rng.choice(candidates, spec.count, replace=False))
    included = rng.random(spec.count) < 0.5
    labels = y[idx].copy()
    if spec.kind == "random-label":
        labels = (labels + rng.integers(1, n_classes, spec.count)) % n_classes
    return {"idx": idx, "included": included, "labels": labels}


def check(cfg: RunConfig) -> None:
    """What the one-run audit needs of a config (before any work)."""
    if cfg.canaries is None:
        raise ConfigError("canaries: the one-run audit needs canaries: {count: ..., kind: random-label | natural}")
    if cfg.target is not None:
        raise ConfigError("target: the one-run audit trains its own target with the canaries; remove target")
    if cfg.mode == "online":
        raise ConfigError("mode: online references train on the queries (the canaries); the one-run audit is offline")


def run(cfg: RunConfig) -> RunResult:
    """Train the target once with its canaries, run every planned attack on the canaries, bound epsilon."""
    check(cfg)
    spec = cfg.canaries
    assert spec is not None
    plan = build_plan(cfg)
    ds = load_dataset(cfg)
    split = with_calibration_records(data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple()), cfg)
    c = draw_canaries(cfg, split.nonmembers, ds.y, ds.n_classes)
    y = ds.y.copy()
    y[c["idx"]] = c["labels"]
    ds_c = replace(ds, name=f"{ds.name}+canaries", y=y)
    train_idx = np.sort(np.concatenate([split.members, c["idx"][c["included"]]]))
    test_idx = np.setdiff1d(split.nonmembers, c["idx"])
    store = open_store(cfg)
    target = trained_target(cfg, ds_c, train_idx, store, role="target (with canaries)")
    query_idx = np.random.default_rng(np.random.SeedSequence([cfg.seed, CANARY_SEED, 2])).permutation(c["idx"])
    is_member = np.isin(query_idx, c["idx"][c["included"]])
    c_split = replace(split, members=train_idx, nonmembers=np.sort(c["idx"][~c["included"]]))
    records = AuditRecords(ds_c, c_split, query_idx, is_member)
    exp = with_references(cfg, plan, records, target, reference_recipe(cfg, ds_c), store)
    inputs = exp.attack_inputs()
    runs = [run_attack(exp, attack, inputs) for attack in plan.attacks]
    accuracies = {
        "target_train_accuracy": accuracy(target.logits[split.members], ds.y[split.members]),
        "target_test_accuracy": accuracy(target.logits[test_idx], ds.y[test_idx]),
        "canary_accuracy_in": accuracy(target.logits[c["idx"][c["included"]]], c["labels"][c["included"]]),
        "canary_accuracy_out": accuracy(target.logits[c["idx"][~c["included"]]], c["labels"][~c["included"]]),
    }
    return RunResult(exp, runs, summary(cfg, runs, is_member, target.privacy, accuracies))


def summary(
    cfg: RunConfig, runs: list[AttackRun], is_member: np.ndarray, privacy: dict | None, accuracies: dict
) -> dict[str, Any]:
    """results.json's ``dp_audit`` for the one-run audit: the headline attack's bound, then every attack's."""
    spec = cfg.canaries
    assert spec is not None
    confidence = cfg.dp_audit.confidence if cfg.dp_audit else 0.95
    delta = audit.audit_delta(cfg.dp_audit, cfg) if cfg.dp_audit else (cfg.train.dp.delta if cfg.train.dp else 0.0)
    k = spec.guesses or max(1, spec.count // 10)
    labels = [r.attack.label for r in runs]
    head = audit.chosen_attack(labels, [r.attack.name for r in runs], cfg.dp_audit.attack) if cfg.dp_audit else 0
    per = [
        {"attack": r.attack.label, **canary_bound(r.result.scores, is_member, k, confidence, delta, cfg.seed)}
        for r in runs
    ]
    best = per[head]
    declared = audit.declared_epsilon(cfg.dp_audit, cfg)
    return {
        "kind": "one-run",
        **best,
        "canary_kind": spec.kind,
        "included": int(is_member.sum()),
        "guesses_per_side": k,
        "confidence": confidence,
        "delta": delta,
        "declared_epsilon": declared,
        "accounted_epsilon": (privacy or {}).get("accounted_epsilon"),
        "verdict": audit.verdict(best["epsilon_lb"], declared, confidence),
        "how": f"{best['correct']} of {best['guesses']} guesses correct on {best['canaries']} canaries "
        f"({spec.kind}, {int(is_member.sum())} included); pure-DP bound {best['epsilon_lb_pure_dp']:.3f}",
        "all_attacks": per,
        **accuracies,
        "source": bounds.SOURCE_ONE_RUN,
    }
