"""White-box gradient canaries (miaudit.dp.whitebox) on a simulated DP-SGD step: no model, no Opacus."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from miaudit.dp.canaries import canary_bounds
from miaudit.dp.whitebox import GradientCanaries
from miaudit.training.dp_sgd import NoisyStep


@pytest.mark.parametrize("kind", ["dirac", "gradient"])
def test_directions_are_orthonormal_and_disjoint(kind: str) -> None:
    canaries = GradientCanaries(kind, np.ones(50, dtype=bool), seed=0)
    coords, weights = canaries.directions(1000)
    assert coords.shape == weights.shape == ((50, 1) if kind == "dirac" else (50, 20))
    assert len(np.unique(coords.numpy())) == coords.numel()  # disjoint supports: orthogonal
    assert torch.allclose((weights**2).sum(1), torch.ones(50))  # unit norm
    with pytest.raises(ValueError, match="parameters"):
        canaries.directions(49)


def noisy_steps(
    canaries: GradientCanaries, sigma: float, q: float, steps: int, true_noise: float
) -> list[torch.Tensor]:
    """``steps`` simulated DP-SGD steps over two parameter tensors: the noisy mean of no data (noise of
    ``true_noise`` x clip, divided by the expected batch), observed and then joined by the sampled canaries."""
    params = [torch.zeros(30, 20), torch.zeros(400)]
    clip, batch = 2.0, 16.0
    step = canaries.hook(params, NoisyStep(q, sigma, clip, batch, seed=1))
    gen, added = torch.Generator().manual_seed(2), []
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=gen) * true_noise * clip / batch
        before = torch.cat([p.grad.reshape(-1).clone() for p in params])
        step(None)
        added.append(torch.cat([p.grad.reshape(-1) for p in params]) - before)
    return added


def test_included_canaries_join_the_update_at_the_sample_rate_with_norm_clip() -> None:
    included = np.arange(100) % 2 == 0
    canaries = GradientCanaries("gradient", included, seed=3)
    added = noisy_steps(canaries, sigma=1.0, q=0.3, steps=200, true_noise=1.0)
    coords, weights = canaries.directions(1000)
    joined = np.array([[float((a[coords[j]] * weights[j]).sum()) * 16.0 / 2.0 for j in range(100)] for a in added])
    assert np.allclose(joined[:, ~included], 0) and np.isin(np.round(joined[:, included], 5), [0.0, 1.0]).all()
    rate = joined[:, included].mean()
    assert abs(rate - 0.3) < 4 * np.sqrt(0.3 * 0.7 / joined[:, included].size)  # Poisson sampling at q


def test_scores_separate_included_canaries_and_a_tenth_of_the_noise_is_caught() -> None:
    """At the claimed sigma the log-likelihood-ratio scores rank the included canaries first only weakly; with a
    tenth of the noise (a planted fault) every guess is right and the bound passes what sigma = 3 allows."""
    included = np.random.default_rng(4).random(400) < 0.5
    bounds_at = {}
    for true_noise in (3.0, 0.3):
        canaries = GradientCanaries("dirac", included, seed=5)
        noisy_steps(canaries, sigma=3.0, q=0.1, steps=100, true_noise=true_noise)
        assert canaries.steps == 100
        bounds_at[true_noise] = canary_bounds(canaries.scores, included, 40, 0.95, 1e-5, seed=0)[0]
    honest, faulty = bounds_at[3.0], bounds_at[0.3]
    assert faulty.correct == faulty.guesses == 80 and faulty.epsilon_lower_bound > 2.5
    assert honest.correct < honest.guesses and honest.epsilon_lower_bound < 1.0
