"""MC Dropout over the penultimate features (Gal & Ghahramani 2016), BMIA's dropout posterior.

Draw m keeps each penultimate feature of each record with probability 1 - rate (scaled by 1/(1 -
rate), inverted dropout as in training) and applies the trained head: logits_m = head(mask_m * phi /
(1 - rate)). Gal & Ghahramani's approximation holds for a network trained with that dropout, so the
plan trains the reference models with dropout before the head (``models.with_head_dropout``) when an
attack chooses this posterior. At rate 0 every draw is the trained head: zero variance, and the t-test
is undefined, so a rate of 0 is refused.

Masks are drawn record by record from one seeded stream, chunk after chunk: the draws depend on the
seed and, through the order of the stream, on the chunk size.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn as nn

from .base import CHUNK_ELEMENTS, FeatureSet, Posterior, generator, register


def dropout_logits(
    phi: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, rate: float, n_samples: int, gen: torch.Generator
) -> torch.Tensor:
    """(n, C, M) logits of M dropout masks per record on features ``phi`` (n, d)."""
    keep = torch.rand(len(phi), n_samples, phi.shape[1], generator=gen, device=phi.device) >= rate
    dropped = phi[:, None, :] * keep.to(phi.dtype) / (1.0 - rate)
    return (dropped @ weight.T + bias).transpose(1, 2)


@register("mc-dropout")
class MCDropoutPosterior(Posterior):
    """Dropout at ``dropout_rate`` on the penultimate features, the trained head applied to each draw."""

    def __init__(self, dropout_rate: float = 0.2):
        if not 0 < dropout_rate < 1:
            raise ValueError(
                f"dropout_rate: {dropout_rate} is outside (0, 1); at 0 every MC Dropout draw is the trained head "
                "(zero variance, no t-test), at 1 every feature is dropped"
            )
        self.rate = dropout_rate
        self.weight = self.bias = torch.empty(0)

    def fit(self, head: nn.Linear, train: FeatureSet, validation: FeatureSet | None = None) -> None:
        self.weight = head.weight.detach().float().clone()
        bias = head.bias.detach().float() if head.bias is not None else self.weight.new_zeros(head.out_features)
        self.bias = bias.clone()

    def logit_chunks(
        self, features: torch.Tensor, n_samples: int, seed: int, chunk_size: int | None = None
    ) -> Iterator[tuple[int, torch.Tensor]]:
        gen = generator(seed, features.device)
        width = max(features.shape[1], self.weight.shape[0])
        step = chunk_size or max(1, CHUNK_ELEMENTS // (n_samples * width))
        weight, bias = self.weight.to(features.device), self.bias.to(features.device)
        for start in range(0, len(features), step):
            phi = features[start : start + step].float()
            yield start, dropout_logits(phi, weight, bias, self.rate, n_samples, gen)
