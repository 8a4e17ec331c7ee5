"""Reference-free attacks on causal language models: zlib, Min-K% and Min-K%++.

Each reads the target's per-token outputs (``miaudit.lm.tokens``) and gives one statistic per record,
higher = more likely a member:

- ``zlib`` (Carlini et al. 2021): -(LM loss) / (zlib entropy of the text), the loss in nats per token,
  the entropy the length in bytes of the zlib-compressed text the model read. Text that is easy to
  compress is easy to predict whether seen or not; the ratio discounts it.
- ``min-k`` (Shi et al. 2024, Min-K% Prob): the mean of the k% lowest token log-probabilities. A
  member has few very surprising tokens.
- ``min-k-pp`` (Zhang et al. 2025, Min-K%++): the same over token scores standardised by the model's
  own predictive at that position, (log p(x_t) - mu_t) / sigma_t with mu_t = E_z[log p(z)] and
  sigma_t^2 = Var_z[log p(z)], z ~ p(. | x_<t): training makes the actual token a local maximum of
  the likelihood, so it stands out against the vocabulary.

The k% lowest are the floor(k n) lowest of a record's n predicted tokens, at least one (the papers'
``int(len * k)``, which is empty for short texts). Each attack is a test: its p-value is the rank of
the query's statistic among the target's statistics on the population records, which it never
trained on (as Attack-P's), so calibration, intervals and verdicts apply as to any test.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import Field

from ..errors import AttackRequirementError
from ..lm.tokens import TokenStats, decoded_texts, token_statistics, zlib_bytes
from ..stats.pvalues import empirical_log_pvalues
from .base import AttackInputs, AttackParams, AttackResult, ModelAccess
from .registry import register

if TYPE_CHECKING:
    from ..lm.model import CausalLM


class MinKParams(AttackParams):
    k: float = Field(default=0.2, gt=0, le=1, description="fraction of a record's tokens averaged (the lowest)")


def lowest_mean(values: np.ndarray, mask: np.ndarray, k: float) -> np.ndarray:
    """(n,) per row, the mean of the floor(k m) (at least 1) lowest of its m masked values; NaN if m = 0."""
    out = np.full(len(values), np.nan)
    for i, (row, keep) in enumerate(zip(values, mask.astype(bool), strict=True)):
        kept = np.sort(row[keep])
        if len(kept):
            out[i] = kept[: max(1, math.floor(k * len(kept)))].mean()
    return out


def min_k(stats: TokenStats, k: float) -> np.ndarray:
    """Min-K% Prob: the mean of the k% lowest token log-probabilities."""
    return lowest_mean(stats.logp, stats.mask, k)


def min_k_pp(stats: TokenStats, k: float) -> np.ndarray:
    """Min-K%++: the mean of the k% lowest of (log p(x_t) - mu_t) / sigma_t. A position where the model is
    certain (sigma_t = 0) says nothing about the record and is left out."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (stats.logp - stats.mu) / stats.sigma
    return lowest_mean(np.nan_to_num(z), stats.mask & (stats.sigma > 0), k)


def zlib_ratio(stats: TokenStats, texts: list[str]) -> np.ndarray:
    """-(mean token NLL) / zlib bytes of the text: higher = more likely a member."""
    return stats.mean_loglik() / np.array([max(zlib_bytes(t), 1) for t in texts], dtype=np.float64)


def _target_lm(inputs: AttackInputs) -> tuple[ModelAccess, Any]:
    """The models and the target, a ``lm.model.CausalLM`` (torch imported only now: scores-only audits import
    the attacks without it)."""
    from ..lm.model import CausalLM

    models = inputs.require_models()
    if not isinstance(models.target, CausalLM):
        raise AttackRequirementError("needs a causal language model target (model: gpt-tiny or hf:PATH of one)")
    return models, models.target


def _stats(models: ModelAccess, model: CausalLM, record_set: str, x: np.ndarray) -> TokenStats:
    """The target's token statistics on a named record set, once per run."""
    return models.memoized(("lm-tokens", None, record_set), lambda: token_statistics(model, x, models.device))


def _test(inputs: AttackInputs, statistic: Callable[[TokenStats, np.ndarray], np.ndarray]) -> AttackResult:
    """The statistic on the queries, p-values against its values on the population records."""
    models, model = _target_lm(inputs)
    population = inputs.require("population", inputs_x=True)
    scores = statistic(_stats(models, model, models.query_set, models.query_x), models.query_x)
    null = statistic(_stats(models, model, "population", np.asarray(population.x)), np.asarray(population.x))
    return AttackResult(scores=scores, log_pvalues=empirical_log_pvalues(scores, null[~np.isnan(null)]))


_LM: dict[str, Any] = {"needs": frozenset({"models", "population"}), "pvalues": True, "max_references": 0}


@register("zlib", **_LM)
def zlib_attack(inputs: AttackInputs, params: AttackParams) -> AttackResult:
    """zlib: LM loss over the zlib entropy of the text (Carlini et al. 2021); causal LMs"""
    _, model = _target_lm(inputs)
    return _test(inputs, lambda stats, x: zlib_ratio(stats, decoded_texts(model, x)))


@register("min-k", params=MinKParams, **_LM)
def min_k_attack(inputs: AttackInputs, params: MinKParams) -> AttackResult:
    """Min-K%: mean of the k% lowest token log-probabilities (Shi et al. 2024); causal LMs"""
    return _test(inputs, lambda stats, _: min_k(stats, params.k))


@register("min-k-pp", params=MinKParams, **_LM)
def min_k_pp_attack(inputs: AttackInputs, params: MinKParams) -> AttackResult:
    """Min-K%++: k% lowest standardised token log-probabilities (Zhang et al. 2025); causal LMs"""
    return _test(inputs, lambda stats, _: min_k_pp(stats, params.k))
