"""The statistics of an unlearning verification: numpy and scipy only, on per-record signals of the models.

The null is "the unlearned model treats the forgotten records as records no model ever saw". Every model compared
here (the unlearned one, the models retrained on the retained records) never trained on the *unseen* records
(those outside the original training set), and under exact retraining it never trained on the forgotten ones
either. A random forget set is then a uniformly random subset of forget + unseen records given the retained
ones (the split and the draw are uniform), and so is a forget set chosen by label among the records of those
labels. Every test therefore compares each forgotten record with the unseen records *of its label* and permutes
the forget / unseen labels within each label (``stratified_test``): exact, whatever the models, with no
assumption on how the signal is distributed:

- records: the forgotten records' within-label ranks of their standardized score (each record's signal against
  the retrained models' on the same record);
- models: the unlearned model's confidence minus the retrained models' mean confidence, per record: the
  difference between the unlearned model's forget-minus-unseen gap and the retrained models'. A model less
  confident everywhere (a SISA ensemble, a damaged model) moves forgotten and unseen records alike: a utility
  finding, reported as such (``utility``), not a verdict on the forget set;
- selection (the guard): the retrained models' own mean signal, forgotten against unseen. They saw neither, so
  whatever separates the two is the forget set's choice, not training: then no claim (a random forget set:
  ``GUARD_LEVEL`` of the time).

Per record (``per_record``), each forgotten record's standardized score read against a t distribution: its
unlearned-model signal against the retrained models' own signals on the same record, so its p-value does not
rest on how many unseen records share its label (a conformal p-value among ~145 unseen records of a digits label
is at least 1/146: too coarse to name one record among 50 at an FDR). The unseen records only place and scale
that distribution (the median of their label, one spread over all labels): an unlearned model more or less
confident everywhere moves them with the forgotten records. The tail is parametric: valid as far as the
standardized score's tail is no heavier than a t with the standardization's degrees of freedom (K - 1 +
``PRIOR_DF``); measured on exact retraining in benchmarks/unlearning (records named there are false). Storey's
adaptive BH over the forget set names records at an FDR (adaptive: when most forgotten records stayed, as after
no unlearning, the share of true nulls is small and more are named).

The per-record standardization (``standardized``) uses the retrained models: the mean and a shrunk variance of
each record's signal over them (the per-example part of U-LiRA / LiRA); it only sharpens the tests, their validity
rests on the exchangeability above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import stats as sps

from ..stats.metrics import clopper_pearson
from ..stats.multiple_testing import storey_null_share, storey_qvalues

PRIOR_DF = 2.0  # pseudo-observations of the pooled variance added to each record's own (K - 1 degrees of freedom)
RESAMPLES = 1999  # permutations of the set-level test (its p-value is at least 1 / 2000)
BOOTSTRAP = 1000  # resamples of the forget records behind each AUC's interval
CONFIDENCE = 0.95
GUARD_LEVEL = 0.01  # the selection guard's two-sided level: "no claim" on a random forget set this often
RECORDS_TAG, MODELS_TAG, SELECTION_TAG = 0x0F6E7, 0x0DE15, 0x5E1EC  # the three tests' permutation streams
Verdict = Literal["verified", "not_forgotten", "over_forgotten", "no_claim"]


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
class Strata:
    """The pooled records (forgotten first, then unseen) grouped by label: each forgotten record is compared with
    the unseen records of its own label only, so a forget set chosen by label (one class, a few classes) is
    compared like with like. Forgotten records of a label no unseen record has cannot be compared: left out."""

    groups: tuple[np.ndarray, ...]  # per label with both kinds: positions of its pooled records
    forget_in: tuple[int, ...]  # per group: how many of its records are forgotten (they come first)
    compared: int  # forgotten records compared (the others' labels have no unseen record)

    @classmethod
    def of(cls, labels_forget: np.ndarray, labels_unseen: np.ndarray) -> Strata:
        f = len(labels_forget)
        labels = np.concatenate([labels_forget, labels_unseen])
        groups, counts = [], []
        for c in np.unique(labels_forget):
            where = np.flatnonzero(labels == c)
            n_f = int(np.sum(where < f))
            if len(where) > n_f:  # at least one unseen record of the label
                groups.append(where)
                counts.append(n_f)
        return cls(tuple(groups), tuple(counts), int(sum(counts)))


@dataclass(frozen=True)
class PermutationTest:
    statistic: float  # sum over labels of (forgotten share) x (forgotten mean - unseen mean) of the values
    p_remembered: float  # upper tail: the forgotten records' values higher than the unseen records' of their label
    p_over_forgotten: float  # lower tail
    p_value: float  # two-sided: 2 x the smaller tail, at most 1
    resamples: int


def stratified_test(
    values: np.ndarray, strata: Strata, seed: int, tag: int, resamples: int = RESAMPLES
) -> PermutationTest:
    """Permutation test of the forgotten against the unseen records' ``values`` (the pooled records' order of
    ``strata``), the forget / unseen labels permuted within each label: exact whenever the forget set is, given
    the retained records and the labels, a uniformly random choice among the non-retained records (a random
    draw, or a choice by label). Monte Carlo, the observed labelling counted as one permutation:
    p = (1 + #{T_b >= T}) / (B + 1), valid for any B."""
    if strata.compared == 0:
        raise ValueError("stratified_test: no forgotten record has an unseen record of its label")
    v = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(np.random.SeedSequence([seed, tag]))
    observed, draws = 0.0, np.zeros(resamples)
    for where, n_f in zip(strata.groups, strata.forget_in, strict=True):
        x = v[where]
        n, w = len(x), n_f / strata.compared
        if n_f == 0:
            continue
        total = x.sum()
        # T_c = w (mean of n_f chosen - mean of the rest), linear in the chosen records' sum
        scale = w * (1 / n_f + 1 / (n - n_f))
        observed += scale * x[:n_f].sum() - w * total / (n - n_f)
        chunk = max(1, 2_000_000 // n)
        for start in range(0, resamples, chunk):
            b = min(chunk, resamples - start)
            picked = np.argpartition(rng.random((b, n)), n_f - 1, axis=1)[:, :n_f]
            draws[start : start + b] += scale * x[picked].sum(axis=1) - w * total / (n - n_f)
    tol = 1e-9 * max(1.0, float(np.abs(draws).max(initial=0.0)))
    p_up = (1 + np.sum(draws >= observed - tol)) / (resamples + 1)
    p_low = (1 + np.sum(draws <= observed + tol)) / (resamples + 1)
    return PermutationTest(float(observed), float(p_up), float(p_low), float(min(1.0, 2 * min(p_up, p_low))), resamples)


def within_ranks(values: np.ndarray, strata: Strata) -> np.ndarray:
    """Each pooled record's rank among the records of its label, scaled to (0, 1) (0.5: the middle); records
    outside every group get 0.5 (they take part in no test)."""
    out = np.full(len(values), 0.5)
    for where in strata.groups:
        out[where] = (sps.rankdata(values[where]) - 0.5) / len(where)
    return out


def per_record(z_forget: np.ndarray, z_unseen: np.ndarray, strata: Strata, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per forgotten record, its p-values still remembered (upper) and over-forgotten (lower): its standardized
    score, less the median of the unseen records of its label, over the unseen records' spread (their median
    absolute deviation from their label's median, over every label), against a t with K - 1 + ``PRIOR_DF``
    degrees of freedom scaled to the same median absolute deviation. ``k``: the retrained models behind the
    standardization. p = 1 for a record whose label has no unseen record (it cannot be named)."""
    f = len(z_forget)
    z = np.concatenate([z_forget, z_unseen])
    centre = np.full(f, np.nan)
    spread = []
    for where, n_f in zip(strata.groups, strata.forget_in, strict=True):
        unseen = z[where[n_f:]]
        centre[where[:n_f]] = np.median(unseen)
        spread.append(unseen - np.median(unseen))
    up, low = np.ones(f), np.ones(f)
    mad = float(np.median(np.abs(np.concatenate(spread)))) if spread else 0.0
    if mad <= 0:  # every unseen score at its label's median: no spread to scale by, nothing named
        return up, low
    df = k - 1 + PRIOR_DF
    compared = np.isfinite(centre)
    t = (z_forget[compared] - centre[compared]) / mad * sps.t.ppf(0.75, df)
    up[compared], low[compared] = sps.t.sf(t, df), sps.t.cdf(t, df)
    return up, low


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    p_value: float  # both tests, Bonferroni: 2 x the smaller two-sided p-value, at most 1
    p_remembered: float  # the same over the upper tails
    p_over_forgotten: float


def decide(records: PermutationTest, models: PermutationTest, selection: PermutationTest, level: float) -> Decision:
    """The verdict of the two tests together (each at level / 2: the false alarm rate on exact retraining is at most
    ``level``): verified unless the combined p-value is at most ``level``, else the direction of the smaller tail.
    No claim when the retrained models, which saw neither, tell the forgotten records from the unseen ones of
    their labels (``selection`` at ``GUARD_LEVEL``): then the forget set differs from them by more than training."""
    p = min(1.0, 2 * min(records.p_value, models.p_value))
    up = min(1.0, 2 * min(records.p_remembered, models.p_remembered))
    low = min(1.0, 2 * min(records.p_over_forgotten, models.p_over_forgotten))
    if selection.p_value <= GUARD_LEVEL:
        return Decision("no_claim", p, up, low)
    if p > level:
        return Decision("verified", p, up, low)
    return Decision("not_forgotten" if up <= low else "over_forgotten", p, up, low)


def qvalues(p_values: np.ndarray) -> np.ndarray:
    """Storey's adaptive BH q-values over the forget set (``STOREY_LAMBDA``)."""
    p = np.asarray(p_values, dtype=np.float64)
    return storey_qvalues(p, storey_null_share(p)) if len(p) else p


def named(p_values: np.ndarray, fdr: float) -> np.ndarray:
    """Positions of the p-values Storey's adaptive BH rejects at ``fdr``."""
    return np.flatnonzero(qvalues(p_values) <= fdr)


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


def leave_one_out(unlearned: np.ndarray, retrained: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Per retrained model k, the unlearned model's and model k's signals standardized by the other K - 1
    retrained models: (K, n) each; exchangeable on exact retraining (the per-example attack's scores). None with
    fewer than 3 retrained models (one left out leaves a single model: no variance to standardize by)."""
    k = retrained.shape[0]
    if k < 3:
        return None
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
