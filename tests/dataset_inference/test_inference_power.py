"""The power figures: the Mann-Whitney null sd by hand, the smallest set at the boundary, detectable fractions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from miaudit.dataset_inference import power


def test_null_sd_by_hand() -> None:
    assert power.null_sd(100, 300) == pytest.approx(np.sqrt(401 / (12 * 100 * 300)))


def test_smallest_suspect_set_is_the_first_with_enough_power() -> None:
    n = power.smallest_suspect_set(0.6, 300, 0.05)
    assert n is not None
    assert power.power_at(0.6, 1.0, n, 300, 0.05) >= 0.8 > power.power_at(0.6, 1.0, n - 1, 300, 0.05)
    assert power.smallest_suspect_set(0.9, 300, 0.05) < n  # a stronger leak needs fewer records
    assert power.smallest_suspect_set(0.5, 300, 0.05) is None
    # 20 validation records cannot reveal a leak of AUC 0.55 however many suspects there are
    assert power.smallest_suspect_set(0.55, 20, 0.05) is None


def test_detectable_fraction_by_hand() -> None:
    need = stats.norm.ppf(0.95) + stats.norm.ppf(0.8)
    f = power.detectable_fraction(0.8, 100, 300, 0.05)
    assert f == pytest.approx(need * power.null_sd(100, 300) / 0.3)
    assert power.power_at(0.8, f, 100, 300, 0.05) == pytest.approx(0.8)
    assert power.detectable_fraction(0.52, 10, 10, 0.05) is None


def test_power_matches_simulation_of_the_rank_test() -> None:
    """The normal approximation against 400 simulated one-sided Mann-Whitney tests at a shift of AUC 0.6."""
    rng = np.random.default_rng(0)
    shift = np.sqrt(2) * stats.norm.ppf(0.6)  # N(shift, 1) against N(0, 1) has AUC 0.6
    hits = [
        stats.mannwhitneyu(rng.normal(shift, 1, 80), rng.normal(0, 1, 200), alternative="greater").pvalue < 0.05
        for _ in range(400)
    ]
    assert abs(np.mean(hits) - power.power_at(0.6, 1.0, 80, 200, 0.05)) < 0.08
