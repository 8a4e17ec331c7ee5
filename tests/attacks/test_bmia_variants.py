"""The frontier candidates (eb-bmia, lr-bmia, rmia-draws): hand cases, reductions to the seeds, calibration."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from miaudit import audits
from miaudit.attacks import AttackInputs, AttackRequirementError, ModelAccess, RecordSet, calibration, registry
from miaudit.attacks import bmia_variants as frontier
from miaudit.attacks.bmia import bmia_test, mr_bmia_test
from miaudit.config.run import RunConfig


def _hinge_logits(scores: np.ndarray) -> np.ndarray:
    """Two-class logits whose hinge on label 0 is ``scores`` (the shape (..., n) gets a class axis)."""
    return np.stack([scores, np.zeros_like(scores)], axis=-1)


def _moments(rng: np.random.Generator, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.normal(size=(k, n)), rng.gamma(2.0, 0.5, size=(k, n))


def test_shrunk_variance_by_hand() -> None:
    var, dof = frontier.shrunk_variance(np.array([1.0, 3.0]), 2.0, 5.0, 4.0)
    np.testing.assert_allclose(var, [(4 * 5 + 2 * 1) / 6, (4 * 5 + 2 * 3) / 6], rtol=1e-12)
    assert dof == 6.0
    var, dof = frontier.shrunk_variance(np.array([2.0]), 0.0, 5.0, 0.0)  # nothing to estimate from
    assert var[0] == 0.0 and dof == np.inf


@pytest.mark.parametrize("k", [2, 3, 8])
def test_eb_bmia_without_prior_is_mr_bmia(k: int) -> None:
    rng = np.random.default_rng(k)
    means, within = _moments(rng, k, 500)
    s0 = rng.normal(size=500) * 2
    null = frontier.eb_null(means, within, 50, prior_dof=0.0, global_inter=123.0)
    t, log_p = frontier._t_result(s0, null)
    t_mr, df_mr, log_p_mr = mr_bmia_test(s0, means, within, 50)
    np.testing.assert_allclose(t, t_mr, rtol=1e-12)
    np.testing.assert_allclose(null.df, df_mr, rtol=1e-12)
    np.testing.assert_allclose(log_p, log_p_mr, rtol=1e-10)
    # and continuously so: a vanishing prior weight changes the statistic by a vanishing amount
    tiny = frontier.eb_null(means, within, 50, prior_dof=1e-9, global_inter=1.0)
    np.testing.assert_allclose(frontier._t_result(s0, tiny)[0], t_mr, rtol=1e-6)


def test_eb_bmia_without_prior_at_one_reference_is_bmia() -> None:
    rng = np.random.default_rng(0)
    means, within = _moments(rng, 1, 300)
    s0 = rng.normal(size=300)
    null = frontier.eb_null(means, within, 100, prior_dof=0.0, global_inter=5.0)
    t, log_p = frontier._t_result(s0, null)
    t_b, df_b, log_p_b = bmia_test(s0, means[0], within[0], 100)
    np.testing.assert_allclose(t, t_b, rtol=1e-12)
    np.testing.assert_allclose(null.df, df_b)
    np.testing.assert_allclose(log_p, log_p_b, rtol=1e-10)


def test_eb_bmia_strong_prior_gives_the_global_variances() -> None:
    rng = np.random.default_rng(1)
    means, within = _moments(rng, 4, 200)
    null = frontier.eb_null(means, within, 10, prior_dof=1e12, global_inter=2.0)
    np.testing.assert_allclose(null.u_inter, (1 + 1 / 4) * 2.0, rtol=1e-6)
    np.testing.assert_allclose(null.u_intra, (1 + 1 / 40) * within.mean(axis=0).mean(), rtol=1e-6)
    # at one reference the prior supplies the inter-model variance the posterior cannot see
    one = frontier.eb_null(means[:1], within[:1], 10, prior_dof=4.0, global_inter=2.0)
    np.testing.assert_allclose(one.u_inter, 2 * 2.0, rtol=1e-12)


def _population(target: np.ndarray, refs: np.ndarray, ref_in: np.ndarray | None = None) -> RecordSet:
    return RecordSet(
        labels=np.zeros(target.shape[0], dtype=np.int64),
        target_logits=_hinge_logits(target),
        ref_logits=_hinge_logits(refs),
        ref_in=ref_in,
    )


def test_population_inter_variance_by_hand() -> None:
    target = np.array([0.0, 1.0, 2.0, 3.0, 10.0])
    refs = np.array([[1.0, 1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    ref_in = np.array([[False, False, False, False, True], [True, False, False, False, False]])
    pop = _population(target, refs, ref_in)
    inputs = AttackInputs(queries=pop, population=pop)
    # reference 0 on records 0-3: differences -1, 0, 1, 2 (var 1.25); reference 1 on 1-4: 1, 2, 3, 10 (var 12.5)
    expected = (np.var([-1.0, 0, 1, 2]) / 2 + np.var([1.0, 2, 3, 10]) / 2) / 2
    assert frontier.population_inter_variance(inputs, frontier.Signal.hinge) == pytest.approx(expected, rel=1e-12)


def test_in_out_gap_by_hand() -> None:
    refs = np.array([[5.0, 7.0, 1.0, 2.0, 3.0], [0.0, 2.0, 4.0, 8.0, 1.0]])
    ref_in = np.array([[True, True, False, False, False], [False, False, True, True, False]])
    pop = _population(np.zeros(5), refs, ref_in)
    delta, rho = frontier.in_out_gap(AttackInputs(queries=pop, population=pop), frontier.Signal.hinge)
    gaps = [6.0 - 2.0, 6.0 - 1.0]
    ratios = [np.std([5.0, 7.0]) / np.std([1.0, 2.0, 3.0]), np.std([4.0, 8.0]) / np.std([0.0, 2.0, 1.0])]
    assert delta == pytest.approx(np.mean(gaps), rel=1e-12)
    assert rho == pytest.approx(np.sqrt(ratios[0] * ratios[1]), rel=1e-12)
    unknown = AttackInputs(queries=pop, population=_population(np.zeros(5), refs))
    with pytest.raises(AttackRequirementError, match="ref_in"):
        frontier.in_out_gap(unknown, frontier.Signal.hinge)


def _null_world(rng: np.random.Generator, n: int, k: int, pool: bool = False) -> RecordSet:
    """Records nobody trained on: the target's logits are drawn like the references'."""
    labels = rng.integers(0, 3, n)
    logits = rng.normal(size=(k + 1, n, 3)) * 2
    ref_in = rng.random((k, n)) < 0.5 if pool else np.zeros((k, n), dtype=bool)
    if pool:  # references trained on half of the pool: their own records score higher
        logits[1:, :, :][ref_in] += 3 * np.eye(3)[np.broadcast_to(labels, (k, n))][ref_in]
    return RecordSet(labels=labels, target_logits=logits[0], ref_logits=logits[1:], ref_in=ref_in)


def _fake_posterior(monkeypatch: pytest.MonkeyPatch, spread: float) -> None:
    """Posterior moments without torch: each draw's mean is the reference's own score, variance ``spread``."""

    def fake(inputs: AttackInputs, params: object, records: str = "queries", signal: object = None) -> tuple:
        held = inputs.queries if records == "queries" else inputs.require(records)  # type: ignore[arg-type]
        if signal == frontier.Signal.confidence:
            return np.exp(frontier.observations(held, "loss")[1]), np.zeros(held.ref_logits.shape[:2])
        z = frontier.observations(held, "hinge")[1]
        return z, np.full(z.shape, spread)

    monkeypatch.setattr(frontier, "reference_moments", fake)


def _calibrated_null_pvalues(name: str, seed: int, k: int, **params: object) -> np.ndarray:
    rng = np.random.default_rng(seed)
    queries, validation, population = (
        _null_world(rng, 2000, k),
        _null_world(rng, 2000, k),
        _null_world(rng, 2000, k, True),
    )
    models = ModelAccess(target=None, references=[None] * k, reference_train=[], query_x=np.zeros((2000, 1)))
    inputs = AttackInputs(queries=queries, validation=validation, population=population, models=models)
    joined = registry.score(name, calibration.with_calibration_queries(inputs), **params)
    return np.exp(calibration.split_calibrated(joined, 2000).log_pvalues_calibrated)


@pytest.mark.parametrize(("name", "k"), [("eb-bmia", 1), ("eb-bmia", 4), ("lr-bmia", 1), ("lr-bmia", 4)])
def test_calibrated_pvalues_are_uniform_under_the_null(monkeypatch: pytest.MonkeyPatch, name: str, k: int) -> None:
    _fake_posterior(monkeypatch, spread=0.05)  # far too narrow a posterior: the raw test is anti-conservative
    p = _calibrated_null_pvalues(name, 0, k, samples=100)
    assert stats.kstest(p, "uniform").statistic < 0.04  # about 1.6x the 1% critical value at n = 2000
    assert abs((p < 0.05).mean() - 0.05) < 0.015


def test_rmia_draws_without_draws_is_rmia() -> None:
    rng = np.random.default_rng(2)
    inputs = AttackInputs(queries=_null_world(rng, 300, 3), population=_null_world(rng, 500, 3, True))
    plain = registry.score("rmia", inputs)
    drawn = frontier.rmia_draws(inputs, frontier.RmiaDrawsParams(samples=0))
    np.testing.assert_array_equal(drawn.scores, plain.scores)
    np.testing.assert_array_equal(drawn.log_pvalues, plain.log_pvalues)


def test_rmia_draws_that_equal_the_reference_are_rmia(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_posterior(monkeypatch, spread=0.0)  # every draw is the reference itself
    rng = np.random.default_rng(3)
    inputs = AttackInputs(queries=_null_world(rng, 300, 2), population=_null_world(rng, 500, 2, True))
    plain = registry.score("rmia", inputs, a=0.5)
    drawn = frontier.rmia_draws(inputs, frontier.RmiaDrawsParams(samples=50, a=0.5))
    np.testing.assert_allclose(drawn.scores, plain.scores, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_candidates_run_end_to_end(make_config: Callable[..., RunConfig]) -> None:
    """On tiny digits models with real Laplace posteriors: finite scores, calibrated p-values, and
    eb-bmia with no prior weight scores exactly as BMIA."""
    rows = [
        {"name": "bmia", "references": 1, "samples": 50},
        {"name": "eb-bmia", "references": 1, "samples": 50, "prior_dof": 0.0},
        {"name": "eb-bmia", "references": 2, "samples": 50},
        {"name": "lr-bmia", "references": 1, "samples": 50},
        {"name": "rmia-draws", "references": 2, "samples": 20},
    ]
    result = audits.run_config(make_config(attacks=rows))
    for run in result.attacks:
        assert np.isfinite(run.result.scores).all(), run.attack.label
        assert run.result.log_pvalues_calibrated is not None
    bmia, eb0 = (run.result for run in result.attacks[:2])
    np.testing.assert_allclose(eb0.scores, bmia.scores, rtol=1e-12)
