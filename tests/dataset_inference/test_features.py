"""The reference-free signals by hand."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit.dataset_inference import features


def test_signals_by_hand() -> None:
    logits = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    s = features.signals(logits, np.array([0, 2]))
    z = np.log(np.exp(2) + 2)
    assert s[0, 0] == pytest.approx(2 - z) and s[0, 1] == pytest.approx(2.0)
    assert s[1, 0] == pytest.approx(-np.log(3)) and s[1, 1] == pytest.approx(0.0)
    assert s[1, 2] == pytest.approx(-np.log(3))  # minus the entropy of the uniform output
    assert s.shape == (2, len(features.SIGNALS))


def test_a_language_models_signals_are_its_token_statistics() -> None:
    """A causal LM's reference-free signals are the LM attacks' statistics of its tokens: the mean token
    log-likelihood, zlib's ratio, Min-K% and Min-K%++ at the registry's default k (tests/lm's tiny model)."""
    import torch

    from miaudit.attacks import RecordSet
    from miaudit.attacks.lm_reference_free import MinKParams, min_k, min_k_pp, zlib_ratio
    from miaudit.lm import data, model
    from miaudit.lm.tokens import decoded_texts, token_statistics

    texts = ["the team won the cup final", "rain is expected on the coast", "a new phone was shown today"] * 2
    tokenizer = data.word_tokenizer(texts, 40, 10)
    torch.manual_seed(0)
    lm = model.build("gpt-tiny[max_length=10,width=8,layers=2]", tokenizer)
    x = data.encode(tokenizer, texts, 10)
    own = features.signals_of(lm)
    assert own.names == features.LM_SIGNALS
    records = RecordSet(
        labels=np.zeros(len(x), dtype=np.int64), target_logits=np.zeros((len(x), 2)), ref_logits=None, x=x
    )
    got = own.of(records)
    stats, k = token_statistics(lm, x), MinKParams().k
    assert got.shape == (len(x), 4)
    np.testing.assert_allclose(got[:, 0], stats.mean_loglik())
    np.testing.assert_allclose(got[:, 1], zlib_ratio(stats, decoded_texts(lm, x)))
    np.testing.assert_allclose(got[:, 2], min_k(stats, k))
    np.testing.assert_allclose(got[:, 3], min_k_pp(stats, k))
    assert np.all(got[:, 0] < 0) and np.all(got[:, 2] <= got[:, 0])  # the k% lowest lie below the mean


def test_a_classifiers_signals_are_read_from_the_record_sets_logits() -> None:
    from miaudit.attacks import RecordSet

    logits = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    records = RecordSet(labels=np.array([0, 2]), target_logits=logits, ref_logits=None)
    own = features.signals_of(None)
    assert own.names == features.SIGNALS
    np.testing.assert_array_equal(own.of(records), features.signals(logits, np.array([0, 2])))
