"""Last-layer Laplace posteriors of reference models, and per-record score moments under them.

BMIA (paper section 3, appendix G) treats the reference model's last layer as
Gaussian, N(w_MAP, Sigma), and scores each query under M draws from it. Three
facts shape this module:

* Last-layer Laplace only needs the penultimate features and the head: the
  Hessian of the loss w.r.t. the head depends on the data only through
  phi(x). So we pass each record through the backbone once (``penultimate``),
  cache the features, and fit laplace-torch's last-layer Laplace on a copy of
  the head in float64 with the features as inputs. This is the same posterior
  as ``Laplace(model, subset_of_weights='last_layer')`` on raw inputs (checked
  in tests) without a second backbone pass, and it lets laplace-torch's own
  GLM predictive run on cached features.
* Scores of M samples x N queries are computed in chunks of records with all
  M samples at once (one matrix product per chunk), so memory is bounded by
  the chunk and no Python loop runs over samples or records. Logits are laid
  out (n, C, M): reductions over classes then run along contiguous M-vectors,
  several times faster on CPU than over a short last axis of C.
* laplace-torch 0.3 pitfalls avoided: ``predictive_samples`` returns softmax
  probabilities, not logits, so we sample weights (``sample``) or use the GLM
  mean and covariance (``_glm_predictive_distribution``) and draw logits
  ourselves; its prior-precision ``gridsearch`` accumulates the default NLL
  metric across grid points without resetting it, so the validation prior is
  chosen by our own grid (``_validation_prior_precision``).
"""

from __future__ import annotations

import copy
import math
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any, Literal

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

Hessian = Literal["diag", "kron", "full"]
Prior = Literal["marglik", "validation"]
Predictive = Literal["weights", "glm"]
Signal = Literal["hinge", "rescaled_logit", "loss", "confidence"]

CHUNK_ELEMENTS = 2**24  # logits held per chunk (64 MB in float32) when chunk_size is None
GLM_MAX_JACOBIAN = 2**22  # entries of one record's last-layer Jacobian, C x C(d+1), the GLM allows
PRIOR_GRID = torch.logspace(-4, 4, 33, dtype=torch.float64)  # laplace-torch's default gridsearch range
PRIOR_GRID_SAMPLES = 100  # posterior draws per grid point when scoring the validation log-likelihood


def penultimate(model: nn.Module, x: np.ndarray, device: str = "cpu", batch_size: int = 1024) -> torch.Tensor:
    """``model.features`` on every record (eval mode, no grad), as float64 (n, d)."""
    model.eval()
    with torch.no_grad():
        parts = [
            model.features(torch.as_tensor(x[i : i + batch_size], dtype=torch.float32, device=device))
            for i in range(0, len(x), batch_size)
        ]
    return torch.cat(parts).to(torch.float64)


def _head_only(head: nn.Linear) -> nn.Module:
    """The head alone, in float64, named 'head' so laplace-torch finds it as the last layer."""
    return nn.Sequential(OrderedDict(head=copy.deepcopy(head).to(torch.float64)))


def _loader(features: torch.Tensor, labels: np.ndarray, batch_size: int = 512) -> DataLoader:
    y = torch.as_tensor(labels, dtype=torch.long, device=features.device)
    return DataLoader(TensorDataset(features, y), batch_size=batch_size)


def import_laplace() -> None:
    """Import laplace-torch (seconds: it pulls in torchmetrics) before an attack's timer starts."""
    import laplace  # noqa: F401


def fit_last_layer(head: nn.Linear, features: torch.Tensor, labels: np.ndarray, hessian: Hessian) -> Any:
    """laplace-torch last-layer Laplace around ``head``, with the GGN of the
    training records' features (prior precision still 1: see ``tune_prior``)."""
    from laplace import Laplace  # here, not at the top: it imports torchmetrics, seconds every CLI start pays

    la = Laplace(
        _head_only(head),
        "classification",
        subset_of_weights="last_layer",
        hessian_structure=hessian,
        last_layer_name="head",
    )
    la.fit(_loader(features, labels))
    return la


def tune_prior(la: Any, prior: Prior, val: tuple[torch.Tensor, np.ndarray] | None = None) -> None:
    """Set the scalar prior precision 1/gamma^2 (paper G.4): by marginal
    likelihood (MacKay 1992; no data needed) or by validation log-likelihood."""
    if prior == "validation":
        if val is None:
            raise ValueError("prior=validation needs validation records")
        la.prior_precision = _validation_prior_precision(la, *val)
        return
    with warnings.catch_warnings():  # laplace-torch warns about link_approx, which marglik does not use
        warnings.simplefilter("ignore", UserWarning)
        la.optimize_prior_precision(method="marglik", pred_type="glm", prior_structure="scalar")


def _validation_prior_precision(la: Any, features: torch.Tensor, labels: np.ndarray) -> torch.Tensor:
    """The grid value maximising sum_n log p(y_n | x_n, D) on validation records
    (paper G.4, Ritter et al. 2018), the predictive by posterior sampling. The
    draws use a fixed seed so the fitted posterior depends only on the
    reference, Hessian and prior (what callers cache it by)."""
    best, best_loglik = PRIOR_GRID[0], -math.inf
    y = torch.as_tensor(labels, dtype=torch.long, device=features.device)
    for prec in PRIOR_GRID:
        la.prior_precision = prec
        loglik = sum(
            _predictive_loglik(logits, y[start : start + len(logits)])
            for start, logits in logit_chunks(la, features, PRIOR_GRID_SAMPLES, "weights", None, seed=0)
        )
        if loglik > best_loglik:
            best, best_loglik = prec, loglik
    return best


def _predictive_loglik(logits: torch.Tensor, y: torch.Tensor) -> float:
    """sum_n log mean_m softmax(logits[n, :, m])_{y_n}."""
    log_probs = torch.log_softmax(logits.double(), dim=1)
    per_sample = log_probs.gather(1, y.view(-1, 1, 1).expand(-1, 1, logits.shape[2]))[:, 0]
    return float((torch.logsumexp(per_sample, dim=1) - math.log(logits.shape[2])).sum())


def _generator(seed: int, device: torch.device) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def sampled_heads(la: Any, n_samples: int, seed: int) -> torch.Tensor:
    """M posterior draws of the head as (C*M, d+1) float32 rows [W_c | b_c],
    class-major (row c*M + m is class c of draw m).

    ``la.sample`` returns vectors in ``parameters_to_vector(head.parameters())``
    order: the weight (C, d) row-major, then the bias (C,)."""
    head = la.model.last_layer
    n_classes, dim = head.weight.shape
    theta = la.sample(n_samples, generator=_generator(seed, la._device))
    weights = theta[:, : n_classes * dim].reshape(n_samples, n_classes, dim)
    bias = theta[:, n_classes * dim :] if head.bias is not None else theta.new_zeros(n_samples, n_classes)
    rows = torch.cat([weights, bias.reshape(n_samples, n_classes, 1)], dim=-1)
    return rows.transpose(0, 1).reshape(-1, dim + 1).float()


def _chunk_size(chunk_size: int | None, n_samples: int, n_classes: int) -> int:
    return chunk_size or max(1, CHUNK_ELEMENTS // (n_samples * n_classes))


def logit_chunks(
    la: Any, features: torch.Tensor, n_samples: int, predictive: Predictive, chunk_size: int | None, seed: int
) -> Iterator[tuple[int, torch.Tensor]]:
    """(start, logits (n_chunk, C, M)) over the records, M posterior draws each.

    The draws (weights, or GLM standard normals) are made once, so every
    record sees the same draws whatever the chunking."""
    n_classes = la.model.last_layer.out_features
    if predictive == "glm":
        yield from _glm_logit_chunks(la, features, n_samples, chunk_size, seed)
        return
    heads = sampled_heads(la, n_samples, seed)
    step = _chunk_size(chunk_size, n_samples, n_classes)
    for start in range(0, len(features), step):
        phi = features[start : start + step].float()
        phi1 = torch.cat([phi, phi.new_ones(len(phi), 1)], dim=1)
        yield start, (phi1 @ heads.T).view(len(phi), n_classes, n_samples)


def _glm_logit_chunks(
    la: Any, features: torch.Tensor, n_samples: int, chunk_size: int | None, seed: int
) -> Iterator[tuple[int, torch.Tensor]]:
    """Logits from the linearised predictive N(f(x), J Sigma J^T) (paper eq. 47),
    with laplace-torch computing the mean and covariance from the Jacobian."""
    n_classes, dim = la.model.last_layer.weight.shape
    jacobian_size = n_classes * n_classes * (dim + 1)
    if jacobian_size > GLM_MAX_JACOBIAN:
        raise ValueError(
            f"predictive=glm: the last-layer Jacobian has {jacobian_size} entries per record "
            f"(C={n_classes}, d={dim}), too large; use predictive=weights (same distribution)"
        )
    z = torch.randn(
        n_samples, n_classes, dtype=torch.float64, device=features.device, generator=_generator(seed, features.device)
    )
    jacobian_budget = 4 * GLM_MAX_JACOBIAN  # Jacobian entries per chunk (128 MB in float64)
    step = min(_chunk_size(chunk_size, n_samples, n_classes), max(1, jacobian_budget // jacobian_size))
    for start in range(0, len(features), step):
        f_mu, f_var = la._glm_predictive_distribution(features[start : start + step])
        scale = torch.linalg.cholesky(f_var)  # (n, C, C)
        yield start, (f_mu[:, :, None] + torch.einsum("nij,mj->nim", scale, z)).float()


def signed_signal(name: Signal, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``miaudit.signals`` in torch over (n, C, M) logits -> (n, M), higher = member
    (the loss is negated to log p_y). Torch because this is the hot loop: M x N
    scores; tests check it against the float64 numpy signals. Overwrites
    ``logits`` (the caller's chunk is a temporary) to spare a copy."""
    idx = labels.view(-1, 1, 1).expand(-1, 1, logits.shape[2])
    true = logits.gather(1, idx)[:, 0]
    if name in ("hinge", "rescaled_logit"):
        others = logits.scatter_(1, idx, -math.inf)
        return true - (others.amax(1) if name == "hinge" else torch.logsumexp(others, dim=1))
    log_py = true - torch.logsumexp(logits, dim=1)
    if name == "loss":
        return log_py
    if name == "confidence":
        return log_py.exp()
    raise ValueError(f"unknown signal {name!r}; expected one of hinge, rescaled_logit, loss, confidence")


def score_moments(
    la: Any,
    features: torch.Tensor,
    labels: np.ndarray,
    *,
    n_samples: int,
    signal: Signal,
    predictive: Predictive = "weights",
    chunk_size: int | None = None,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-record mean and variance (ddof=1) of the signed score over M
    posterior draws, float64, never holding more than one chunk of scores."""
    y = torch.as_tensor(labels, dtype=torch.long, device=features.device)
    mean = np.empty(len(features))
    var = np.empty(len(features))
    for start, logits in logit_chunks(la, features, n_samples, predictive, chunk_size, seed):
        scores = signed_signal(signal, logits, y[start : start + len(logits)]).double()  # moments in float64
        chunk_var, chunk_mean = torch.var_mean(scores, dim=1, correction=1)
        mean[start : start + len(logits)] = chunk_mean.cpu().numpy()
        var[start : start + len(logits)] = chunk_var.cpu().numpy()
    return mean, var
