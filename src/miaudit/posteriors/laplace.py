"""Last-layer Laplace (laplace-torch): BMIA's default posterior (paper section 3, appendix G).

The last layer is Gaussian, N(w_MAP, Sigma), with Sigma from the GGN of the
reference's training records. Last-layer Laplace only needs the penultimate
features and the head: the Hessian of the loss w.r.t. the head depends on the
data only through phi(x). So laplace-torch is fitted on a float64 copy of the
head with the cached features as inputs. This is the same posterior as
``Laplace(model, subset_of_weights='last_layer')`` on raw inputs (checked in
tests) without a second backbone pass.

Every laplace-torch call, its private ones included, stays in this module
(pyproject pins the tested range). Pitfalls of laplace-torch 0.2 worked around here:
``predictive_samples`` returns softmax probabilities, not logits, so we sample
weights (``sample``) or use the GLM mean and covariance
(``_glm_predictive_distribution``) and draw logits ourselves; its prior-precision
``gridsearch`` accumulates the default NLL metric across grid points without
resetting it, so the validation prior is chosen by our own grid.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from .base import FeatureSet, Posterior, chunk_size_for, generator, head_logit_chunks, predictive_loglik, register
from .kinds import Hessian, Predictive, Prior, import_laplace

GLM_MAX_JACOBIAN = 2**22  # entries of one record's last-layer Jacobian, C x C(d+1), the GLM allows
PRIOR_GRID = torch.logspace(-4, 4, 33, dtype=torch.float64)  # laplace-torch's default gridsearch range
PRIOR_GRID_SAMPLES = 100  # posterior draws per grid point when scoring the validation log-likelihood


@register("laplace")
class LaplacePosterior(Posterior):
    """N(w_MAP, Sigma) over the head; ``hessian`` the GGN's structure, ``prior`` how the
    scalar prior precision is chosen, ``predictive`` how logits are drawn."""

    def __init__(self, hessian: Hessian = "kron", prior: Prior = "marglik", predictive: Predictive = "weights"):
        self.hessian, self.prior, self.predictive = hessian, prior, predictive
        self.needs_validation = prior == "validation"
        self.la: Any = None  # laplace-torch's object once fitted

    def fit(self, head: nn.Linear, train: FeatureSet, validation: FeatureSet | None = None) -> None:
        self.la = import_laplace().Laplace(
            _head_only(head),
            "classification",
            subset_of_weights="last_layer",
            hessian_structure=self.hessian,
            last_layer_name="head",
        )
        self.la.fit(_loader(*train))
        self._tune_prior(validation)

    def _tune_prior(self, validation: FeatureSet | None) -> None:
        """The scalar prior precision 1/gamma^2 (paper G.4): by marginal likelihood
        (MacKay 1992; no data needed) or by validation log-likelihood."""
        if self.prior == "validation":
            if validation is None:
                raise ValueError("prior=validation needs validation records")
            self.la.prior_precision = self._validation_prior_precision(*validation)
            return
        with warnings.catch_warnings():  # laplace-torch warns about link_approx, which marglik does not use
            warnings.simplefilter("ignore", UserWarning)
            self.la.optimize_prior_precision(method="marglik", pred_type="glm", prior_structure="scalar")

    def _validation_prior_precision(self, features: torch.Tensor, labels: np.ndarray | torch.Tensor) -> torch.Tensor:
        """The grid value maximising sum_n log p(y_n | x_n, D) on validation records
        (paper G.4, Ritter et al. 2018), the predictive by weight sampling. The draws
        use a fixed seed so the fitted posterior depends only on the reference, Hessian
        and prior (what callers cache it by)."""
        best, best_loglik = PRIOR_GRID[0], -math.inf
        y = torch.as_tensor(labels, dtype=torch.long, device=features.device)
        for prec in PRIOR_GRID:
            self.la.prior_precision = prec
            loglik = sum(
                predictive_loglik(logits, y[start : start + len(logits)])
                for start, logits in self._weight_chunks(features, PRIOR_GRID_SAMPLES, 0, None)
            )
            if loglik > best_loglik:
                best, best_loglik = prec, loglik
        return best

    def logit_chunks(
        self, features: torch.Tensor, n_samples: int, seed: int, chunk_size: int | None = None
    ) -> Iterator[tuple[int, torch.Tensor]]:
        if self.predictive == "glm":
            return self._glm_chunks(features, n_samples, seed, chunk_size)
        return self._weight_chunks(features, n_samples, seed, chunk_size)

    def sampled_heads(self, n_samples: int, seed: int) -> torch.Tensor:
        """M posterior draws of the head as (C*M, d+1) float32 rows [W_c | b_c],
        class-major (row c*M + m is class c of draw m).

        ``la.sample`` returns vectors in ``parameters_to_vector(head.parameters())``
        order: the weight (C, d) row-major, then the bias (C,)."""
        head = self.la.model.last_layer
        n_classes, dim = head.weight.shape
        theta = self.la.sample(n_samples, generator=generator(seed, self.la._device))
        weights = theta[:, : n_classes * dim].reshape(n_samples, n_classes, dim)
        bias = theta[:, n_classes * dim :] if head.bias is not None else theta.new_zeros(n_samples, n_classes)
        rows = torch.cat([weights, bias.reshape(n_samples, n_classes, 1)], dim=-1)
        return rows.transpose(0, 1).reshape(-1, dim + 1).float()

    def _weight_chunks(
        self, features: torch.Tensor, n_samples: int, seed: int, chunk_size: int | None
    ) -> Iterator[tuple[int, torch.Tensor]]:
        """Logits phi(x) W_m^T + b_m of M sampled heads, one matrix product per chunk."""
        n_classes = self.la.model.last_layer.out_features
        return head_logit_chunks(self.sampled_heads(n_samples, seed), n_classes, features, chunk_size)

    def _glm_chunks(
        self, features: torch.Tensor, n_samples: int, seed: int, chunk_size: int | None
    ) -> Iterator[tuple[int, torch.Tensor]]:
        """Logits from the linearised predictive N(f(x), J Sigma J^T) (paper eq. 47),
        with laplace-torch computing the mean and covariance from the Jacobian."""
        n_classes, dim = self.la.model.last_layer.weight.shape
        jacobian_size = n_classes * n_classes * (dim + 1)
        if jacobian_size > GLM_MAX_JACOBIAN:
            raise ValueError(
                f"predictive=glm: the last-layer Jacobian has {jacobian_size} entries per record "
                f"(C={n_classes}, d={dim}), too large; use predictive=weights (same distribution)"
            )
        z = torch.randn(
            n_samples,
            n_classes,
            dtype=torch.float64,
            device=features.device,
            generator=generator(seed, features.device),
        )
        jacobian_budget = 4 * GLM_MAX_JACOBIAN  # Jacobian entries per chunk (128 MB in float64)
        step = min(chunk_size_for(chunk_size, n_samples, n_classes), max(1, jacobian_budget // jacobian_size))
        for start in range(0, len(features), step):
            f_mu, f_var = self.la._glm_predictive_distribution(features[start : start + step])
            scale = torch.linalg.cholesky(f_var)  # (n, C, C)
            yield start, (f_mu[:, :, None] + torch.einsum("nij,mj->nim", scale, z)).float()


def _head_only(head: nn.Linear) -> nn.Module:
    """The head alone, in float64, named 'head' so laplace-torch finds it as the last layer."""
    return nn.Sequential(OrderedDict(head=copy.deepcopy(head).to(torch.float64)))


def _loader(features: torch.Tensor, labels: np.ndarray | torch.Tensor, batch_size: int = 512) -> DataLoader:
    y = torch.as_tensor(labels, dtype=torch.long, device=features.device)
    return DataLoader(TensorDataset(features, y), batch_size=batch_size)
