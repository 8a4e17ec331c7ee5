"""Per-record p-values from a pooled null, and the realized FDP of the records-at-risk procedure on pseudo-targets.

``experiment.pseudo_targets`` scores the references in the target's place; this module is the arithmetic on
those scores, torch-free. A query's p-value is the rank of its score among the pooled null scores,
(1 + #{null >= s}) / (1 + N): with N = P x m (P pseudo-targets, m records) it reaches far below the conformal
floor of the calibration records. It is valid when the target's non-members score like the pseudo-targets'
non-members; ``validate`` measures how far that holds: each pseudo-target in turn plays the target, its p-values
come from the pool of the others, the procedure flags its records, and since its membership is known the
flagged non-members are counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import fdr
from .pvalues import empirical_log_pvalues


@dataclass(frozen=True)
class PseudoTargetScores:
    """One reference in the target's place: scores of records it did not train on and of records it did."""

    null: np.ndarray
    members: np.ndarray


def pool(pseudo: list[PseudoTargetScores]) -> np.ndarray:
    return np.concatenate([p.null for p in pseudo])


def log_pvalues(scores: np.ndarray, null: np.ndarray) -> np.ndarray:
    """log p of each score among the pooled null scores (NaN scores and NaN nulls rank lowest)."""
    return empirical_log_pvalues(scores, null)


@dataclass(frozen=True)
class Validation:
    """The procedure run on each pseudo-target against the pool of the others."""

    procedure: str
    fdp: fdr.RealizedFDP  # all pseudo-targets' flags together
    worst: float  # the highest single pseudo-target's FDP
    true_discoveries: int  # members flagged over all pseudo-targets: the procedure's power there

    def to_json(self, level: float) -> dict:
        return {
            "procedure": self.procedure,
            **self.fdp.to_json(level),
            "worst_pseudo_target": self.worst,
            "members_flagged": self.true_discoveries,
        }


def validate(pseudo: list[PseudoTargetScores], level: float, procedure: str) -> Validation | None:
    """Leave one pseudo-target out: its nulls and members tested against the others' pooled nulls at ``level``.

    None with fewer than two pseudo-targets (nothing to pool against) or no members to test."""
    if len(pseudo) < 2 or not any(p.members.size for p in pseudo):
        return None
    flagged, member, worst = [], [], 0.0
    for k, held in enumerate(pseudo):
        null = pool([p for j, p in enumerate(pseudo) if j != k])
        s = np.concatenate([held.null, held.members])
        q = fdr.procedure_qvalues(np.exp(log_pvalues(s, null)), procedure)
        f = q <= level
        is_member = np.r_[np.zeros(held.null.size, bool), np.ones(held.members.size, bool)]
        flagged.append(f)
        member.append(is_member)
        worst = max(worst, fdr.realized_fdp(f, is_member).value)
    f, m = np.concatenate(flagged), np.concatenate(member)
    return Validation(procedure, fdr.realized_fdp(f, m), worst, int((f & m).sum()))
