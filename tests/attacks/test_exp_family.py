"""The exponential-family attacks (BaVarIA paper, section 3.1 and appendix B): the B.6 MLEs against scipy,
the identities (BASE1 = BASE, Corollary 2; Gaussian = LiRA at per-record variance, Corollary 1), the LLR
forms of Table 1, and the robust estimators."""

from __future__ import annotations

import numpy as np
import pytest
from _peer_data import balanced_membership, inputs
from scipy import stats
from scipy.special import digamma, expit, logsumexp

from miaudit.attacks import registry
from miaudit.attacks._mle import beta_mle, gamma_mle
from miaudit.attacks._robust import RobustParams, robust_center, robust_var


@pytest.mark.parametrize("shape,scale", [(0.4, 3.0), (2.5, 0.2), (30.0, 1.0)])
def test_gamma_mle_matches_scipy_fit(shape: float, scale: float) -> None:
    rng = np.random.default_rng(1)
    x = stats.gamma.rvs(shape, scale=scale, size=(300, 4), random_state=rng)
    k, theta = gamma_mle(x, np.log(x), np.ones_like(x, bool))
    for j in range(4):
        fk, _, ftheta = stats.gamma.fit(x[:, j], floc=0)
        assert k[j] == pytest.approx(fk, rel=1e-6) and theta[j] == pytest.approx(ftheta, rel=1e-6)


@pytest.mark.parametrize("a,b", [(0.5, 0.5), (4.0, 1.5), (60.0, 0.4)])
def test_beta_mle_matches_scipy_fit(a: float, b: float) -> None:
    rng = np.random.default_rng(2)
    p = np.clip(stats.beta.rvs(a, b, size=(400, 3), random_state=rng), 1e-300, 1 - 1e-15)
    alpha, beta = beta_mle(np.log(p), np.log1p(-p), np.ones_like(p, bool))
    for j in range(3):
        fa, fb, _, _ = stats.beta.fit(p[:, j], floc=0, fscale=1)
        assert alpha[j] == pytest.approx(fa, rel=1e-4) and beta[j] == pytest.approx(fb, rel=1e-4)


def test_mles_respect_the_mask_and_stay_finite_near_confidence_one() -> None:
    rng = np.random.default_rng(3)
    x = stats.gamma.rvs(2.0, size=(50, 2), random_state=rng)
    mask = np.ones_like(x, bool)
    mask[25:, 1] = False
    k, _ = gamma_mle(x, np.log(x), mask)
    assert k[1] == pytest.approx(stats.gamma.fit(x[:25, 1], floc=0)[0], rel=1e-6)
    phi = rng.normal(45.0, 2.0, (20, 1))  # confidences within 1e-19 of 1: p rounds to 1.0 in float64
    log_p, log_q = -np.logaddexp(0, -phi), -np.logaddexp(0, phi)
    alpha, beta = beta_mle(log_p, log_q, np.ones_like(phi, bool))
    assert np.all(np.isfinite(alpha)) and np.all(np.isfinite(beta))
    # the B.6 equations hold although p itself is 1.0: log(1 - p) came from the logits
    assert digamma(beta[0]) - digamma(alpha[0] + beta[0]) == pytest.approx(log_q.mean(), rel=1e-3)
    assert digamma(alpha[0]) - digamma(alpha[0] + beta[0]) == pytest.approx(log_p.mean(), abs=1e-12)


def _world(k: int, n: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    ref_in = balanced_membership(rng, k, n)
    base, gap = rng.normal(1.0, 1.5, n), rng.uniform(0.5, 3.0, n)
    phi = base + gap * ref_in + rng.normal(0, 0.7, (k, n))
    member = rng.random(n) < 0.5
    phi0 = base + gap * member + rng.normal(0, 0.7, n)
    return phi0, phi, ref_in, member


def test_gaussian_family_equals_lira_at_per_record_variance() -> None:
    phi0, phi, ref_in, _ = _world(8)
    x = inputs(phi0, phi, ref_in, mode="online")
    fam = registry.score("exp-family", x, family="gaussian", dispersion="per_record").scores
    lira = registry.score("lira", x, variance="per_record").scores
    np.testing.assert_allclose(fam, lira, rtol=1e-10, atol=1e-10)
    equal = registry.score("exp-family", x, family="gaussian-equal-var", dispersion="per_record").scores
    np.testing.assert_allclose(equal, registry.score("base3", x).scores, rtol=1e-8, atol=1e-10)


def test_exponential_and_beta_llr_forms_of_table_1() -> None:
    phi0, phi, ref_in, _ = _world(8, n=50)
    x = inputs(phi0, phi, ref_in, mode="online")
    loss0, loss = np.logaddexp(0, -phi0), np.logaddexp(0, -phi)
    lam_in = 1 / np.where(ref_in, loss, 0).sum(0) * ref_in.sum(0)
    lam_out = 1 / np.where(~ref_in, loss, 0).sum(0) * (~ref_in).sum(0)
    expected = np.log(lam_in / lam_out) - (lam_in - lam_out) * loss0  # eq. (6)
    np.testing.assert_allclose(registry.score("exp-family", x, family="exponential").scores, expected, rtol=1e-9)
    beta = registry.score("exp-family", x, family="beta", dispersion="per_record").scores
    for i in range(3):  # log Beta(p0 | IN fit) - log Beta(p0 | OUT fit), fits by scipy
        p_in, p_out = expit(phi[ref_in[:, i], i]), expit(phi[~ref_in[:, i], i])
        a1, b1, _, _ = stats.beta.fit(p_in, floc=0, fscale=1)
        a0, b0, _, _ = stats.beta.fit(p_out, floc=0, fscale=1)
        p0 = expit(phi0[i])
        assert beta[i] == pytest.approx(stats.beta.logpdf(p0, a1, b1) - stats.beta.logpdf(p0, a0, b0), rel=1e-3)


def test_base1_is_base_corollary_2() -> None:
    """BASE1 on z = -loss with log-sum-exp pooling is BASE (eq. 3): -l_0 - log(mean_k exp(-l_k))."""
    phi0, phi, ref_in, _ = _world(6, n=60)
    x = inputs(phi0, phi, ref_in, mode="online")
    loss0, loss = np.logaddexp(0, -phi0), np.logaddexp(0, -phi)
    base = -loss0 - (logsumexp(-loss, axis=0) - np.log(6))
    np.testing.assert_allclose(registry.score("base1", x, signal="loss").scores, base, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("family", ["exponential", "gamma", "beta", "gaussian", "gaussian-equal-var"])
def test_each_family_separates_members_online_and_offline(family: str) -> None:
    phi0, phi, ref_in, member = _world(16, n=600, seed=4)
    on = registry.score("exp-family", inputs(phi0, phi, ref_in, mode="online"), family=family).scores
    off = registry.score("exp-family", inputs(phi0, phi[:, :], ~ref_in & False, mode="offline"), family=family)
    for scores in (on, off.scores):
        assert np.all(np.isfinite(scores))
        auc = (stats.rankdata(scores)[member].sum() - member.sum() * (member.sum() + 1) / 2) / (
            member.sum() * (~member).sum()
        )
        assert auc > 0.6
    assert off.log_pvalues is not None and np.all(off.log_pvalues <= 0)


def test_robust_estimators_by_hand() -> None:
    z = np.array([[1.0, 0.0], [2.0, 5.0], [3.0, 1.0], [100.0, 2.0], [4.0, 3.0]])
    mask = np.ones_like(z, bool)
    mask[4, 1] = False  # column 1 has four observations 0, 5, 1, 2
    np.testing.assert_allclose(robust_center(z, mask, "median"), [3.0, 1.5])
    np.testing.assert_allclose(robust_center(z, mask, "trimmed", trim=0.2), [3.0, 2.0])  # cuts 1 and 100; none of 4
    np.testing.assert_allclose(robust_center(z, mask, "mean", pool="logsumexp")[1], np.log(np.exp([0, 5, 1, 2]).mean()))
    q1, q3 = np.percentile([1, 2, 3, 4, 100], [25, 75])
    assert robust_var(z, mask, "iqr")[0] == pytest.approx(((q3 - q1) / 1.3489795003921634) ** 2)
    lo, hi = np.percentile([1, 2, 3, 4, 100], [20, 80])
    assert robust_var(z, mask, "winsorized", trim=0.2)[0] == pytest.approx(np.clip([1, 2, 3, 4, 100], lo, hi).var())
    assert robust_var(z, mask, "std")[1] == pytest.approx(np.var([0, 5, 1, 2]))


def test_robust_options_change_lira_and_are_refused_for_other_families() -> None:
    phi0, phi, ref_in, _ = _world(8)
    x = inputs(phi0, phi, ref_in, mode="online")
    plain = registry.score("lira", x).scores
    assert not np.allclose(registry.score("lira", x, spread="iqr").scores, plain)
    assert not np.allclose(
        registry.score("base4", x, center="trimmed", trim=0.25).scores, registry.score("base4", x).scores
    )
    assert RobustParams().center == "mean"
    with pytest.raises(ValueError, match="robust estimators apply to the gaussian families"):
        registry.score("exp-family", x, family="gamma", center="median")
