"""A last-layer Laplace posterior over a causal LM's output layer, and a record's score moments under it.

The head W (V x d, vocabulary by width) maps the last hidden state phi_t of every position to the
next token's logits. BMIA asks how a record's score varies over a posterior on W given the reference's
training tokens; for an LM the score is the record's mean token log-likelihood
l(W) = (1/n) sum_t log softmax(W phi_t)[y_t], a sum over its tokens, all through one W.

- **Posterior**: N(W_MAP, diag(1 / (h + lambda))) with h the diagonal of the GGN of the training
  tokens' cross-entropy, h_vj = sum_t p_tv (1 - p_tv) phi_tj^2 (the exact diagonal: the logits' Hessian
  is diag(p) - p p^T), and the scalar prior precision lambda maximising the Laplace marginal
  likelihood (MacKay 1992), as laplace-torch's ``marglik`` does. Diagonal because a Kronecker factor over
  the vocabulary is V x V; computed here in closed form because laplace-torch's diagonal GGN takes
  backward passes per class (V of them per token).
- **Moments**: the variance linearised in W (the GLM predictive, laplace-torch's default for last-layer
  Laplace), sum_vj S_vj G_vj^2 with G = dl/dW = (1/n) sum_t (e_{y_t} - p_t) phi_t^T; the mean to second
  order, l(W_MAP) - (1/2n) sum_t sum_v p_tv (1 - p_tv) Var(f_tv), Var(f_tv) = sum_j S_vj phi_tj^2. The
  covariance between a record's tokens, which share W, is in G; drawing independent logits per token
  would lose it. Cost: one pass of the head per token (sampling M heads would cost M).
- **Tied embeddings** (GPT-2): the posterior is over the output projection alone, a copy; the input
  embedding that shares its weight stays at the MAP, so phi_t is fixed (last-layer Laplace's premise).
- **Large vocabularies**: every product runs in passes over records and slices of the vocabulary, so
  memory is bounded by ``VOCAB_SLICE`` rows whatever V is.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize_scalar

from .model import RECORDS_PER_PASS, CausalLM

VOCAB_SLICE = 8192  # vocabulary rows per product


@dataclass(frozen=True)
class HeadPosterior:
    """N(W_MAP, diag(variance)) over the head [W | b] (V, d or d + 1), float64."""

    variance: torch.Tensor
    prior_precision: float


def _with_bias(model: CausalLM, features: torch.Tensor) -> torch.Tensor:
    """Features with a constant 1 appended when the head has a bias (its column of [W | b])."""
    if model.lm_head.bias is None:
        return features
    return torch.cat([features, features.new_ones(*features.shape[:-1], 1)], dim=-1)


@torch.no_grad()
def token_batches(model: CausalLM, x: np.ndarray) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(features (B, T, d[+1]) float64, next tokens (B, T), mask (B, T) float64) over passes of records."""
    model.eval()
    for start in range(0, len(x), RECORDS_PER_PASS):
        batch = torch.as_tensor(x[start : start + RECORDS_PER_PASS], dtype=torch.float32)
        features, targets, mask = model.token_outputs(batch)
        yield _with_bias(model, features.double()), targets, mask.double()


def _head(model: CausalLM) -> torch.Tensor:
    """[W | b] float64 (V, d[+1])."""
    w = model.lm_head.weight.detach().double()
    b = model.lm_head.bias
    return w if b is None else torch.cat([w, b.detach().double()[:, None]], dim=1)


def diagonal_ggn(model: CausalLM, x: np.ndarray) -> torch.Tensor:
    """(V, d[+1]) the GGN's diagonal over the head on the records' tokens: sum_t p_tv (1 - p_tv) phi_tj^2."""
    head = _head(model)
    ggn = torch.zeros_like(head)
    for features, _, mask in token_batches(model, x):
        phi = features[mask > 0]  # (tokens, d)
        probs = torch.softmax(phi @ head.T, dim=-1)
        ggn += (probs * (1 - probs)).T @ phi.square()
    return ggn


def marglik_prior_precision(ggn: torch.Tensor, head: torch.Tensor) -> float:
    """The scalar prior precision maximising the Laplace log marginal likelihood's lambda-dependent part,
    (P/2) log lambda - (lambda/2) |w|^2 - (1/2) sum_i log(h_i + lambda), over lambda in [1e-6, 1e6]."""
    h, sq, n = ggn.flatten().double(), float(head.square().sum()), ggn.numel()

    def negative(log_lam: float) -> float:
        lam = math.exp(log_lam)
        return -(0.5 * n * log_lam - 0.5 * lam * sq - 0.5 * float(torch.log(h + lam).sum()))

    return math.exp(minimize_scalar(negative, bounds=(math.log(1e-6), math.log(1e6)), method="bounded").x)


def fit(model: CausalLM, train_x: np.ndarray) -> HeadPosterior:
    """The diagonal Laplace posterior over ``model``'s head given its training records."""
    ggn = diagonal_ggn(model, train_x)
    lam = marglik_prior_precision(ggn, _head(model))
    return HeadPosterior(1.0 / (ggn + lam), lam)


def loglik_moments(model: CausalLM, posterior: HeadPosterior, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n,) each record's mean token log-likelihood and its variance under the posterior (see the module doc)."""
    head, means, variances = _head(model).float(), [], []  # float32: as accurate as the model's own logits
    posterior_var = posterior.variance.float()
    for features, targets, mask in token_batches(model, x):
        features, mask = features.float(), mask.float()
        weight = mask / mask.sum(1, keepdim=True).clamp(min=1)  # (B, T): 1/n on real tokens
        var = features.new_zeros(len(features))
        mean = features.new_zeros(len(features))
        logz = torch.logsumexp(features @ head.T, dim=-1)  # (B, T) normaliser over the whole vocabulary
        for lo in range(0, head.shape[0], VOCAB_SLICE):
            rows = head[lo : lo + VOCAB_SLICE]
            probs = torch.exp(features @ rows.T - logz[..., None])  # (B, T, v)
            residual = -probs
            hit = (targets >= lo) & (targets < lo + len(rows))
            residual[hit, (targets[hit] - lo)] += 1.0  # e_y - p on this slice
            grad = torch.einsum("btv,btd->bvd", residual * weight[..., None], features)
            slice_var = posterior_var[lo : lo + len(rows)]
            var += torch.einsum("bvd,vd->b", grad.square(), slice_var)
            # second order: E log softmax(f)_y = log softmax(f_MAP)_y - 1/2 sum_v p_v (1 - p_v) Var f_v
            logit_var = torch.einsum("btd,vd->btv", features.square(), slice_var)
            mean -= 0.5 * (probs * (1 - probs) * logit_var * weight[..., None]).sum((1, 2))
        logp = (features * head[targets]).sum(-1) - logz
        mean += (logp * weight).sum(1)
        means.append(mean)
        variances.append(var)
    return torch.cat(means).double().numpy(), torch.cat(variances).double().numpy()
