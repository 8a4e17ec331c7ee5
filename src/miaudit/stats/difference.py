"""The difference between two audits' attacks, with a bootstrap interval: TPR at each FPR level and AUC.

Members and non-members are resampled separately (stratified, their counts fixed), as for the AUC interval
in ``metrics``. When the two audits scored the same records (same data, same split), one set of resampled
records serves both (paired: the record-to-record variation common to both cancels); otherwise each audit is
resampled on its own (independent). The interval is the percentile interval of B - A over the resamples.
Each resample's metrics come from cumulated weights over the records sorted once, so there is no re-sorting.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import BOOTSTRAP_SEED, CONFIDENCE, bootstrap_counts, nan_lowest

RESAMPLES = 1000


@dataclass(frozen=True)
class Scored:
    """One attack's scores on one audit's records (higher = member)."""

    scores: np.ndarray
    is_member: np.ndarray


def stratified_weights(rng: np.random.Generator, is_member: np.ndarray, resamples: int) -> np.ndarray:
    """(resamples, n) multiplicities: members drawn with replacement among members, non-members among non-members."""
    member = np.asarray(is_member, dtype=bool)
    out = np.zeros((resamples, member.size))
    for group in (np.flatnonzero(member), np.flatnonzero(~member)):
        out[:, group] = bootstrap_counts(rng, resamples, group.size)
    return out


@dataclass(frozen=True)
class Weighted:
    """Per row of the weights: the AUC and, per FPR level (its str), the TPR."""

    auc: np.ndarray
    tpr_at_fpr: dict[str, np.ndarray]

    def measures(self) -> list[tuple[str, np.ndarray]]:
        """("auc", AUCs), then (level, TPRs) per FPR level."""
        return [("auc", self.auc), *self.tpr_at_fpr.items()]


def weighted_metrics(s: Scored, weights: np.ndarray, levels: tuple[float, ...]) -> Weighted:
    """Per row of ``weights`` (record multiplicities): TPR at each FPR level and AUC (ties one step, counted 1/2)."""
    scores, member = nan_lowest(s.scores), np.asarray(s.is_member, dtype=bool)
    order = np.argsort(-scores, kind="stable")
    w = np.atleast_2d(weights)[:, order]
    mem, non = w * member[order], w * ~member[order]
    group_end = np.r_[scores[order][1:] != scores[order][:-1], True]
    tp, fp = np.cumsum(mem, axis=1)[:, group_end], np.cumsum(non, axis=1)[:, group_end]
    n1, n0 = tp[:, -1:], fp[:, -1:]
    fp_before = np.concatenate([np.zeros((w.shape[0], 1)), fp[:, :-1]], axis=1)
    mem_g = np.diff(np.concatenate([np.zeros((w.shape[0], 1)), tp], axis=1), axis=1)
    non_g = fp - fp_before
    auc = 1 - ((mem_g * (fp_before + non_g / 2)).sum(axis=1) / (n1 * n0)[:, 0])
    tpr = {}
    for level in levels:
        ok = fp <= level * n0 + 1e-9
        tpr[str(level)] = np.where(ok, tp, 0.0).max(axis=1) / n1[:, 0]
    return Weighted(auc, tpr)


@dataclass(frozen=True)
class Difference:
    a: float
    b: float
    difference: float  # b - a
    ci: tuple[float, float]


@dataclass(frozen=True)
class Differences:
    """B - A in AUC and in TPR at each FPR level (its str)."""

    auc: Difference
    tpr_at_fpr: dict[str, Difference]


def compare(
    a: Scored,
    b: Scored,
    levels: tuple[float, ...],
    paired: bool,
    resamples: int = RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
) -> Differences:
    """B - A in AUC and TPR at each level, each with its bootstrap interval. ``paired``: the two hold the same
    records in the same order (the caller aligns them), resampled together."""
    rng = np.random.default_rng(seed)
    if paired and not np.array_equal(a.is_member, b.is_member):
        raise ValueError("compare: paired runs must hold the same records with the same membership")
    wa = stratified_weights(rng, a.is_member, resamples)
    wb = wa if paired else stratified_weights(rng, b.is_member, resamples)
    ones_a, ones_b = np.ones((1, a.scores.size)), np.ones((1, b.scores.size))
    point_a, point_b = weighted_metrics(a, ones_a, levels), weighted_metrics(b, ones_b, levels)
    boot_a, boot_b = weighted_metrics(a, wa, levels), weighted_metrics(b, wb, levels)
    tail = 100 * (1 - confidence) / 2
    out = {}
    for (key, pa_), (_, pb_), (_, ba), (_, bb) in zip(
        point_a.measures(), point_b.measures(), boot_a.measures(), boot_b.measures(), strict=True
    ):
        lo, hi = np.percentile(bb - ba, [tail, 100 - tail])
        pa, pb = float(pa_[0]), float(pb_[0])
        out[key] = Difference(pa, pb, pb - pa, (float(lo), float(hi)))
    auc = out.pop("auc")
    return Differences(auc, out)
