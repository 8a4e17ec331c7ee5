"""The cross-fitted permutation test: hand cases, a p-value uniform under the null (exchangeable suspects and
validation records, many simulated draws), and power under a shift."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit.dataset_inference import crossfit


def test_auc_by_hand() -> None:
    scores = np.array([3.0, 1.0, 2.0, 2.0, 0.0])
    positive = np.array([True, True, True, False, False])
    # positives 3, 1, 2 against negatives 2, 0: 3 beats both (2), 1 beats 0 (1), 2 ties 2 and beats 0 (1.5)
    assert crossfit.auc(scores, positive) == pytest.approx(4.5 / 6)
    assert crossfit.auc(scores, np.zeros(5, dtype=bool)) == 0.5


def test_halves_split_each_set_evenly_and_are_seeded() -> None:
    is_suspect = np.r_[np.ones(7, dtype=bool), np.zeros(10, dtype=bool)]
    half = crossfit.halves(is_suspect, 3)
    assert sorted([(half[is_suspect] == 1).sum(), (half[is_suspect] == 0).sum()]) == [3, 4]
    assert (half[~is_suspect] == 1).sum() == 5
    assert np.array_equal(half, crossfit.halves(is_suspect, 3))


def test_direction_points_from_validation_to_suspects() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    is_suspect = np.arange(400) < 200
    x[is_suspect, 1] += 1.0
    w = crossfit.direction(x, is_suspect)
    assert w[1] > 0.5 and abs(w[0]) < 0.2 and abs(w[2]) < 0.2


def test_standardised_drops_constant_columns_and_fills_nan() -> None:
    x = np.array([[1.0, 5.0, np.nan], [3.0, 5.0, 2.0], [2.0, 5.0, 4.0]])
    z = crossfit.standardised(x)
    assert z.shape == (3, 2) and np.all(np.isfinite(z))
    assert np.allclose(z.mean(axis=0), 0) and np.allclose(z.std(axis=0), 1)


def test_the_p_value_is_uniform_under_the_null() -> None:
    """200 draws of exchangeable suspects and validation records (features skewed and correlated, so nothing
    Gaussian helps): with 99 permutations p is one of k/100 and P(p <= k/100) = k/100 exactly. The counts at 5%,
    10% and 50% stay within their binomial 99.9% ranges, and the mean p near 1/2."""
    rng = np.random.default_rng(2024)
    draws, ps = 200, []
    for i in range(draws):
        z = rng.standard_exponential(size=(60, 4))
        x = np.c_[z[:, :1], z[:, :1] + z[:, 1:2], z[:, 2:]]
        is_suspect = rng.permutation(np.r_[np.ones(20, dtype=bool), np.zeros(40, dtype=bool)])
        ps.append(crossfit.set_test(x, is_suspect, seed=i, permutations=99).p_value)
    p = np.array(ps)
    from scipy import stats

    for level in (0.05, 0.10, 0.50):
        lo, hi = stats.binom.ppf([0.0005, 0.9995], draws, level)
        assert lo <= (p <= level + 1e-9).sum() <= hi, level
    assert abs(p.mean() - 0.505) < 0.06
    assert p.min() >= 1 / 100


def test_a_shift_in_one_feature_among_noise_is_detected() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(400, 8))
    is_suspect = np.arange(400) < 100
    x[is_suspect, 3] += 0.8
    res = crossfit.set_test(x, is_suspect, permutations=199)
    assert res.p_value <= 0.01 and res.auc > 0.58
    assert res.scores.shape == (400,) and set(np.unique(res.half)) == {0, 1}
    assert crossfit.set_test(x, is_suspect, permutations=199).p_value == res.p_value  # seeded


def test_no_usable_feature_gives_p_one() -> None:
    res = crossfit.set_test(np.ones((10, 2)), np.arange(10) < 5)
    assert res.p_value == 1.0 and res.auc == 0.5
    with pytest.raises(ValueError):
        crossfit.set_test(np.ones((4, 1)), np.ones(4, dtype=bool))
