"""Exponential-family LLR attacks beyond LiRA's Gaussian (BaVarIA paper, section 3.1, appendix B).

One attack, ``exp-family``, with ``family`` choosing the distribution of a per-record statistic and
the statistic it models (Table 1 of the paper):

| family | statistic | parameters per class | estimate (B.6) |
|---|---|---|---|
| exponential | loss l | rate lambda | 1 / mean |
| gamma | loss l | shape k, scale theta | log k - digamma(k) = log mean - mean log (``_mle``) |
| beta | confidence p | alpha, beta | the digamma equations (``_mle``) |
| gaussian | log-odds phi | mean, variance | centre and spread (robust options, ``_robust``) |
| gaussian-equal-var | log-odds phi | mean; one variance for both classes | as gaussian, pooled (= BASE3) |

Online, the score is the LLR log f(z_0 | IN params) - log f(z_0 | OUT params) with per-record IN and
OUT estimates. Offline (only OUT observations) it is the one-sided test of the paper's LiRA-offline
form: score = -log P(Z at least as member-like as z_0 | OUT), the lower tail of the loss, the upper
tail of the confidence and the log-odds. Offline the two Gaussian families coincide (one class).

``dispersion`` (the shape, concentration or variance) is per record, or one global value per class
fitted on every observation of the class pooled over records, with the per-record mean kept (the
analogue of LiRA's global variance); ``auto`` is per record from 64 references on, as LiRA does.

Every statistic comes from the log-odds phi (stable for confidences within 1e-16 of 1): log p =
-log(1 + e^-phi), log(1 - p) = -log(1 + e^phi), loss l = -log p, log l = -phi once e^-phi underflows.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator
from scipy.special import betaln, gammaln

from ..stats import signals
from ._mle import beta_mle, gamma_mle
from ._refstats import VAR_FLOOR, gaussian_llr, gaussian_log_sf, membership_masks, norm_logpdf, require_each
from ._robust import RobustParams, robust_global_var, robust_moments
from .base import AttackInputs, AttackParams, AttackResult, RecordSet
from .lira import PER_RECORD_VARIANCE_MIN_REFERENCES
from .registry import register

Family = Literal["exponential", "gamma", "beta", "gaussian", "gaussian-equal-var"]
GAUSSIAN = ("gaussian", "gaussian-equal-var")


class ExpFamilyParams(AttackParams, RobustParams):
    family: Family = Field(default="gaussian", description="exponential|gamma (loss), beta (confidence), gaussian")
    dispersion: Literal["auto", "global", "per_record"] = Field(
        default="auto", description="shape/variance per record or one per class (auto: per record from 64 refs)"
    )

    @model_validator(mode="after")
    def _robust_only_gaussian(self) -> ExpFamilyParams:
        changed = [k for k in ("center", "spread", "pool") if getattr(self, k) != RobustParams.model_fields[k].default]
        if changed and self.family not in GAUSSIAN:
            raise ValueError(f"{changed[0]}: robust estimators apply to the gaussian families, not {self.family}")
        return self


class Stats:
    """The statistics of one record set's logits, all from the log-odds phi (target (n,), refs (K, n))."""

    def __init__(self, records: RecordSet):
        self.phi0 = signals.rescaled_logit(records.target_logits, records.labels)
        self.phi = signals.compute(signals.Signal.rescaled_logit, records.ref_logits, records.labels)

    @staticmethod
    def logs(phi: np.ndarray) -> dict[str, np.ndarray]:
        loss = np.logaddexp(0.0, -phi)
        with np.errstate(divide="ignore"):
            log_loss = np.where(phi > 30, -phi, np.log(loss))
        return {"loss": loss, "log_loss": log_loss, "log_p": -loss, "log_q": -np.logaddexp(0.0, phi)}


def _log_density(family: str, s: dict[str, np.ndarray], theta: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    a, b = theta
    if family == "exponential":  # a = rate
        return np.log(a) - a * s["loss"]
    if family == "gamma":  # (shape, scale)
        return (a - 1) * s["log_loss"] - s["loss"] / b - gammaln(a) - a * np.log(b)
    if family == "beta":  # (alpha, beta)
        return (a - 1) * s["log_p"] + (b - 1) * s["log_q"] - betaln(a, b)
    return norm_logpdf(s["phi"], a, np.sqrt(np.maximum(b, VAR_FLOOR)))  # (mean, variance)


def _log_tail(family: str, s: dict[str, np.ndarray], theta: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """log P(a draw is at least as member-like as the target's statistic): low loss, high p or phi."""
    a, b = theta
    if family == "exponential":
        return np.log(-np.expm1(-a * s["loss"]))
    if family in ("gamma", "beta"):
        from scipy import stats  # here: importing scipy.stats costs every audit without these families a second

        if family == "gamma":
            return stats.gamma.logcdf(s["loss"], a, scale=b)
        return stats.beta.logcdf(np.exp(s["log_q"]), b, a)  # P(P >= p0) = P(1 - P <= 1 - p0), 1 - P ~ Beta(b, a)
    return gaussian_log_sf(s["phi"], a, b)


def _fit(family: str, s: dict[str, np.ndarray], mask: np.ndarray, params: ExpFamilyParams, per_record: bool):
    """Per-record parameters of one class (each (n,)); a global dispersion is fitted on the pooled class."""
    if family == "exponential":
        mean = np.where(mask, s["loss"], 0.0).sum(0) / mask.sum(0)
        return 1.0 / np.maximum(mean, 1e-300), np.zeros_like(mean)
    if family in GAUSSIAN:
        m = robust_moments(s["phi"], mask, params)
        return m.mean, m.var if per_record else np.full(m.mean.shape, robust_global_var(s["phi"], mask, params))
    pooled = {k: v[mask][:, None] for k, v in s.items()}
    one = np.ones((int(mask.sum()), 1), bool)
    if family == "gamma":
        k, theta = gamma_mle(s["loss"], s["log_loss"], mask)
        if not per_record:
            k = np.full(k.shape, gamma_mle(pooled["loss"], pooled["log_loss"], one)[0][0])
            theta = (np.where(mask, s["loss"], 0.0).sum(0) / mask.sum(0)) / k
        return k, theta
    alpha, beta = beta_mle(s["log_p"], s["log_q"], mask)
    if not per_record:  # per-record mean confidence, one concentration alpha + beta per class
        ga, gb = (v[0] for v in beta_mle(pooled["log_p"], pooled["log_q"], one))
        mean_p = np.where(mask, np.exp(s["log_p"]), 0.0).sum(0) / mask.sum(0)
        alpha, beta = mean_p * (ga + gb), (1 - mean_p) * (ga + gb)
    return np.maximum(alpha, 1e-8), np.maximum(beta, 1e-8)


# p-values offline only: there it is a one-sided test (the target's tail under the fitted OUT law, which the run
# calibrates as any test's); online it is an IN/OUT likelihood ratio, a score without a p-value
@register("exp-family", params=ExpFamilyParams, min_references=1, pvalues=("offline",))
def exp_family(inputs: AttackInputs, params: ExpFamilyParams) -> AttackResult:
    """Exponential-family LLR (family: exponential, gamma, beta, gaussian, gaussian-equal-var; online, offline)"""
    st = Stats(inputs.queries)
    refs = {**Stats.logs(st.phi), "phi": st.phi}
    target = {**Stats.logs(st.phi0), "phi": st.phi0}
    member, out = membership_masks(inputs, "exp-family")
    require_each(out, "exp-family", "OUT")
    per_record = params.dispersion == "per_record" or (
        params.dispersion == "auto" and inputs.n_references >= PER_RECORD_VARIANCE_MIN_REFERENCES
    )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        theta_out = _fit(params.family, refs, out, params, per_record)
        if inputs.mode == "offline":
            log_p = np.minimum(_log_tail(params.family, target, theta_out), 0.0)
            return AttackResult(scores=-log_p, log_pvalues=log_p)
        require_each(member, "exp-family", "IN")
        theta_in = _fit(params.family, refs, member, params, per_record)
        if params.family == "gaussian-equal-var":  # BASE3: one variance per record for both classes
            n_in, n_out = member.sum(0), out.sum(0)
            pooled = (theta_in[1] * n_in + theta_out[1] * n_out) / (n_in + n_out)
            theta_in, theta_out = (theta_in[0], pooled), (theta_out[0], pooled)
        if params.family in GAUSSIAN:
            llr = gaussian_llr(st.phi0, theta_in[0], theta_in[1], theta_out[0], theta_out[1])
        else:
            llr = _log_density(params.family, target, theta_in) - _log_density(params.family, target, theta_out)
    return AttackResult(scores=llr)
