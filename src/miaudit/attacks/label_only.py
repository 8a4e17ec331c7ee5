"""Label-only attacks: membership from predicted labels alone (Choquette-Choo et al. 2021).

For a target that answers only its predicted class (an endpoint with ``output: label``), or any target.

- ``label-gap``: the gap attack, the baseline: a record the target labels correctly scores 1, else 0. No
  query beyond the record itself.
- ``label-dist``: the distance to the decision boundary (HopSkipJump's quantity, found more simply): along
  ``directions`` random directions (Gaussian, scaled to each feature's spread) a binary search of ``steps``
  steps on [0, ``radius``] finds where the target's label leaves the true class; the statistic is the log of
  the mean distance (members sit farther from the boundary), calibrated on the references as label-lira's.
  HopSkipJump's gradient-estimation steps would find shorter distances with more queries; within the budget
  of about 100 queries per record, the binary search spends every query on the distance itself.
- ``label-lira``: robustness to perturbations. Each record is perturbed ``queries`` times (Gaussian noise
  scaled to each feature's spread; images: a random flip and a shift of up to ``shift`` pixels, then the
  noise), the target is asked for its label on every copy, and the statistic is the share labelled
  correctly, c of n, on the logit scale: phi = log((c + 1/2) / (n - c + 1/2)). Members, fitted, keep their
  label under more perturbation. The statistic is calibrated per record against the reference models as
  LiRA calibrates the rescaled logit: the references answer the same copies (locally, no query), offline
  a one-sided test against the OUT Gaussian (score -log P(Z >= phi), Z ~ N(mu_out, var)), online the IN vs
  OUT Gaussian log-likelihood ratio; with fewer than 64 references one global variance (LiRA's rule).

Queries per record: ``queries`` for label-lira, ``directions x steps`` for label-dist, none for label-gap
(each registry entry names them in ``queries_per_record``). A record's perturbations and directions are
seeded by the run's seed and the record itself (the BLAKE3 of its inputs and label), not by where it sits
among the queries or the chunk it is scored in: a record scores the same wherever it sits, and the search
is deterministic, so a rerun asks the same inputs and the endpoint's store answers them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
from pydantic import Field

from ..storage import digest
from ._refstats import VAR_FLOOR, gaussian_llr, gaussian_log_sf, membership_masks, require_each
from .base import AttackInputs, AttackParams, AttackResult, LabelAccess
from .lira import uses_per_record_variance
from .registry import ALL_OUTPUTS, register

# label-only attacks that query: calibrated on references (a p-value test), on the records' inputs x, any output
QUERYING: dict = {"min_references": 1, "needs": frozenset({"x", "labels"}), "outputs": ALL_OUTPUTS, "pvalues": True}
CHUNK = 256  # records perturbed at once (their copies are one call to the target)
SEED_TAG = 0x1AB3


class LabelLiraParams(AttackParams):
    """Perturbations per record (the endpoint queries each costs), and how records are perturbed."""

    queries: int = Field(default=32, ge=1, le=10_000, description="perturbed copies per record: queries per record")
    noise: float = Field(default=0.5, ge=0, description="Gaussian noise, in units of each feature's standard deviation")
    shift: int = Field(default=2, ge=0, description="images: largest shift in pixels (with a random horizontal flip)")
    perturbation: Literal["auto", "noise", "augment"] = Field(
        default="auto", description="noise, or augment (images: flip and shift, then noise); auto: augment for images"
    )
    variance: Literal["auto", "global", "per_record"] = "auto"


def feature_scale(x: np.ndarray) -> np.ndarray:
    """Each feature's standard deviation over the records scored (ones for a single record)."""
    return np.std(x.reshape(len(x), -1), axis=0).reshape(x.shape[1:]) if len(x) > 1 else np.ones(x.shape[1:])


def robust_statistic(correct: np.ndarray, n: int) -> np.ndarray:
    """phi = log((c + 1/2) / (n - c + 1/2)): the share of n copies labelled correctly, on the logit scale."""
    c = np.asarray(correct, dtype=np.float64)
    return np.log(c + 0.5) - np.log(n - c + 0.5)


def _augmented(x: np.ndarray, rng: np.random.Generator, shift: int) -> np.ndarray:
    """Images (n, C, H, W): each flipped horizontally at random and shifted by up to ``shift`` pixels
    (zero-filled)."""
    out = np.where(rng.random(len(x))[:, None, None, None] < 0.5, x[..., ::-1], x)
    if shift:
        h, w = x.shape[-2:]
        padded = np.pad(out, ((0, 0), (0, 0), (shift, shift), (shift, shift)))
        dy, dx = rng.integers(0, 2 * shift + 1, size=(2, len(x)))
        out = np.stack([padded[i, :, dy[i] : dy[i] + h, dx[i] : dx[i] + w] for i in range(len(x))])
    return out


def record_generators(x: np.ndarray, y: np.ndarray, seed: int, tag: int) -> list[np.random.Generator]:
    """One generator per record (x (n, ...), labels y (n,)), seeded by the run's seed, the attack's tag and the
    record's content (the BLAKE3 of its inputs and label): its draws do not depend on its position."""
    return [
        np.random.default_rng(np.random.SeedSequence([seed, tag, int(digest(np.asarray(xi), int(yi))[:32], 16)]))
        for xi, yi in zip(x, y, strict=True)
    ]


def perturbed(x: np.ndarray, params: LabelLiraParams, rngs: list[np.random.Generator], scale: np.ndarray) -> np.ndarray:
    """(n * q, ...) copies of the records x (n, ...), q = params.queries each, record by record, record i's
    drawn from ``rngs[i]``."""
    q = params.queries
    images = x.ndim == 4 and params.perturbation != "noise"
    parts = []
    for record, rng in zip(np.asarray(x, dtype=np.float32), rngs, strict=True):
        copies = np.repeat(record[None], q, axis=0)
        if images:
            copies = _augmented(copies, rng, params.shift)
        if params.noise > 0:
            copies = copies + (params.noise * scale * rng.standard_normal(copies.shape)).astype(np.float32)
        parts.append(copies)
    return np.concatenate(parts) if parts else np.zeros((0, *x.shape[1:]), dtype=np.float32)


def correct_counts(
    access: LabelAccess, x: np.ndarray, y: np.ndarray, params: LabelLiraParams, seed: int, asked_by: str
) -> tuple[np.ndarray, np.ndarray]:
    """(target (n,), references (K, n)): how many of each record's copies each model labels correctly."""
    scale = feature_scale(x)
    q, target, refs = params.queries, [], []
    for start in range(0, len(x), CHUNK):
        part, labels = x[start : start + CHUNK], y[start : start + CHUNK]
        copies = perturbed(part, params, record_generators(part, labels, seed, SEED_TAG), scale)
        truth = np.repeat(labels, q)
        target.append((access.target(copies, asked_by) == truth).reshape(len(part), q).sum(axis=1))
        refs.append(np.stack([(ref(copies) == truth).reshape(len(part), q).sum(axis=1) for ref in access.references]))
    n_refs = len(access.references)
    return np.concatenate(target) if target else np.zeros(0), np.concatenate(refs, axis=1) if refs else np.zeros(
        (n_refs, 0)
    )


@register("label-gap", outputs=ALL_OUTPUTS, max_references=0)
def label_gap(inputs: AttackInputs, params: AttackParams) -> AttackResult:
    """Label-only gap attack: 1 when the target labels the record correctly, else 0 (no extra queries)"""
    q = inputs.queries
    correct = (np.argmax(q.target_logits, axis=1) == q.labels).astype(np.float64)
    return AttackResult(scores=np.where(np.isnan(q.target_logits).any(axis=1), np.nan, correct))  # NaN: unknown


@register("label-lira", params=LabelLiraParams, queries_per_record="queries", **QUERYING)
def label_lira(inputs: AttackInputs, params: LabelLiraParams) -> AttackResult:
    """Label-only: robustness of the predicted label to noise/augmentation, calibrated per record on references"""
    q = inputs.queries
    assert q.x is not None  # needs "x": the plan provided it
    target_c, ref_c = correct_counts(inputs.require_labels(), q.x, q.labels, params, inputs.seed, "label-lira")
    phi0, phi = robust_statistic(target_c, params.queries), robust_statistic(ref_c, params.queries)
    return calibrated(inputs, "label-lira", phi0, phi, params.variance, {"correct": target_c.astype(np.float64)})


def calibrated(
    inputs: AttackInputs, name: str, phi0: np.ndarray, phi: np.ndarray, variance: str, extra: dict[str, np.ndarray]
) -> AttackResult:
    """LiRA's calibration of a per-record statistic (higher: more member-like): the target's ``phi0`` (n,)
    against the references' ``phi`` (K, n); offline the one-sided OUT test, online the IN/OUT ratio."""
    member, out = membership_masks(inputs, name)
    per_record = uses_per_record_variance(variance, phi.shape[0])
    require_each(out, name, "OUT")
    mu_out, var_out = _moments(phi, out, per_record)
    extra = {**extra, "mu_out": mu_out}
    if inputs.mode == "offline":
        log_sf = gaussian_log_sf(phi0, mu_out, var_out)
        return AttackResult(scores=-log_sf, log_pvalues=log_sf, extra=extra)
    require_each(member, name, "IN")
    mu_in, var_in = _moments(phi, member, per_record)
    if not per_record:  # LiRA's released code: the IN observations' variance for both classes
        var_out = var_in
    return AttackResult(scores=gaussian_llr(phi0, mu_in, var_in, mu_out, var_out), extra={**extra, "mu_in": mu_in})


class LabelDistParams(AttackParams):
    """Directions searched per record and binary-search steps along each: directions x steps queries."""

    directions: int = Field(default=8, ge=1, le=1000, description="random directions searched per record")
    steps: int = Field(default=6, ge=1, le=50, description="binary-search steps along each direction")
    radius: float = Field(
        default=4.0, gt=0, description="largest distance searched, in units of each feature's standard deviation"
    )
    variance: Literal["auto", "global", "per_record"] = "auto"


def boundary_distances(
    label_of: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    y: np.ndarray,
    correct: np.ndarray,
    directions: np.ndarray,
    scale: np.ndarray,
    params: LabelDistParams,
) -> np.ndarray:
    """(n,) mean over the D directions of the distance at which the label leaves y, by binary search on
    [0, radius] (the search's upper end: ``radius`` where it never leaves). ``directions`` (n, D, ...) unit
    vectors; ``label_of`` answers a batch of inputs. A record the model already labels wrongly (``correct``
    False) is at distance 0 and costs no query."""
    out = np.zeros(len(x))
    keep = np.flatnonzero(correct)
    if not len(keep):
        return out
    x, y, directions = x[keep], y[keep], directions[keep]
    n, d = len(x), directions.shape[1]
    lo, hi = np.zeros((n, d)), np.full((n, d), params.radius)
    base = np.repeat(np.asarray(x, dtype=np.float32)[:, None], d, axis=1)
    step = (scale * directions).astype(np.float32)
    for _ in range(params.steps):
        mid = (lo + hi) / 2
        probe = base + mid.reshape(n, d, *([1] * (x.ndim - 1))).astype(np.float32) * step
        kept = label_of(probe.reshape(n * d, *x.shape[1:])).reshape(n, d) == y[:, None]
        lo, hi = np.where(kept, mid, lo), np.where(kept, hi, mid)
    out[keep] = hi.mean(axis=1)
    return out


def unit_directions(x: np.ndarray, y: np.ndarray, d: int, seed: int) -> np.ndarray:
    """(n, d, ...) random directions per record (x (n, ...), labels y), each record's from its own generator
    (``record_generators``), scaled to length sqrt(features): unit length per feature on average, so the
    search's distance is in units of feature standard deviations."""
    shape = x.shape[1:]
    u = np.stack([rng.standard_normal((d, *shape)) for rng in record_generators(x, y, seed, SEED_TAG + 1)])
    norms = np.sqrt((u.reshape(len(x), d, -1) ** 2).sum(axis=2)).reshape(len(x), d, *([1] * len(shape)))
    return u / norms * np.sqrt(np.prod(shape))


@register("label-dist", params=LabelDistParams, queries_per_record="directions x steps", **QUERYING)
def label_dist(inputs: AttackInputs, params: LabelDistParams) -> AttackResult:
    """Label-only: distance to the decision boundary along random directions, calibrated on references"""
    q, access = inputs.queries, inputs.require_labels()
    assert q.x is not None  # needs "x": the plan provided it
    x, y = q.x, q.labels
    scale = feature_scale(x)
    target, refs = [], []
    for start in range(0, len(x), CHUNK):
        part, labels = x[start : start + CHUNK], y[start : start + CHUNK]
        dirs = unit_directions(part, labels, params.directions, inputs.seed)

        def asked(batch: np.ndarray) -> np.ndarray:
            return access.target(batch, "label-dist")

        # the target's label on the record itself is in its outputs already: no query
        right = np.argmax(q.target_logits[start : start + CHUNK], axis=1) == labels
        target.append(boundary_distances(asked, part, labels, right, dirs, scale, params))
        refs.append(
            np.stack(
                [boundary_distances(r, part, labels, r(part) == labels, dirs, scale, params) for r in access.references]
            )
        )
    floor = params.radius / 2 ** (params.steps + 1)  # below the search's resolution
    phi0 = np.log(np.concatenate(target) + floor)
    phi0[np.isnan(q.target_logits).any(axis=1)] = np.nan  # the target's own label unknown: least significant
    phi = np.log(np.concatenate(refs, axis=1) + floor)
    return calibrated(inputs, "label-dist", phi0, phi, params.variance, {"distance": np.exp(phi0) - floor})


def _moments(phi: np.ndarray, mask: np.ndarray, per_record: bool) -> tuple[np.ndarray, np.ndarray]:
    """(per-record mean, variance) of the observations in ``mask`` (K, n): the per-record variance (MLE), or
    the total variance of all of them (LiRA's global variance)."""
    n = mask.sum(axis=0)
    mean = np.where(mask, phi, 0.0).sum(axis=0) / np.maximum(n, 1)
    if per_record:
        var = np.where(mask, (phi - mean) ** 2, 0.0).sum(axis=0) / np.maximum(n, 1)
    else:
        var = np.full(phi.shape[1], np.var(phi[mask]) if mask.any() else 0.0)
    return mean, np.maximum(var, VAR_FLOOR)
