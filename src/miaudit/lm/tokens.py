"""Per-token outputs of a causal LM on records: what the reference-free attacks read.

For each predicted token t of a record (every token after the first, padding excluded): log p_t, the
log-probability the model gives the actual next token, and the mean mu_t and standard deviation
sigma_t of log p(z) over the vocabulary when z is drawn from the model's own predictive at t (the
standardisation Min-K%++ divides by). Computed in float32 (returned as float64) in passes that
bound the (records, tokens, vocabulary) logits held at once.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported where the statistics are computed: the attacks import this module
    import torch

    from .model import CausalLM

LOGITS_PER_PASS = 2**22  # vocabulary-sized logits held at once (16 MB in float32)


@dataclass(frozen=True)
class TokenStats:
    """(n, T-1) arrays over the predicted positions of n records; ``mask`` marks real tokens."""

    logp: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray
    mask: np.ndarray

    def mean_loglik(self) -> np.ndarray:
        """(n,) each record's mean token log-likelihood (minus its LM loss)."""
        return (self.logp * self.mask).sum(1) / np.maximum(self.mask.sum(1), 1)


def from_logits(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> TokenStats:
    """Token statistics from (n, T, V) logits, the (n, T) next tokens and their (n, T) mask."""
    import torch

    logsm = torch.log_softmax(logits.float(), dim=-1)
    probs = logsm.exp()
    mu = (probs * logsm).sum(-1)
    sigma = (probs * (logsm - mu[..., None]).square()).sum(-1).sqrt()  # two passes: no cancellation
    logp = logsm.gather(-1, targets[..., None])[..., 0]
    as_np = lambda t: t.cpu().numpy().astype(np.float64)
    return TokenStats(as_np(logp), as_np(mu), as_np(sigma), mask.bool().cpu().numpy())


def token_statistics(model: CausalLM, x: np.ndarray, device: str = "cpu") -> TokenStats:
    """The model's token statistics on packed records ``x`` (n, 2, T), in eval mode."""
    import torch

    with torch.no_grad():
        return _statistics(model, x, device)


def _statistics(model: CausalLM, x: np.ndarray, device: str) -> TokenStats:
    import torch

    model.eval().to(device)
    n, length = x.shape[0], x.shape[2]
    step = max(1, LOGITS_PER_PASS // (length * model.lm_head.out_features))
    parts = []
    for start in range(0, n, step):
        batch = torch.as_tensor(x[start : start + step], dtype=torch.float32, device=device)
        features, targets, mask = model.token_outputs(batch)
        parts.append(from_logits(model.lm_head(features), targets, mask))
    if not parts:
        empty = np.zeros((0, max(length - 1, 0)))
        return TokenStats(empty, empty, empty, empty.astype(bool))
    return TokenStats(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("logp", "mu", "sigma", "mask")))


def decoded_texts(model: CausalLM, x: np.ndarray) -> list[str]:
    """The texts the model saw: each record's tokens decoded (truncated as the model read them)."""
    ids, mask = x[:, 0].astype(np.int64), x[:, 1] > 0
    return model.tokenizer.batch_decode([row[keep].tolist() for row, keep in zip(ids, mask)], skip_special_tokens=True)


def zlib_bytes(text: str) -> int:
    """The zlib entropy of a text (Carlini et al. 2021): the length in bytes of its zlib compression."""
    return len(zlib.compress(text.encode("utf-8")))
