"""Statistics of reference-model observations, shared by Attack-R, LiRA, RMIA, BASE1-4 and BaVarIA.

Reference observations come as a (K, N) matrix ``z`` (reference k's signal on
record i, oriented so that higher means member) with (K, N) boolean masks that
say which observations belong to the IN or the OUT class of each record.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import log_ndtr, logsumexp

from ..errors import AttackRequirementError
from ..stats import signals
from .base import AttackInputs, RecordSet

Signal = Literal["hinge", "rescaled_logit", "loss", "confidence"]
Center = Literal["mean", "median"]

# LiRA's released code adds 1e-30 to every standard deviation; flooring the
# variance keeps a zero MLE variance (one observation, or ties) finite the same way.
VAR_FLOOR = 1e-30


def observations(records: RecordSet, signal: Signal) -> tuple[np.ndarray, np.ndarray]:
    """(target signal (n,), reference signals (K, n)), oriented so higher means member."""
    return (
        signals.oriented(signal, records.target_logits, records.labels),
        signals.oriented(signal, records.ref_logits, records.labels),
    )


def view_observations(records: RecordSet, signal: Signal) -> tuple[np.ndarray, np.ndarray]:
    """(target signal (A, n), reference signals (A, K, n)) on the A views of ``queries.augment`` (A = 1 without
    it), oriented so higher means member."""
    if records.target_views is None or records.ref_views is None:
        target, refs = observations(records, signal)
        return target[None], refs[None]
    return (
        signals.oriented(signal, records.target_views, records.labels),
        signals.oriented(signal, records.ref_views, records.labels),
    )


def membership_masks(inputs: AttackInputs, attack: str) -> tuple[np.ndarray, np.ndarray]:
    """(IN mask, OUT mask), each (K, N), for the queries under the run's mode.

    Online, queries.ref_in says which references trained on each query. Offline,
    no IN observation may be used: the IN mask is empty and the OUT mask holds
    every reference that did not train on the query (all of them when ref_in is None).
    """
    q = inputs.queries
    k, n = q.ref_logits.shape[:2]
    if inputs.mode == "online":
        if q.ref_in is None:
            raise AttackRequirementError(
                f"{attack}: online mode needs reference models that trained on the queries (IN references)"
            )
        ref_in = np.asarray(q.ref_in, dtype=bool)
        return ref_in, ~ref_in
    out = np.ones((k, n), dtype=bool) if q.ref_in is None else ~np.asarray(q.ref_in, dtype=bool)
    return np.zeros((k, n), dtype=bool), out


def require_each(mask: np.ndarray, attack: str, what: str) -> None:
    """Raise unless every record (column) has at least one observation in ``mask``."""
    lacking = int((mask.sum(axis=0) == 0).sum())
    if lacking:
        raise AttackRequirementError(f"{attack}: {lacking} queries have no {what} reference; use more references")


@dataclass(frozen=True)
class Moments:
    """Per-record moments of one class's observations, MLE (ddof=0); nan where n == 0."""

    n: np.ndarray  # (N,) number of observations
    mean: np.ndarray  # (N,)
    var: np.ndarray  # (N,) sum of squared deviations / n

    @property
    def sum_sq(self) -> np.ndarray:
        """Sum of squared deviations S = n * var (0 where n == 0)."""
        return np.where(self.n > 0, self.var * self.n, 0.0)


def moments(z: np.ndarray, mask: np.ndarray) -> Moments:
    """Per-record mean and MLE variance of z over the rows where mask is True."""
    n = mask.sum(axis=0)
    if n.size and n.min() == z.shape[0]:  # every row observed (offline, no reference trained on a query)
        mean = z.mean(axis=0)
        dev = z - mean
        return Moments(n=n, mean=mean, var=np.einsum("kn,kn->n", dev, dev) / z.shape[0])  # no squared copy
    weight = mask.astype(np.float64)  # masked sums as weighted ones: einsum makes no (K, N) temporaries beyond it
    if not np.isfinite(z).all():  # 0 x inf is nan: an unobserved infinite value must not count
        z = np.where(mask, z, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.einsum("kn,kn->n", z, weight) / n
        dev = z - mean
        dev *= weight
        var = np.einsum("kn,kn->n", dev, dev) / n
    return Moments(n=n, mean=mean, var=var)


def center(z: np.ndarray, mask: np.ndarray, how: Center) -> np.ndarray:
    """Per-record mean or median of z over the rows where mask is True (nan where none)."""
    if how == "mean":
        return moments(z, mask).mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan column: no observation
        return np.nanmedian(np.where(mask, z, np.nan), axis=0)


def global_moments(z: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """Mean and (ddof=0) variance of every masked observation pooled over records (nan if none).

    This is the total variance, as LiRA's released code computes its fixed
    variance (``np.std(dat_in)`` over all records) and as the BaVarIA paper's
    empirical-Bayes prior takes the "global class-m variance" (appendix D.2).
    """
    pooled = z[mask]
    if pooled.size == 0:
        return float("nan"), float("nan")
    return float(pooled.mean()), float(pooled.var())


def log_mean_exp(z: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """log(mean of exp(z) over the masked rows), per record; nan where no row is masked."""
    n = mask.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return logsumexp(z, b=mask.astype(np.float64), axis=0) - np.log(n)


def gaussian_llr(
    z0: np.ndarray, mu_in: np.ndarray, var_in: np.ndarray, mu_out: np.ndarray, var_out: np.ndarray
) -> np.ndarray:
    """log N(z0; mu_in, var_in) - log N(z0; mu_out, var_out): LiRA's score (BaVarIA paper eq. 2/7)."""
    sd_in = np.sqrt(np.maximum(var_in, VAR_FLOOR))
    sd_out = np.sqrt(np.maximum(var_out, VAR_FLOOR))
    return norm_logpdf(z0, mu_in, sd_in) - norm_logpdf(z0, mu_out, sd_out)


def gaussian_log_sf(z0: np.ndarray, mu: np.ndarray, var: np.ndarray) -> np.ndarray:
    """One-sided log p-value log P(Z >= z0), Z ~ N(mu, var): upper tail, never a saturating CDF."""
    return log_ndtr(-((z0 - mu) / np.sqrt(np.maximum(var, VAR_FLOOR))))  # = scipy.stats.norm.logsf, bit for bit


_LOG_SQRT_2PI = np.log(np.sqrt(2 * np.pi))


def norm_logpdf(x: np.ndarray, mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """scipy.stats.norm.logpdf(x, mu, sd), the same operations in the same order (bit for bit), without
    importing scipy.stats (a second of a scores-only audit)."""
    y = (x - mu) / sd
    return (-(y**2) / 2.0 - _LOG_SQRT_2PI) - np.log(sd)
