"""PPV at a member prior: the formula by hand and its interval from the TPR and FPR intervals."""

from __future__ import annotations

import math

import pytest

from miaudit.stats import metrics, precision


def test_ppv_by_hand() -> None:
    # TPR 5%, FPR 1%: at prior 1% PPV = 0.0005 / (0.0005 + 0.0099) = 5/104; at 50% 5/6.
    assert precision.ppv(0.05, 0.01, 0.01) == pytest.approx(5 / 104)
    assert precision.ppv(0.05, 0.01, 0.5) == pytest.approx(5 / 6)
    assert precision.ppv(0.3, 0.0, 0.1) == 1.0
    assert precision.ppv(0.0, 0.0, 0.1) is None  # flags nobody


def test_interval_from_the_corners() -> None:
    # 20 of 200 members and 2 of 200 non-members above the threshold, prior 10%.
    point, (lo, hi) = precision.ppv_interval(20, 200, 2, 200, 0.1)
    assert point == pytest.approx(0.1 * 0.1 / (0.1 * 0.1 + 0.9 * 0.01))
    each = math.sqrt(0.95)
    t_lo, t_hi = metrics.clopper_pearson(20, 200, each)
    f_lo, f_hi = metrics.clopper_pearson(2, 200, each)
    assert lo == pytest.approx(0.1 * t_lo / (0.1 * t_lo + 0.9 * f_hi))
    assert hi == pytest.approx(0.1 * t_hi / (0.1 * t_hi + 0.9 * f_lo))
    assert lo < point < hi


def test_no_false_positive_gives_no_point_estimate_and_an_upper_bound_of_one() -> None:
    point, (lo, hi) = precision.ppv_interval(5, 100, 0, 100, 0.01)
    assert point is None and hi == 1.0 and 0 < lo < 1
