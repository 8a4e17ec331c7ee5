"""Records at risk under false-discovery-rate control: Benjamini-Hochberg on conformal p-values.

Testing every audited record at p < 0.05 flags about 5% of the non-members by chance alone (15 of 300).
Benjamini-Hochberg (1995) controls the expected share of false flags among the flagged records instead.
It needs the p-values independent or positively dependent (PRDS); conformal p-values that share one set
of calibration records are PRDS (Bates et al. 2023, "Testing for outliers with conformal p-values",
Theorem 2), so BH at level q on miaudit's calibrated p-values controls the FDR at q. The procedures themselves
are stats/multiple_testing.py's; this module holds what records at risk say about them.

A conformal p-value is never below 1 / (n + 1) with n calibration records: with m queries BH can flag a
record alone only when 1 / (n + 1) <= q / m, and records tied at that floor cannot be told apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import results
from .multiple_testing import STOREY_LAMBDA


def smallest_pvalue(n_calibration: int) -> float:
    """The conformal floor: no calibrated p-value is below 1 / (n + 1)."""
    return 1.0 / (n_calibration + 1)


# --- the FDR procedures the records at risk name (stats.screened; docs/concepts.md, records at risk) ---------------
PROCEDURE_NAMES = {"bh": "Benjamini-Hochberg", "storey-bh": "Storey's adaptive BH", "by": "Benjamini-Yekutieli"}
PROCEDURES = {
    "bh": "Benjamini-Hochberg: valid for independent or positively dependent (PRDS) p-values",
    "storey-bh": f"Storey's adaptive Benjamini-Hochberg (lambda {STOREY_LAMBDA}): BH at level FDR / pi0, pi0 the "
    "estimated share of non-members; valid for independent p-values and for conformal p-values sharing one null pool",
    "by": "Benjamini-Yekutieli: valid under any dependence, about ln(m) + 0.58 times stricter than BH",
}


@dataclass(frozen=True)
class RealizedFDP:
    """The share of flagged records that are non-members, where membership is known."""

    flagged: int
    false: int
    ci: tuple[float, float]  # Clopper-Pearson 95%: the FDR of the procedure that produced them

    @property
    def value(self) -> float:
        return self.false / self.flagged if self.flagged else 0.0

    def to_json(self, level: float) -> results.RealizedFDP:
        """results.json's realized FDP at FDR ``level``."""
        return results.RealizedFDP(
            value=self.value, ci=list(self.ci), flagged=self.flagged, non_members=self.false,
            above_level=self.ci[0] > level,  # above beyond chance: the whole interval
        )  # fmt: skip


def realized_fdp(flagged: np.ndarray, is_member: np.ndarray) -> RealizedFDP:
    """Non-members among the flagged records, with the exact (Clopper-Pearson) interval of that share."""
    from .metrics import clopper_pearson

    flagged, member = np.asarray(flagged, dtype=bool), np.asarray(is_member, dtype=bool)
    n, false = int(flagged.sum()), int((flagged & ~member).sum())
    return RealizedFDP(n, false, clopper_pearson(false, n) if n else (0.0, 1.0))
