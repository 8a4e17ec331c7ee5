"""Frontier candidates: the strongest offline attack per reference budget K, built from the seeds' parts.

Notation: K references, M posterior draws of each reference's last layer (``bmia.reference_moments``);
per query x, m_k(x) and v_k(x) are the mean and variance (ddof=1) of the score over reference k's
draws, s_0(x) the target's score, s_k(x) reference k's own (MAP) score.

- ``eb-bmia``: MR-BMIA (BMIA at K = 1) with empirical-Bayes priors on the per-record intra (posterior)
  and inter-model variances. Each is shrunk toward a global value with ``prior_dof`` = nu_0 prior
  degrees of freedom: the scale beta'/alpha' of the normal-inverse-gamma posterior of sigma^2 with
  alpha_0 = nu_0 / 2, beta_0 = nu_0 g / 2 and a flat prior on the record's mean (BaVarIA appendix D.2
  with kappa_0 -> 0), after d degrees of freedom with sample variance s^2:

      sigma^2 = (nu_0 g + d s^2) / (nu_0 + d),    its own degrees of freedom nu_0 + d.

  Intra: s^2 = mean_k v_k(x), d = K (M - 1), g = the mean of s^2 over the scored records. Inter:
  s^2 = max(var_k m_k(x) - sigma^2_intra / M, 0) (MR-BMIA eq. 40), d = K - 1, and g from the
  population, which no model of the target trained on: g = mean_k var_r(s_0(r) - s_k(r)) / 2 over the
  population records r that reference k did not train on (target and reference k are then two
  independent OUT models, so the difference has twice the inter-model variance). Then MR-BMIA's test
  (eq. 38) with these variances and Welch-Satterthwaite degrees of freedom (eq. 41) on the two
  terms' own degrees of freedom. With nu_0 = 0 it is MR-BMIA exactly (BMIA at K = 1, where the
  inter term has no degrees of freedom and is left out); with nu_0 > 0, at K = 1 it adds the global
  inter-model variance that one posterior cannot see (the BMIA paper's miscalibration at K = 1).
- ``lr-bmia``: offline likelihood ratio. OUT: N(mu(x), sigma^2(x)), mu = mean_k m_k(x) and sigma^2 =
  u_inter + u_intra, eb-bmia's null variance. IN: the same shifted by delta and scaled by rho^2,
  N(mu + delta, rho^2 sigma^2), where, over the population records r with known membership in
  reference k (IN_k: k trained on r; OUT_k: it did not),
  delta = mean_k [mean_{IN_k} s_k(r) - mean_{OUT_k} s_k(r)] and
  log rho = mean_k log [sd_{IN_k} s_k(r) / sd_{OUT_k} s_k(r)] (ddof=0): the gap each reference shows
  between its own training records and its held-out records, the role BaVarIA's global IN prior plays
  offline. Score: log N(s_0; mu + delta, rho^2 sigma^2) - log N(s_0; mu, sigma^2); log p-value: eb-bmia's.
  By default (``scale: false``) rho = 1, and the score is delta (s_0 - mu - delta / 2) / sigma^2, increasing
  in s_0: with rho < 1 a record far above mu + delta scored low (digits, dev seed 0: AUC 0.40).
- ``rmia-draws``: RMIA whose references each count as 1 + M models, the reference itself and M draws
  of its last-layer posterior: reference k's confidence p_k(x) is replaced by
  (p_k(x) + M pbar_k(x)) / (1 + M), pbar_k the mean confidence over its draws, on the queries and the
  population alike; then RMIA's pairwise ratio, ``a`` and p-value unchanged. M = 0 is RMIA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from ..errors import AttackRequirementError
from ..posteriors.kinds import import_laplace
from ..stats import signals
from ..stats.pvalues import t_logsf
from ..stats.signals import Signal
from ._refstats import gaussian_llr, observations
from .base import AttackInputs, AttackResult
from .bmia import MRBMIAParams, reference_moments
from .registry import register
from .rmia import RmiaParams, rmia_result


class EBBMIAParams(MRBMIAParams):
    prior_dof: float = Field(
        default=4.0, ge=0, description="prior degrees of freedom nu_0 of both variances (2 alpha_0; 0: MR-BMIA)"
    )


class LRBMIAParams(EBBMIAParams):
    scale: bool = Field(
        default=False,
        description="scale the IN variance by rho^2 (False: rho = 1; on digits seed 0 rho < 1 inverted the ranking)",
    )


class RmiaDrawsParams(RmiaParams, MRBMIAParams):
    samples: int = Field(default=1000, ge=0, description="posterior draws M per reference (0: RMIA)")
    signal: Literal[Signal.confidence] = Field(
        default=Signal.confidence, description="RMIA's true-class confidence (fixed)"
    )


@dataclass(frozen=True)
class NullModel:
    """The pooled Student-t null of the target score per record (eb-bmia)."""

    mean: np.ndarray  # mu(x) = mean_k m_k(x)
    u_inter: np.ndarray  # (1 + 1/K) sigma^2_inter
    u_intra: np.ndarray  # (1 + 1/(K M)) sigma^2_intra
    df: np.ndarray  # Welch-Satterthwaite

    @property
    def variance(self) -> np.ndarray:
        return self.u_inter + self.u_intra


def shrunk_variance(
    sample_var: np.ndarray, dof: float, global_var: float, prior_dof: float
) -> tuple[np.ndarray, float]:
    """(nu_0 g + d s^2) / (nu_0 + d) and nu_0 + d: the scale of the NIG posterior of sigma^2 (module
    docstring); with no degrees of freedom at all, a zero variance with infinite degrees of freedom."""
    total = prior_dof + dof
    if total == 0:
        return np.zeros_like(sample_var), np.inf
    return (prior_dof * global_var + dof * sample_var) / total, total


def population_inter_variance(inputs: AttackInputs, signal: Signal) -> float:
    """g_inter = mean_k var_r(s_0(r) - s_k(r)) / 2 over the population records r reference k did not train on."""
    pop = inputs.require("population")
    s0, s = observations(pop, signal.value)
    out = np.ones(s.shape, dtype=bool) if pop.ref_in is None else ~np.asarray(pop.ref_in, dtype=bool)
    halves = [np.var(s0[o] - sk[o]) / 2 for sk, o in zip(s, out, strict=True) if o.sum() > 1]
    if not halves:
        raise AttackRequirementError("needs population records that a reference did not train on")
    return float(np.mean(halves))


def eb_null(
    means: np.ndarray, within_var: np.ndarray, n_samples: int, prior_dof: float, global_inter: float
) -> NullModel:
    """The eb-bmia null from (K, N) posterior means and variances (module docstring)."""
    k, m = means.shape[0], n_samples
    raw_intra = within_var.mean(axis=0)
    intra, df_intra = shrunk_variance(raw_intra, k * (m - 1.0), float(raw_intra.mean()), prior_dof)
    spread = means.var(axis=0, ddof=1) if k > 1 else np.zeros(means.shape[1])
    inter, df_inter = shrunk_variance(np.maximum(spread - intra / m, 0.0), k - 1.0, global_inter, prior_dof)
    u_inter, u_intra = (1.0 + 1.0 / k) * inter, (1.0 + 1.0 / (k * m)) * intra
    denom = u_inter**2 / df_inter + u_intra**2 / df_intra
    df = np.full(u_intra.shape, df_intra)
    np.divide((u_inter + u_intra) ** 2, denom, out=df, where=denom > 0)
    return NullModel(mean=means.mean(axis=0), u_inter=u_inter, u_intra=u_intra, df=df)


def _null(inputs: AttackInputs, params: EBBMIAParams) -> tuple[np.ndarray, NullModel]:
    """(the target's score s_0, the eb-bmia null) on the queries."""
    means, variances = reference_moments(inputs, params)
    global_inter = population_inter_variance(inputs, params.signal) if params.prior_dof > 0 else 0.0
    q = inputs.queries
    s0 = signals.oriented(params.signal, q.target_logits, q.labels)
    return s0, eb_null(means, variances, params.samples, params.prior_dof, global_inter)


def in_out_gap(inputs: AttackInputs, signal: Signal) -> tuple[float, float]:
    """(delta, rho): the references' mean score gap and sd ratio between their own training records and
    their held-out records, on the population (module docstring)."""
    pop = inputs.require("population")
    if pop.ref_in is None:
        raise AttackRequirementError("needs the population records' reference membership (population.ref_in)")
    _, s = observations(pop, signal.value)
    gaps, log_ratios = [], []
    for sk, member in zip(s, np.asarray(pop.ref_in, dtype=bool), strict=True):
        if member.sum() > 1 and (~member).sum() > 1:
            gaps.append(sk[member].mean() - sk[~member].mean())
            log_ratios.append(np.log(sk[member].std() / sk[~member].std()))
    if not gaps:
        raise AttackRequirementError("needs population records both in and out of a reference's training set")
    return float(np.mean(gaps)), float(np.exp(np.mean(log_ratios)))


def _t_result(s0: np.ndarray, null: NullModel) -> tuple[np.ndarray, np.ndarray]:
    """(t, log p) of s_0 under the null."""
    t = (s0 - null.mean) / np.sqrt(null.variance)
    return t, t_logsf(t, null.df)


# posterior-based, offline-only tests (laplace-torch imported untimed)
_OFFLINE = {"modes": ("offline",), "needs": frozenset({"models", "population"}), "warmup": import_laplace}


@register("eb-bmia", params=EBBMIAParams, min_references=1, pvalues=True, **_OFFLINE)
def eb_bmia(inputs: AttackInputs, params: EBBMIAParams) -> AttackResult:
    """EB-BMIA: (MR-)BMIA t-test with empirical-Bayes NIG priors shrinking each record's variances"""
    s0, null = _null(inputs, params)
    t, log_p = _t_result(s0, null)
    return AttackResult(scores=-log_p, log_pvalues=log_p, extra={"t": t, "df": null.df})


@register("lr-bmia", params=LRBMIAParams, min_references=1, pvalues=True, **_OFFLINE)
def lr_bmia(inputs: AttackInputs, params: LRBMIAParams) -> AttackResult:
    """LR-BMIA: offline likelihood ratio, OUT from the posterior, IN shifted by the references' IN/OUT gap"""
    s0, null = _null(inputs, params)
    delta, rho = in_out_gap(inputs, params.signal)
    var = null.variance
    score = gaussian_llr(s0, null.mean + delta, (rho**2 if params.scale else 1.0) * var, null.mean, var)
    t, log_p = _t_result(s0, null)
    return AttackResult(scores=score, log_pvalues=log_p, extra={"t": t, "delta": np.full(t.shape, delta)})


def _mixed_log_confidence(
    inputs: AttackInputs, params: RmiaDrawsParams, records: Literal["queries", "population"]
) -> np.ndarray:
    """log((p_k + M pbar_k) / (1 + M)) per reference k and record, (K, n)."""
    held = inputs.queries if records == "queries" else inputs.require("population")
    log_p = observations(held, "loss")[1]
    if params.samples == 0:
        return log_p
    pbar = reference_moments(inputs, params, records, signal=Signal.confidence)[0]
    m = params.samples
    return np.log((np.exp(log_p) + m * pbar) / (1 + m))


@register(
    "rmia-draws",
    params=RmiaDrawsParams,
    min_references=1,
    pvalues=True,
    needs=frozenset({"models", "population"}),
    warmup=import_laplace,
)
def rmia_draws(inputs: AttackInputs, params: RmiaDrawsParams) -> AttackResult:
    """RMIA-draws: RMIA with M posterior draws of each reference's head as additional reference models"""
    return rmia_result(
        inputs,
        params,
        _mixed_log_confidence(inputs, params, "queries"),
        _mixed_log_confidence(inputs, params, "population"),
    )
