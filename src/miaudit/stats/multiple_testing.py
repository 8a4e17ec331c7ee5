"""Multiple testing, once for all four audits: Holm's step-down procedure (family-wise error) and
Benjamini-Hochberg with Storey's adaptive variant (false discovery rate), as adjusted p-values.

- ``holm``: the membership verdict (stats/verdict.py, over attacks and FPR levels) and the DP verdict
  (dp/verdict.py, over observers) reject test i at alpha when its adjusted p-value is <= alpha; the chance of any
  false rejection is then at most alpha whatever the dependence between the tests (Holm 1979).
- ``bh_qvalues``: records at risk (stats/screened.py, report/), the unlearning audit's named records
  (unlearning/verify.py) and scores.csv's q-values: flag a record at FDR q when its q-value is <= q. BH needs the
  p-values independent or positively dependent (PRDS; conformal p-values sharing one calibration set are).
- ``storey_null_share`` and ``storey_qvalues``: Storey's adaptive BH, BH at level q / pi0 with pi0 the estimated
  share of true nulls (stats/screened.py).

Every function takes an array of p-values and returns an array of the same shape in the same order; none imports
scipy.stats (a second of a scores-only audit), tests/stats/test_multiple_testing.py holds them to scipy and to
hand-computed cases.
"""

from __future__ import annotations

import numpy as np

STOREY_LAMBDA = 0.5


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values, adjusted p_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)) (p sorted
    ascending): reject test i at alpha when adjusted[i] <= alpha (family-wise error <= alpha)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = stepped
    return out


def bh_qvalues(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values), capped at 1; NaN where the p-value is NaN.

    A record is flagged at FDR level q when its q-value is <= q (BH's step-up rule over the finite p-values).
    """
    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    if finite.any():  # scipy.stats.false_discovery_control(method="bh"), without importing scipy.stats
        q[finite] = _bh(p[finite])
    return q


def _bh(p: np.ndarray) -> np.ndarray:
    """q_(i) = min over j >= i of m p_(j) / j (p sorted ascending), capped at 1."""
    order = np.argsort(p, kind="stable")
    scaled = p[order] * len(p) / np.arange(1, len(p) + 1)
    q = np.empty_like(p)
    q[order] = np.minimum(np.minimum.accumulate(scaled[::-1])[::-1], 1.0)
    return q


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


def storey_qvalues(p_values: np.ndarray, pi0: float) -> np.ndarray:
    """Storey's adaptive BH q-values: pi0 times BH's, capped at 1 (flagged at FDR q when <= q)."""
    return np.minimum(1.0, pi0 * bh_qvalues(p_values))
