"""zlib, Min-K% and Min-K%++ on hand-computed cases and against their published definitions."""

from __future__ import annotations

import math
import zlib

import numpy as np
import torch

from miaudit.attacks.lm_reference_free import lowest_mean, min_k, min_k_pp, zlib_ratio
from miaudit.lm import tokens
from miaudit.lm.tokens import TokenStats


def _stats(logp, mu=None, sigma=None, mask=None) -> TokenStats:
    logp = np.asarray(logp, dtype=float)
    return TokenStats(
        logp,
        np.zeros_like(logp) if mu is None else np.asarray(mu, float),
        np.ones_like(logp) if sigma is None else np.asarray(sigma, float),
        np.ones_like(logp, bool) if mask is None else np.asarray(mask, bool),
    )


def test_min_k_averages_the_lowest_fraction_of_real_tokens():
    s = _stats([[-1.0, -5.0, -2.0, -4.0, -3.0, -9.0]], mask=[[1, 1, 1, 1, 1, 0]])
    # 5 real tokens, k = 0.4: the 2 lowest, -5 and -4; the masked -9 is not a token
    assert min_k(s, 0.4)[0] == -4.5
    # k = 0.1 of 5 tokens is 0.5: at least one token, the lowest
    assert min_k(s, 0.1)[0] == -5.0
    assert min_k(s, 1.0)[0] == -3.0


def test_lowest_mean_of_a_record_without_tokens_is_nan():
    out = lowest_mean(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[0, 0], [1, 1]]), 0.5)
    assert np.isnan(out[0]) and out[1] == 3.0


def test_min_k_pp_standardises_by_mu_and_sigma():
    s = _stats([[-1.0, -2.0, -3.0]], mu=[[-2.0, -2.0, -1.0]], sigma=[[1.0, 2.0, 0.5]])
    # z = (1.0, 0.0, -4.0); the lowest third is -4
    assert min_k_pp(s, 0.34)[0] == -4.0
    assert min_k_pp(s, 0.67)[0] == -2.0


def test_min_k_pp_leaves_out_positions_where_the_model_is_certain():
    s = _stats([[-1.0, -3.0]], mu=[[-2.0, -3.0]], sigma=[[1.0, 0.0]])
    assert min_k_pp(s, 1.0)[0] == 1.0


def test_min_k_pp_matches_the_published_definition_on_a_model(tiny_lm):
    """Zhang et al. (2025), eq. 2-3: (log p(x_t|x<t) - mu_x<t) / sigma_x<t with mu = E_z log p(z|x<t),
    sigma^2 = E_z (log p(z|x<t) - mu)^2, z ~ p(.|x<t); the score averages the k% lowest. Computed here position
    by position from the model's full-vocabulary distribution, against the vectorised statistics."""
    lm, x = tiny_lm
    stats = tokens.token_statistics(lm, x[:4])
    with torch.no_grad():
        ids, mask = torch.as_tensor(x[:4, 0]).long(), torch.as_tensor(x[:4, 1]).long()
        logits = lm.model(input_ids=ids, attention_mask=mask).logits.double()
    for r in range(4):
        zs = []
        for t in range(1, int(mask[r].sum())):
            logprobs = torch.log_softmax(logits[r, t - 1], dim=-1)
            p = logprobs.exp()
            mu = float((p * logprobs).sum())
            sigma = math.sqrt(float((p * (logprobs - mu) ** 2).sum()))
            zs.append((float(logprobs[ids[r, t]]) - mu) / sigma)
        lowest = sorted(zs)[: max(1, int(len(zs) * 0.5))]
        assert math.isclose(min_k_pp(stats, 0.5)[r], sum(lowest) / len(lowest), rel_tol=1e-5)


def test_zlib_ratio_is_mean_loglik_over_compressed_bytes():
    s = _stats([[-2.0, -4.0, -100.0]], mask=[[1, 1, 0]])
    text = "hello hello hello world"
    assert zlib_ratio(s, [text])[0] == -3.0 / len(zlib.compress(text.encode("utf-8")))


def test_token_statistics_are_the_model_loss(tiny_lm):
    """The mean token log-likelihood equals minus the model's own LM loss and its sequence logit."""
    lm, x = tiny_lm
    stats = tokens.token_statistics(lm, x[:1])
    with torch.no_grad():
        ids, mask = torch.as_tensor(x[:1, 0]).long(), torch.as_tensor(x[:1, 1]).long()
        loss = lm.model(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100)).loss
        seq = lm(torch.as_tensor(x[:1]))
    assert math.isclose(stats.mean_loglik()[0], -float(loss), rel_tol=1e-5)
    assert math.isclose(float(seq[0, 0]), -float(loss), rel_tol=1e-5)
    assert math.isclose(float(torch.softmax(seq, 1)[0, 0]), math.exp(-float(loss)), rel_tol=1e-4)


def test_decoded_texts_are_what_the_model_read(tiny_lm):
    lm, x = tiny_lm
    assert tokens.decoded_texts(lm, x[:2]) == ["the cat sat on the mat", "a dog ran in the park"]
