"""BMIA and MR-BMIA test statistics on plain arrays (Algorithms 1 and 2, eqs. 38-41)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from miaudit.attacks.bmia import bmia_test, mr_bmia_test
from miaudit.stats.pvalues import t_logsf


def test_bmia_statistic_by_hand() -> None:
    samples = np.array([1.0, 2.0, 3.0, 4.0])  # mean 2.5, var (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5/3
    t, df, log_p = bmia_test(np.array([4.0]), np.array([samples.mean()]), np.array([samples.var(ddof=1)]), 4)
    expected_t = 1.5 / (math.sqrt(5 / 3) * math.sqrt(1 + 1 / 4))
    assert t[0] == pytest.approx(expected_t, rel=1e-12)
    assert df[0] == 3
    assert log_p[0] == pytest.approx(math.log(stats.t.sf(expected_t, 3)), rel=1e-12)


@pytest.mark.parametrize(
    ("t", "df", "expected"),
    [
        # log P(T >= t) from mpmath (60 digits, adaptive quadrature of the density), where scipy gives -inf
        (100.0, 999.0, -1202.5280838391457),
        (1000.0, 999.0, -3455.7943311034005),
        (40.0, 1e5, -798.2679656412455),
        (100.0, 1e7, -5003.025374386684),
    ],
)
def test_t_logsf_far_tail(t: float, df: float, expected: float) -> None:
    assert stats.t.logsf(t, df) == -np.inf  # what this function repairs
    assert t_logsf(np.array([t]), np.array([df]))[0] == pytest.approx(expected, rel=1e-10)


def test_t_logsf_agrees_with_scipy_and_keeps_order() -> None:
    t = np.linspace(-5, 200, 4001)
    log_p = t_logsf(t, np.full_like(t, 999.0))
    finite = stats.t.logsf(t, 999) > -690
    assert np.allclose(log_p[finite], stats.t.logsf(t[finite], 999), rtol=1e-12)
    assert np.all(np.diff(log_p) < 0)  # no ties among the strongest members


def test_bmia_log_p_does_not_saturate() -> None:
    _, _, log_p = bmia_test(np.array([1e3, 2e3]), np.zeros(2), np.ones(2), 1000)
    assert np.all(np.isfinite(log_p)) and log_p[1] < log_p[0] < -1000


def test_mr_bmia_statistic_by_hand() -> None:
    # K = 2 references, M = 3 draws each, one query with target score s0 = 5.
    draws = [[1.0, 2.0, 3.0], [3.0, 4.0, 8.0]]
    means = [2.0, 5.0]
    sq_dev = [1 + 0 + 1, 4 + 1 + 9]  # sum_m (s_km - mean_k)^2 = 2 and 14
    intra = (sq_dev[0] + sq_dev[1]) / (2 * (3 - 1))  # eq. 39: 16 / 4 = 4
    grand = 3.5
    inter = ((2 - grand) ** 2 + (5 - grand) ** 2) / (2 - 1) - intra / 3  # eq. 40: 4.5 - 4/3
    u_inter, u_intra = (1 + 1 / 2) * inter, (1 + 1 / 6) * intra
    expected_t = (5 - grand) / math.sqrt(u_inter + u_intra)  # eq. 38
    expected_df = (u_inter + u_intra) ** 2 / (u_inter**2 / 1 + u_intra**2 / 4)  # eq. 41
    d = np.array(draws)
    assert np.allclose(d.mean(axis=1), means)
    t, df, log_p = mr_bmia_test(np.array([5.0]), d.mean(axis=1)[:, None], d.var(axis=1, ddof=1)[:, None], 3)
    assert t[0] == pytest.approx(expected_t, rel=1e-12)
    assert df[0] == pytest.approx(expected_df, rel=1e-12)
    assert log_p[0] == pytest.approx(stats.t.logsf(expected_t, expected_df), rel=1e-12)


def test_mr_bmia_clips_negative_inter_variance() -> None:
    # Identical reference means: var_k(means) = 0 < intra / M, so eq. 40 is negative.
    means = np.array([[2.0], [2.0], [2.0]])
    within = np.array([[1.0], [2.0], [3.0]])
    t, df, _ = mr_bmia_test(np.array([4.0]), means, within, 10)
    intra = 2.0
    assert t[0] == pytest.approx(2.0 / math.sqrt((1 + 1 / 30) * intra), rel=1e-12)
    assert df[0] == 3 * 9  # u_inter = 0: Welch-Satterthwaite gives K (M - 1)


def _gaussian_draws(rng: np.random.Generator, center: np.ndarray, sd: np.ndarray, m: int) -> np.ndarray:
    """(n, m) draws, row i from N(center_i, sd_i^2)."""
    return center[:, None] + sd[:, None] * rng.standard_normal((len(center), m))


def test_bmia_pvalues_uniform_under_null() -> None:
    rng = np.random.default_rng(0)
    n, m = 20_000, 20
    mu, sd = rng.normal(0, 3, n), rng.uniform(0.5, 2, n)  # every record its own null distribution
    draws = _gaussian_draws(rng, mu, sd, m)
    s0 = mu + sd * rng.standard_normal(n)  # a non-member: the target score is one more draw
    _, _, log_p = bmia_test(s0, draws.mean(axis=1), draws.var(axis=1, ddof=1), m)
    assert stats.kstest(np.exp(log_p), "uniform").pvalue > 1e-3


def test_mr_bmia_pvalues_uniform_under_null() -> None:
    rng = np.random.default_rng(1)
    n, k, m = 20_000, 4, 50
    mu, tau, sigma = rng.normal(0, 3, n), rng.uniform(0.2, 1, n), rng.uniform(0.5, 2, n)
    centers = mu[None] + tau[None] * rng.standard_normal((k, n))  # one mean per reference data set
    draws = np.stack([_gaussian_draws(rng, c, sigma, m) for c in centers])  # (K, n, M)
    s0 = mu + tau * rng.standard_normal(n) + sigma * rng.standard_normal(n)  # a fresh data set and draw
    _, _, log_p = mr_bmia_test(s0, draws.mean(axis=2), draws.var(axis=2, ddof=1), m)
    assert stats.kstest(np.exp(log_p), "uniform").pvalue > 1e-3


def test_power_grows_with_samples() -> None:
    """Theorem 3.2: at a fixed level, more posterior draws give more power."""
    rng = np.random.default_rng(2)
    n, shift, alpha = 20_000, 2.0, 0.05
    power = []
    for m in (5, 20, 200):
        draws = rng.standard_normal((n, m))
        s0 = shift + rng.standard_normal(n)  # a member: its score sits 2 sd above the null
        _, _, log_p = bmia_test(s0, draws.mean(axis=1), draws.var(axis=1, ddof=1), m)
        power.append(np.mean(log_p < math.log(alpha)))
    assert power[0] + 0.03 < power[1] and power[1] + 0.03 < power[2]  # binomial sd here is < 0.004
