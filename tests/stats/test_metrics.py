"""ROC metrics on cases small enough to compute by hand, and Attack-P's empirical p-value."""

from __future__ import annotations

import numpy as np
import pytest
from _peer_data import records
from scipy import stats
from sklearn.metrics import roc_auc_score

from miaudit.attacks import AttackInputs, AttackResult, registry
from miaudit.stats import metrics
from miaudit.stats.pvalues import empirical_log_pvalues

# Six records, scores descending: M N M M N N (3 members, 3 non-members).
# Thresholds walk the list, giving the ROC points (FPR, TPR):
#   (0, 0) -> (0, 1/3) -> (1/3, 1/3) -> (1/3, 2/3) -> (1/3, 1) -> (2/3, 1) -> (1, 1)
# AUC = P(member score > non-member score) = (3 + 2 + 2) / 9 = 7/9.
SCORES = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
MEMBER = np.array([1, 0, 1, 1, 0, 0], dtype=bool)


def test_hand_computed_roc_auc_and_tpr() -> None:
    fpr, tpr = metrics.roc(SCORES, MEMBER)
    np.testing.assert_allclose(fpr, [0, 0, 1 / 3, 1 / 3, 1 / 3, 2 / 3, 1], atol=1e-15)
    np.testing.assert_allclose(tpr, [0, 1 / 3, 1 / 3, 2 / 3, 1, 1, 1], atol=1e-15)
    m = metrics.evaluate(SCORES, MEMBER)
    assert m.auc == pytest.approx(7 / 9, abs=1e-12)
    # Every SPEC level is below 1/3: only the member above all non-members is caught.
    assert m.tpr_at_fpr == pytest.approx({"0.001": 1 / 3, "0.01": 1 / 3, "0.05": 1 / 3})
    assert metrics.tpr_at_fpr(fpr, tpr, 0.33) == pytest.approx(1 / 3)
    assert metrics.tpr_at_fpr(fpr, tpr, 1 / 3) == 1.0  # FPR exactly 1/3 is allowed
    assert metrics.tpr_at_fpr(fpr, tpr, 0.0) == pytest.approx(1 / 3)


def test_fpr_level_is_inclusive() -> None:
    # 20 non-members score 0..19; members at 19.5 (above all) and 18.5 (above all but one).
    # ROC: (0, 0) -> (0, 1/2) -> (1/20, 1/2) -> (1/20, 1) -> ... so at FPR <= 0.05 the TPR is 1.
    scores = np.concatenate([np.arange(20.0), [19.5, 18.5]])
    member = np.arange(22) >= 20
    m = metrics.evaluate(scores, member)
    assert m.tpr_at_fpr["0.05"] == 1.0
    assert m.tpr_at_fpr["0.01"] == 0.5 and m.tpr_at_fpr["0.001"] == 0.5
    assert m.auc == pytest.approx(1 - 1 / 40)  # 39 of the 40 pairs ranked right


def test_a_tie_is_one_step_not_broken_in_the_attacks_favour() -> None:
    # Member and non-member tied at the top: ROC (0, 0) -> (1/2, 1) -> (1, 1); AUC counts the tie as 1/2.
    m = metrics.evaluate(np.array([1.0, 1.0, 0.0]), np.array([True, False, False]))
    assert m.auc == pytest.approx(0.75)
    assert m.tpr_at_fpr == {"0.001": 0.0, "0.01": 0.0, "0.05": 0.0}


def test_infinite_scores_rank_and_nan_ranks_lowest() -> None:
    # Ranking: inf (M) > 2 (M) > 1 (N) > nan (N): a perfect attack.
    m = metrics.evaluate(np.array([np.inf, 2.0, np.nan, 1.0]), np.array([True, True, False, False]))
    assert m.auc == 1.0 and m.tpr_at_fpr["0.001"] == 1.0


@pytest.mark.parametrize(
    ("n_nonmembers", "unreliable"),
    [
        (100, [0.001, 0.01, 0.05]),  # 10/n = 0.1
        (200, [0.001, 0.01]),  # 10/n = 0.05: the level 0.05 itself is fine
        (1000, [0.001]),
        (10_000, []),
    ],
)
def test_levels_below_ten_over_n_are_flagged(n_nonmembers: int, unreliable: list[float]) -> None:
    assert metrics.unreliable_levels(n_nonmembers) == unreliable


def test_evaluate_reports_unreliable_levels_as_strings() -> None:
    assert metrics.evaluate(SCORES, MEMBER).unreliable == ["0.001", "0.01", "0.05"]


def test_fpr_at_alpha_counts_non_members_with_small_p() -> None:
    p_non = np.array([0.001, 0.02, 0.04, 0.06, 0.2, 0.5, 0.9, 1.0, 1.0, 0.0])  # 0.0: log p = -inf
    p_mem = np.array([1e-9, 1e-9])  # members never count towards the FPR
    member = np.concatenate([np.zeros(10, bool), np.ones(2, bool)])
    with np.errstate(divide="ignore"):
        log_p = np.log(np.concatenate([p_non, p_mem]))
    # p < 0.01: {0.001, 0.0}; p < 0.05: {0.001, 0.02, 0.04, 0.0}.
    assert metrics.fpr_at_alpha(log_p, member) == {"0.01": 0.2, "0.05": 0.4}
    m = metrics.evaluate(-log_p, member, {"raw": log_p})
    assert m.fpr_at_alpha == {"raw": {"0.01": 0.2, "0.05": 0.4}}
    assert m.to_json()["fpr_at_alpha"] == m.fpr_at_alpha


def test_evaluate_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="both members and non-members"):
        metrics.evaluate(SCORES, np.ones(6, bool))


def test_empirical_pvalue_by_hand() -> None:
    # Null [1, 2, 3, 4]; p = (1 + #{null >= s}) / (1 + 4):
    # s=0: 5/5, s=2.5: 3/5, s=3: 3/5 (the tie counts), s=5: 1/5.
    log_p = empirical_log_pvalues(np.array([0.0, 2.5, 3.0, 5.0]), np.array([4.0, 2.0, 3.0, 1.0]))
    np.testing.assert_allclose(np.exp(log_p), [1.0, 0.6, 0.6, 0.2], rtol=1e-14)


@pytest.mark.parametrize("signal", ["hinge", "loss"])
def test_attack_p_through_the_registry(signal: str) -> None:
    # Two-class logits (phi, 0) with label 0: hinge = phi and loss falls as phi grows.
    phi = np.array([0.0, 2.5, 3.0, 5.0])
    inputs = AttackInputs(
        queries=records(phi, np.empty((0, 4))), population=records(np.array([1.0, 2.0, 3.0, 4.0]), np.empty((0, 4)))
    )
    res = registry.score("attack-p", inputs, signal=signal)
    np.testing.assert_allclose(np.exp(res.log_pvalues), [1.0, 0.6, 0.6, 0.2], rtol=1e-12)
    assert list(np.argsort(res.scores)) == [0, 1, 2, 3]  # higher score = more likely member


# ---------------------------------------------------------------- intervals, thresholds, NaN


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 10), (5, 10), (10, 10), (0, 1000), (10, 1000), (134, 1000)])
def test_clopper_pearson_matches_scipy_binomtest(k: int, n: int) -> None:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert metrics.clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_clopper_pearson_hand_cases() -> None:
    # k = 0: the upper bound solves (1 - p)^n = 0.025; k = n mirrors it.
    assert metrics.clopper_pearson(0, 10) == pytest.approx((0.0, 1 - 0.025 ** (1 / 10)), abs=1e-12)
    assert metrics.clopper_pearson(10, 10) == pytest.approx((0.025 ** (1 / 10), 1.0), abs=1e-12)
    # 10 false positives among 1,000 non-members: the 1% FPR point is known only to about [0.5%, 1.8%].
    lo, hi = metrics.clopper_pearson(10, 1000)
    assert 0.0047 < lo < 0.0049 and 0.0182 < hi < 0.0184


def test_levels_carry_threshold_realized_fpr_and_intervals() -> None:
    # 20 non-members score 0..19; members at 19.5 (above all) and 18.5 (above all but one), as above.
    scores = np.concatenate([np.arange(20.0), [19.5, 18.5]])
    member = np.arange(22) >= 20
    m = metrics.evaluate(scores, member)
    # FPR <= 1%: only the member at 19.5 is above every non-member; flag score >= 19.5
    assert m.threshold["0.01"] == 19.5 and m.realized_fpr["0.01"] == 0.0
    # FPR <= 5%: threshold 18.5 admits one non-member (19) of 20
    assert m.threshold["0.05"] == 18.5 and m.realized_fpr["0.05"] == 0.05 and m.tpr_at_fpr["0.05"] == 1.0
    assert m.tpr_at_fpr_ci["0.05"] == pytest.approx(metrics.clopper_pearson(2, 2))
    assert m.realized_fpr_ci["0.05"] == pytest.approx(metrics.clopper_pearson(1, 20))
    as_json = m.to_json()
    assert set(as_json) >= {"auc_ci", "tpr_at_fpr_ci", "realized_fpr", "realized_fpr_ci", "threshold", "n_nan_scores"}


def test_no_threshold_when_nothing_can_be_flagged() -> None:
    # A non-member on top: at FPR 0 no record can be flagged, so no threshold (None), TPR 0 with its interval.
    m = metrics.evaluate(np.array([3.0, 2.0, 1.0]), np.array([False, True, False]))
    assert m.threshold["0.01"] is None and m.tpr_at_fpr["0.01"] == 0.0
    assert m.tpr_at_fpr_ci["0.01"] == pytest.approx(metrics.clopper_pearson(0, 1))


def test_auc_bootstrap_interval_is_seeded_and_covers() -> None:
    rng = np.random.default_rng(0)
    scores = np.concatenate([rng.normal(0.5, 1.0, 1000), rng.normal(0.0, 1.0, 1000)])
    member = np.arange(2000) < 1000
    m = metrics.evaluate(scores, member)
    assert m.auc == pytest.approx(roc_auc_score(member, scores), abs=1e-12)
    assert metrics.evaluate(scores, member).auc_ci == m.auc_ci  # fixed seed: the same interval every time
    lo, hi = m.auc_ci
    # The AUC's standard error here is about 0.0125 (Hanley-McNeil): a 95% interval about 0.05 wide
    assert lo < m.auc < hi and 0.035 < hi - lo < 0.065
    # the population AUC, Phi(0.5 / sqrt(2)) = 0.638, lies inside for this seed
    assert lo < stats.norm.cdf(0.5 / np.sqrt(2)) < hi


def test_auc_bootstrap_counts_ties_as_half() -> None:
    scores = np.array([1.0, 1.0, 0.0, 0.0])
    m = metrics.evaluate(scores, np.array([True, False, True, False]), bootstrap=200)
    assert m.auc == pytest.approx(0.5) and m.auc_ci[0] <= 0.5 <= m.auc_ci[1]


def test_nan_scores_are_counted_and_least_significant() -> None:
    m = metrics.evaluate(np.array([np.nan, 2.0, np.nan, 1.0]), np.array([True, True, False, False]))
    assert m.n_nan_scores == 2 and m.to_json()["n_nan_scores"] == 2
    assert m.auc == pytest.approx(0.625)  # the NaN member ranks below the real non-member; NaN-NaN ties count 1/2
    # empirical p-values: a NaN score gets p = 1 (it sorted last and got the smallest p-value before)
    log_p = empirical_log_pvalues(np.array([np.nan, 5.0]), np.array([1.0, 2.0, np.nan]))
    np.testing.assert_allclose(np.exp(log_p), [1.0, 1 / 4], rtol=1e-14)


def test_attack_result_maps_nan_to_p_one() -> None:
    res = AttackResult(
        scores=np.array([1.0, np.nan, 2.0]),
        log_pvalues=np.array([-1.0, -5.0, np.nan]),
        log_pvalues_calibrated=np.array([np.nan, -3.0, -2.0]),
        extra={"t": np.array([1.0, 2.0, 3.0])},
    )
    np.testing.assert_array_equal(res.log_pvalues, [-1.0, 0.0, 0.0])
    np.testing.assert_array_equal(res.log_pvalues_calibrated, [0.0, 0.0, -2.0])
    np.testing.assert_array_equal(res.extra["t"], [1.0, 2.0, 3.0])


def test_flagged_at_fpr_is_the_tables_rule_by_hand() -> None:
    # 10 non-members at 0..9, members at 9.5 (between the top two non-members) and 8.5 and 0.5. At FPR 10% one
    # non-member may be flagged: the table's threshold is the lowest score above the second non-member (8.5), so
    # members 9.5 and 8.5 are flagged: the threshold set at the top non-member itself (9) would miss 8.5.
    nonmembers = np.arange(10.0)
    scores = np.r_[nonmembers, 9.5, 8.5, 0.5]
    member = np.r_[np.zeros(10, bool), np.ones(3, bool)]
    flagged = metrics.flagged_at_fpr(scores, member, 0.1)
    np.testing.assert_array_equal(np.flatnonzero(flagged), [9, 10, 11])
    assert flagged[member].mean() == metrics.evaluate(scores, member, levels=(0.1,)).tpr_at_fpr["0.1"] == 2 / 3
    assert not metrics.flagged_at_fpr(scores, member, 0.05)[:10].any()  # no non-member may be flagged at 5%


@pytest.mark.parametrize("seed", range(5))
def test_flagged_at_fpr_counts_the_tables_tpr_and_realized_fpr(seed: int) -> None:
    rng = np.random.default_rng(seed)
    member = rng.random(500) < 0.4
    scores = np.round(rng.normal(size=500) + member, 1)  # rounded: ties
    scores[rng.random(500) < 0.05] = np.nan
    found = metrics.evaluate(scores, member, bootstrap=10)
    for level in ("0.001", "0.01", "0.05"):
        flagged = metrics.flagged_at_fpr(scores, member, float(level))
        assert flagged[member].mean() == found.tpr_at_fpr[level]
        assert flagged[~member].mean() == found.realized_fpr[level]


def test_the_metrics_section_is_the_typed_row_and_its_json() -> None:
    """``section()`` is results.json's typed metrics (``results.Metrics``); ``to_json`` its dump, keys in order."""
    from miaudit.results import Metrics

    member = np.arange(40) < 20
    m = metrics.evaluate(np.arange(40.0) + 10 * member, member, {"raw": np.log(np.linspace(0.01, 1, 40))})
    s = m.section()
    assert isinstance(s, Metrics) and s.auc == m.auc and s.tpr_at_fpr == m.tpr_at_fpr
    assert s.auc_ci == list(m.auc_ci or ()) and s.fpr_at_alpha == m.fpr_at_alpha
    assert list(m.to_json())[:3] == ["auc", "auc_ci", "tpr_at_fpr"] and m.to_json() == s.model_dump(exclude_unset=True)
