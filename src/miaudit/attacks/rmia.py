"""RMIA (Zarifzadeh et al. 2024): pairwise likelihood ratios against population samples.

Inputs: the target's and the K references' logits on the queries and on the
population records (non-members of the target), and ``population.ref_in``.
With p(x|theta) the true-class softmax confidence,

    ratio_x = p(x|theta_target) / Pr(x),   score(x) = #{z : ratio_x / ratio_z > gamma} / Z.

Offline, Pr(x) = (1+a)/2 * mean_k p(x|theta_k) + (1-a)/2 over the references
that did not train on x: the paper's linear approximation of the missing IN
half, p_IN ~ a p_OUT + (1 - a). Each population sample z is treated exactly as
a query, from the references that did not train on it. Online, Pr(x) is the
mean over all references (IN and OUT) and ``a`` is unused.

``a`` is chosen as the authors do: a grid a in {0, 0.1, ..., 1}, attacking
reference 0 as a pseudo-target with the others as references, on the
population records whose membership in reference 0 is known; the a with the
best AUC wins (AUC of ratio_x, which the gamma = 1 score ranks identically up
to ties). With one reference no pseudo-target remains, and ``default_a`` = 0.3
is used, of the order the authors report for offline runs.

The score is a sorted search of ratio_x / gamma among the sorted ratio_z, in log
space: O((N + Z) log Z) time and O(N + Z) memory, never an N x Z matrix. The
population rank also gives a one-sided p-value (the population records are
non-members of the target), as in Attack-P.

Ties. The fraction is a step function of ratio_x: every query between the same
two population ratios ties, and with one reference many members and non-members
tie at 1.0, exactly in the low-FPR tail. The score therefore interpolates the
fraction linearly in log ratio_x between the population ratios (it equals the
fraction at each of them, and lies within 1/Z below it in between; beyond the
largest it rises towards 1 as d / (1 + d), d the distance in mean population
gaps, and below the smallest it falls towards -1/Z likewise). It is strictly
increasing in ratio_x, so it breaks the fraction's ties by the continuous log
ratio and ranks every untied pair as the fraction does: the same ROC where the
fraction has no ties. ``extra["fraction"]`` keeps the fraction itself.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from ..errors import AttackRequirementError
from ..stats import metrics
from ..stats.pvalues import empirical_log_pvalues
from ._refstats import log_mean_exp, view_observations
from .base import AttackInputs, AttackParams, AttackResult, RecordSet
from .registry import register

A_GRID = np.round(np.arange(0.0, 1.01, 0.1), 1)


class RmiaParams(AttackParams):
    gamma: float = Field(default=1.0, gt=0, description="pairwise threshold on ratio_x / ratio_z")
    a: float | None = Field(default=None, ge=0, le=1, description="offline interpolation; None: grid search")
    default_a: float = Field(default=0.3, ge=0, le=1, description="a when a grid search is impossible (1 reference)")
    population_size: int | None = Field(default=None, ge=1, description="population samples z; None: all")


def _log_marginal(log_p_refs: np.ndarray, use: np.ndarray, a: float | None) -> np.ndarray:
    """log Pr(x): the mean reference confidence, offline-corrected with a (None: online)."""
    return _corrected(log_mean_exp(log_p_refs, use), a)


def _corrected(log_mean: np.ndarray, a: float | None) -> np.ndarray:
    """log((1 + a) / 2 * mean + (1 - a) / 2) from log mean (a None: the mean itself)."""
    if a is None:
        return log_mean
    log_offset = np.log((1 - a) / 2) if a < 1 else -np.inf
    with np.errstate(invalid="ignore"):  # nan marks records without a usable reference
        return np.logaddexp(np.log((1 + a) / 2) + log_mean, log_offset)


def _log_ratios(records: RecordSet, a: float | None, log_p_refs: np.ndarray | None = None) -> np.ndarray:
    """log p(x|target) - log Pr(x) per record (a None: online), averaged over the views of
    ``queries.augment`` (the log of the views' likelihood ratios multiplied, as LiRA sums its
    per-view log-likelihoods); nan where no usable reference. ``log_p_refs`` (K, n) replaces the
    references' log confidences read off their logits (one view)."""
    log_p_target, log_p_views = view_observations(records, "loss")  # the signed loss is log p_y; (A, n), (A, K, n)
    if log_p_refs is not None:
        log_p_target, log_p_views = log_p_target[:1], log_p_refs[None]
    use = np.ones(log_p_views.shape[1:], dtype=bool)
    if a is not None and records.ref_in is not None:  # offline: only references that did not train on x
        use = ~np.asarray(records.ref_in, dtype=bool)
    per_view = [log_p_target[v] - _log_marginal(log_p_views[v], use, a) for v in range(len(log_p_target))]
    return np.mean(per_view, axis=0)


def search_a(population: RecordSet, default_a: float) -> float:
    """The grid value of a with the best AUC attacking reference 0 with the others (offline)."""
    if population.ref_in is None or population.ref_logits.shape[0] < 2:
        return default_a
    pseudo = RecordSet(
        labels=population.labels,
        target_logits=population.ref_logits[0],
        ref_logits=population.ref_logits[1:],
        ref_in=population.ref_in[1:],
        target_views=None if population.ref_views is None else population.ref_views[:, 0],
        ref_views=None if population.ref_views is None else population.ref_views[:, 1:],
    )
    members = np.asarray(population.ref_in[0], dtype=bool)
    # the signals and the references' mean confidence once; per a only the offline correction changes
    log_p_target, log_p_views = view_observations(pseudo, "loss")
    use = ~np.asarray(pseudo.ref_in, dtype=bool)
    log_means = [log_mean_exp(log_p_views[v], use) for v in range(len(log_p_target))]
    aucs = []
    for a in A_GRID:
        log_ratio = np.mean([log_p_target[v] - _corrected(m, a) for v, m in enumerate(log_means)], axis=0)
        known = np.isfinite(log_ratio)
        if members[known].all() or not members[known].any():
            return default_a
        aucs.append(metrics.auc(log_ratio[known], members[known]))
    return float(A_GRID[int(np.argmax(aucs))])


def _population_log_ratios(
    inputs: AttackInputs, params: RmiaParams, a: float | None, log_p_refs: np.ndarray | None = None
) -> np.ndarray:
    """Sorted log ratio_z of the population samples (a random subset of population_size)."""
    log_rz = _log_ratios(inputs.require("population"), a, log_p_refs)
    log_rz = log_rz[np.isfinite(log_rz)]
    if log_rz.size == 0:
        raise AttackRequirementError("rmia: no population record has a reference that did not train on it")
    if params.population_size is not None and params.population_size < log_rz.size:
        rng = np.random.default_rng(inputs.seed)
        log_rz = rng.choice(log_rz, size=params.population_size, replace=False)
    return np.sort(log_rz)


@register("rmia", params=RmiaParams, min_references=1, needs=frozenset({"population"}), pvalues=True)
def rmia(inputs: AttackInputs, params: RmiaParams) -> AttackResult:
    """RMIA: pairwise likelihood ratio against population samples (offline a grid-searched)"""
    return rmia_result(inputs, params)


def rmia_result(
    inputs: AttackInputs,
    params: RmiaParams,
    log_p_queries: np.ndarray | None = None,
    log_p_population: np.ndarray | None = None,
) -> AttackResult:
    """RMIA's scores and p-values; ``log_p_queries`` / ``log_p_population`` ((K, n) each) replace the
    references' log confidences on the queries / the population (``a`` is searched on the plain ones)."""
    a = None
    if inputs.mode == "offline":
        a = params.a if params.a is not None else search_a(inputs.require("population"), params.default_a)
    log_rx = _log_ratios(inputs.queries, a, log_p_queries)
    if not np.isfinite(log_rx[~np.isnan(inputs.queries.target_logits).any(axis=1)]).all():  # NaN target: NaN
        raise AttackRequirementError("rmia: some queries have no reference that did not train on them")
    log_rz = _population_log_ratios(inputs, params, a, log_p_population)
    # ratio_x / ratio_z > gamma  <=>  log ratio_z < log ratio_x - log gamma
    shifted = log_rx - np.log(params.gamma)
    n_below = np.searchsorted(log_rz, shifted, side="left")
    return AttackResult(
        scores=np.where(np.isnan(log_rx), np.nan, interpolated_fraction(shifted, log_rz, n_below)),
        log_pvalues=empirical_log_pvalues(log_rx, log_rz),
        extra={
            "log_ratio": log_rx,
            "fraction": n_below / log_rz.size,
            "a": np.full(log_rx.shape, np.nan if a is None else a),
        },
    )


def interpolated_fraction(y: np.ndarray, knots: np.ndarray, n_below: np.ndarray) -> np.ndarray:
    """#{knots < y} / Z made continuous: linear in y between the sorted knots (equal to it at each knot),
    saturating as d / (1 + d) beyond the ends; strictly increasing in y (module docstring)."""
    z = knots.size
    gap = (knots[-1] - knots[0]) / (z - 1) if z > 1 and knots[-1] > knots[0] else 1.0
    lower = knots[np.clip(n_below - 1, 0, z - 1)]
    upper = knots[np.clip(n_below, 0, z - 1)]
    with np.errstate(invalid="ignore", divide="ignore"):
        inside = (n_below - 1 + (y - lower) / (upper - lower)) / z  # knots[n-1] < y <= knots[n]
    below = (knots[0] - y) / gap
    above = (y - knots[-1]) / gap
    score = np.where(n_below == 0, -below / (1 + below) / z, inside)
    return np.where(n_below == z, (z - 1 + above / (1 + above)) / z, score)
