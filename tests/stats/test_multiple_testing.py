"""The one multiple-testing module all four audits use: Holm, Benjamini-Hochberg and Storey's adaptive BH, by hand
and against scipy (FDR control on simulated conformal p-values: tests/stats/test_fdr.py)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from miaudit.stats.multiple_testing import bh_qvalues, holm, storey_null_share, storey_qvalues


def test_holm_by_hand() -> None:
    # p sorted 0.01, 0.02, 0.04 (m = 3): 3 x 0.01 = 0.03, max(0.03, 2 x 0.02) = 0.04, max(0.04, 0.04) = 0.04.
    np.testing.assert_allclose(holm(np.array([0.04, 0.01, 0.02])), [0.04, 0.03, 0.04])
    # sorted 0.01, 0.03, 0.04: 3 x 0.01 = 0.03; max(0.03, 2 x 0.03) = 0.06; max(0.06, 1 x 0.04) = 0.06
    np.testing.assert_allclose(holm(np.array([0.01, 0.04, 0.03])), [0.03, 0.06, 0.06])
    np.testing.assert_allclose(holm(np.array([0.5, 0.9])), [1.0, 1.0])  # capped at 1
    np.testing.assert_allclose(holm(np.array([0.02])), [0.02])  # one test: its own p-value
    assert holm(np.array([])).shape == (0,)


def test_holm_is_stepdown_bonferroni() -> None:
    """Holm rejects something at alpha exactly when the smallest p-value is <= alpha / m, and never rejects a test
    Bonferroni (m p) would not reject at the first step while rejecting every test Bonferroni rejects."""
    p = np.random.default_rng(0).uniform(size=50) ** 4
    adjusted = holm(p)
    assert adjusted.min() == pytest.approx(min(1.0, 50 * p.min()))
    assert np.all(adjusted <= np.minimum(1.0, 50 * p) + 1e-15) and np.all(adjusted >= p)
    order = np.argsort(p)
    assert np.all(np.diff(adjusted[order]) >= 0)  # monotone in p


def test_bh_by_hand() -> None:
    # m = 5, sorted p 0.001 0.008 0.039 0.041 0.6: p m / rank = 0.005 0.02 0.065 0.05125 0.6,
    # then the running minimum from the top: 0.005 0.02 0.05125 0.05125 0.6.
    p = np.array([0.041, 0.001, 0.6, 0.008, 0.039])
    np.testing.assert_allclose(bh_qvalues(p), [0.05125, 0.005, 0.6, 0.02, 0.05125])
    assert (bh_qvalues(p) <= 0.05).sum() == 2  # 0.001 and 0.008; 0.039 and 0.041 have q 0.05125


def test_bh_matches_scipy_and_keeps_nan() -> None:
    p = np.random.default_rng(0).uniform(size=200) ** 3
    np.testing.assert_allclose(bh_qvalues(p), stats.false_discovery_control(p, method="bh"), rtol=1e-12)
    with_nan = np.r_[p[:10], np.nan]
    q = bh_qvalues(with_nan)
    assert np.isnan(q[-1])
    np.testing.assert_allclose(q[:-1], stats.false_discovery_control(p[:10], method="bh"))


def test_storey_by_hand() -> None:
    # m = 20, lambda = 0.5: 3 p-values above 0.5, so pi0 = (1 + 3) / (20 x 0.5) = 0.4.
    p = np.r_[np.full(12, 0.001), [0.1, 0.2, 0.3, 0.4, 0.45], [0.6, 0.8, 0.95]]
    assert storey_null_share(p) == pytest.approx(0.4)
    assert storey_null_share(np.full(10, 0.9)) == 1.0  # (1 + 10) / 5 capped at 1
    assert storey_null_share(np.array([np.nan])) == 1.0  # nothing tested: every record a null
    # the twelve at 0.001: BH q = 0.001 x 20 / 12 = 0.001667; Storey's, x 0.4 = 0.000667. The largest: 0.95 -> 0.38.
    q = storey_qvalues(p, storey_null_share(p))
    np.testing.assert_allclose(q[:12], 0.4 * 0.001 * 20 / 12)
    assert q[-1] == pytest.approx(0.4 * 0.95)
    np.testing.assert_allclose(storey_qvalues(np.array([0.9, 0.95]), 3.0), [1.0, 1.0])  # capped at 1
