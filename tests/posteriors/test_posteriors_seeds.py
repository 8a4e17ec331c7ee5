"""The posterior alternatives to Laplace (BMIA paper, Table 5): MC Dropout, last-layer SWAG, a last-layer
ensemble; and the plan training the references with head dropout when MC Dropout samples them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from miaudit import attack_plan, posteriors
from miaudit.config import run as config
from miaudit.errors import ConfigError
from miaudit.experiment.recipes import builtin_recipe
from miaudit.models import build_model
from miaudit.posteriors.mc_dropout import dropout_logits


@pytest.fixture(scope="module")
def head_data() -> tuple[nn.Linear, torch.Tensor, np.ndarray]:
    """A softmax-regression head trained a little on separable random features."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 240)
    centres = rng.normal(0, 1.5, (3, 6))
    phi = torch.as_tensor(centres[y] + rng.normal(0, 1, (240, 6)))
    torch.manual_seed(0)
    head = nn.Linear(6, 3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    for _ in range(200):
        opt.zero_grad()
        nn.functional.cross_entropy(head(phi.float()), torch.as_tensor(y)).backward()
        opt.step()
    return head, phi, y


def _moments(name: str, head_data, n_samples: int = 200, **options) -> tuple[np.ndarray, np.ndarray]:
    head, phi, y = head_data
    post = posteriors.create(name, **options)
    post.fit(head, (phi, y))
    return posteriors.score_moments(post, phi, y, n_samples=n_samples, signal="hinge", seed=3)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mc-dropout", "swag", "ensemble"])
def test_each_posterior_gives_positive_variance_and_is_reproducible(name: str, head_data) -> None:
    mean, var = _moments(name, head_data)
    again = _moments(name, head_data)
    assert np.all(var > 0) and np.all(np.isfinite(mean))
    np.testing.assert_array_equal(mean, again[0])
    # the posterior centres near the trained head's own score (hinge); the ensemble's heads are retrained
    head, phi, y = head_data
    logits = head(phi.float()).detach().double().numpy()
    from miaudit.stats.signals import hinge

    assert np.corrcoef(mean, hinge(logits, y))[0, 1] > 0.9


@pytest.mark.slow
def test_swag_sample_covariance_matches_its_stored_moments(head_data) -> None:
    head, phi, y = head_data
    post = posteriors.create("swag", swag_snapshots=12, swag_rank=6, swag_lr=0.05)
    post.fit(head, (phi, y))
    draws = post.sample_vectors(40_000, seed=1).numpy()
    cov = post.covariance().numpy()
    np.testing.assert_allclose(draws.mean(0), post.mean.numpy(), atol=4 * np.sqrt(cov.diagonal().max() / 40_000))
    sd = np.sqrt(cov.diagonal())
    empirical = np.cov(draws, rowvar=False)
    # correlations of 40,000 draws are within about 4/sqrt(40,000) = 0.02 of the truth
    assert np.abs((empirical - cov) / np.outer(sd, sd)).max() < 0.03
    np.testing.assert_allclose(empirical.diagonal(), cov.diagonal(), rtol=0.05)


@pytest.mark.slow
def test_mc_dropout_rate_zero_gives_zero_variance_and_is_refused(head_data) -> None:
    head, phi, y = head_data
    gen = torch.Generator().manual_seed(0)
    logits = dropout_logits(phi.float(), head.weight.detach(), head.bias.detach(), 0.0, 50, gen)
    assert float(logits.var(dim=2).max()) == 0.0  # every draw is the trained head
    with pytest.raises(ValueError, match="dropout_rate: 0.0 is outside \\(0, 1\\); at 0 every MC Dropout draw"):
        posteriors.create("mc-dropout", dropout_rate=0.0)
    cfg = config.from_dict(
        {"attacks": [{"name": "bmia", "references": 1, "posterior": "mc-dropout", "dropout_rate": 0}]}
    )
    with pytest.raises(ConfigError, match="attacks.0.*dropout_rate: 0.0 is outside"):
        attack_plan.build(cfg)


@pytest.mark.slow
def test_ensemble_has_its_members_as_draws(head_data) -> None:
    post = posteriors.create("ensemble", ensemble_members=4, ensemble_epochs=3)
    assert post.draws(1000) == 4
    head, phi, y = head_data
    post.fit(head, (phi, y))
    (_, logits), *_ = list(post.logit_chunks(phi, 1000, seed=0))
    assert logits.shape == (len(phi), 3, 4)


def test_mc_dropout_trains_the_references_with_head_dropout() -> None:
    rows = [{"name": "bmia", "references": 1, "posterior": "mc-dropout", "dropout_rate": 0.3}, {"name": "lira"}]
    p = attack_plan.build(config.from_dict({"references": 2, "attacks": rows}))
    assert p.head_dropout == 0.3
    assert attack_plan.build(config.from_dict({"attacks": [{"name": "bmia", "references": 1}]})).head_dropout == 0.0
    model = build_model("mlp", (8,), 3, head_dropout=0.3)
    x = torch.ones(4, 8)
    model.train()
    assert not torch.equal(model(x), model(x))  # dropout before the head while training
    model.eval()
    assert torch.equal(model(x), model.head(model.features(x)))
    two = rows[:1] + [{"name": "mr-bmia", "references": 2, "posterior": "mc-dropout", "dropout_rate": 0.1}]
    with pytest.raises(ConfigError, match="attacks.1.dropout_rate"):
        attack_plan.build(config.from_dict({"references": 2, "attacks": two}))


def test_head_dropout_is_part_of_the_cache_key() -> None:
    from miaudit.data import Dataset

    cfg = config.default()
    ds = Dataset(x=np.zeros((4, 8), np.float32), y=np.array([0, 1, 2, 0]), name="t", n_classes=3)
    assert "head_dropout" not in builtin_recipe(cfg, ds, "mlp").cache_spec
    assert builtin_recipe(cfg, ds, "mlp", 0.3).cache_spec["head_dropout"] == 0.3
