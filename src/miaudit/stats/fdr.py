"""Records at risk under false-discovery-rate control: Benjamini-Hochberg on conformal p-values.

Testing every audited record at p < 0.05 flags about 5% of the non-members by chance alone (15 of 300).
Benjamini-Hochberg (1995) controls the expected share of false flags among the flagged records instead.
It needs the p-values independent or positively dependent (PRDS); conformal p-values that share one set
of calibration records are PRDS (Bates et al. 2023, "Testing for outliers with conformal p-values",
Theorem 2), so BH at level q on miaudit's calibrated p-values controls the FDR at q.

A conformal p-value is never below 1 / (n + 1) with n calibration records: with m queries BH can flag a
record alone only when 1 / (n + 1) <= q / m, and records tied at that floor cannot be told apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import results


def bh_qvalues(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values), capped at 1; NaN where the p-value is NaN.

    A record is flagged at FDR level q when its q-value is <= q (BH's step-up rule over the finite p-values).
    """
    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    if finite.any():  # scipy.stats.false_discovery_control(method="bh") (held to it in tests/stats/test_fdr.py),
        q[finite] = _bh(p[finite])  # without importing scipy.stats (a second of a scores-only audit)
    return q


def _bh(p: np.ndarray) -> np.ndarray:
    """q_(i) = min over j >= i of m p_(j) / j (p sorted ascending), capped at 1."""
    order = np.argsort(p, kind="stable")
    scaled = p[order] * len(p) / np.arange(1, len(p) + 1)
    q = np.empty_like(p)
    q[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return q


def smallest_pvalue(n_calibration: int) -> float:
    """The conformal floor: no calibrated p-value is below 1 / (n + 1)."""
    return 1.0 / (n_calibration + 1)


# --- the FDR procedures the records at risk name (stats.screened; docs/concepts.md, records at risk) ---------------
STOREY_LAMBDA = 0.5


def storey_null_share(p_values: np.ndarray, lam: float = STOREY_LAMBDA) -> float:
    """Storey's estimate of the share of true nulls, (1 + #{p > lambda}) / (m (1 - lambda)), capped at 1.

    The +1 is Storey, Taylor and Siegmund's (2004) finite-sample correction: with it, BH at level q / pi0 controls
    the FDR at q for independent p-values; for conformal p-values sharing one null pool, Marandon et al. (2024,
    adaptive novelty detection with FDR guarantee) show the same. tests/stats/test_fdr.py checks both by simulation."""
    p = np.asarray(p_values, dtype=np.float64)
    p = p[np.isfinite(p)]
    if p.size == 0:
        return 1.0
    return float(min(1.0, (1 + np.sum(p > lam)) / (p.size * (1 - lam))))


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
