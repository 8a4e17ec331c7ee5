"""The statistics of an unlearning verification: numpy and scipy only, on per-record signals of the models.

The null is "the unlearned model treats the forgotten records as records no model ever saw". Every model compared
here (the unlearned one, the models retrained on the retained records) never trained on the *unseen* records
(those outside the original training set), and under exact retraining it never trained on the forgotten ones
either. A random forget set is then a uniformly random subset of forget + unseen records given the retained
ones (the split and the draw are uniform), so each forgotten record's standardized score is exchangeable with
the unseen records'. Hence:

- per record, the conformal p-value of its score among the unseen records' (``conformal_pvalues``) is valid
  (P(p <= a) <= a) in each direction: upper (still remembered), lower (over-forgotten); BH on them names
  records at an FDR (conformal p-values are PRDS: Bates et al. 2023);
- the set-level test (``rank_test``) permutes the forget / unseen labels of the pooled records: a rank-sum whose
  permutation p-value is exact whatever the models (their shared, model-wide shifts move forget and unseen
  records alike). Two-sided at ``level``: "not forgotten" on exact retraining at most level / 2 of the time.

The per-record standardization (``standardized``) uses the retrained models: the mean and a shrunk variance of
each record's signal over them (the per-example part of U-LiRA / LiRA); it only sharpens the tests, their validity
rests on the exchangeability above. A forget set chosen by the user (not drawn at random) is exchangeable with
unseen records only as far as the standardization removes what sets it apart (docs/unlearning.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as sps

from ..stats.metrics import clopper_pearson
from ..stats.multiple_testing import bh_qvalues

PRIOR_DF = 2.0  # pseudo-observations of the pooled variance added to each record's own (K - 1 degrees of freedom)
RESAMPLES = 1999  # permutations of the set-level test (its p-value is at least 1 / 2000)
BOOTSTRAP = 1000  # resamples of the forget records behind each AUC's interval
CONFIDENCE = 0.95
Verdict = Literal["verified", "not_forgotten", "over_forgotten"]


def standardized(signal: np.ndarray, reference: np.ndarray, prior_df: float = PRIOR_DF) -> np.ndarray:
    """Per record, (signal - the references' mean) / the predictive sd: each record's variance over the K
    references shrunk towards their median variance (``prior_df`` pseudo-observations), times 1 + 1/K.

    ``signal``: (..., n) a model's signal (leading axes broadcast); ``reference``: (K, n), K >= 2 models that
    never trained on the n records. The median is over the n records given, so every record is treated alike."""
    reference = np.asarray(reference, dtype=np.float64)
    k = reference.shape[0]
    if k < 2:
        raise ValueError(f"standardized: needs at least 2 reference models, got {k}")
    mean = reference.mean(axis=0)
    var = reference.var(axis=0, ddof=1)
    pooled = float(np.median(var)) if var.size else 1.0
    pooled = pooled if pooled > 0 else 1.0
    shrunk = ((k - 1) * var + prior_df * pooled) / (k - 1 + prior_df)
    scale = np.sqrt(np.maximum(shrunk, 1e-12 * pooled) * (1 + 1 / k))
    return (np.asarray(signal, dtype=np.float64) - mean) / scale


def conformal_pvalues(scores: np.ndarray, calibration: np.ndarray, upper: bool = True) -> np.ndarray:
    """(1 + #{calibration >= score}) / (n + 1) per score (``upper=False``: <=): valid when score and calibration
    are exchangeable."""
    cal = np.sort(np.asarray(calibration, dtype=np.float64))
    s = np.asarray(scores, dtype=np.float64)
    if upper:
        at_least = len(cal) - np.searchsorted(cal, s, side="left")
    else:
        at_least = np.searchsorted(cal, s, side="right")
    return (1.0 + at_least) / (len(cal) + 1.0)


@dataclass(frozen=True)
class RankTest:
    statistic: float  # the forget records' mean rank among all pooled records, scaled to [0, 1]
    p_remembered: float  # upper tail: forget records rank higher than unseen ones
    p_over_forgotten: float  # lower tail
    p_value: float  # two-sided: 2 x the smaller tail, at most 1
    resamples: int


def rank_test(forget: np.ndarray, unseen: np.ndarray, seed: int, resamples: int = RESAMPLES) -> RankTest:
    """Permutation rank-sum test of forget against unseen scores (Monte Carlo, the observed labelling counted as
    one permutation: p = (1 + #{T_b >= T}) / (B + 1), valid for any B)."""
    f, n = len(forget), len(unseen)
    if f == 0 or n == 0:
        raise ValueError("rank_test: needs forget and unseen records")
    ranks = sps.rankdata(np.concatenate([forget, unseen]))
    total = f + n
    observed = ranks[:f].mean()
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x0F6E7]))
    draws = np.empty(resamples)
    chunk = max(1, 2_000_000 // total)
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        picked = np.argpartition(rng.random((b, total)), f - 1, axis=1)[:, :f] if f < total else None
        draws[start : start + b] = ranks[picked].mean(axis=1) if picked is not None else observed
    tol = 1e-9 * total
    p_up = (1 + np.sum(draws >= observed - tol)) / (resamples + 1)
    p_low = (1 + np.sum(draws <= observed + tol)) / (resamples + 1)
    stat = (observed - 1) / (total - 1) if total > 1 else 0.5
    return RankTest(float(stat), float(p_up), float(p_low), float(min(1.0, 2 * min(p_up, p_low))), resamples)


@dataclass(frozen=True)
class ModelTest:
    statistic: float  # the predictive t of the unlearned model's mean forget-set signal among the retrained models'
    p_remembered: float
    p_over_forgotten: float
    p_value: float


def model_test(unlearned: float, retrained: np.ndarray) -> ModelTest:
    """The unlearned model's mean signal on the forget set (audit.py: the confidence, bounded) against the K
    retrained models' (exchangeable with it on exact retraining): the predictive t,
    (S_U - mean S_k) / (sd S_k sqrt(1 + 1/K)) ~ t(K - 1) when the means are normal (a mean over the forget set).
    Catches what the record-level test cannot: a model-wide shift (a model wrecked by unlearning scores unseen
    records as low as forgotten ones)."""
    s = np.asarray(retrained, dtype=np.float64)
    k = len(s)
    sd = float(np.std(s, ddof=1)) if k > 1 else 0.0
    scale = max(sd, 1e-12 * max(1.0, float(np.abs(s).max(initial=0.0)))) * np.sqrt(1 + 1 / k)
    t = (unlearned - float(s.mean())) / scale
    up, low = float(sps.t.sf(t, k - 1)), float(sps.t.cdf(t, k - 1))
    return ModelTest(float(t), up, low, min(1.0, 2 * min(up, low)))


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    p_value: float  # both tests, Bonferroni: 2 x the smaller two-sided p-value, at most 1
    p_remembered: float  # the same over the upper tails
    p_over_forgotten: float


def decide(records: RankTest, models: ModelTest, level: float) -> Decision:
    """The verdict of the two tests together (each at level / 2: the false alarm rate on exact retraining is at most
    ``level``): verified unless the combined p-value is at most ``level``, else the direction of the smaller tail."""
    p = min(1.0, 2 * min(records.p_value, models.p_value))
    up = min(1.0, 2 * min(records.p_remembered, models.p_remembered))
    low = min(1.0, 2 * min(records.p_over_forgotten, models.p_over_forgotten))
    if p > level:
        return Decision("verified", p, up, low)
    return Decision("not_forgotten" if up <= low else "over_forgotten", p, up, low)


def named(p_values: np.ndarray, fdr: float) -> np.ndarray:
    """Positions of the p-values BH rejects at ``fdr``."""
    if not len(p_values):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(bh_qvalues(np.asarray(p_values, dtype=np.float64)) <= fdr)


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(positive > negative) + P(tie) / 2 over every pair (Mann-Whitney)."""
    pos, neg = np.ravel(positive), np.ravel(negative)
    ranks = sps.rankdata(np.concatenate([pos, neg]))
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float


def auc_by_records(positive: np.ndarray, negative: np.ndarray, seed: int, resamples: int = BOOTSTRAP) -> Estimate:
    """AUC of (a, f) positive against (b, f) negative scores of f records, with a percentile bootstrap interval
    over the records (each resampled record brings all its scores: they share the record)."""
    positive, negative = np.atleast_2d(positive), np.atleast_2d(negative)
    f = positive.shape[1]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xA0C]))
    boot = np.array([auc(positive[:, idx], negative[:, idx]) for idx in rng.integers(0, f, size=(resamples, f))])
    lo, hi = np.quantile(boot, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return Estimate(auc(positive, negative), float(lo), float(hi))


def leave_one_out(unlearned: np.ndarray, retrained: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per retrained model k, the unlearned model's and model k's signals standardized by the other K - 1
    retrained models: (K, n) each; exchangeable on exact retraining (the per-example attack's scores)."""
    k = retrained.shape[0]
    pos, neg = np.empty_like(retrained, dtype=np.float64), np.empty_like(retrained, dtype=np.float64)
    for j in range(k):
        others = np.delete(retrained, j, axis=0)
        pos[j] = standardized(unlearned, others)
        neg[j] = standardized(retrained[j], others)
    return pos, neg


def tpr_at(scores_forget: np.ndarray, scores_unseen: np.ndarray, level: float = 0.01) -> Estimate:
    """The share of forget records a membership test flags at false-positive rate ``level`` (conformal p <= level
    among the unseen records), with a Clopper-Pearson interval."""
    p = conformal_pvalues(scores_forget, scores_unseen, upper=True)
    k, n = int(np.sum(p <= level)), len(p)
    lo, hi = clopper_pearson(k, n)
    return Estimate(k / n if n else float("nan"), float(lo), float(hi))


def newly_exposed(
    before: np.ndarray, after: np.ndarray, before_unseen: np.ndarray, after_unseen: np.ndarray, level: float = 0.01
) -> np.ndarray:
    """Positions of records a population membership test (a model's raw signal against the unseen records'
    under the same model) flags at ``level`` after but not before."""
    p_before = conformal_pvalues(before, before_unseen, upper=True)
    p_after = conformal_pvalues(after, after_unseen, upper=True)
    return np.flatnonzero((p_after <= level) & (p_before > level))
