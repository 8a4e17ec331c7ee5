"""The LM-head Laplace posterior: its GGN and prior against laplace-torch, its moments against sampling."""

from __future__ import annotations

import copy
import math
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from miaudit.lm import head_laplace
from miaudit.posteriors.laplace import import_laplace


def _tokens(lm, x):
    """Every real token's features and next token, as laplace-torch takes them."""
    feats, targets = [], []
    for f, t, m in head_laplace.token_batches(lm, x):
        feats.append(f[m > 0])
        targets.append(t[m > 0])
    return torch.cat(feats), torch.cat(targets)


def _library_laplace(lm, x):
    phi, y = _tokens(lm, x)
    head = nn.Sequential(OrderedDict(head=copy.deepcopy(lm.lm_head).double()))
    la = import_laplace().Laplace(
        head, "classification", subset_of_weights="last_layer", hessian_structure="diag", last_layer_name="head"
    )
    la.fit(DataLoader(TensorDataset(phi, y), batch_size=64))
    return la


def test_diagonal_ggn_is_laplace_torchs(tiny_lm):
    lm, x = tiny_lm
    ours = head_laplace.diagonal_ggn(lm, x)
    la = _library_laplace(lm, x)
    assert ours.shape == lm.lm_head.weight.shape  # GPT-2's head has no bias
    np.testing.assert_allclose(ours.flatten().numpy(), la.H.detach().numpy(), rtol=1e-6, atol=1e-10)


def test_prior_precision_maximises_laplace_torchs_marginal_likelihood(tiny_lm):
    lm, x = tiny_lm
    posterior = head_laplace.fit(lm, x)
    la = _library_laplace(lm, x)

    def marglik(lam: float) -> float:
        return float(la.log_marginal_likelihood(prior_precision=torch.tensor([lam], dtype=torch.float64)))

    lam = posterior.prior_precision
    assert 1e-6 < lam < 1e6
    assert marglik(lam) >= max(marglik(lam * 1.05), marglik(lam / 1.05))
    np.testing.assert_allclose(posterior.variance, 1.0 / (head_laplace.diagonal_ggn(lm, x) + lam), rtol=1e-12)


@pytest.mark.slow
def test_moments_match_sampled_heads(tiny_lm):
    """Mean and variance of each record's mean token log-likelihood over 4000 heads drawn from the posterior,
    against the linearised moments: within Monte Carlo error plus the linearisation's (small here)."""
    lm, x = tiny_lm
    posterior = head_laplace.fit(lm, x)
    posterior = head_laplace.HeadPosterior(posterior.variance * 0.05, posterior.prior_precision)  # near the MAP
    mean, var = head_laplace.loglik_moments(lm, posterior, x)
    feats, targets, masks = zip(*head_laplace.token_batches(lm, x))
    phi, y, m = feats[0], targets[0], masks[0]
    w = lm.lm_head.weight.detach().double()
    gen = torch.Generator().manual_seed(0)
    draws = w + posterior.variance.sqrt() * torch.randn(4000, *w.shape, generator=gen, dtype=torch.float64)
    logp = torch.log_softmax(torch.einsum("btd,mvd->mbtv", phi, draws), dim=-1)
    per_token = logp.gather(-1, y.expand(4000, *y.shape)[..., None])[..., 0]
    sampled = ((per_token * m).sum(-1) / m.sum(-1)).numpy()  # (draws, records)
    sd = np.sqrt(var)
    assert np.all(np.abs(sampled.mean(0) - mean) < 0.15 * sd + 4 * sd / math.sqrt(4000))
    np.testing.assert_allclose(sampled.var(0, ddof=1), var, rtol=0.12)


def test_moments_do_not_depend_on_the_vocabulary_slice(tiny_lm, monkeypatch):
    lm, x = tiny_lm
    posterior = head_laplace.fit(lm, x[:6])
    whole = head_laplace.loglik_moments(lm, posterior, x[:6])
    monkeypatch.setattr(head_laplace, "VOCAB_SLICE", 7)
    sliced = head_laplace.loglik_moments(lm, posterior, x[:6])
    np.testing.assert_allclose(sliced, whole, rtol=1e-5)
