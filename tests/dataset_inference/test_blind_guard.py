"""The blind guard: DeLong's interval by hand, a constructed shift caught, and rare firing without a shift."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit.dataset_inference import blind


def test_delong_by_hand() -> None:
    scores = np.array([0.9, 0.8, 0.3, 0.2, 0.1])
    positive = np.array([True, True, False, False, False])
    a, lo, hi = blind.delong_interval(scores, positive)
    assert a == 1.0 and hi == 1.0  # perfect separation: every structural component is 1, no variance
    a, lo, hi = blind.delong_interval(np.array([1.0, 0.0, 1.0, 0.0]), np.array([True, True, False, False]))
    assert a == pytest.approx(0.5) and lo < 0.5 < hi


def test_record_matrix_one_hot_and_wide_inputs_reduced() -> None:
    m = blind.record_matrix(np.zeros((4, 2, 2)), np.array([0, 2, 1, 2]), 3)
    assert m.shape == (4, 7) and np.array_equal(m[:, 4:].argmax(axis=1), [0, 2, 1, 2])
    wide = blind.record_matrix(np.random.default_rng(0).normal(size=(80, 600)), np.zeros(80, dtype=int), 2)
    assert wide.shape == (80, 64 + 2)


def _records(rng: np.random.Generator, n: int, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = rng.choice(labels, size=n)
    x = rng.normal(size=(n, 10)) + 0.3 * y[:, None]  # the inputs carry the label, as real features do
    return x, y


def test_a_suspect_set_of_other_classes_is_caught() -> None:
    """Suspects from 2 of 10 classes against validation records of every class: the records alone tell them
    apart, the interval lies above 0.5 and the guard fires."""
    rng = np.random.default_rng(1)
    xs, ys = _records(rng, 100, np.array([0, 1]))
    xv, yv = _records(rng, 300, np.arange(10))
    g = blind.guard(np.r_[xs, xv], np.r_[ys, yv], 10, np.arange(400) < 100)
    assert g.shifted and g.ci[0] > 0.5 and g.auc > 0.7


def test_a_shift_in_the_inputs_alone_is_caught() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=(300, 20))
    y = rng.integers(0, 5, 300)
    is_suspect = np.arange(300) < 100
    x[is_suspect, 7] += 1.0
    assert blind.guard(x, y, 5, is_suspect).shifted


def test_without_a_shift_the_guard_rarely_fires() -> None:
    """40 draws of exchangeable suspects (40) and validation records (120): the guard fires in at most 3 (its
    one-sided level is 2.5%)."""
    rng = np.random.default_rng(3)
    fired = 0
    for i in range(40):
        x, y = _records(rng, 160, np.arange(6))
        fired += blind.guard(x, y, 6, rng.permutation(np.arange(160) < 40), seed=i).shifted
    assert fired <= 3


def test_wide_records_without_a_shift_fire_at_about_the_level() -> None:
    """60 draws of 100 suspects and 300 validation records with 200 binary inputs (as wide as Location's): the
    guard fires in at most 4 (its one-sided level is 2.5%: 1.5 expected; pooling five folds' scores fired in
    10-15% of such draws), and the AUCs centre on 0.5."""
    rng = np.random.default_rng(11)
    fired, aucs = 0, []
    for i in range(60):
        y = rng.integers(0, 10, 400)
        x = (rng.random((400, 200)) < 0.2 + 0.05 * (y[:, None] % 3)).astype(float)
        g = blind.guard(x, y, 10, rng.permutation(np.arange(400) < 100), seed=i)
        fired += g.shifted
        aucs.append(g.auc)
    assert fired <= 4 and abs(np.mean(aucs) - 0.5) < 0.02


def _texts(rng: np.random.Generator, n: int, words: list[str]) -> list[str]:
    common = ["the", "a", "of", "and", "in", "on", "said", "new", "today", "year"]
    return [" ".join(rng.choice(common + words, size=12)) for _ in range(n)]


SPORT = ["team", "goal", "cup", "season", "win", "match"]
MARKET = ["stock", "price", "oil", "bank", "shares", "profit"]


def test_texts_of_another_topic_are_caught_by_their_words() -> None:
    """Suspect texts of one topic against validation texts of two: the bag of words tells them apart."""
    rng = np.random.default_rng(4)
    texts = _texts(rng, 100, SPORT) + _texts(rng, 150, SPORT) + _texts(rng, 150, MARKET)
    g = blind.guard(np.zeros((400, 1)), np.zeros(400, dtype=int), 2, np.arange(400) < 100, texts=texts)
    assert g.shifted and g.ci[0] > 0.5 and g.classifier.startswith("TF-IDF")


def test_texts_without_a_shift_rarely_fire() -> None:
    """30 draws of exchangeable texts (40 suspects, 120 validation, both topics mixed): at most 3 fire."""
    rng = np.random.default_rng(5)
    fired = 0
    for i in range(30):
        texts = _texts(rng, 80, SPORT) + _texts(rng, 80, MARKET)
        is_suspect = rng.permutation(np.arange(160) < 40)
        fired += blind.guard(np.zeros((160, 1)), np.zeros(160, dtype=int), 2, is_suspect, seed=i, texts=texts).shifted
    assert fired <= 3
