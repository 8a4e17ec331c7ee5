"""stats.screened: the screen and the conformal p-values by hand; the FDR of the whole procedure over repeated
simulated audits with the dependence the construction creates (one calibration set shared by every query, a screen
threshold computed from all records, null scores that depend on the screened vulnerability); the null flagging
rarely. Fixed seeds: every number below is deterministic, and the tolerances are several standard errors wide."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from miaudit.stats import fdr, screened


def test_the_screen_keeps_the_top_fraction_of_both_sets_together_and_never_a_nan() -> None:
    vq = np.array([0.0, 5.0, 3.0, np.nan, 9.0])
    vc = np.array([1.0, 8.0, 2.0, 7.0])
    keep_q, keep_c = screened.screen(vq, vc, 0.5)
    # the 8 finite values' median (numpy's linear quantile): (3 + 5) / 2 = 4
    assert keep_q.tolist() == [False, True, False, False, True]
    assert keep_c.tolist() == [False, True, False, True]
    all_q, all_c = screened.screen(vq, vc, 1.0)
    assert all_q.all() and all_c.all()


def test_p_values_rank_among_the_kept_calibration_records_and_q_is_storey_bh_on_the_kept_queries() -> None:
    scores = np.array([10.0, 0.5, 3.0, 2.0, np.nan])
    keep_q = np.array([True, True, False, True, True])
    cal = np.array([1.0, 2.0, 100.0, 0.0])
    keep_c = np.array([True, True, False, True])  # 100 is not kept: it must not count
    out = screened.screened_conformal(scores, cal, keep_q, keep_c, 0.05)
    # kept calibration {1, 2, 0}: 10 -> (1 + 0) / 4, 0.5 -> (1 + 2) / 4, 2 -> (1 + 1) / 4 (ties count), NaN -> 1
    p = np.exp(out.log_p)
    np.testing.assert_allclose(p[[0, 1, 3, 4]], [0.25, 0.75, 0.5, 1.0])
    assert np.isnan(p[2]) and np.isnan(out.q[2]) and out.m == 4 and out.n_calibration == 3
    pi0 = min(1.0, (1 + 2) / (4 * 0.5))  # p > 0.5: 0.75 and 1
    np.testing.assert_allclose(out.pi0, pi0)
    kept = np.array([0.25, 0.75, 0.5, 1.0])
    np.testing.assert_allclose(out.q[[0, 1, 3, 4]], np.minimum(1, pi0 * sps.false_discovery_control(kept)))
    assert out.floor == 0.25 and out.at_floor == 1
    # BH at 0.05 over 4 queries with pi0 1 needs k with 0.25 <= 0.05 k / 4: k >= 20
    assert out.needed_at_floor == 20 and out.calibration_needed == math.ceil(4 / 0.05) - 1


def audit(rng: np.random.Generator, leak: float, m: int = 400, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """One simulated audit: (flagged, member). Each record has a vulnerability v the references see (with noise);
    a non-member's score grows with v (hard records score high under the null too, so a screen calibrated on every
    calibration record would be anti-conservative); a member's score is shifted by ``leak`` x its v. The calibration
    set is shared by all queries and the screen's threshold is computed from all records, as in the audit."""
    hard = rng.exponential(size=m + n)
    v = hard + 0.3 * rng.standard_normal(m + n)
    member = np.r_[rng.random(m) < 0.5, np.zeros(n, bool)]
    s = 1.5 * hard + rng.standard_normal(m + n) + leak * hard * member
    keep_q, keep_c = screened.screen(v[:m], v[m:], screened.SCREEN_FRACTION)
    out = screened.screened_conformal(s[:m], s[m:], keep_q, keep_c, 0.05)
    return out.flagged, member[:m]


def fdps(leak: float, reps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([fdr.realized_fdp(*audit(rng, leak)).value for _ in range(reps)])


def test_the_screened_procedure_controls_the_fdr_over_repeated_audits() -> None:
    for leak, seed in ((1.5, 1), (4.0, 2)):
        f = fdps(leak, 300, seed)
        bound = 0.05 + 3 * f.std(ddof=1) / math.sqrt(f.size)
        assert f.mean() <= bound, (leak, f.mean(), bound)


def test_screening_the_queries_but_not_the_calibration_records_would_not_control_it() -> None:
    """The same audits with every calibration record kept: the kept (hard) non-members outscore them, and the FDR
    goes well above the level. This is what the screen on the calibration records prevents, and what makes the
    test above able to fail."""
    rng = np.random.default_rng(2)
    f = []
    for _ in range(300):
        m, n = 400, 200
        hard = rng.exponential(size=m + n)
        v = hard + 0.3 * rng.standard_normal(m + n)
        member = np.r_[rng.random(m) < 0.5, np.zeros(n, bool)]
        s = 1.5 * hard + rng.standard_normal(m + n) + 4.0 * hard * member
        keep_q, _ = screened.screen(v[:m], v[m:], screened.SCREEN_FRACTION)
        out = screened.screened_conformal(s[:m], s[m:], keep_q, np.ones(n, bool), 0.05)
        f.append(fdr.realized_fdp(out.flagged, member[:m]).value)
    assert np.mean(f) > 0.08


def test_with_no_leak_it_flags_in_at_most_about_five_percent_of_audits() -> None:
    """Members and non-members exchangeable: every flag is false, so the FDR is the chance of flagging anything."""
    rng = np.random.default_rng(3)
    any_flag = np.array([audit(rng, 0.0)[0].any() for _ in range(400)])
    assert any_flag.mean() <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / any_flag.size)


def test_a_strong_leak_is_named() -> None:
    rng = np.random.default_rng(4)
    flagged, member = audit(rng, 6.0)
    assert (flagged & member).sum() >= 50  # of about 100 screened members
