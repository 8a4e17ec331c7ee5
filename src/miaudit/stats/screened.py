"""Records at risk by conformal p-values within a screen that reads only the references (issue 45).

The calibration records (known non-members of the target, scored by the same attack) give each query a conformal
p-value, (1 + #{calibration >= s}) / (1 + n): exactly valid whatever the attack, and Benjamini-Hochberg on them
controls the FDR (they are PRDS: Bates et al. 2023, Theorem 2). Its weakness is resolution: no p-value is below
1 / (n + 1), and BH over m queries can only flag k records whose p-values are at most q k / m, so with n = m / 2
(the default split) it needs about 2 / q = 40 records at that floor before it names any. Two things lower that:

- **Storey's adaptive BH** (lambda 0.5, with the +1 finite-sample correction) runs BH at q / pi0, pi0 the estimated
  share of non-members; valid for conformal p-values sharing one calibration set (Marandon et al. 2024). With half
  the queries members it needs about half as many records at the floor.
- **A screen that never reads the target**: each record's vulnerability from the references alone (their mean loss
  on it: the records they find hard are the ones that leak, Carlini et al. 2022). The queries and the calibration
  records at or above a quantile of it, taken over both sets together, are kept; each kept query is ranked among the
  kept calibration records only. The references' outputs on a record do not depend on whether the target trained on
  it (offline no reference trained on a query; online every query and calibration record is IN for a random half),
  and the threshold is a symmetric function of all the records, so the kept non-members and the kept calibration
  records stay exchangeable given the screen: the conformal p-values stay valid and BH on the m kept queries keeps
  its guarantee. The screen fraction (0.5) was fixed on the design runs (benchmarks/atrisk2/protocol.md).

When nothing is flagged, ``Screened.needed_at_floor`` is the number that decides it: the records BH would need at the
smallest p-value the kept calibration records allow, against ``at_floor``, those there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import fdr, multiple_testing
from .pvalues import empirical_log_pvalues

SCREEN_FRACTION = 0.5
PROCEDURE = "storey-bh"


def screen(v_queries: np.ndarray, v_calibration: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """The queries and calibration records kept: vulnerability at or above the (1 - fraction) quantile of both sets
    together (NaN: never kept). ``fraction`` 1 keeps every record."""
    vq = np.asarray(v_queries, dtype=np.float64)
    vc = np.asarray(v_calibration, dtype=np.float64)
    if fraction >= 1:
        return np.ones(vq.shape, bool), np.ones(vc.shape, bool)
    both = np.concatenate([vq, vc])
    both = both[np.isfinite(both)]
    if both.size == 0:
        return np.zeros(vq.shape, bool), np.zeros(vc.shape, bool)
    threshold = np.quantile(both, 1 - fraction)
    return np.nan_to_num(vq, nan=-np.inf) >= threshold, np.nan_to_num(vc, nan=-np.inf) >= threshold


@dataclass(frozen=True)
class Screened:
    """Conformal p-values within a screen and the FDR procedure's q-values on them; NaN where a query is not tested."""

    log_p: np.ndarray
    q: np.ndarray
    n_calibration: int  # calibration records kept: the p-values' resolution
    pi0: float  # Storey's estimate of the share of non-members among the tested queries
    level: float

    @property
    def tested(self) -> np.ndarray:
        return np.isfinite(self.q)

    @property
    def flagged(self) -> np.ndarray:
        return np.nan_to_num(self.q, nan=np.inf) <= self.level

    @property
    def m(self) -> int:
        return int(self.tested.sum())

    @property
    def floor(self) -> float:
        return fdr.smallest_pvalue(self.n_calibration)

    @property
    def at_floor(self) -> int:
        return int(np.sum(np.exp(self.log_p[self.tested]) <= self.floor * (1 + 1e-9)))

    @property
    def needed_at_floor(self) -> int:
        """Records the procedure needs at the floor before it flags any: k with floor <= level k / (m pi0)."""
        return max(1, math.ceil(self.floor * self.m * self.pi0 / self.level - 1e-9))

    @property
    def calibration_needed(self) -> int:
        """Kept calibration records for one record alone to be flaggable: 1 / (n + 1) <= level / (m pi0)."""
        return max(0, math.ceil(self.m * self.pi0 / self.level - 1e-9) - 1)


def screened_conformal(
    scores: np.ndarray,
    calibration: np.ndarray,
    keep_queries: np.ndarray,
    keep_calibration: np.ndarray,
    level: float,
) -> Screened:
    """Storey's adaptive BH at ``level`` on the kept queries' conformal p-values among the kept calibration records'
    scores (module docstring). NaN scores get p = 1; NaN calibration scores are dropped."""
    s = np.asarray(scores, dtype=np.float64)
    cal = np.asarray(calibration, dtype=np.float64)[np.asarray(keep_calibration, bool)]
    cal = cal[~np.isnan(cal)]
    keep = np.asarray(keep_queries, bool)
    log_p = np.full(s.shape, np.nan)
    q = np.full(s.shape, np.nan)
    pi0 = 1.0
    if keep.any() and cal.size:
        lp = empirical_log_pvalues(s[keep], cal)
        lp[np.isnan(s[keep])] = 0.0
        p = np.exp(lp)
        pi0 = multiple_testing.storey_null_share(p)
        log_p[keep] = lp
        q[keep] = multiple_testing.storey_qvalues(p, pi0)
    return Screened(log_p, q, int(cal.size), pi0, level)
