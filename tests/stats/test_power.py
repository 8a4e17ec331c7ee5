"""Power before the run: interval widths, records needed, and the detectable TPR."""

from __future__ import annotations

import pytest

from miaudit.stats import metrics, power, verdict


def test_halfwidth_is_the_exact_interval() -> None:
    lo, hi = metrics.clopper_pearson(18, 360)
    assert power.tpr_halfwidth(0.05, 360) == pytest.approx((hi - lo) / 2)


def test_members_for_halfwidth_is_the_fewest() -> None:
    n = power.members_for_halfwidth(0.05, 0.01)
    assert power.tpr_halfwidth(0.05, n) <= 0.01 < power.tpr_halfwidth(0.05, n - 1)


def test_reliable_level_needs_ten_false_positives() -> None:
    assert power.nonmembers_for_level(0.01) == 1000 and power.nonmembers_for_level(0.001) == 10_000


def test_detectable_tpr_is_the_verdicts_threshold() -> None:
    tpr = power.smallest_detectable_tpr(360, 360, 0.01, 12)
    tp = round(tpr * 360)
    assert (
        verdict.exceedance_pvalue(tp, 360, 360, 0.01) <= 0.05 / 12 < verdict.exceedance_pvalue(tp - 1, 360, 360, 0.01)
    )
