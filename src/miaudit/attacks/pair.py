"""Pair attacks: each record's IN behaviour learnt from pairs of models, one that trained on it, one that did not.

Offline, no model that trained on a query exists, so the IN side of a likelihood ratio has to be predicted.
The population records supply pairs that predict it record by record: the target did not train on them (they
are its known non-members), while each reference trained on half of them (``population.ref_in``). Models are
exchangeable (the references train on as many records as the target, with the same recipe), so the pair
(target's score, reference k's score) on a record reference k trained on is a draw of (score of a model that
did not train on it, score of a model that did), and on a record it did not train on, of two OUT models.
Learnt on the population, the relation is applied to a query with the roles swapped: the references are the
models that did not train on it, the target is the model whose membership is in question.

Notation: s a model's signal (``signal``, higher = member). A training pair is (unknown model k, population
record r): u = s_k(r), y = [reference k trained on r], and the OUT models of the pair are the target and every
other reference that did not train on r, n of them, with mean score o. A query x has u = s_0(x) (the target),
and its OUT models are the references that did not train on it (offline: all K), n of them, mean o.

- ``pair-lr``: per class c (IN, OUT), a heteroscedastic Gaussian regression of u on o and n,

      u | o, n, c ~ N(a_c . f, exp(b_c . g)),   f = (1, o, o / n, 1 / n),   g = (1, o, o^2, 1 / n),

  fitted by iterated weighted least squares (the mean by least squares weighted by 1 / variance; the
  log-variance by least squares on log of the squared residuals plus 1.2704, minus E log chi^2_1). The mean of
  the IN class is each record's predicted IN score: a record the OUT models score low is predicted a large
  IN shift, one they score high a small one (lr-bmia's global shift, made a function of the record). Score:
  log N(u; IN) - log N(u; OUT); log p-value: log P(U >= u) under the OUT regression. With K = 1, n = 1 on
  every pair and query, and f, g reduce to (1, o) and (1, o, o^2) (least squares takes the minimum-norm
  solution of the collinear columns, which predicts the same).
- ``pair-logit``: the references as pseudo-targets with a learnt combiner. Per pair the features
  (pair-lr's log ratio, u, o, u - o, the unknown model's hinge and log entropy, 1 / n), standardised, feed a
  logistic regression of y; the query's score is its decision value (log-odds). log p-value: the score's
  rank among the decision values of the validation records no reference trained on, where the target is the
  unknown model and all K references its OUT models, as on an offline query: a conformal p-value, valid
  whatever the models when those records are exchangeable with the queries' non-members (the run's
  calibration then computes the same). Without validation records, among the OUT training pairs' values,
  each from a combiner fitted on the other records' pairs (``FOLDS`` folds): out of fold, since a fit pushes
  its own OUT pairs low, but approximate beyond K = 1, where a pair has a query's structure: a pair's OUT
  mean averages 1 + Bin(K - 1, 1/2) models, a query's K, and the decision values' law depends on that count
  (on a simulated null with 16 references, 27 of 300 p-values at or below 0.1, 55 in sample; so neither the
  old in-sample null nor cross-fitting alone made them valid).

Nothing reads the target's membership: the target enters only through its outputs, on the queries and on the
population (non-members by construction, as for RMIA's population ratios).

Where not to use them: both rest on the target being exchangeable with its references, and the
target enters twice, with opposite roles: as the OUT model of every training pair and as the unknown model of
every query. A target whose scores sit apart from its references' (trained longer, on other data, with another
recipe, or calibrated differently) breaks both roles at once: on generated data with the target's scores
shifted by 3 (about 1.3 sd), TPR@1% falls to chance (0.7% and 0.0% against LiRA's 17%, one and four
references; ``tests/attacks/test_pair.py``) where LiRA, BaVarIA-n and RMIA, which compare the target with
the references record by record, hold. Each run therefore measures the shift without any membership: the
target's mean score on the population records (all its non-members) against the references' on the
population records they did not train on, in sd of the latter; above ``EXCHANGEABILITY_SHIFT`` it logs a
warning naming the attacks to use instead. (On the grayscale CIFAR-10 MLP, seed 3, the shift was 0.03 and
pair-lr was the strongest attack at K = 1: the collapse above was not reproduced there.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field
from scipy.special import log_softmax

from ..errors import AttackRequirementError
from ..progress import log
from ..stats import signals
from ..stats.pvalues import empirical_log_pvalues
from ..stats.signals import Signal
from ._refstats import VAR_FLOOR, gaussian_log_sf, norm_logpdf
from .base import AttackInputs, AttackParams, AttackResult, RecordSet
from .registry import register

EXCHANGEABILITY_SHIFT = 0.25  # sd: beyond it the target is not like its references (module docstring)
FOLDS, FOLD_TAG = 5, 0xF01D  # pair-logit's cross-fitted null without validation records (module docstring)
LOG_CHI2_BIAS = 1.2704  # -E[log chi^2_1]: log of a squared standard normal is biased low by this much


class PairParams(AttackParams):
    signal: Signal = Field(default=Signal.rescaled_logit, description="the score u, o of each model")
    iterations: int = Field(default=3, ge=1, description="rounds of the weighted least-squares fit (1: unweighted)")


class PairLogitParams(PairParams):
    c: float = Field(default=1.0, gt=0, description="inverse L2 strength of the logistic regression")


@dataclass(frozen=True)
class Pairs:
    """Pairs (unknown model's score u, its OUT models' mean score o and count n), y = unknown model trained."""

    u: np.ndarray
    o: np.ndarray
    n: np.ndarray
    y: np.ndarray | None  # None on the queries (what the attack decides)


def out_mean(scores: np.ndarray, out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean score over the OUT models, their count) per record from (M, N) scores and OUT masks; nan where
    no model is OUT."""
    n = out.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(out, scores, 0.0).sum(axis=0) / n, n.astype(np.float64)


def training_pairs(s_target: np.ndarray, s_refs: np.ndarray, ref_in: np.ndarray) -> Pairs:
    """Every (reference k, population record) pair: u = s_k, y = k trained on it; its OUT models the target
    and the other references that did not train on it. (K, Z) reference scores, (Z,) target scores."""
    k_all = s_refs.shape[0]
    u, o, n, y = [], [], [], []
    for k in range(k_all):
        others = np.arange(k_all) != k
        scores = np.vstack([s_target[None], s_refs[others]])
        out = np.vstack([np.ones((1, s_target.size), dtype=bool), ~ref_in[others]])
        mean, count = out_mean(scores, out)
        u.append(s_refs[k])
        o.append(mean)
        n.append(count)
        y.append(ref_in[k])
    return Pairs(*(np.concatenate(a) for a in (u, o, n, y)))


def query_pairs(records: RecordSet, signal: Signal) -> Pairs:
    """The queries' pairs: u = the target's score, OUT models the references that did not train on them."""
    s0 = signals.oriented(signal, records.target_logits, records.labels)
    s = signals.oriented(signal, records.ref_logits, records.labels)
    out = np.ones(s.shape, dtype=bool) if records.ref_in is None else ~np.asarray(records.ref_in, dtype=bool)
    o, n = out_mean(s, out)
    return Pairs(s0, o, n, None)


def population_pairs(inputs: AttackInputs, signal: Signal) -> Pairs:
    """The training pairs of the population records (whose reference membership is known)."""
    pop = inputs.require("population")
    if pop.ref_in is None:
        raise AttackRequirementError("needs the population records' reference membership (population.ref_in)")
    ref_in = np.asarray(pop.ref_in, dtype=bool)
    if not ref_in.any() or ref_in.all():
        raise AttackRequirementError("needs population records both in and out of the references' training sets")
    s0 = signals.oriented(signal, pop.target_logits, pop.labels)
    return training_pairs(s0, signals.oriented(signal, pop.ref_logits, pop.labels), ref_in)


def exchangeability_shift(inputs: AttackInputs, signal: Signal) -> float:
    """The target's mean score on the population (its non-members) minus the references' mean on the population
    records they did not train on, over the latter's sd: about 0 for a target exchangeable with its references."""
    pop = inputs.require("population")
    target = signals.oriented(signal, pop.target_logits, pop.labels)
    refs = signals.oriented(signal, pop.ref_logits, pop.labels)[~np.asarray(pop.ref_in, dtype=bool)]
    target, refs = target[np.isfinite(target)], refs[np.isfinite(refs)]
    if target.size == 0 or refs.size < 2:
        return 0.0
    return float((target.mean() - refs.mean()) / max(refs.std(), 1e-12))


def warn_unless_exchangeable(inputs: AttackInputs, signal: Signal, name: str) -> float:
    """Log a warning when the target's scores sit apart from its references' (module docstring)."""
    shift = exchangeability_shift(inputs, signal)
    if abs(shift) > EXCHANGEABILITY_SHIFT:
        log.warning(
            "%s: the target's scores on its non-member population sit %.2f sd from its references' on theirs "
            "(beyond %.2f): the target is not exchangeable with its references, which %s rests on, and its TPR can "
            "fall to chance here; use lira, bavaria-n or rmia",
            name,
            shift,
            EXCHANGEABILITY_SHIFT,
            name,
        )
    return shift


def exchangeability_guard(inputs: AttackInputs, params: PairParams | PairLogitParams) -> str | None:
    """The registry's guard of the pair attacks (``AttackInfo.guard``): why not to trust one on these inputs (the
    target's scores apart from its references', ``warn_unless_exchangeable``), or None."""
    try:
        shift = exchangeability_shift(inputs, params.signal)
    except AttackRequirementError:
        return None
    if abs(shift) <= EXCHANGEABILITY_SHIFT:
        return None
    return (
        f"the target is not exchangeable with its references (its scores on its non-member population sit "
        f"{shift:.2f} sd from theirs, beyond {EXCHANGEABILITY_SHIFT:g}), which it rests on"
    )


def mean_design(p: Pairs) -> np.ndarray:
    return np.stack([np.ones_like(p.o), p.o, p.o / p.n, 1.0 / p.n], axis=1)


def variance_design(p: Pairs) -> np.ndarray:
    return np.stack([np.ones_like(p.o), p.o, p.o**2, 1.0 / p.n], axis=1)


@dataclass(frozen=True)
class GaussianRegression:
    """u ~ N(mean_design . mean_coef, exp(variance_design . log_var_coef))."""

    mean_coef: np.ndarray
    log_var_coef: np.ndarray

    def moments(self, p: Pairs) -> tuple[np.ndarray, np.ndarray]:
        var = np.maximum(np.exp(variance_design(p) @ self.log_var_coef), VAR_FLOOR)
        return mean_design(p) @ self.mean_coef, var

    def logpdf(self, p: Pairs) -> np.ndarray:
        mean, var = self.moments(p)
        return norm_logpdf(p.u, mean, np.sqrt(var))

    def log_sf(self, p: Pairs) -> np.ndarray:
        mean, var = self.moments(p)
        return gaussian_log_sf(p.u, mean, var)  # scipy.stats.norm.logsf, bit for bit


def fit_gaussian(p: Pairs, iterations: int) -> GaussianRegression:
    """Iterated weighted least squares of the mean and the log-variance (module docstring)."""
    xm, xv = mean_design(p), variance_design(p)
    weights = np.ones(p.u.size)
    for _ in range(iterations):
        root = np.sqrt(weights)
        mean_coef = np.linalg.lstsq(xm * root[:, None], p.u * root, rcond=None)[0]
        log_sq = np.log(np.maximum((p.u - xm @ mean_coef) ** 2, VAR_FLOOR))
        log_var_coef = np.linalg.lstsq(xv, log_sq, rcond=None)[0]
        log_var_coef[0] += LOG_CHI2_BIAS
        weights = np.exp(-(xv @ log_var_coef))
    return GaussianRegression(mean_coef, log_var_coef)


def _select(p: Pairs, mask: np.ndarray) -> Pairs:
    return Pairs(p.u[mask], p.o[mask], p.n[mask], None if p.y is None else p.y[mask])


def fit_classes(p: Pairs, iterations: int) -> tuple[GaussianRegression, GaussianRegression]:
    """(IN, OUT) regressions from training pairs."""
    assert p.y is not None
    known = np.isfinite(p.o)
    return fit_gaussian(_select(p, known & p.y), iterations), fit_gaussian(_select(p, known & ~p.y), iterations)


# offline tests on the population's pairs (online, references that trained on the queries exist: use LiRA)
_OFFLINE = {"min_references": 1, "modes": ("offline",), "pvalues": True, "needs": frozenset({"population"})}


@register("pair-lr", params=PairParams, guard=exchangeability_guard, **_OFFLINE)
def pair_lr(inputs: AttackInputs, params: PairParams) -> AttackResult:
    """Pair-LR: likelihood ratio with each record's IN and OUT score regressed on its OUT references' mean score"""
    model_in, model_out = fit_classes(population_pairs(inputs, params.signal), params.iterations)
    warn_unless_exchangeable(inputs, params.signal, "pair-lr")
    q = query_pairs(inputs.queries, params.signal)
    mean_in = model_in.moments(q)[0]
    return AttackResult(
        scores=model_in.logpdf(q) - model_out.logpdf(q),
        log_pvalues=model_out.log_sf(q),
        extra={"predicted_in_mean": mean_in, "out_mean": q.o},
    )


def _unknown_descriptors(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(hinge, log entropy) of the unknown model's prediction per record."""
    log_p = log_softmax(np.asarray(logits, dtype=np.float64), axis=-1)
    entropy = -(np.exp(log_p) * log_p).sum(axis=-1)
    return np.stack([signals.hinge(logits, labels), np.log(np.maximum(entropy, 1e-300))], axis=-1)


def _features(p: Pairs, llr: np.ndarray, descriptors: np.ndarray) -> np.ndarray:
    return np.column_stack([llr, p.u, p.o, p.u - p.o, descriptors, 1.0 / p.n])


@dataclass(frozen=True)
class Combiner:
    """pair-logit's scoring function: pair-lr's regressions, then the logistic regression on the features."""

    model_in: GaussianRegression
    model_out: GaussianRegression
    fitted: Any  # a scikit-learn pipeline (standardisation, logistic regression)

    def decision(self, p: Pairs, descriptors: np.ndarray) -> np.ndarray:
        """The decision value (log-odds) of each pair; NaN where it has no OUT model or no signal."""
        if p.u.size == 0:
            return np.zeros(0)
        llr = self.model_in.logpdf(p) - self.model_out.logpdf(p)
        values = self.fitted.decision_function(np.nan_to_num(_features(p, llr, descriptors)))
        return np.where(np.isfinite(p.o) & ~np.isnan(p.u), values, np.nan)


def fit_combiner(pairs: Pairs, descriptors: np.ndarray, params: PairLogitParams) -> Combiner:
    """Combiner fitted on training pairs (y known) whose OUT mean is defined."""
    assert pairs.y is not None
    known = np.isfinite(pairs.o)
    if np.all(pairs.y[known]) or not np.any(pairs.y[known]):
        raise AttackRequirementError("needs population records both in and out of the references' training sets")
    model_in, model_out = fit_classes(pairs, params.iterations)
    fitting = _select(pairs, known)
    x = _features(fitting, model_in.logpdf(fitting) - model_out.logpdf(fitting), descriptors[known])
    from sklearn.linear_model import LogisticRegression  # here: scikit-learn takes a second to import, and
    from sklearn.pipeline import make_pipeline  # `miaudit score` imports every attack module
    from sklearn.preprocessing import StandardScaler

    fitted = make_pipeline(StandardScaler(), LogisticRegression(C=params.c, max_iter=2000)).fit(x, fitting.y)
    return Combiner(model_in, model_out, fitted)


def validation_null(records: RecordSet, combiner: Combiner, signal: Signal) -> np.ndarray:
    """The decision values of the validation records no reference trained on: there the target is the unknown
    model and every reference an OUT model, as on an offline query of a non-member."""
    q = query_pairs(records, signal)
    values = combiner.decision(q, _unknown_descriptors(records.target_logits, records.labels))
    if records.ref_in is not None:
        values = values[~np.asarray(records.ref_in, dtype=bool).any(axis=0)]
    return values[~np.isnan(values)]


def cross_fitted_null(
    pairs: Pairs, descriptors: np.ndarray, records: int, params: PairLogitParams, seed: int
) -> np.ndarray:
    """The decision values of the OUT training pairs, each from a combiner fitted without its record: the
    ``records`` population records in ``FOLDS`` seeded folds, all of a record's pairs in one (they share its
    scores). ``pairs`` as ``training_pairs`` orders them: reference by reference, record by record."""
    assert pairs.y is not None
    fold = np.random.default_rng(np.random.SeedSequence([seed, FOLD_TAG])).permutation(records) % FOLDS
    fold_of_pair = np.tile(fold, pairs.u.size // records)
    null = []
    for f in range(FOLDS):
        held = fold_of_pair == f
        combiner = fit_combiner(_select(pairs, ~held), descriptors[~held], params)
        out = held & ~pairs.y
        values = combiner.decision(_select(pairs, out), descriptors[out])
        null.append(values[~np.isnan(values)])
    return np.concatenate(null)


@register("pair-logit", params=PairLogitParams, guard=exchangeability_guard, **_OFFLINE)
def pair_logit(inputs: AttackInputs, params: PairLogitParams) -> AttackResult:
    """Pair-logit: logistic combiner of pair statistics, learnt with the references as pseudo-targets"""
    pairs = population_pairs(inputs, params.signal)
    pop = inputs.require("population")
    descriptors = np.concatenate(
        [_unknown_descriptors(pop.ref_logits[k], pop.labels) for k in range(pop.ref_logits.shape[0])]
    )
    combiner = fit_combiner(pairs, descriptors, params)
    warn_unless_exchangeable(inputs, params.signal, "pair-logit")
    q = query_pairs(inputs.queries, params.signal)
    scores = combiner.decision(q, _unknown_descriptors(inputs.queries.target_logits, inputs.queries.labels))
    null = np.zeros(0) if inputs.validation is None else validation_null(inputs.validation, combiner, params.signal)
    if null.size == 0:
        null = cross_fitted_null(pairs, descriptors, pop.labels.size, params, inputs.seed)
    return AttackResult(scores=scores, log_pvalues=empirical_log_pvalues(scores, null))
