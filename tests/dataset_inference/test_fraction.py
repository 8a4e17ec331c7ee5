"""The fraction estimator on simulated mixtures: unbiased enough, an interval that covers the truth, None when
nothing leaks."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit.dataset_inference import fraction


def test_auc_and_its_bootstrap_by_hand() -> None:
    assert fraction.auc(np.array([2.0, 0.0]), np.array([1.0, 0.0])) == pytest.approx(
        (2 + 0.5) / 4
    )  # 2 beats 1 and 0, 0 ties 0
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1, 1, 200), rng.normal(0, 1, 300)
    draws = fraction.bootstrap_aucs(pos, neg, rng, 2000)
    a = fraction.auc(pos, neg)
    assert abs(draws.mean() - a) < 0.005
    # the bootstrap sd of an AUC near 0.76 with 200 and 300 records is about 0.021 (Hanley-McNeil)
    assert 0.016 < draws.std() < 0.027


def _draw(rng: np.random.Generator, pi: float, n_s: int, shift: float = 1.5) -> fraction.Fraction | None:
    """A target and 4 pseudo-targets of one kind: a model's members score N(shift_m, 1), its non-members N(0, 1),
    shift_m varying a little from model to model."""
    shift_of = lambda: shift + rng.normal(0, 0.05)
    target = shift_of()
    used = rng.random(n_s) < pi
    suspect = rng.normal(0, 1, n_s) + used * target
    validation = rng.normal(0, 1, 300)
    pseudo = [(rng.normal(shift_of(), 1, 150), rng.normal(0, 1, 300)) for _ in range(4)]
    return fraction.estimate(suspect, validation, pseudo, seed=int(rng.integers(1 << 30)), resamples=400)


@pytest.mark.parametrize("pi", [0.25, 0.5, 1.0])
def test_the_interval_covers_the_fraction_used(pi: float) -> None:
    """100 simulated suspect sets of 100 records: the 95% interval covers the true fraction in at least 88 of
    them (binomial: 95% coverage gives fewer than 88 with probability < 1%), and the estimates centre on it."""
    rng = np.random.default_rng(int(pi * 100))
    found = [_draw(rng, pi, 100) for _ in range(100)]
    assert all(f is not None for f in found)
    covered = sum(f.ci[0] <= pi <= f.ci[1] for f in found if f is not None)
    assert covered >= 88
    assert abs(np.mean([f.estimate for f in found if f is not None]) - pi) < 0.06


def test_an_unused_set_is_estimated_near_zero() -> None:
    rng = np.random.default_rng(9)
    found = [_draw(rng, 0.0, 100) for _ in range(40)]
    assert sum(f is not None and f.ci[0] <= 0.0 for f in found) >= 36
    assert np.mean([f.estimate for f in found if f is not None]) < 0.08


def test_no_leak_or_no_pseudo_target_gives_none() -> None:
    rng = np.random.default_rng(4)
    flat = [(np.zeros(10), np.zeros(10))]
    assert fraction.estimate(rng.normal(size=50), rng.normal(size=50), flat) is None
    assert fraction.estimate(rng.normal(size=50), rng.normal(size=50), []) is None


def test_the_fraction_reads_the_models_own_outputs_only() -> None:
    """A reference attack scores the pseudo-targets' members far higher than the target's (their references
    trained on part of their records): on every column the fraction of a set used whole would come out near 0.7,
    its interval below 1; on the reference-free signal alone it is near 1 and its interval covers 1."""
    from miaudit.dataset_inference.features import Features, PseudoTarget
    from miaudit.dataset_inference.infer import Measured, _fraction

    rng = np.random.default_rng(8)
    names = ["log_p_label", "lira"]

    def records(n: int, signal: float, attack: float) -> np.ndarray:
        return np.c_[rng.normal(signal, 1, n), rng.normal(attack, 1, n)]

    pseudo = [PseudoTarget(records(400, 1.0, 3.0), records(300, 0.0, 0.0)) for _ in range(4)]
    target = np.r_[records(200, 1.0, 1.0), records(300, 0.0, 0.0)]  # 200 suspects, all used; 300 validation
    is_suspect = np.arange(500) < 200
    own = Features(names, target, signals=1)
    fr, member_auc = _fraction(Measured(own, own, pseudo), is_suspect, seed=0)
    assert fr is not None and member_auc is not None
    assert fr.ci[0] <= 1.0 <= fr.ci[1] and fr.estimate > 0.85
    assert member_auc == pytest.approx(fr.member_auc) and 0.7 < member_auc < 0.8  # N(1,1) vs N(0,1): AUC 0.76
    every = Features(names, target, signals=2)  # both columns read as signals: the attack's excess drags it down
    low, _ = _fraction(Measured(every, every, pseudo), is_suspect, seed=0)
    assert low is not None and low.estimate < 0.8 and low.ci[1] < 0.9


def test_no_fraction_when_the_records_differ_without_the_model() -> None:
    """The fraction rests on the exchangeability the blind guard tests: a suspect set whose records alone are told
    apart from the validation records gets no claim and no fraction; the same features without the shift get both."""
    from miaudit.dataset_inference.features import Features, PseudoTarget
    from miaudit.dataset_inference.infer import Measured, decide
    from miaudit.dataset_inference.request import InferenceOptions

    rng = np.random.default_rng(9)
    values = np.c_[rng.normal(0.0, 1, (300, 1))]
    values[:100] += 1.0  # the suspects stand out to the model
    m = Measured(
        Features(["log_p_label"], values, 1),
        Features(["log_p_label"], values, 1),
        [PseudoTarget(rng.normal(1, 1, (200, 1)), rng.normal(0, 1, (200, 1))) for _ in range(3)],
    )
    is_suspect = np.arange(300) < 100
    y = rng.integers(0, 5, 300)
    x = rng.normal(size=(300, 6))
    options = InferenceOptions(permutations=99)
    calm, _ = decide(m, is_suspect, x, y, 5, options, seed=0)
    assert calm.used is True and calm.fraction is not None and not calm.blind.shifted
    x[is_suspect, 2] += 1.5  # now the records themselves differ
    shifted, _ = decide(m, is_suspect, x, y, 5, options, seed=0)
    assert shifted.blind.shifted and shifted.used is None and shifted.fraction is None and shifted.at_least is None
    assert calm.at_least is not None and 0 < calm.at_least < calm.fraction.estimate
    assert shifted.power.basis == "references"  # the power still reads the references' members


def _scored(rng: np.random.Generator, pi: float, shift: float, n_s: int = 100, n_v: int = 300) -> tuple:
    """A suspect set of which ``pi`` was used (members' one feature shifted by ``shift``) against validation
    records, scored as the test scores them (the fixed mean of standardised features)."""
    from miaudit.dataset_inference import calibrated

    used = int(round(pi * n_s))
    x = rng.normal(size=(n_s + n_v, 3))
    x[:used, 0] += shift
    return calibrated.score(x[:, :1]), np.arange(n_s + n_v) < n_s


@pytest.mark.parametrize("pi", [0.0, 0.5, 1.0])
def test_at_least_is_a_lower_bound_wherever_members_stand_out(pi: float) -> None:
    """Members far apart (AUC near 1, where the bound is tight): the bound exceeds the true fraction in at most 12
    of 150 simulated sets (its one-sided level is 5%: 7.5 expected); with members barely apart it is loose, above
    the truth only for an unused set, at about its level (at most 6 of 60). An unused set gives 0 in most draws."""
    rng = np.random.default_rng(21)
    tight = [fraction.at_least(*_scored(rng, pi, 6.0)) for _ in range(150)]
    assert sum(b > pi + 1e-9 for b in tight) <= 12
    assert np.mean(tight) > pi - 0.25  # close to the truth when members stand far apart (0.34 at 0.5, 1.0 at 1)
    loose = [fraction.at_least(*_scored(rng, pi, 0.5)) for _ in range(60)]
    assert sum(b > pi + 1e-9 for b in loose) <= 6
    if pi == 0.0:
        assert sum(b == 0.0 for b in tight) >= 120
