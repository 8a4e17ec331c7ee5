"""Per-record maximum-likelihood fits of the Gamma and Beta families (BaVarIA paper, appendix B.6).

Every function fits each column of a (K, N) matrix over the rows a (K, N) mask selects, vectorised
over records: N independent one- or two-dimensional root-finding problems solved by safeguarded
Newton iterations from the method-of-moments start the paper gives.

- Gamma (shape k, scale theta): log k - digamma(k) = log mean - mean log, theta = mean / k.
- Beta (alpha, beta): digamma(alpha) - digamma(alpha + beta) = mean log p,
  digamma(beta) - digamma(alpha + beta) = mean log(1 - p).

Both take the logarithms of the observations, not the observations, so that a confidence within
1e-16 of 1 (log(1 - p) computed from the logits, not from p) keeps its information.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, polygamma

NEWTON_STEPS = 100
SHAPE_MAX = 1e250  # a cap for degenerate fits (all observations equal); confidences near 1 need alpha ~ 1/(1 - p)
SHAPE_MIN = 1e-8
GAMMA_SHAPE_MAX = 1e8  # a Gamma shape beyond this: the observations are (nearly) all equal


def _masked_mean(v: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n = mask.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(mask, v, 0.0).sum(axis=0) / n


def gamma_mle(x: np.ndarray, log_x: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-record (shape k, scale theta) of a Gamma fitted by maximum likelihood; nan where no row is masked."""
    mean = _masked_mean(x, mask)
    mean_log = _masked_mean(log_x, mask)
    var = _masked_mean(np.square(x - mean), mask)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.maximum(np.log(mean) - mean_log, 0.5 / GAMMA_SHAPE_MAX)  # >= 0 by Jensen; 0 only when all are equal
        k = np.clip(np.where(var > 0, mean**2 / var, 1.0 / s), SHAPE_MIN, GAMMA_SHAPE_MAX)  # method of moments
    for _ in range(NEWTON_STEPS):
        f = np.log(k) - digamma(k) - s  # decreasing and convex in k: Newton from either side converges
        step = f / (1.0 / k - polygamma(1, k))
        k = np.clip(np.where(np.isfinite(step), np.maximum(k - step, k / 10), k), SHAPE_MIN, GAMMA_SHAPE_MAX)
    return k, mean / k


def beta_mle(log_p: np.ndarray, log_q: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-record (alpha, beta) of a Beta fitted by maximum likelihood to p (log p and log q = log(1 - p)
    given); nan where no row is masked."""
    g1, g2 = _masked_mean(log_p, mask), _masked_mean(log_q, mask)
    p = np.exp(log_p)
    m = _masked_mean(p, mask)
    v = _masked_mean(np.square(p - m), mask)
    with np.errstate(invalid="ignore", divide="ignore"):
        common = np.where(v > 0, m * (1 - m) / v - 1, 1.0)  # method of moments, else a flat start
    a = np.clip(np.where(common > 0, m * common, 1.0), SHAPE_MIN, SHAPE_MAX)
    b = np.clip(np.where(common > 0, (1 - m) * common, 1.0), SHAPE_MIN, SHAPE_MAX)
    for _ in range(NEWTON_STEPS):
        psi_ab, tri_ab = digamma(a + b), polygamma(1, a + b)
        f1, f2 = digamma(a) - psi_ab - g1, digamma(b) - psi_ab - g2
        j11, j22 = polygamma(1, a) - tri_ab, polygamma(1, b) - tri_ab
        det = j11 * j22 - tri_ab**2
        with np.errstate(invalid="ignore", divide="ignore"):
            da = (j22 * f1 + tri_ab * f2) / det
            db = (j11 * f2 + tri_ab * f1) / det
        ok = np.isfinite(da) & np.isfinite(db)
        a = np.clip(np.where(ok, np.maximum(a - da, a / 10), a), SHAPE_MIN, SHAPE_MAX)
        b = np.clip(np.where(ok, np.maximum(b - db, b / 10), b), SHAPE_MIN, SHAPE_MAX)
    return a, b
