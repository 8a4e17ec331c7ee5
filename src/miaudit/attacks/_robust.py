"""Robust per-record estimators of a class's centre and spread (BaVarIA paper, appendix B.6, "Robust
estimation"), shared by LiRA, BASE2-4 and the Gaussian families of ``exp-family``.

- centre: ``mean``; ``median``; ``trimmed`` (drop floor(trim * n) observations at each end, then the mean).
- spread (a variance): ``std`` (MLE, ddof=0); ``winsorized`` (observations clamped to the record's
  trim and 1 - trim quantiles, then the variance around their mean); ``iqr`` ((q75 - q25) / 1.349,
  squared: the variance of a Gaussian with that interquartile range).
- pool: ``mean`` (the centre above) or ``logsumexp``: the centre log(mean_k exp(z_k)), the softmin of
  the loss (z = -loss) the paper lists, which replaces the arithmetic centre.

Defaults (mean, std, mean) reproduce the plain MLE moments exactly.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from ._refstats import Moments, log_mean_exp, moments

Center = Literal["mean", "median", "trimmed"]
Spread = Literal["std", "winsorized", "iqr"]
Pool = Literal["mean", "logsumexp"]
IQR_TO_SD = 1.3489795003921634  # interquartile range of N(0, 1)


class RobustParams(BaseModel):
    """Robust estimator options (mixed into an attack's parameters)."""

    center: Center = Field(default="mean", description="per-record centre: mean, median or trimmed mean")
    spread: Spread = Field(default="std", description="per-record spread: std, winsorized variance or IQR")
    pool: Pool = Field(default="mean", description="logsumexp: centre log mean exp(z) instead")
    trim: float = Field(default=0.1, ge=0, lt=0.5, description="trimmed / winsorized: fraction cut at each end")


def _sorted(z: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each column's masked values sorted ascending with nan after them, counts n, row ranks)."""
    return np.sort(np.where(mask, z, np.nan), axis=0), mask.sum(axis=0), np.arange(z.shape[0])[:, None]


def _quantile(srt: np.ndarray, n: np.ndarray, q: float) -> np.ndarray:
    """Per column, the q-quantile (linear interpolation) of its first n sorted values."""
    pos = q * np.maximum(n - 1, 0)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    cols = np.arange(srt.shape[1])
    return srt[lo, cols] + (pos - lo) * (srt[hi, cols] - srt[lo, cols])


def robust_center(z: np.ndarray, mask: np.ndarray, how: Center, trim: float = 0.1, pool: Pool = "mean") -> np.ndarray:
    """Per-record centre of z over the masked rows (nan where none)."""
    if pool == "logsumexp":
        return log_mean_exp(z, mask)
    if how == "mean":
        return moments(z, mask).mean
    if how == "median":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-nan column: no observation
            return np.nanmedian(np.where(mask, z, np.nan), axis=0)
    srt, n, ranks = _sorted(z, mask)
    cut = np.floor(trim * n)
    keep = (ranks >= cut) & (ranks < n - cut)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(keep, srt, 0.0).sum(axis=0) / keep.sum(axis=0)


def robust_var(z: np.ndarray, mask: np.ndarray, how: Spread, trim: float = 0.1) -> np.ndarray:
    """Per-record spread of z over the masked rows, as a variance (nan where none)."""
    if how == "std":
        return moments(z, mask).var
    srt, n, _ = _sorted(z, mask)
    if how == "iqr":
        return np.square((_quantile(srt, n, 0.75) - _quantile(srt, n, 0.25)) / IQR_TO_SD)
    clamped = np.clip(z, _quantile(srt, n, trim), _quantile(srt, n, 1 - trim))
    return moments(clamped, mask).var


def robust_moments(z: np.ndarray, mask: np.ndarray, params: RobustParams) -> Moments:
    """Per-record (n, centre, spread) under the robust options: ``Moments`` with robust entries."""
    if (params.center, params.spread, params.pool) == ("mean", "std", "mean"):
        return moments(z, mask)  # the defaults: the plain moments, in one pass
    return Moments(
        n=mask.sum(axis=0),
        mean=robust_center(z, mask, params.center, params.trim, params.pool),
        var=robust_var(z, mask, params.spread, params.trim),
    )


def robust_global_var(z: np.ndarray, mask: np.ndarray, params: RobustParams) -> float:
    """The spread of every masked observation pooled over records (LiRA's global variance), robustly."""
    pooled = z[mask]
    if pooled.size == 0:
        return float("nan")
    return float(robust_var(pooled[:, None], np.ones((pooled.size, 1), bool), params.spread, params.trim)[0])
