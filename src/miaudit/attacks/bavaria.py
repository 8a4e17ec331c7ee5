"""The exponential-family hierarchy BASE1-4 and BaVarIA-n/-t (BaVarIA paper, arXiv 2603.11799).

Every attack scores a scalar statistic z (oriented so higher means member) of
the target, z_0, against the K references' z_k on the same record, split into
the IN class (references that trained on it) and the OUT class.

- BASE1 (section 3.2, Corollary 2): z_0 - pooled centre of all z_k. On the loss
  with log-sum-exp centring it is log p_0 - log mean_k p_k, RMIA's ratio at
  a = 1 (ROC-equivalent to RMIA at gamma = 1, appendix E.1).
- BASE2: (mu_1 - mu_0)(z_0 - (mu_1 + mu_0)/2), one variance for all records.
- BASE3: the same divided by the record's pooled within-class variance.
- BASE4: the full Gaussian LLR with per-class MLE moments (= LiRA, Corollary 1).
- BaVarIA (section 4, appendix D): NIG(mu_0m, kappa_0, alpha_0, beta_0m) prior
  per class, conjugate update (eq. 14), Student-t predictive (eq. 15) for
  BaVarIA-t; BaVarIA-n plugs the MLE mean and the posterior mean variance
  beta'/(alpha'-1) into the Gaussian LLR. Empirical Bayes (D.2): mu_0m and
  beta_0m = (alpha_0 - 1) * var_m are the global mean and variance of the
  class-m observations, kappa_0 = 1, alpha_0 = 2. As K grows both tend to
  LiRA with per-record variances (D.3).

Offline, no reference trained on a query, so the IN class has n_in = 0. As
the paper does for offline BaVarIA, the prior then supplies the IN class: its
mean and variance are the global IN moments, measured on the population
records that references did train on (``population.ref_in``). Offline,
BaVarIA also returns the one-sided p-value of z_0 under the OUT predictive.

BASE2-4 are defined with per-record IN and OUT estimates only (section 3.2,
B.6), so they run online only, and refuse a record without an IN or an OUT
observation. Substituting the global IN mean offline, as an earlier version
did, is not BASE2: for many records the factor (global IN mean - record's OUT
mean) is negative (45% of digits queries) and the ranking inverts. Offline,
the members of this family are BaVarIA-n and BaVarIA-t, whose prior supplies
the IN class by design (BASE1 needs no IN class at all).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import Field
from scipy.special import log_ndtr

from ..errors import AttackRequirementError
from ..stats.pvalues import t_logsf
from ._refstats import (
    VAR_FLOOR,
    Moments,
    Signal,
    center,
    gaussian_llr,
    gaussian_log_sf,
    global_moments,
    log_mean_exp,
    membership_masks,
    moments,
    observations,
    require_each,
    view_observations,
)
from ._robust import RobustParams, robust_moments
from .base import AttackInputs, AttackParams, AttackResult
from .registry import register


class Base1Params(AttackParams):
    signal: Signal = "loss"
    centering: Literal["logsumexp", "mean", "median"] = "logsumexp"


class GaussianParams(AttackParams):
    signal: Signal = "rescaled_logit"


class BaseParams(GaussianParams, RobustParams):
    """BASE2-4: the Gaussian options and robust estimators of the per-record moments (``_robust``)."""


class BavariaParams(GaussianParams):
    kappa0: float = Field(default=1.0, gt=0, description="prior strength of the mean (D.2: 1)")
    alpha0: float = Field(default=2.0, gt=1, description="prior shape of the variance (D.2: 2; E[sigma^2] finite)")


@register("base1", params=Base1Params, min_references=1)
def base1(inputs: AttackInputs, params: Base1Params) -> AttackResult:
    """BASE1: target statistic minus the pooled reference centre (= RMIA at gamma=1 on loss/log-sum-exp)"""
    z0, z = observations(inputs.queries, params.signal)
    member, out = membership_masks(inputs, "base1")
    pooled = member | out  # online: every reference; offline: the OUT ones
    if params.centering == "logsumexp":
        # z = -loss gives log(mean_k p_k): the confidence-domain average (Corollary 2)
        return AttackResult(scores=z0 - log_mean_exp(z, pooled))
    return AttackResult(scores=z0 - center(z, pooled, params.centering))


@dataclass(frozen=True)
class ClassStats:
    """The target statistic, per-record IN/OUT moments and the global (prior) class moments."""

    z0: np.ndarray
    inside: Moments
    outside: Moments
    global_in: tuple[float, float]  # (mean, variance) of all IN observations
    global_out: tuple[float, float]


def _global_class_moments(
    inputs: AttackInputs, z: np.ndarray, mask: np.ndarray, member: bool, signal: Signal, attack: str
) -> tuple[float, float]:
    """Global class moments from the queries, else (offline IN class) from the population."""
    found = global_moments(z, mask)
    pop = inputs.population
    if not np.isfinite(found[0]) and pop is not None and pop.ref_in is not None:
        pop_in = np.asarray(pop.ref_in, dtype=bool)
        z_pop = view_observations(pop, signal)[1]  # (A, K, Z): pooled over the views too
        found = global_moments(z_pop, np.broadcast_to(pop_in if member else ~pop_in, z_pop.shape))
    if not np.isfinite(found[0]):
        raise AttackRequirementError(
            f"{attack}: no {'IN' if member else 'OUT'} reference observations; offline it needs "
            "population records with known reference membership (population.ref_in)"
        )
    return found


def class_stats(inputs: AttackInputs, signal: Signal, attack: str) -> list[ClassStats]:
    """One ClassStats per view of ``queries.augment`` (one without it); the global (prior) class moments are
    pooled over the views, as LiRA's released code pools its fixed variance."""
    z0, z = view_observations(inputs.queries, signal)  # (A, n), (A, K, n)
    member, out = membership_masks(inputs, attack)
    global_in = _global_class_moments(inputs, z, np.broadcast_to(member, z.shape), True, signal, attack)
    global_out = _global_class_moments(inputs, z, np.broadcast_to(out, z.shape), False, signal, attack)
    return [ClassStats(z0[a], moments(z[a], member), moments(z[a], out), global_in, global_out) for a in range(len(z))]


def _per_record(inputs: AttackInputs, params: BaseParams, attack: str) -> tuple[np.ndarray, Moments, Moments]:
    """(z_0, IN moments, OUT moments) per record; every record needs both classes (BASE2-4 have no prior)."""
    z0, z = observations(inputs.queries, params.signal)
    member, out = membership_masks(inputs, attack)
    require_each(member, attack, "IN")
    require_each(out, attack, "OUT")
    return z0, robust_moments(z, member, params), robust_moments(z, out, params)


def _mean_gap(z0: np.ndarray, inside: Moments, outside: Moments) -> tuple[np.ndarray, np.ndarray]:
    """(mu_1 - mu_0, z_0 - (mu_1 + mu_0)/2): the factors shared by BASE2 and BASE3."""
    return inside.mean - outside.mean, z0 - (inside.mean + outside.mean) / 2


# BASE2-4 online only: offline they would need a per-record IN estimate that does not exist.
_ONLINE: dict[str, Any] = {
    "modes": ("online",),
    "mode_note": "BASE2-4 need per-record IN estimates; offline, use bavaria-n or bavaria-t "
    "(the offline members of this family) or base1",
}


@register("base2", params=BaseParams, min_references=1, **_ONLINE)
def base2(inputs: AttackInputs, params: BaseParams) -> AttackResult:
    """BASE2: Gaussian LLR with per-record IN/OUT means and one constant variance (online)"""
    gap, centred = _mean_gap(*_per_record(inputs, params, "base2"))
    return AttackResult(scores=gap * centred)


@register("base3", params=BaseParams, min_references=2, **_ONLINE)
def base3(inputs: AttackInputs, params: BaseParams) -> AttackResult:
    """BASE3: Gaussian LLR with per-record IN/OUT means and a pooled per-record variance (online)"""
    z0, inside, outside = _per_record(inputs, params, "base3")
    gap, centred = _mean_gap(z0, inside, outside)
    pooled_var = (inside.sum_sq + outside.sum_sq) / (inside.n + outside.n)
    return AttackResult(scores=gap / np.maximum(pooled_var, VAR_FLOOR) * centred)


@register("base4", params=BaseParams, min_references=2, **_ONLINE)
def base4(inputs: AttackInputs, params: BaseParams) -> AttackResult:
    """BASE4: Gaussian LLR with per-record IN/OUT means and variances (= LiRA, per-record variance; online)"""
    z0, inside, outside = _per_record(inputs, params, "base4")
    return AttackResult(scores=gaussian_llr(z0, inside.mean, inside.var, outside.mean, outside.var))


@dataclass(frozen=True)
class NIGPosterior:
    """NIG(mu, kappa, alpha, beta) posterior of one class per record (eq. 14)."""

    mu: np.ndarray
    kappa: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray

    def predictive(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Student-t predictive (eq. 15): (nu = 2 alpha', location mu', scale sigma~)."""
        scale2 = self.beta * (self.kappa + 1) / (self.alpha * self.kappa)
        return 2 * self.alpha, self.mu, np.sqrt(scale2)

    def mean_variance(self) -> np.ndarray:
        """E[sigma^2 | data] = beta' / (alpha' - 1): BaVarIA-n's variance."""
        return self.beta / (self.alpha - 1)


def nig_posterior(m: Moments, prior: tuple[float, float], kappa0: float, alpha0: float) -> NIGPosterior:
    """Conjugate update of the empirical-Bayes NIG prior (D.2) with n observations (eq. 14)."""
    mu0, var0 = prior
    beta0 = var0 * (alpha0 - 1)  # so that the prior E[sigma^2] is the global class variance
    n = m.n
    zbar = np.where(n > 0, m.mean, 0.0)
    kappa = kappa0 + n
    return NIGPosterior(
        mu=(kappa0 * mu0 + n * zbar) / kappa,
        kappa=kappa,
        alpha=alpha0 + n / 2,
        beta=beta0 + m.sum_sq / 2 + kappa0 * n * (zbar - mu0) ** 2 / (2 * kappa),
    )


ViewResult = tuple[np.ndarray, np.ndarray, np.ndarray]  # (LLR, standardised statistic, one-sided log p), (N,)


def _over_views(
    inputs: AttackInputs,
    params: BavariaParams,
    attack: str,
    per_view: Callable[[ClassStats, NIGPosterior, NIGPosterior], ViewResult],
    log_sf: Callable[[np.ndarray], np.ndarray],
) -> AttackResult:
    """``per_view`` on every view of ``queries.augment``; LLRs summed (LiRA's released code). Offline, one
    view's p-value is its own; several views' is ``log_sf`` of their mean standardised statistic (the views
    are dependent: see ``lira.combined_log_sf``)."""
    parts = [
        per_view(
            cs,
            nig_posterior(cs.inside, cs.global_in, params.kappa0, params.alpha0),
            nig_posterior(cs.outside, cs.global_out, params.kappa0, params.alpha0),
        )
        for cs in class_stats(inputs, params.signal, attack)
    ]
    log_p = None
    if inputs.mode == "offline":
        log_p = parts[0][2] if len(parts) == 1 else log_sf(np.mean([t for _, t, _ in parts], axis=0))
    return AttackResult(scores=np.sum([llr for llr, _, _ in parts], axis=0), log_pvalues=log_p)


@register("bavaria-t", params=BavariaParams, min_references=1, pvalues=True)
def bavaria_t(inputs: AttackInputs, params: BavariaParams) -> AttackResult:
    """BaVarIA-t: Student-t predictive LLR under empirical-Bayes NIG priors"""
    nu_out: list[np.ndarray] = []  # degrees of freedom of the OUT predictive: the same in every view

    from scipy import stats  # here: importing scipy.stats takes a second of every `miaudit score`

    def view(cs: ClassStats, post_in: NIGPosterior, post_out: NIGPosterior) -> ViewResult:
        nu_in, loc_in, scale_in = post_in.predictive()
        nu, loc_out, scale_out = post_out.predictive()
        nu_out.append(nu)
        llr = stats.t.logpdf(cs.z0, nu_in, loc_in, scale_in) - stats.t.logpdf(cs.z0, nu, loc_out, scale_out)
        t = (cs.z0 - loc_out) / scale_out
        return llr, t, t_logsf(t, nu)

    return _over_views(inputs, params, "bavaria-t", view, lambda t: t_logsf(t, nu_out[0]))


@register("bavaria-n", params=BavariaParams, min_references=1, pvalues=True)
def bavaria_n(inputs: AttackInputs, params: BavariaParams) -> AttackResult:
    """BaVarIA-n: Gaussian LLR with MLE means and NIG posterior-mean variances"""

    def view(cs: ClassStats, post_in: NIGPosterior, post_out: NIGPosterior) -> ViewResult:
        # MLE means as in LiRA; at n = 0 the posterior mean is the prior (global) mean
        mu_in = np.where(cs.inside.n > 0, cs.inside.mean, post_in.mu)
        mu_out = np.where(cs.outside.n > 0, cs.outside.mean, post_out.mu)
        var_in, var_out = post_in.mean_variance(), post_out.mean_variance()
        t = (cs.z0 - mu_out) / np.sqrt(np.maximum(var_out, VAR_FLOOR))
        return gaussian_llr(cs.z0, mu_in, var_in, mu_out, var_out), t, gaussian_log_sf(cs.z0, mu_out, var_out)

    return _over_views(inputs, params, "bavaria-n", view, lambda t: log_ndtr(-t))  # = norm.logsf, bit for bit
