"""Per-record p-values from a pooled null, and the realized FDP of the records-at-risk procedure on pseudo-targets.

``experiment.pseudo_targets`` scores the references in the target's place; this module is the arithmetic on
those scores, torch-free. A query's p-value is the rank of its score among the pooled null scores,
(1 + #{null >= s}) / (1 + N): with N = P x m (P pseudo-targets, m records) it reaches far below the conformal
floor of the calibration records. It is valid when the target's non-members score like the pseudo-targets'
non-members; ``validate`` measures how far that holds: each pseudo-target in turn plays the target, its p-values
come from the pool of the others, the procedure flags its records, and since its membership is known the
flagged non-members are counted.

The references resemble each other more than they resemble the target (each pair shares half its training data;
the target shares none with them), so the target's null scores spread wider than a pseudo-target's: on Location
(seed 3) LiRA's 99th percentile was 3.8 on the target's non-members and 3.2 in the pool, and the raw pool gave a
realized FDP of 7-13% at FDR 5%. Each model's scores are therefore put on its own null's scale before pooling:
``(s - median) / (q90 - median)`` of that model's null, the pseudo-target's from its own null scores, the
target's from its calibration records (known non-members of it). What remains is a difference in the shape of the
tail beyond the 90th percentile, which ``calibration_check`` measures on those calibration records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import results
from . import fdr
from .pvalues import empirical_log_pvalues


@dataclass(frozen=True)
class PseudoTargetScores:
    """One reference in the target's place: scores of records it did not train on and of records it did."""

    null: np.ndarray
    members: np.ndarray


NULL_QUANTILE = 0.9


def null_scale(null: np.ndarray) -> tuple[float, float]:
    """(median, q90 - median) of a model's null scores: the location and upper-tail scale that ``standardized``
    removes (scale 1 where the null is degenerate)."""
    med, hi = np.nanquantile(null, [0.5, NULL_QUANTILE])
    scale = float(hi - med)
    return float(med), scale if np.isfinite(scale) and scale > 0 else 1.0


def standardized(scores: np.ndarray, null: np.ndarray) -> np.ndarray:
    """Scores on the scale of a model's own null scores (module docstring)."""
    med, scale = null_scale(null)
    return (np.asarray(scores, dtype=np.float64) - med) / scale


def pool(pseudo: list[PseudoTargetScores], scaled: bool = True) -> np.ndarray:
    """The pseudo-targets' null scores, each on its own null's scale (``scaled``) or as they are."""
    return np.concatenate([standardized(p.null, p.null) if scaled else p.null for p in pseudo])


def log_pvalues(scores: np.ndarray, null: np.ndarray) -> np.ndarray:
    """log p of each score among the pooled null scores (NaN scores and NaN nulls rank lowest)."""
    return empirical_log_pvalues(scores, null)


TAIL_RECORDS = 10


def tail_calibrated(log_p: np.ndarray, calibration_log_p: np.ndarray, tail: int = TAIL_RECORDS) -> np.ndarray:
    """Pooled log p-values calibrated on the target's own non-members, extended below their resolution.

    Down to the ``tail``-th smallest calibration value t0 this is the conformal p-value with the pooled p-value as
    score, (1 + #{calibration <= p}) / (n + 1): valid whatever the pool. Below t0, where the calibration records
    are too few to rank against, it is p x G(t0) / t0, G(t0) = (1 + tail) / (n + 1): the pool's shape carried
    on at the ratio the target's non-members showed at t0 (continuous at t0). The one assumption left is that the
    target's null tail is no heavier relative to the pool below t0 than at t0; ``validate`` measures the whole
    procedure where membership is known."""
    cal = np.sort(calibration_log_p[np.isfinite(calibration_log_p)])
    n = cal.size
    if n == 0:
        return log_p
    tail = min(tail, n)
    out = np.log1p(np.searchsorted(cal, log_p, side="right")) - np.log1p(n)
    t0 = cal[tail - 1]
    below = log_p < t0
    out[below] = log_p[below] + (np.log1p(tail) - np.log1p(n)) - t0
    return np.minimum(out, 0.0)


def target_log_pvalues(
    scores: np.ndarray, calibration: np.ndarray | None, pseudo: list[PseudoTargetScores]
) -> np.ndarray:
    """A model's records against the pool of ``pseudo``: with calibration scores (its known non-members) on their
    scale and tail-calibrated on them; without, raw scores against the raw pool (valid only as far as the model
    is exchangeable with the pseudo-targets)."""
    if calibration is None or not np.isfinite(calibration).any():
        return log_pvalues(scores, pool(pseudo, scaled=False))
    null = pool(pseudo)
    log_p = log_pvalues(standardized(scores, calibration), null)
    return tail_calibrated(log_p, log_pvalues(standardized(calibration, calibration), null))


@dataclass(frozen=True)
class Validation:
    """The procedure run on each pseudo-target against the pool of the others."""

    procedure: str
    fdp: fdr.RealizedFDP  # all pseudo-targets' flags together
    worst: float  # the highest single pseudo-target's FDP
    true_discoveries: int  # members flagged over all pseudo-targets: the procedure's power there

    def to_json(self, level: float) -> results.PseudoTargetFDP:
        """results.json's realized FDP on the pseudo-targets at FDR ``level``."""
        return results.PseudoTargetFDP.model_validate(
            {
                "procedure": self.procedure,
                **self.fdp.to_json(level).model_dump(),
                "worst_pseudo_target": self.worst,
                "members_flagged": self.true_discoveries,
            }
        )


def validate(
    pseudo: list[PseudoTargetScores], level: float, procedure: str, n_calibration: int | None
) -> Validation | None:
    """Leave one pseudo-target out: its nulls and members tested against the others' pool at ``level``, as the
    target is (``target_log_pvalues``): with ``n_calibration`` of its nulls (at most half, every other one) as its
    calibration records, or none.

    None with fewer than two pseudo-targets (nothing to pool against) or no members to test."""
    if len(pseudo) < 2 or not any(p.members.size for p in pseudo):
        return None
    flagged, member, worst = [], [], 0.0
    for k, held in enumerate(pseudo):
        others = [p for j, p in enumerate(pseudo) if j != k]
        nulls, cal = held.null, None
        if n_calibration:
            picked = np.zeros(nulls.size, dtype=bool)
            picked[::2][: min(n_calibration, nulls.size // 2)] = True
            nulls, cal = held.null[~picked], held.null[picked]
        log_p = target_log_pvalues(np.concatenate([nulls, held.members]), cal, others)
        f = fdr.procedure_qvalues(np.exp(log_p), procedure) <= level
        is_member = np.r_[np.zeros(nulls.size, bool), np.ones(held.members.size, bool)]
        flagged.append(f)
        member.append(is_member)
        worst = max(worst, fdr.realized_fdp(f, is_member).value)
    f, m = np.concatenate(flagged), np.concatenate(member)
    return Validation(procedure, fdr.realized_fdp(f, m), worst, int((f & m).sum()))


def calibration_check(calibration_scores: np.ndarray, null: np.ndarray) -> results.CalibrationCheck:
    """The target's own known non-members (its calibration records, standardized by themselves) against the pool:
    the share at pooled p <= 0.01, with its exact interval; above 1% means the pool is anti-conservative for this
    target in the tail."""
    from .metrics import clopper_pearson

    s = calibration_scores[np.isfinite(calibration_scores)]
    p = np.exp(log_pvalues(standardized(s, s), null))
    k = int((p <= 0.01).sum())
    ci = clopper_pearson(k, s.size)
    return results.CalibrationCheck(
        records=int(s.size), share_at_p_0_01=k / s.size if s.size else None, ci=list(ci),
        anti_conservative=bool(ci[0] > 0.01),
    )  # fmt: skip
