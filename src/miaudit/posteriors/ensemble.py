"""A last-layer deep ensemble (Lakshminarayanan et al. 2017, restricted to the head).

``ensemble_members`` heads, each from its own random initialisation (PyTorch's default for
``nn.Linear``) and its own record order, trained by SGD on the reference's cached training features.
M is the number of members: BMIA's ``samples`` does not apply.

On fixed features the head's loss (cross-entropy plus weight decay) is convex, so trained to
convergence every member would be the same head: the spread of a last-layer ensemble comes from
initialisation and SGD noise within a finite budget (``ensemble_epochs``), unlike a full deep
ensemble, whose members reach different modes.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn as nn

from .base import FeatureSet, Posterior, head_logit_chunks, head_vector, heads_from_vectors, register
from .headsgd import sgd_head


@register("ensemble")
class EnsemblePosterior(Posterior):
    """``ensemble_members`` heads trained from independent initialisations on the cached features."""

    def __init__(self, ensemble_members: int = 10, ensemble_epochs: int = 20, ensemble_lr: float = 0.05):
        if ensemble_members < 2:
            raise ValueError(f"ensemble_members: the t-test needs at least 2 members, got {ensemble_members}")
        self.members, self.epochs, self.lr = ensemble_members, ensemble_epochs, ensemble_lr
        self.heads = torch.empty(0)
        self.n_classes = 0

    def fit(self, head: nn.Linear, train: FeatureSet, validation: FeatureSet | None = None) -> None:
        vectors = []
        for m in range(self.members):
            torch.manual_seed(1_000_003 * (m + 1))  # member m's initialisation, the same for every fit
            fresh = nn.Linear(head.in_features, head.out_features, bias=head.bias is not None)
            vectors.append(sgd_head(head_vector(fresh), train, lr=self.lr, epochs=self.epochs, seed=m, batch_size=128))
        self.n_classes = head.out_features
        self.heads = heads_from_vectors(torch.stack(vectors), self.n_classes)

    def draws(self, n_samples: int) -> int:
        return self.members

    def logit_chunks(
        self, features: torch.Tensor, n_samples: int, seed: int, chunk_size: int | None = None
    ) -> Iterator[tuple[int, torch.Tensor]]:
        return head_logit_chunks(self.heads, self.n_classes, features, chunk_size)
