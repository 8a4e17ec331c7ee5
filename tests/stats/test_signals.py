"""Signals against their textbook formulas (docs/conventions.md: hinge, LiRA's rescaled logit, loss, confidence)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from miaudit.stats import signals

LOGITS = np.array([[2.0, 5.0, 1.0], [0.0, -1.0, 1.5], [4.0, 4.0, 0.0]])
LABELS = np.array([1, 2, 0])


def naive(logits: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Every signal straight from the softmax, valid only where nothing overflows or saturates."""
    p = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    p_y = p[np.arange(len(labels)), labels]
    return {"rescaled_logit": np.log(p_y / (1 - p_y)), "loss": -np.log(p_y), "confidence": p_y}


def test_hinge_is_true_logit_minus_largest_other() -> None:
    # 5 - max(2, 1); 1.5 - max(0, -1); 4 - max(4, 0): a tie with another class gives 0.
    np.testing.assert_array_equal(signals.hinge(LOGITS, LABELS), [3.0, 1.5, 0.0])


@pytest.mark.parametrize("name", ["rescaled_logit", "loss", "confidence"])
def test_softmax_signals_match_naive_formulas(name: str) -> None:
    rng = np.random.default_rng(0)
    logits = np.vstack([LOGITS, rng.normal(scale=3.0, size=(20, 3))])
    labels = np.concatenate([LABELS, rng.integers(0, 3, 20)])
    np.testing.assert_allclose(
        signals.compute(name, logits, labels), naive(logits, labels)[name], rtol=1e-12, atol=1e-14
    )


def test_two_classes_rescaled_logit_equals_hinge() -> None:
    logits = np.array([[3.0, -1.0], [0.5, 2.0]])
    labels = np.array([0, 0])
    np.testing.assert_allclose(signals.rescaled_logit(logits, labels), [4.0, -1.5], rtol=1e-15)
    np.testing.assert_allclose(signals.hinge(logits, labels), [4.0, -1.5], rtol=1e-15)


def test_stable_where_the_naive_formula_overflows() -> None:
    # Logits 1000 apart: exp(1000) overflows, and 1 - p_y rounds to 0 already at a gap of 40.
    logits = np.array([[1000.0, 0.0, -5.0], [1000.0, 0.0, -5.0], [40.0, 0.0, 0.0]])
    labels = np.array([0, 1, 0])
    np.testing.assert_allclose(
        signals.rescaled_logit(logits, labels),
        [1000.0 - np.log1p(np.exp(-5.0)), -1000.0, 40.0 - np.log(2.0)],
        rtol=1e-15,
    )
    np.testing.assert_allclose(signals.loss(logits, labels), [0.0, 1000.0, 2 * np.exp(-40.0)], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(signals.confidence(logits, labels), [1.0, 0.0, 1.0], atol=1e-15)
    np.testing.assert_array_equal(signals.hinge(logits, labels), [1000.0, -1000.0, 40.0])


@pytest.mark.parametrize("name", sorted(signals.SIGNALS))
def test_leading_reference_axis_broadcasts_in_float64(name: str) -> None:
    rng = np.random.default_rng(1)
    stack = rng.normal(scale=4.0, size=(3, 5, 4)).astype(np.float32)  # K=3 models, N=5, C=4
    labels = rng.integers(0, 4, 5)
    out = signals.compute(name, stack, labels)
    assert out.shape == (3, 5) and out.dtype == np.float64
    for k in range(3):
        np.testing.assert_array_equal(out[k], signals.compute(name, stack[k], labels))


def test_unknown_signal_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown signal 'margin'.*hinge"):
        signals.compute("margin", LOGITS, LABELS)


def float64_reference(logits: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """The textbook route in float64: scipy's logsumexp over the other classes (miaudit's formula until the
    one-pass ``bundle``)."""
    z = np.asarray(logits, dtype=np.float64)
    rows = np.arange(len(labels))
    true = z[rows, labels]
    others = z.copy()
    others[rows, labels] = -np.inf
    phi = true - logsumexp(others, axis=1)
    loss_ = np.logaddexp(0.0, -phi)
    return {"hinge": true - others.max(axis=1), "rescaled_logit": phi, "loss": loss_, "confidence": np.exp(-loss_)}


@pytest.mark.parametrize("scale", [0.05, 3.0, 40.0])
def test_one_pass_on_float32_equals_the_float64_reference(scale: float) -> None:
    """float32 logits of 100 classes (the store's dtype): every signal within 1e-6 relative of the float64
    route, the hinge exactly; small scales put rescaled logits near 0, where relative error is hardest."""
    rng = np.random.default_rng(7)
    logits = (scale * rng.standard_normal((3000, 100))).astype(np.float32)
    labels = rng.integers(0, 100, 3000)
    logits[np.arange(0, 3000, 7), labels[::7]] += np.float32(5 * scale)  # confident records too
    got, want = signals.bundle(logits, labels, chunk=256), float64_reference(logits, labels)
    np.testing.assert_array_equal(got["hinge"], want["hinge"])
    for name in ("rescaled_logit", "loss", "confidence"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=0)
        assert got[name].dtype == np.float64


def test_chunks_do_not_change_the_values() -> None:
    rng = np.random.default_rng(3)
    logits, labels = rng.normal(size=(2, 101, 6)).astype(np.float32), rng.integers(0, 6, 101)
    whole = signals.bundle(logits, labels, chunk=10_000)
    for chunk in (1, 7, 100):
        for name, values in signals.bundle(logits, labels, chunk=chunk).items():
            np.testing.assert_array_equal(values, whole[name])


def test_correct_is_argmax_with_its_tie_rule() -> None:
    # ties: the first class holding the maximum is the prediction (argmax's rule)
    logits = np.array([[1.0, 3.0, 3.0], [1.0, 3.0, 3.0], [5.0, 5.0, 0.0], [0.0, 2.0, 1.0], [0.0, 2.0, 1.0]])
    labels = np.array([1, 2, 1, 1, 0])
    np.testing.assert_array_equal(signals.bundle(logits, labels)["correct"], logits.argmax(axis=1) == labels)


def test_labels_must_fit_the_records() -> None:
    with pytest.raises(ValueError, match="labels: shape"):
        signals.bundle(LOGITS, LABELS[:2])


def test_float32_route_stays_within_its_bound_where_it_is_hardest() -> None:
    """Rows built to strain the float32 route: the other classes' exponentials spread over the range where
    rounding of the exponent weighs most (d in [-6, 0]), rescaled logits just outside the float64 fallback
    band. Every value is within the documented absolute bound, hence 1e-6 relative."""
    rng = np.random.default_rng(11)
    n, c = 4000, 100
    bound = signals.float32_error_bound(c)
    logits = (-6 * rng.random((n, c))).astype(np.float32)
    labels = rng.integers(0, c, n)
    others = logits.copy()
    others[np.arange(n), labels] = -np.inf
    lse = np.log(np.exp(others.astype(np.float64)).sum(axis=1))
    edge = bound / signals.RELATIVE_TOLERANCE
    logits[np.arange(n), labels] = (lse + rng.choice([-1, 1], n) * edge * (1 + 2 * rng.random(n))).astype(np.float32)
    got, want = signals.bundle(logits, labels), float64_reference(logits, labels)
    err = np.abs(got["rescaled_logit"] - want["rescaled_logit"])
    assert err.max() <= bound
    assert bound < 4.2e-7  # C = 100: the band recomputed in float64 is |rescaled logit| < 0.42
    np.testing.assert_allclose(got["rescaled_logit"], want["rescaled_logit"], rtol=1e-6, atol=0)


def test_the_bound_holds_the_worst_spread_of_exponents() -> None:
    """The weighted mean of |d| the bound uses is the largest over any spread of the other classes' exponents:
    random spreads (some piled where the weighted mean peaks) never exceed it."""
    rng = np.random.default_rng(5)
    c = 100
    peak = (signals.float32_error_bound(c) - signals.FLOAT32_EXP_ERROR) / 2.0**-24
    for _ in range(200):
        d = np.r_[0.0, -rng.uniform(0, rng.uniform(1, 20), c - 2) + rng.normal(0, 0.3, c - 2).clip(max=0)]
        d = np.minimum(d, 0.0)
        w = np.exp(d)
        assert (w * -d).sum() / w.sum() <= peak


def test_nan_logits_give_nan_signals_flagged_not_finite_and_no_warning() -> None:
    """The signal pass reads NaN logits without a RuntimeWarning (a scores-only audit refuses them in one line,
    from the stored `finite` flags, and a warning would be a second line on stderr)."""
    logits = np.array([[1.0, np.nan, 0.5], [2.0, 0.1, 0.3]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = signals.bundle(logits, np.array([0, 1]))
    assert got[signals.FINITE].tolist() == [False, True]
    assert np.isnan(got["loss"][0]) and np.isfinite(got["loss"][1])
