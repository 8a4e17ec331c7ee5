"""The reference-free signals by hand."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit.dataset_inference import features


def test_signals_by_hand() -> None:
    logits = np.array([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    s = features.signals(logits, np.array([0, 2]))
    z = np.log(np.exp(2) + 2)
    assert s[0, 0] == pytest.approx(2 - z) and s[0, 1] == pytest.approx(2.0)
    assert s[1, 0] == pytest.approx(-np.log(3)) and s[1, 1] == pytest.approx(0.0)
    assert s[1, 2] == pytest.approx(-np.log(3))  # minus the entropy of the uniform output
    assert s.shape == (2, len(features.SIGNALS))
