"""The compare bootstrap: exact on unit weights, and its interval covers a known difference in simulation."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from miaudit.stats import difference, metrics

LEVELS = (0.01, 0.05)


def test_unit_weights_give_the_metrics_of_the_run() -> None:
    rng = np.random.default_rng(0)
    member = np.arange(400) < 200
    scores = np.round(rng.normal(size=400) + member, 1)  # ties
    got = difference.weighted_metrics(difference.Scored(scores, member), np.ones((1, 400)), LEVELS)
    want = metrics.evaluate(scores, member, levels=LEVELS)
    assert abs(got.auc[0] - want.auc) < 1e-12
    for level in LEVELS:
        assert abs(got.tpr_at_fpr[str(level)][0] - want.tpr_at_fpr[str(level)]) < 1e-12


def _truth(mu_a: float, mu_b: float) -> dict[str, float]:
    """Members N(mu, 1) against non-members N(0, 1): TPR at FPR a is 1 - Phi(z_(1-a) - mu), AUC Phi(mu / sqrt 2)."""
    out = {"auc": norm.cdf(mu_b / np.sqrt(2)) - norm.cdf(mu_a / np.sqrt(2))}
    for a in LEVELS:
        out[str(a)] = norm.sf(norm.isf(a) - mu_b) - norm.sf(norm.isf(a) - mu_a)
    return out


def _coverage(paired: bool, reps: int = 40, n: int = 600) -> dict[str, float]:
    truth, hits = _truth(2.0, 1.0), dict.fromkeys(("auc", *map(str, LEVELS)), 0)
    member = np.arange(n) < n // 2
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        base = rng.normal(size=n)
        other = 0.6 * base + 0.8 * rng.normal(size=n) if paired else rng.normal(size=n)  # same records, or new ones
        a, b = difference.Scored(base + 2.0 * member, member), difference.Scored(other + 1.0 * member, member)
        got = difference.compare(a, b, LEVELS, paired, resamples=200, seed=seed)
        found = {"auc": got.auc, **got.tpr_at_fpr}
        for key in hits:
            hits[key] += found[key].ci[0] <= truth[key] <= found[key].ci[1]
    return {k: v / reps for k, v in hits.items()}


def test_interval_covers_the_known_difference_independent_runs() -> None:
    assert min(_coverage(paired=False).values()) >= 0.85  # nominal 0.95; 40 reps: sd about 0.035


def test_interval_covers_the_known_difference_paired_runs() -> None:
    assert min(_coverage(paired=True).values()) >= 0.85


def test_pairing_narrows_the_interval_of_correlated_runs() -> None:
    rng = np.random.default_rng(1)
    member = np.arange(800) < 400
    base = rng.normal(size=800)
    a = difference.Scored(base + 1.0 * member, member)
    b = difference.Scored(base + 0.1 * rng.normal(size=800) + 0.8 * member, member)
    paired = difference.compare(a, b, LEVELS, paired=True, resamples=300).auc.ci
    apart = difference.compare(a, b, LEVELS, paired=False, resamples=300).auc.ci
    assert paired[1] - paired[0] < (apart[1] - apart[0]) / 3
