"""Last-layer Laplace posteriors (miaudit.posterior) and BMIA / MR-BMIA end to end on tiny models."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from laplace import Laplace
from scipy import stats
from sklearn.datasets import load_digits
from torch.nn.utils import vector_to_parameters
from torch.utils.data import DataLoader, TensorDataset

from miaudit import posteriors
from miaudit.attacks import AttackInputs, AttackRequirementError, ModelAccess, RecordSet, calibration, registry
from miaudit.models.features import penultimate
from miaudit.models.mlp import MLP
from miaudit.posteriors import laplace
from miaudit.posteriors.base import predictive_loglik
from miaudit.posteriors.laplace import LaplacePosterior
from miaudit.stats.signals import oriented as _signed


def _train(x: np.ndarray, y: np.ndarray, seed: int) -> MLP:
    torch.manual_seed(seed)
    model = MLP((64,), 10, hidden=(32, 16))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    for _ in range(30):
        for batch in torch.randperm(len(y)).split(32):
            opt.zero_grad()
            F.cross_entropy(model(xt[batch]), yt[batch]).backward()
            opt.step()
    return model.eval()


def _logits(model: MLP, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.as_tensor(x)).double().numpy()


@pytest.fixture(scope="module")
def digits() -> dict:
    """A target trained on 200 digits, two references on halves of a disjoint pool."""
    x, y = load_digits(return_X_y=True)
    x, y = (x / 16).astype(np.float32), y.astype(np.int64)
    idx = np.random.default_rng(0).permutation(len(y))
    members, nonmembers, pool, val = idx[:200], idx[200:400], idx[400:800], idx[800:1000]
    ref_train = [pool[:200], pool[200:]]
    return {
        "x": x,
        "y": y,
        "members": members,
        "nonmembers": nonmembers,
        "val": val,
        "target": _train(x[members], y[members], 0),
        "refs": [_train(x[r], y[r], k + 1) for k, r in enumerate(ref_train)],
        "ref_train": ref_train,
    }


def _records(d: dict, idx: np.ndarray) -> RecordSet:
    x = d["x"][idx]
    return RecordSet(
        labels=d["y"][idx],
        target_logits=_logits(d["target"], x),
        ref_logits=np.stack([_logits(r, x) for r in d["refs"]]),
        x=x,
    )


def _inputs(d: dict, validation: bool = True) -> AttackInputs:
    queries = np.concatenate([d["members"], d["nonmembers"]])
    access = ModelAccess(
        target=d["target"],
        references=d["refs"],
        query_x=d["x"][queries],
        reference_train=[(d["x"][r], d["y"][r]) for r in d["ref_train"]],
    )
    return AttackInputs(
        queries=_records(d, queries), validation=_records(d, d["val"]) if validation else None, models=access, seed=3
    )


def _reference_posterior(d: dict, hessian: laplace.Hessian = "kron", **options: str) -> tuple:
    ref, train = d["refs"][0], d["ref_train"][0]
    post = LaplacePosterior(hessian, **options)
    val = (penultimate(ref, d["x"][d["val"]]), d["y"][d["val"]])
    post.fit(ref.head, (penultimate(ref, d["x"][train]), d["y"][train]), val)
    return post, *val


def test_signed_signal_matches_numpy_signals() -> None:
    logits = np.random.default_rng(0).normal(0, 3, (4, 7, 5))  # (M, n, C) as miaudit.stats.signals takes it
    labels = np.array([0, 4, 2, 2, 1, 3, 0])
    as_torch = torch.as_tensor(logits).permute(1, 2, 0).contiguous()  # (n, C, M)
    for name in ("hinge", "rescaled_logit", "loss", "confidence"):
        got = posteriors.signed_signal(name, as_torch.clone(), torch.as_tensor(labels)).numpy()
        np.testing.assert_allclose(got.T, _signed(name, logits, labels), rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_laplace_sample_order_matches_head(digits: dict) -> None:
    post, features, _ = _reference_posterior(digits)
    la = post.la
    head = digits["refs"][0].head
    np.testing.assert_array_equal(
        la.mean.numpy(), torch.cat([head.weight.flatten(), head.bias]).detach().double().numpy()
    )
    draws = la.sample(3, generator=torch.Generator().manual_seed(11))  # what logit_chunks draws with seed 11
    ((_, logits),) = post.logit_chunks(features, 3, seed=11)
    probe = torch.nn.Linear(head.in_features, head.out_features).double()
    for m in range(3):
        vector_to_parameters(draws[m], probe.parameters())  # laplace-torch's own vector -> module mapping
        with torch.no_grad():
            np.testing.assert_allclose(logits[:, :, m].numpy(), probe(features).numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_fit_on_features_equals_last_layer_laplace_of_model(digits: dict) -> None:
    model, train = digits["refs"][0], digits["ref_train"][0]
    x, y = torch.as_tensor(digits["x"][train]), torch.as_tensor(digits["y"][train])
    full = Laplace(model, "classification", subset_of_weights="last_layer", hessian_structure="full")
    full.fit(DataLoader(TensorDataset(x, y), batch_size=64))
    ours = LaplacePosterior("full")
    ours.fit(model.head, (penultimate(model, digits["x"][train]), digits["y"][train]))
    # the GGN (before the prior, which ours then tunes) is the same
    np.testing.assert_allclose(ours.la.H.numpy(), full.H.double().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_chunking_does_not_change_moments(digits: dict) -> None:
    post, features, labels = _reference_posterior(digits)
    whole = posteriors.score_moments(post, features, labels, n_samples=300, signal="hinge", seed=5)
    chunked = posteriors.score_moments(post, features, labels, n_samples=300, signal="hinge", seed=5, chunk_size=7)
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)  # float32 logits: blocking may differ


@pytest.mark.slow
def test_view_moments_average_each_draw_over_the_views(digits: dict) -> None:
    """queries.augment: draw m's score is the mean over the views of draw m's scores (the same heads)."""
    post, features, labels = _reference_posterior(digits)
    one = posteriors.score_moments(post, features, labels, n_samples=200, signal="hinge", seed=5)
    same = posteriors.score_moments(post, [features, features], labels, n_samples=200, signal="hinge", seed=5)
    for a, b in zip(one, same):  # identical views: the single view's moments
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    shifted = features + 0.05 * torch.randn(features.shape, generator=torch.Generator().manual_seed(0)).double()
    ((_, a),) = post.logit_chunks(features, 200, seed=5)
    ((_, b),) = post.logit_chunks(shifted, 200, seed=5)
    y = torch.as_tensor(labels)
    by_hand = (posteriors.signed_signal("hinge", a, y).double() + posteriors.signed_signal("hinge", b, y).double()) / 2
    mean, var = posteriors.score_moments(post, [features, shifted], labels, n_samples=200, signal="hinge", seed=5)
    np.testing.assert_allclose(mean, by_hand.mean(1).numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(var, by_hand.var(1).numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.slow
def test_glm_and_weight_predictives_rank_alike(digits: dict) -> None:
    """For a linear last layer both predictives are the same Gaussian over logits."""
    post, features, labels = _reference_posterior(digits)
    s0 = _signed("hinge", _logits(digits["target"], digits["x"][digits["val"]]), labels)
    t = {}
    for predictive in ("weights", "glm"):
        post.predictive = predictive
        mean, var = posteriors.score_moments(post, features, labels, n_samples=1000, signal="hinge", seed=1)
        t[predictive] = (s0 - mean) / np.sqrt(var)
    assert stats.spearmanr(t["weights"], t["glm"]).statistic > 0.95


@pytest.mark.slow
def test_glm_refuses_a_jacobian_too_large(digits: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    post, features, labels = _reference_posterior(digits, "diag", predictive="glm")
    monkeypatch.setattr(laplace, "GLM_MAX_JACOBIAN", 100)
    with pytest.raises(ValueError, match="predictive=glm"):
        posteriors.score_moments(post, features, labels, n_samples=10, signal="hinge")


def test_predictive_loglik_by_hand() -> None:
    logits = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])  # one record, C = 2 classes x M = 2 draws
    p_label0 = [1 / (1 + math.e), math.e / (1 + math.e)]  # softmax(.)_0 of draws (0, 1) and (1, 0)
    expected = math.log((p_label0[0] + p_label0[1]) / 2)
    assert predictive_loglik(logits, torch.tensor([0])) == pytest.approx(expected, rel=1e-12)


@pytest.mark.slow
def test_validation_prior_maximises_validation_loglik(digits: dict) -> None:
    post, features, labels = _reference_posterior(digits, "diag", prior="validation")
    chosen = post.la.prior_precision.clone()
    assert torch.isclose(laplace.PRIOR_GRID, chosen).any()

    def loglik(prec: torch.Tensor) -> float:
        post.la.prior_precision = prec
        ((_, logits),) = post.logit_chunks(features, 100, seed=0)
        return predictive_loglik(logits, torch.as_tensor(labels))

    best = loglik(chosen)
    assert best >= loglik(laplace.PRIOR_GRID[0]) and best >= loglik(laplace.PRIOR_GRID[-1])


@pytest.mark.slow
def test_bmia_end_to_end(digits: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    fits = []
    fit = LaplacePosterior.fit
    monkeypatch.setattr(LaplacePosterior, "fit", lambda *a: fits.append(a) or fit(*a))
    inputs = _inputs(digits)
    params = {"samples": 200, "references": 1}
    first = registry.score("bmia", inputs, **params)
    n, v = len(inputs.queries.labels), len(inputs.validation.labels)
    assert first.scores.shape == first.log_pvalues.shape == first.extra["t"].shape == (n,)
    assert np.all(np.isfinite(first.scores)) and np.all(first.log_pvalues <= 0)
    np.testing.assert_array_equal(first.scores, -first.log_pvalues)
    assert np.all(first.extra["df"] == 199)
    calibrated = calibration.split_calibrated(
        registry.score("bmia", calibration.with_calibration_queries(inputs), **params), n
    ).log_pvalues_calibrated
    assert np.all((calibrated <= 0) & (calibrated >= -math.log(v + 1)))
    again = registry.score("bmia", inputs, **params)
    np.testing.assert_array_equal(again.scores, first.scores)
    reseeded = registry.score("bmia", inputs, samples=200, references=1, seed=1)
    assert not np.array_equal(reseeded.scores, first.scores)
    pooled = registry.score("mr-bmia", inputs, samples=200)
    assert pooled.scores.shape == (n,) and np.all(np.isfinite(pooled.scores))
    # Welch-Satterthwaite df lies between min(K - 1, K(M - 1)) and their sum
    assert np.all((pooled.extra["df"] >= 1) & (pooled.extra["df"] <= 1 + 2 * 199 + 1e-9))
    assert len(fits) == 2  # one posterior per reference, reused across runs and attacks (memo)


@pytest.mark.slow
def test_bmia_requirements(digits: dict) -> None:
    inputs = _inputs(digits, validation=False)
    result = registry.score("bmia", inputs, samples=20)  # 2 trained, uses 1
    assert result.log_pvalues_calibrated is None  # calibration is the pipeline's (miaudit.attacks.calibration)
    with pytest.raises(AttackRequirementError, match="validation records"):
        registry.score("bmia", inputs, references=1, prior="validation")
    with pytest.raises(AttackRequirementError, match="at least 2"):
        registry.score("mr-bmia", inputs, references=1)
    with pytest.raises(AttackRequirementError, match="offline"):
        registry.score("bmia", replace(inputs, mode="online"), references=1)
