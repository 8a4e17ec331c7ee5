"""Last-layer SWAG (Maddox et al. 2019, "A Simple Baseline for Bayesian Uncertainty in Deep Learning").

From the trained reference head, SGD continues on the reference's training features at a constant
learning rate; after every epoch the head is a snapshot theta_i. The posterior is Gaussian with the
snapshots' mean theta_bar and covariance (1/2) Sigma_diag + (1/2) D D^T / (S - 1), where Sigma_diag =
mean(theta_i^2) - theta_bar^2 and the columns of D are the last ``swag_rank`` deviations theta_i -
theta_bar (Maddox et al., eq. 3 and section 4; the deviations are taken from the final mean, one of
the two choices the paper allows). A draw is theta_bar + sqrt(Sigma_diag / 2) z_1 + D z_2 / sqrt(2 (S -
1)) with z_1, z_2 standard normal.

Only the head moves (the backbone is fixed): this is SWAG over the same parameters Laplace covers.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
import torch.nn as nn

from .base import FeatureSet, Posterior, generator, head_logit_chunks, head_vector, heads_from_vectors, register
from .headsgd import sgd_head


@register("swag")
class SwagPosterior(Posterior):
    """SWAG over the head: ``swag_snapshots`` epochs of SGD at ``swag_lr`` from the trained head, one
    snapshot per epoch, diagonal plus rank-``swag_rank`` covariance."""

    def __init__(self, swag_snapshots: int = 20, swag_rank: int = 10, swag_lr: float = 0.01):
        if swag_snapshots < 2:
            raise ValueError(f"swag_snapshots: SWAG needs at least 2 snapshots, got {swag_snapshots}")
        if not 1 <= swag_rank <= swag_snapshots:
            raise ValueError(f"swag_rank: must be between 1 and swag_snapshots ({swag_snapshots}), got {swag_rank}")
        self.snapshots, self.rank, self.lr = swag_snapshots, swag_rank, swag_lr
        self.mean = self.diag = self.deviations = torch.empty(0, dtype=torch.float64)
        self.n_classes = 0

    def fit(self, head: nn.Linear, train: FeatureSet, validation: FeatureSet | None = None) -> None:
        snaps: list[torch.Tensor] = []
        sgd_head(head_vector(head), train, lr=self.lr, epochs=self.snapshots, seed=0, after_epoch=snaps.append)
        stacked = torch.stack(snaps)  # (S, P)
        self.mean = stacked.mean(0)
        self.diag = torch.clamp(stacked.square().mean(0) - self.mean.square(), min=0.0)
        self.deviations = (stacked[-self.rank :] - self.mean).T  # (P, rank)
        self.n_classes = head.out_features

    def covariance(self) -> torch.Tensor:
        """The SWAG covariance (P, P) the draws follow: (Sigma_diag + D D^T / (rank - 1)) / 2."""
        low_rank = self.deviations @ self.deviations.T / max(self.rank - 1, 1)
        return (torch.diag(self.diag) + low_rank) / 2

    def sample_vectors(self, n_samples: int, seed: int) -> torch.Tensor:
        """M draws of the head vector, (M, P) float64."""
        gen = generator(seed, self.mean.device)
        z1 = torch.randn(n_samples, self.mean.numel(), dtype=torch.float64, generator=gen)
        z2 = torch.randn(n_samples, self.rank, dtype=torch.float64, generator=gen)
        low_rank = z2 @ self.deviations.T / (2 * max(self.rank - 1, 1)) ** 0.5
        return self.mean + z1 * (self.diag / 2).sqrt() + low_rank

    def logit_chunks(
        self, features: torch.Tensor, n_samples: int, seed: int, chunk_size: int | None = None
    ) -> Iterator[tuple[int, torch.Tensor]]:
        heads = heads_from_vectors(self.sample_vectors(n_samples, seed), self.n_classes)
        return head_logit_chunks(heads, self.n_classes, features, chunk_size)
