"""LiRA (Carlini et al. 2022): per-record Gaussians on the references' rescaled logits.

Inputs: the target's and the K references' logits on the queries; online mode
also needs ``queries.ref_in`` (which references trained on each query).

- Offline (no reference trained on a query): a one-sided test against the OUT
  Gaussian, log p = log P(Z >= phi_0), Z ~ N(mu_out, sd_out^2), score = -log p.
  A record far *below* its OUT mean gets p near 1 and a low score; the released
  code's two-sided ``logpdf`` would flag it, which is the slip this avoids.
- Online: the IN vs OUT Gaussian log-likelihood ratio (BaVarIA paper eq. 2;
  it equals BASE4, Corollary 1). Needs an IN and an OUT reference per query.

Variances are MLE (ddof=0), as in the released code and the BaVarIA paper's
BASE4 = LiRA equivalence (appendix E.1). With fewer than 64 references the
released code replaces per-record variances by one global variance
(``fix_variance``; BaVarIA paper section 4.1); ``variance="auto"`` does the
same, and ``global``/``per_record`` force either. The global variance is the
total variance of the IN observations online (the released code uses
``np.std(dat_in)`` for both classes) and of the OUT observations offline.

Augmented queries (``queries.augment``): as the released code, one Gaussian per view
(per-record means per view; the global variance pooled over views and records), the
per-view log-likelihood ratios (online) or one-sided log tails (offline) summed into the
score; offline, the p-value is that of the views' mean standardised statistic
(``combined_log_sf``), not a product of dependent p-values.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ._refstats import (
    VAR_FLOOR,
    Signal,
    gaussian_llr,
    gaussian_log_sf,
    membership_masks,
    require_each,
    view_observations,
)
from ._robust import RobustParams, robust_global_var, robust_moments
from .base import AttackInputs, AttackParams, AttackResult
from .registry import register

# Carlini et al. 2022 switch to per-record variances once there are ~32
# observations per class, i.e. at 64 references in total.
PER_RECORD_VARIANCE_MIN_REFERENCES = 64


class LiraParams(AttackParams, RobustParams):
    """LiRA's options; ``center``, ``spread``, ``pool`` and ``trim`` choose robust estimators (``_robust``)."""

    signal: Signal = "rescaled_logit"
    variance: Literal["auto", "global", "per_record"] = "auto"


def uses_per_record_variance(variance: str, n_references: int) -> bool:
    """Whether LiRA estimates one variance per record (True) or one global variance."""
    if variance == "auto":
        return n_references >= PER_RECORD_VARIANCE_MIN_REFERENCES
    return variance == "per_record"


def _class_gaussian(
    z: np.ndarray, mask: np.ndarray, params: LiraParams, per_record: bool, global_var: float
) -> tuple[np.ndarray, np.ndarray]:
    """(per-record centre, variance) of one class: per-record variance or the global one."""
    m = robust_moments(z, mask, params)
    return m.mean, m.var if per_record else np.full(z.shape[1], global_var)


@register("lira", params=LiraParams, min_references=1, pvalues=True)
def lira(inputs: AttackInputs, params: LiraParams) -> AttackResult:
    """LiRA: per-record Gaussian on rescaled logits (offline one-sided test, online IN/OUT ratio)"""
    z0, z = view_observations(inputs.queries, params.signal)  # (A, n), (A, K, n): A views (queries.augment)
    member, out = membership_masks(inputs, "lira")
    per_record = uses_per_record_variance(params.variance, inputs.n_references)
    require_each(out, "lira", "OUT")
    if inputs.mode == "offline":
        # pooled over views, as released; not needed (nor computed) with per-record variances
        global_var = np.nan if per_record else robust_global_var(z, np.broadcast_to(out, z.shape), params)
        gauss = [_class_gaussian(z[a], out, params, per_record, global_var) for a in range(len(z))]
        log_sf = np.stack([gaussian_log_sf(z0[a], mu, var) for a, (mu, var) in enumerate(gauss)])
        log_p = log_sf[0] if len(z) == 1 else combined_log_sf(z0, gauss)
        mu_out, var_out = gauss[0]
        return AttackResult(
            scores=-log_sf.sum(axis=0), log_pvalues=log_p, extra={"mu_out": mu_out, "sd_out": np.sqrt(var_out)}
        )
    require_each(member, "lira", "IN")
    # the released code's np.std(dat_in), for both classes; not needed (nor computed) with per-record variances
    global_var = np.nan if per_record else robust_global_var(z, np.broadcast_to(member, z.shape), params)
    llr = np.zeros(z0.shape[1])
    means = []
    for a in range(len(z)):  # a Gaussian per view, log-likelihood ratios summed (released code)
        mu_in, var_in = _class_gaussian(z[a], member, params, per_record, global_var)
        mu_out, var_out = _class_gaussian(z[a], out, params, per_record, global_var)
        llr = llr + gaussian_llr(z0[a], mu_in, var_in, mu_out, var_out)
        means.append((mu_in, mu_out))
    return AttackResult(scores=llr, extra={"mu_in": means[0][0], "mu_out": means[0][1]})


def combined_log_sf(z0: np.ndarray, gauss: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """One-sided log p-value over A views: log P(N(0, 1) >= mean_a t_a), t_a the view's standardised statistic.

    The views of a record are strongly dependent, so their log p-values cannot be summed as
    independent tests (Fisher). The mean of A standard Gaussians has variance at most 1 whatever
    their correlation, so this p-value is conservative above the median (valid under the
    per-view Gaussian model); the score (summed log tails, the released code's summed
    log-likelihoods) ranks the same records nearly alike."""
    t = np.stack([(z0[a] - mu) / np.sqrt(np.maximum(var, VAR_FLOOR)) for a, (mu, var) in enumerate(gauss)])
    return gaussian_log_sf(t.mean(axis=0), np.zeros(t.shape[1]), np.ones(t.shape[1]))
