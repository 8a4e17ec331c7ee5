"""The two-run epsilon lower bound of a pipeline run (results.json ``dp_audit``) and the verdict on a declared
epsilon. Statistics in ``bounds``; here the threshold selection and the record (rendered by
``report.dp_section``).

Selection (``selection: half``): members and non-members are each cut into two seeded halves. On the first half
every distinct score is a candidate threshold (member when score >= t) and the one whose bound (the same
Clopper-Pearson formula) is largest is kept; the bound is then computed on the second half only, so the
threshold is independent of the records that test it. ``selection: fixed`` uses the given threshold on all
records. NaN scores are never flagged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np
from pydantic import JsonValue

from ..config.run import DPAuditConfig, RunConfig
from ..results import Bound, ComparedWith, DPAudit, SelectionRecords
from ..stats import metrics
from . import bounds, verdict
from .answer import answered

SELECTION_SEED = 0xD9A
TWO_RUN_ASSUMES = (
    "counts the records of ONE trained model as independent trials, which DP does not make them: an estimate, "
    "not a certified lower bound; `miaudit dp-audit` (one run, canaries) and `--runs R` (R model pairs) are"
)


def audit_delta(spec: DPAuditConfig, cfg: RunConfig) -> float:
    """The delta of the bound: as given, else the target's DP-SGD delta (or ``dp_training``'s), else 0 (pure DP)."""
    if spec.delta is not None:
        return spec.delta
    return claimed_delta(cfg)


def claimed_delta(cfg: RunConfig) -> float:
    """The delta the target's training claims: ``train.dp``'s, ``dp_training``'s (a user's function), else 0."""
    if cfg.dp_training is not None:
        return cfg.dp_training.delta
    return cfg.train.dp.delta if cfg.train.dp is not None else 0.0


def declared_epsilon(spec: DPAuditConfig | None, cfg: RunConfig) -> float | None:
    if spec is not None and spec.declared_epsilon is not None:
        return spec.declared_epsilon
    if cfg.dp_training is not None:  # a user's DP training function and its claim
        return cfg.dp_training.epsilon
    return cfg.train.dp.epsilon if cfg.train.dp is not None and cfg.target is None else None


def two_run_verdict(epsilon_lb: float, declared: float | None, confidence: float) -> str:
    """One line: is the declared epsilon contradicted by the empirical lower bound?"""
    if declared is None:
        return (
            f"no epsilon declared: the target is not epsilon-DP for any epsilon below {epsilon_lb:.3g} "
            f"(confidence {confidence:g})"
        )
    if epsilon_lb > declared:
        return f"the declared epsilon is violated at confidence {confidence:g}"
    return "no violation detected"


def one_run_level(cfg: RunConfig) -> tuple[float, float]:
    """Confidence and delta of the one-run bounds: dp_audit's, else 0.95 and the target's DP-SGD delta."""
    if cfg.dp_audit is not None:
        return cfg.dp_audit.confidence, audit_delta(cfg.dp_audit, cfg)
    return 0.95, claimed_delta(cfg)


def tightest(privacy: dict | None, declared: float | None) -> tuple[str, float] | None:
    """The smallest epsilon claimed for the target: the declared one and every accountant's figure."""
    claims = {f"accounted ({k.upper()})": v for k, v in ((privacy or {}).get("accounted") or {}).items()}
    claims.update({"declared": declared} if declared is not None else {})
    return min(claims.items(), key=lambda kv: kv[1]) if claims else None


@dataclass(frozen=True)
class Claims:
    """What an audit's bound is held to, as results.json's ``dp_audit`` records it: the level, delta, the declared
    epsilon and the accountants' figures, and a planted fault where one was."""

    confidence: float
    delta: float
    declared_epsilon: float | None
    accounted_epsilon: float | None
    accounted: dict[str, float] | None
    planted_fault: dict[str, JsonValue] | None


def claims(confidence: float, delta: float, declared: float | None, privacy: dict | None) -> Claims:
    """``Claims`` of an audit whose target's DP-SGD recorded ``privacy`` (``training.dp_sgd``)."""
    held = privacy or {}
    return Claims(
        confidence, delta, declared, held.get("accounted_epsilon"), held.get("accounted"), held.get("planted_fault")
    )


def one_run_summary(
    cfg: RunConfig,
    entries: list[Bound],
    privacy: dict | None,
    accuracies: dict[str, float],
    p_values: str | None = None,
    classes: int | None = None,
) -> DPAudit:
    """results.json's ``dp_audit`` of a one-run audit: every bound, and the verdict over every observer
    (``verdict.decide``); ``accuracies`` the target's on its real records (and the canaries'), ``p_values`` how
    the attacks' p-values on the canaries are; ``classes``: the data's, to say when the target learned nothing
    (``uninformative``)."""
    declared = declared_epsilon(cfg.dp_audit, cfg)
    claim = tightest(privacy, declared)
    confidence, delta = one_run_level(cfg)
    d = verdict.decide(entries, claim, confidence, privacy)
    if not d.violated and (said := uninformative(accuracies, classes, entries)) is not None:
        d = replace(d, verdict=f"{d.verdict}. {said}")
    return answered(
        DPAudit(
            kind="one-run",
            bounds=entries,
            **vars(d),  # violated, verdict, tests, family, epsilon_lb, max_attainable, headline, gdp_test, observers
            **vars(claims(confidence, delta, declared, privacy)),
            compared_with=None if claim is None else ComparedWith(claim=claim[0], epsilon=claim[1]),
            how="; ".join(
                f"{t.observer}: {t.correct} of {t.guesses} guesses right on {t.canaries} canaries" for t in d.tests
            ),
            **accuracies,
            **({"p_values": p_values} if p_values is not None else {}),
        )
    )


def uninformative(accuracies: dict[str, float], classes: int | None, entries: list[Bound]) -> str | None:
    """What to say when the target learned (almost) nothing: its accuracy on its own records within a tenth of the
    way from chance (1 / classes) to perfect. Its outputs then carry nothing of its training records, so no
    black-box observer could have seen a violation; a white-box observer (the noisy updates) still could."""
    if not classes or any(e.threat_model == "white-box" for e in entries):
        return None
    chance = 1 / classes
    seen = [a for k in ("target_train_accuracy", "target_test_accuracy") if (a := accuracies.get(k)) is not None]
    best = max(seen, default=None)
    if best is None or best > chance + 0.1 * (1 - chance):
        return None
    return (
        f"This audit could not have seen a violation: the target is at chance accuracy ({best:.3f} on its own "
        f"records, chance {chance:.3f} with {classes} classes), so it learned nothing its outputs could show, and "
        "'no violation detected' says nothing about your training; audit a model that learns (more epochs, a "
        "larger learning rate, the model your training is meant for)"
    )


def halves(is_member: np.ndarray, seed: int) -> np.ndarray:
    """(n,) bool: True for the selection half, a seeded half of the members and a half of the non-members."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, SELECTION_SEED]))
    chosen = np.zeros(len(is_member), dtype=bool)
    for group in (np.flatnonzero(is_member), np.flatnonzero(~is_member)):
        chosen[rng.permutation(group)[: len(group) // 2]] = True
    return chosen


def select_threshold(scores: np.ndarray, is_member: np.ndarray, delta: float, confidence: float) -> float:
    """The finite score threshold with the largest bound on these records (ties: the larger point estimate,
    then the higher threshold)."""
    points = metrics.operating_points(scores, is_member)
    finite = np.isfinite(points.thresholds)
    if not finite.any():
        raise ValueError("dp_audit: the attack gave no finite score to choose a threshold from")
    lb = bounds.rate_bounds(points.tp, points.n_members, points.fp, points.n_nonmembers, delta, confidence)
    point, _ = bounds.epsilon_from_rates(points.tpr, points.fpr, 0.0)
    order = np.lexsort((-np.arange(len(lb)), np.where(np.isfinite(point), point, 1e9), lb))  # last is best
    best = next(i for i in order[::-1] if finite[i])
    return float(points.thresholds[best])


def two_run(
    scores: np.ndarray,
    is_member: np.ndarray,
    spec: DPAuditConfig,
    cfg: RunConfig,
    label: str,
    accounted: float | None = None,
) -> DPAudit:
    """results.json's ``dp_audit``: the bound from one attack's scores and the true membership."""
    scores, is_member = np.asarray(scores, dtype=np.float64), np.asarray(is_member, dtype=bool)
    delta = audit_delta(spec, cfg)
    if spec.selection == "fixed":
        threshold, evaluate = float(spec.threshold), np.ones(len(scores), dtype=bool)  # type: ignore[arg-type]
        selected = SelectionRecords(members=0, nonmembers=0)
    else:
        select = halves(is_member, cfg.seed)
        threshold = select_threshold(scores[select], is_member[select], delta, spec.confidence)
        evaluate = ~select
        selected = SelectionRecords(
            members=int((select & is_member).sum()), nonmembers=int((select & ~is_member).sum())
        )
    flagged = np.where(np.isnan(scores), False, scores >= threshold)[evaluate]
    member = is_member[evaluate]
    found = bounds.rate_bound(
        int((flagged & member).sum()),
        int(member.sum()),
        int((flagged & ~member).sum()),
        int((~member).sum()),
        delta,
        spec.confidence,
    )
    declared = declared_epsilon(spec, cfg)
    rates = asdict(found)  # the rates with their conservative ends, the counts, the inequality
    epsilon_lb, realized_fpr = rates.pop("epsilon_lb"), rates.pop("fpr")
    return answered(
        DPAudit(
            attack=label,
            kind="two-run",
            epsilon_lb=epsilon_lb,
            confidence=spec.confidence,
            delta=delta,
            selection=spec.selection,
            selection_records=selected,
            threshold=threshold,
            realized_fpr=realized_fpr,
            **rates,
            declared_epsilon=declared,
            accounted_epsilon=accounted,
            verdict=two_run_verdict(epsilon_lb, declared, spec.confidence),
            violated=None if declared is None else bool(epsilon_lb > declared),
            formula=bounds.FORMULA_TWO_RUN,
            source=bounds.SOURCE_TWO_RUN,
            assumes=TWO_RUN_ASSUMES,
        )
    )


def chosen_attack(labels: list[str], names: list[str], want: str) -> int:
    """The index of the attack ``dp_audit.attack`` names: a label first, else the first attack of that name."""
    want = want.lower()
    for pool, key in ((labels, want), (names, want), (names, want.split(" (")[0])):
        lowered = [x.lower() for x in pool]
        if key in lowered:
            return lowered.index(key)
    raise ValueError(f"dp_audit.attack: {want!r} is not one of the attacks run ({labels})")
