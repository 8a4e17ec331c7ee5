"""Input-space canaries of the one-run audit, the auditor's guesses, and the bounds they give.

Canaries are drawn (seeded) from the target's test part; each goes into training with probability 1/2 (an
independent seeded coin). ``natural`` keeps the record; ``random-label`` gives it a random wrong label (a record
the model can only fit by memorising it); ``crafted`` replaces its input by an out-of-distribution one, every
feature at the data's minimum or maximum at random (a random extreme pattern no natural record resembles), with
a random label. We chose out-of-distribution inputs over adversarially optimised ones because they need no
model to craft (so they cannot leak the coins) and their gradients are nearly orthogonal to the data's: under
DP-SGD the data's updates then barely move the model's output on them, and what moves it is the canary itself.

The auditor guesses "in" for the k highest scores and "out" for the k lowest and abstains on the rest (ties
broken by a seeded order, NaN scores abstain); the count of correct guesses gives both one-run bounds
(``bounds.one_run_bounds``), each with its power: the bound had every guess been right.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..config.run import RunConfig
from ..data import Dataset
from ..errors import ConfigError
from ..results import Bound
from . import bounds
from .verdict import FDP_ASSUMES

CANARY_SEED = 0xCA7


def guesses(scores: np.ndarray, k: int, seed: int) -> np.ndarray:
    """(m,) in {-1, 0, +1}: +1 ("in") for the k highest scores, -1 ("out") for the k lowest, 0 (abstain) else.
    Ties are broken by a seeded random order (never by membership); NaN scores always abstain."""
    scores = np.asarray(scores, dtype=np.float64)
    valid = np.flatnonzero(~np.isnan(scores))
    k = min(k, len(valid) // 2)
    shuffled = np.random.default_rng(np.random.SeedSequence([seed, CANARY_SEED, 1])).permutation(valid)
    ranked = shuffled[np.argsort(-scores[shuffled], kind="stable")]
    out = np.zeros(len(scores), dtype=int)
    if k:
        out[ranked[:k]], out[ranked[-k:]] = 1, -1
    return out


def canary_bounds(
    scores: np.ndarray,
    included: np.ndarray,
    k: int,
    confidence: float,
    delta: float,
    seed: int,
    threat_model: str | None = None,
    canary_kind: str | None = None,
    observer: str | None = None,
) -> list[Bound]:
    """One results.json bound entry per analysis (``bounds.one_run_bounds``) for one observer's scores, with what
    the observer is (threat model, canary kind, what it scores); an f-DP entry says what it assumes."""
    g = guesses(scores, k, seed)
    truth = np.where(np.asarray(included, dtype=bool), 1, -1)
    m, r, v = len(g), int((g != 0).sum()), int(((g != 0) & (g == truth)).sum())
    return [
        Bound(
            analysis=found.analysis,
            threat_model=threat_model,
            canary_kind=canary_kind,
            observer=observer,
            epsilon_lower_bound=found.epsilon_lower_bound,
            max_attainable=found.max_attainable,
            confidence=confidence,
            delta=delta,
            canaries=m,
            included=int(np.sum(included)),
            guesses=r,
            correct=v,
            source=bounds.SOURCE_FDP if found.analysis == "fdp" else bounds.SOURCE_ONE_RUN,
            **({"assumes": FDP_ASSUMES} if found.analysis == "fdp" else {}),
        )
        for found in bounds.one_run_bounds(m, r, v, confidence, delta)
    ]


def crafted_inputs(ds: Dataset, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` out-of-distribution inputs: every feature at the data's minimum or maximum, at random."""
    lo, hi = ds.x.min(axis=0), ds.x.max(axis=0)
    pick = rng.random((count, *ds.x.shape[1:])) < 0.5
    return np.where(pick, hi, lo).astype(ds.x.dtype)


@dataclass(frozen=True)
class Drawn:
    """The canaries drawn into a data set: their record indices, labels, and which are in the training set."""

    idx: np.ndarray  # (count,) record indices, sorted
    included: np.ndarray  # (count,) bool: trained with (a fair coin each)
    labels: np.ndarray  # (count,) their labels as trained (random wrong ones for random-label and crafted)

    @property
    def members(self) -> np.ndarray:
        """The included canaries' record indices."""
        return self.idx[self.included]

    @property
    def left_out(self) -> np.ndarray:
        """The record indices of the canaries left out of training."""
        return self.idx[~self.included]


def draw(cfg: RunConfig, ds: Dataset, candidates: np.ndarray) -> tuple[Dataset, Drawn]:
    """The data set with its canaries in place, and the canaries: record indices, labels, which are included."""
    spec = cfg.canaries
    assert spec is not None
    if spec.count > len(candidates):
        raise ConfigError(
            f"canaries.count: {spec.count} exceeds the {len(candidates)} records of the target's test part "
            "(split.target_test) they are drawn from"
        )
    rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, CANARY_SEED]))
    idx = np.sort(rng.choice(candidates, spec.count, replace=False))
    included = rng.random(spec.count) < 0.5
    labels = ds.y[idx].copy()
    if spec.kind in ("random-label", "crafted"):
        labels = (labels + rng.integers(1, ds.n_classes, spec.count)) % ds.n_classes
    y, x = ds.y.copy(), ds.x
    y[idx] = labels
    if spec.kind == "crafted":
        x = ds.x.copy()
        x[idx] = crafted_inputs(ds, spec.count, rng)
    return replace(ds, name=f"{ds.name}+canaries", x=x, y=y), Drawn(idx, included, labels)
