"""Label-only attacks: membership from predicted labels alone (Choquette-Choo et al. 2021).

For a target that answers only its predicted class (an endpoint with ``output: label``), or any target.

- ``label-gap``: the gap attack, the baseline: a record the target labels correctly scores 1, else 0. No
  query beyond the record itself.
- ``label-lira``: robustness to perturbations. Each record is perturbed ``queries`` times (Gaussian noise
  scaled to each feature's spread; images: a random flip and a shift of up to ``shift`` pixels, then the
  noise), the target is asked for its label on every copy, and the statistic is the share labelled
  correctly, c of n, on the logit scale: phi = log((c + 1/2) / (n - c + 1/2)). Members, fitted, keep their
  label under more perturbation. The statistic is calibrated per record against the reference models as
  LiRA calibrates the rescaled logit: the references answer the same copies (locally, no query), offline
  a one-sided test against the OUT Gaussian (score -log P(Z >= phi), Z ~ N(mu_out, var)), online the IN vs
  OUT Gaussian log-likelihood ratio; with fewer than 64 references one global variance (LiRA's rule).

Queries per record: ``queries`` for label-lira, none for label-gap (each registry entry names the
parameter in ``queries_per_record``). The perturbations are seeded by the run's seed and the record's
position, so a rerun asks the same inputs and the endpoint's store answers them.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from ._refstats import VAR_FLOOR, gaussian_llr, gaussian_log_sf, membership_masks, require_each
from .base import AttackInputs, AttackParams, AttackResult, LabelAccess
from .lira import uses_per_record_variance
from .registry import ALL_OUTPUTS, register

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


def perturbed(x: np.ndarray, params: LabelLiraParams, seed: int, scale: np.ndarray) -> np.ndarray:
    """(n * q, ...) copies of the records x (n, ...), q = params.queries each, record by record."""
    q = params.queries
    images = x.ndim == 4 and params.perturbation != "noise"
    copies = np.repeat(np.asarray(x, dtype=np.float32), q, axis=0)
    rng = np.random.default_rng(np.random.SeedSequence([seed, SEED_TAG, len(x), q]))
    if images and params.perturbation in ("auto", "augment"):
        copies = _augmented(copies, rng, params.shift)
    if params.noise > 0:
        copies = copies + (params.noise * scale * rng.standard_normal(copies.shape)).astype(np.float32)
    return copies


def correct_counts(
    access: LabelAccess, x: np.ndarray, y: np.ndarray, params: LabelLiraParams, seed: int, asked_by: str
) -> tuple[np.ndarray, np.ndarray]:
    """(target (n,), references (K, n)): how many of each record's copies each model labels correctly."""
    scale = np.std(x.reshape(len(x), -1), axis=0).reshape(x.shape[1:]) if len(x) > 1 else np.ones(x.shape[1:])
    q, target, refs = params.queries, [], []
    for start in range(0, len(x), CHUNK):
        part, labels = x[start : start + CHUNK], y[start : start + CHUNK]
        copies = perturbed(part, params, seed + start, scale)
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
    return AttackResult(scores=(np.argmax(q.target_logits, axis=1) == q.labels).astype(np.float64))


@register(
    "label-lira",
    params=LabelLiraParams,
    min_references=1,
    needs=frozenset({"x", "labels"}),
    outputs=ALL_OUTPUTS,
    queries_per_record="queries",
    pvalues=True,
)
def label_lira(inputs: AttackInputs, params: LabelLiraParams) -> AttackResult:
    """Label-only: robustness of the predicted label to noise/augmentation, calibrated per record on references"""
    q = inputs.queries
    assert q.x is not None  # needs "x": the plan provided it
    target_c, ref_c = correct_counts(inputs.require_labels(), q.x, q.labels, params, inputs.seed, "label-lira")
    phi0, phi = robust_statistic(target_c, params.queries), robust_statistic(ref_c, params.queries)
    member, out = membership_masks(inputs, "label-lira")
    per_record = uses_per_record_variance(params.variance, phi.shape[0])
    require_each(out, "label-lira", "OUT")
    mu_out, var_out = _moments(phi, out, per_record)
    extra = {"correct": target_c.astype(np.float64), "mu_out": mu_out}
    if inputs.mode == "offline":
        log_sf = gaussian_log_sf(phi0, mu_out, var_out)
        return AttackResult(scores=-log_sf, log_pvalues=log_sf, extra=extra)
    require_each(member, "label-lira", "IN")
    mu_in, var_in = _moments(phi, member, per_record)
    if not per_record:  # LiRA's released code: the IN observations' variance for both classes
        var_out = var_in
    return AttackResult(scores=gaussian_llr(phi0, mu_in, var_in, mu_out, var_out), extra={**extra, "mu_in": mu_in})


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
