"""Output modes to rows and rows to logits, on hand cases."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit.endpoint import outputs
from miaudit.endpoint.protocols import MalformedAnswer
from miaudit.stats import signals


def test_log_probabilities_give_the_logits_signals():
    z = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, -2.0]])
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = np.array([0, 1])
    from_p = outputs.logits(p, "probabilities", 3)
    for signal in ("rescaled_logit", "hinge", "loss"):
        np.testing.assert_allclose(signals.oriented(signal, from_p, y), signals.oriented(signal, z, y), rtol=1e-12)


def test_a_saturated_probability_keeps_the_margin_while_the_others_stay_above_the_floor():
    # float32 rounds p_y to 1.0 once the others' mass is below 2^-24; their logs still give the margin
    z = np.array([[30.0, 0.0, 0.0]])
    p = (np.exp(z - z.max()) / np.exp(z - z.max()).sum()).astype(np.float32).astype(np.float64)
    assert p[0, 0] == 1.0
    got = signals.oriented("rescaled_logit", outputs.logits(p, "probabilities", 3), np.array([0]))
    np.testing.assert_allclose(got, 30.0 - np.log(2.0), rtol=1e-6)


def test_zero_probabilities_are_floored():
    got = outputs.logits(np.array([[1.0, 0.0]]), "probabilities", 2)
    assert got[0, 1] == np.log(outputs.PROBABILITY_FLOOR)


def test_top_k_spreads_the_mass_left_over_the_classes_not_shown():
    # classes 2 and 0 shown with 0.6 and 0.3; 0.1 left for classes 1 and 3: 0.05 each
    stored = np.array([[2.0, 0.0, 0.6, 0.3]])
    got = np.exp(outputs.logits(stored, "top-k", 4))
    np.testing.assert_allclose(got, [[0.3, 0.05, 0.6, 0.05]])
    assert outputs.labels(stored, "top-k")[0] == 2


def test_top_k_caps_the_rest_at_the_smallest_shown():
    stored = np.array([[1.0, 0.1]])  # class 1 at 0.1; 0.9 left over 2 classes would be 0.45 each
    np.testing.assert_allclose(np.exp(outputs.logits(stored, "top-k", 3)), [[0.1, 0.1, 0.1]])


def test_labels_become_one_hot_rows():
    got = outputs.logits(np.array([[2.0], [0.0]]), "label", 3)
    np.testing.assert_array_equal(got, [[0, 0, 1], [1, 0, 0]])


@pytest.mark.parametrize(
    ("arrays", "output", "why"),
    [
        ([np.zeros((4, 2))], "logits", "expected 4 x 3"),
        ([np.array([0, 1, 5, 2])], "label", r"class indices in \[0, 3\)"),
        ([np.full((4, 3), 1.5)], "probabilities", "outside"),
        ([np.zeros((4, 1))], "top-k", "two outputs"),
    ],
)
def test_answers_that_do_not_fit_are_named(arrays, output, why):
    with pytest.raises(MalformedAnswer, match=why):
        outputs.rows(arrays, output, 4, 3, 1)
