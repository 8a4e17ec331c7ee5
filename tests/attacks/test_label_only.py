"""Label-only attacks: their statistics on cases computed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from miaudit.attacks import AttackInputs, RecordSet, registry
from miaudit.attacks.base import LabelAccess
from miaudit.attacks.label_only import (
    LabelDistParams,
    LabelLiraParams,
    boundary_distances,
    perturbed,
    record_generators,
    robust_statistic,
)

Y = np.array([0, 1])
# two records, four copies each (record 0's copies first): the labels each model gives them
TARGET = np.array([0, 0, 0, 0, 1, 0, 0, 0])  # correct: record 0 4 of 4, record 1 1 of 4
REFS = [np.array([0, 0, 1, 1, 1, 1, 0, 0]), np.array([0, 0, 0, 1, 1, 0, 0, 0])]  # (2, 2) and (3, 1)


def inputs(mode: str = "offline", ref_in: np.ndarray | None = None) -> AttackInputs:
    asked = []

    def target(x: np.ndarray, asked_by: str) -> np.ndarray:
        asked.append((len(x), asked_by))
        return TARGET

    access = LabelAccess(target=target, references=[lambda x, r=r: r for r in REFS])
    q = RecordSet(
        labels=Y,
        target_logits=np.array([[2.0, 0.0], [3.0, 0.0]]),
        ref_logits=np.zeros((2, 2, 2)),
        ref_in=ref_in,
        x=np.array([[0.0, 1.0], [1.0, 0.0]]),
    )
    out = AttackInputs(queries=q, mode=mode, labels=access)  # type: ignore[arg-type]
    out.asked = asked  # type: ignore[attr-defined]
    return out


def phi(c: float, n: int = 4) -> float:
    return float(np.log((c + 0.5) / (n - c + 0.5)))


def test_the_statistic_is_the_smoothed_logit_of_the_share_correct():
    np.testing.assert_allclose(robust_statistic(np.array([0, 2, 4]), 4), [np.log(0.5 / 4.5), 0.0, np.log(4.5 / 0.5)])


def test_offline_is_a_one_sided_test_against_the_out_gaussian():
    data = inputs()
    got = registry.score("label-lira", data, queries=4)
    obs = np.array([[phi(2), phi(2)], [phi(3), phi(1)]])  # references x records
    mu, sd = obs.mean(axis=0), obs.std()  # one global variance: fewer than 64 references (LiRA's rule)
    log_sf = stats.norm.logsf([phi(4), phi(1)], mu, sd)
    np.testing.assert_allclose(got.log_pvalues, log_sf, rtol=1e-10)
    np.testing.assert_allclose(got.scores, -log_sf, rtol=1e-10)
    np.testing.assert_array_equal(got.extra["correct"], [4, 1])
    assert data.asked == [(8, "label-lira")]  # type: ignore[attr-defined]  # 4 queries per record, one call


def test_online_is_the_in_out_likelihood_ratio():
    ref_in = np.array([[True, False], [False, True]])  # reference 0 trained on record 0, reference 1 on record 1
    got = registry.score("label-lira", inputs("online", ref_in), queries=4)
    obs = np.array([[phi(2), phi(2)], [phi(3), phi(1)]])
    mu_in, mu_out = obs[ref_in.argmax(axis=0), [0, 1]], obs[(~ref_in).argmax(axis=0), [0, 1]]
    sd = np.array([phi(2), phi(1)]).std()  # the IN observations' total variance, for both classes
    t = np.array([phi(4), phi(1)])
    want = stats.norm.logpdf(t, mu_in, sd) - stats.norm.logpdf(t, mu_out, sd)
    np.testing.assert_allclose(got.scores, want, rtol=1e-10)


def test_the_gap_attack_scores_correct_labels():
    got = registry.score("label-gap", inputs())
    np.testing.assert_array_equal(got.scores, [1.0, 0.0])  # record 0 labelled 0 (its label), record 1 labelled 0


def test_perturbations_are_seeded_by_the_record_and_scaled():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    y = np.array([0, 1, 0])
    params, scale = LabelLiraParams(queries=500, noise=0.5), np.array([1.0, 2.0])
    a = perturbed(x, params, record_generators(x, y, 7, 1), scale)
    np.testing.assert_array_equal(a, perturbed(x, params, record_generators(x, y, 7, 1), scale))
    assert a.shape == (1500, 2)
    np.testing.assert_allclose((a - np.repeat(x, 500, axis=0)).std(axis=0), [0.5, 1.0], rtol=0.06)
    # record 2's copies are its own wherever it sits, and another seed or another record draws others
    alone = perturbed(x[2:], params, record_generators(x[2:], y[2:], 7, 1), scale)
    np.testing.assert_array_equal(alone, a[1000:])
    assert not np.array_equal(alone, perturbed(x[2:], params, record_generators(x[2:], y[2:], 8, 1), scale))
    noise = a.reshape(3, 500, 2) - x[:, None]
    assert not np.array_equal(noise[0], noise[2])


def test_images_are_flipped_and_shifted_within_bounds():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    params = LabelLiraParams(queries=50, noise=0.0, shift=1)
    copies = perturbed(x, params, record_generators(x, np.zeros(1), 0, 1), np.ones((1, 4, 4)))
    assert copies.shape == (50, 1, 4, 4)
    assert any((c == x[0, :, :, ::-1]).all() for c in copies)  # some unshifted flips
    assert set(np.unique(copies)) <= set(np.arange(16.0)) | {0.0}


def test_needs_label_access():
    data = inputs()
    data.labels = None
    with pytest.raises(ValueError, match="labels"):
        registry.score("label-lira", data, queries=4)


def test_boundary_distance_by_binary_search_on_a_hand_case():
    # one feature, label 1 where x > 0; the record x = 1 (label 1): along direction -1 the label flips at
    # distance 1, along +1 never (the search ends at the radius)
    def label_of(batch: np.ndarray) -> np.ndarray:
        return (batch[:, 0] > 0).astype(np.int64)

    params = LabelDistParams(directions=2, steps=10, radius=4.0)
    dirs = np.array([[[-1.0], [1.0]]])
    got = boundary_distances(label_of, np.array([[1.0]]), np.array([1]), np.array([True]), dirs, np.ones(1), params)
    resolution = 4.0 / 2**10
    assert abs(got[0] - (1.0 + 4.0) / 2) <= resolution
    asked = []
    wrong = boundary_distances(
        lambda b: asked.append(b) or label_of(b),
        np.array([[-1.0]]),
        np.array([1]),
        np.array([False]),
        dirs,
        np.ones(1),
        params,
    )
    assert wrong[0] == 0.0 and not asked  # labelled wrongly already: distance 0, no query


def test_label_dist_calibrates_the_log_distance_as_lira():
    # the target keeps every label (distance: the radius); each reference labels the records wrongly (distance 0)
    access = LabelAccess(
        target=lambda x, by: np.zeros(len(x), dtype=np.int64),
        references=[lambda x: np.ones(len(x), dtype=np.int64)] * 2,
    )
    logits = np.array([[1.0, 0.0], [1.0, 0.0]])  # the target labels both records 0, correctly
    q = RecordSet(labels=np.array([0, 0]), target_logits=logits, ref_logits=np.zeros((2, 2, 2)), x=np.eye(2))
    params = {"directions": 3, "steps": 4, "radius": 2.0}
    got = registry.score("label-dist", AttackInputs(queries=q, labels=access), **params)
    floor = 2.0 / 2**5
    np.testing.assert_allclose(got.extra["distance"], [2.0, 2.0])
    np.testing.assert_allclose(got.extra["mu_out"], np.log(floor))
    assert (got.log_pvalues < -10).all()  # far above the OUT distribution (a floored variance)


@pytest.mark.parametrize("name", ["label-lira", "label-dist"])
def test_scores_do_not_depend_on_the_chunks_records_are_scored_in(name, monkeypatch):
    """A record's perturbations are its own: scored 256 records at a time or 3, the scores are the same."""
    from miaudit.attacks import label_only

    rng = np.random.default_rng(0)
    x = rng.normal(size=(10, 3)).astype(np.float32)

    def model(w: np.ndarray):
        return lambda batch, asked_by="": (batch.reshape(len(batch), -1) @ w > 0).astype(np.int64)

    access = LabelAccess(
        target=model(np.array([1.0, 0.5, 0.0])), references=[model(rng.normal(size=3)) for _ in range(3)]
    )
    logits = np.zeros((10, 2))
    q = RecordSet(labels=(x[:, 0] > 0).astype(np.int64), target_logits=logits, ref_logits=np.zeros((3, 10, 2)), x=x)
    data = AttackInputs(queries=q, labels=access, seed=5)
    whole = registry.score(name, data)
    monkeypatch.setattr(label_only, "CHUNK", 3)
    np.testing.assert_array_equal(registry.score(name, data).scores, whole.scores)
