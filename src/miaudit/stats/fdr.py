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

import math
from dataclasses import dataclass

import numpy as np

FDR_DEFAULT = 0.05


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


def calibration_needed(n_queries: int, fdr: float) -> int:
    """Calibration records needed for BH at ``fdr`` to be able to flag a single record among ``n_queries``:
    the floor 1 / (n + 1) must reach BH's first threshold fdr / m."""
    return max(0, math.ceil(n_queries / fdr - 1e-9) - 1)


@dataclass(frozen=True)
class AtRisk:
    """BH's answer for one attack's p-values."""

    fdr: float
    count: int  # records with q <= fdr
    n_tested: int  # records with a finite p-value
    at_floor: int  # records whose p-value is the conformal floor (0 without calibration)

    @property
    def false_discoveries_bound(self) -> float:
        """BH's guarantee in counts: the expected number of false flags is at most fdr x count."""
        return self.fdr * self.count


def at_risk(p_values: np.ndarray, fdr: float, n_calibration: int | None) -> AtRisk:
    """Count the records BH flags at ``fdr``; ``n_calibration`` None: raw p-values (no floor)."""
    p = np.asarray(p_values, dtype=np.float64)
    q = bh_qvalues(p)
    floor = 0 if n_calibration is None else int(np.sum(p <= smallest_pvalue(n_calibration) * (1 + 1e-9)))
    return AtRisk(fdr, int(np.sum(q <= fdr)), int(np.isfinite(p).sum()), floor)
