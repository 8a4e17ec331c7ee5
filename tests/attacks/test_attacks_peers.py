"""Attack-R, LiRA, RMIA and QMIA on generated logits: hand-computed cases, identities, requirements."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from _peer_data import GaussianWorld, balanced_membership, inputs, records
from scipy.special import erfc, expit
from sklearn.metrics import roc_auc_score, roc_curve
from threadpoolctl import threadpool_limits

from miaudit.attacks import AttackInputs, AttackRequirementError, registry
from miaudit.attacks.attack_r import per_record_log_pvalues, quantile_level
from miaudit.attacks.rmia import A_GRID
from miaudit.stats.pvalues import empirical_log_pvalues


def run(name: str, attack_inputs: AttackInputs, **params):
    return registry.score(name, attack_inputs, **params)


def log_normal_pdf(z, mu, var):
    return -0.5 * np.log(2 * np.pi * var) - (z - mu) ** 2 / (2 * var)


def log_normal_sf(z, mu, var):
    return np.log(0.5 * erfc((z - mu) / np.sqrt(2 * var)))


# ---------------------------------------------------------------- Attack-R

# columns are records: reference k's hinge score on record i
R_REFS = np.array([[1.0, 0.0, 0.0], [3.0, 0.5, 1.0], [2.0, 1.0, 2.0], [5.0, 1.5, 3.0]])
R_TARGET = np.array([2.5, 4.0, -1.0])


def test_attack_r_hand_computed_offline():
    result = run("attack-r", inputs(R_TARGET, R_REFS))
    # The hinge's anchors -1000 and 1000 join each record's four references: six points, levels j / 5.
    # record 0: sorted -1000, 1, 2, 3, 5, 1000; 2.5 is halfway from point 2 to 3 -> level 2.5 / 5
    # record 1: 4.0 lies between 1.5 (point 4) and the anchor 1000 -> (4 + 2.5 / 998.5) / 5, not a tie at 1
    # record 2: -1.0 lies between the anchor -1000 (point 0) and 0 -> (999 / 1000) / 5, not a tie at 0
    np.testing.assert_allclose(result.scores, [0.5, (4 + 2.5 / 998.5) / 5, 0.999 / 5], rtol=1e-12)
    # (1 + #{ref >= s}) / (1 + 4)
    np.testing.assert_allclose(result.log_pvalues, np.log([3 / 5, 1 / 5, 5 / 5]))


def test_attack_r_online_uses_only_out_references():
    ref_in = np.zeros_like(R_REFS, dtype=bool)
    ref_in[3, 0] = True  # the 5.0 on record 0 is an IN observation
    result = run("attack-r", inputs(R_TARGET, R_REFS, ref_in, mode="online"))
    # record 0 keeps 1, 3, 2 (+ anchors): 2.5 halfway from 2 (point 2) to 3 -> level 2.5 / 4
    np.testing.assert_allclose(result.scores[0], 2.5 / 4, rtol=1e-12)
    np.testing.assert_allclose(result.log_pvalues, np.log([2 / 4, 1 / 5, 5 / 5]))


def test_attack_r_level_inverts_numpy_linear_quantile_with_anchors():
    # Ye et al.'s code: np.quantile(references + [low, high], alpha, interpolation="linear")
    rng = np.random.default_rng(0)
    z = rng.normal(size=(7, 4))
    levels = np.array([0.1, 0.33, 0.5, 0.9])
    z0 = np.array([np.quantile(np.r_[z[:, i], -1000.0, 1000.0], levels[i]) for i in range(4)])
    got = quantile_level(z0, z, np.ones_like(z, dtype=bool), (-1000.0, 1000.0))
    np.testing.assert_allclose(got, levels, atol=1e-12)


def test_attack_r_never_saturates_and_ties_only_equal_inputs():
    # One reference on every record: before the anchors, every target above its reference tied at level 1.
    rng = np.random.default_rng(3)
    refs, target = rng.normal(size=(1, 500)), rng.normal(1.0, 2.0, size=500)
    scores = run("attack-r", inputs(target, refs)).scores
    assert np.unique(scores).size == 500
    # Per record, the level is strictly increasing in the target score, across and beyond the anchors.
    grid = np.linspace(-3000.0, 3000.0, 2001)
    ref = np.full((2, grid.size), [[0.5], [2.0]])
    levels = quantile_level(grid, ref, np.ones_like(ref, dtype=bool), (-1000.0, 1000.0))
    assert np.all(np.diff(levels) > 0)
    for signal in ("loss", "confidence"):  # bounded signals: their bounds are the anchors
        assert np.unique(run("attack-r", inputs(target, refs), signal=signal).scores).size == 500


def test_attack_r_nan_target_is_least_significant():
    target = R_TARGET.copy()
    target[1] = np.nan
    result = run("attack-r", inputs(target, R_REFS))
    assert np.isnan(result.scores[1]) and result.log_pvalues[1] == 0.0  # p = 1, not the smallest p-value


def test_attack_r_pvalues_match_empirical_log_pvalues_per_record():
    rng = np.random.default_rng(1)
    z, z0 = rng.normal(size=(9, 50)), rng.normal(size=50)
    mask = rng.random((9, 50)) < 0.6
    expected = [empirical_log_pvalues(z0[i : i + 1], z[mask[:, i], i])[0] for i in range(50)]
    np.testing.assert_allclose(per_record_log_pvalues(z0, z, mask), expected, atol=1e-12)


# ---------------------------------------------------------------- LiRA

L_OFF_REFS = np.array([[0.0, -1.0], [1.0, 0.0], [2.0, 4.0]])
L_OFF_TARGET = np.array([2.5, -3.0])
L_ON_REFS = np.array([[2.0, 1.0], [3.0, -1.0], [0.0, 4.0], [1.0, 0.0]])
L_ON_IN = np.array([[True, False], [True, True], [False, True], [False, False]])
L_ON_TARGET = np.array([2.2, 0.3])


def test_lira_offline_hand_computed_per_record_and_global():
    per_record = run("lira", inputs(L_OFF_TARGET, L_OFF_REFS), variance="per_record")
    mu, var = np.array([1.0, 1.0]), np.array([2 / 3, 14 / 3])
    np.testing.assert_allclose(per_record.log_pvalues, log_normal_sf(L_OFF_TARGET, mu, var), rtol=1e-12)
    np.testing.assert_allclose(per_record.scores, -per_record.log_pvalues)
    fixed = run("lira", inputs(L_OFF_TARGET, L_OFF_REFS), variance="global")
    np.testing.assert_allclose(fixed.log_pvalues, log_normal_sf(L_OFF_TARGET, mu, 8 / 3), rtol=1e-12)


def test_lira_offline_median_center():
    result = run("lira", inputs(L_OFF_TARGET, L_OFF_REFS), variance="per_record", center="median")
    np.testing.assert_allclose(
        result.log_pvalues, log_normal_sf(L_OFF_TARGET, np.array([1.0, 0.0]), np.array([2 / 3, 14 / 3])), rtol=1e-12
    )


def test_lira_online_hand_computed():
    data = inputs(L_ON_TARGET, L_ON_REFS, L_ON_IN, mode="online")
    mu_in, var_in = np.array([2.5, 1.5]), np.array([0.25, 6.25])
    mu_out, var_out = np.array([0.5, 0.5]), np.array([0.25, 0.25])
    expected = log_normal_pdf(L_ON_TARGET, mu_in, var_in) - log_normal_pdf(L_ON_TARGET, mu_out, var_out)
    np.testing.assert_allclose(run("lira", data, variance="per_record").scores, expected, rtol=1e-12)
    # fixed variance, as LiRA's released code: the total variance of the IN observations (2, 3, -1, 4), both classes
    expected = log_normal_pdf(L_ON_TARGET, mu_in, 3.5) - log_normal_pdf(L_ON_TARGET, mu_out, 3.5)
    np.testing.assert_allclose(run("lira", data, variance="global").scores, expected, rtol=1e-12)


def test_lira_offline_record_far_below_out_mean_is_not_flagged():
    refs = np.random.default_rng(2).normal(0.0, 1.0, size=(8, 3))
    result = run("lira", inputs(np.array([-10.0, 0.0, 10.0]), refs))
    assert result.log_pvalues[0] > np.log(0.99)
    assert result.log_pvalues[2] < np.log(1e-6)
    assert result.scores[0] < result.scores[1] < result.scores[2]


def test_lira_variance_switch_at_64_references():
    world = GaussianWorld(n=40, seed=3)
    refs = np.random.default_rng(4).normal(world.mu_out, world.sd_out, size=(64, 40))
    data = inputs(world.phi0, refs)
    for k, mode in ((63, "global"), (64, "per_record")):
        auto = run("lira", data, references=k).scores
        other = "per_record" if mode == "global" else "global"
        np.testing.assert_array_equal(auto, run("lira", data, references=k, variance=mode).scores)
        assert np.abs(auto - run("lira", data, references=k, variance=other).scores).max() > 0.1


def test_lira_online_requires_in_references():
    with pytest.raises(
        AttackRequirementError,
        match=r"lira: online mode needs reference models that trained on the queries \(IN references\)",
    ):
        run("lira", inputs(L_ON_TARGET, L_ON_REFS, None, mode="online"))
    no_in_for_record_1 = L_ON_IN & np.array([True, False])
    with pytest.raises(AttackRequirementError, match="1 queries have no IN reference"):
        run("lira", inputs(L_ON_TARGET, L_ON_REFS, no_in_for_record_1, mode="online"))


# ---------------------------------------------------------------- RMIA

Q_TARGET, Q_REFS = np.array([2.0, -1.0]), np.array([[1.0, 0.0], [0.0, -2.0]])
P_TARGET = np.array([0.5, 3.5, -0.5])
P_REFS = np.array([[0.0, 2.0, -1.0], [1.0, 0.0, 0.0]])
P_IN = np.array([[True, False, False], [False, False, True]])


def rmia_inputs() -> AttackInputs:
    return inputs(Q_TARGET, Q_REFS, population=records(P_TARGET, P_REFS, P_IN))


def test_rmia_offline_hand_computed():
    a = 0.5
    pr_x = (1 + a) / 2 * expit(Q_REFS).mean(axis=0) + (1 - a) / 2
    ratio_x = expit(Q_TARGET) / pr_x
    # each population record from the references that did not train on it
    pr_z = (1 + a) / 2 * np.array([expit(1.0), (expit(2.0) + expit(0.0)) / 2, expit(-1.0)]) + (1 - a) / 2
    ratio_z = expit(P_TARGET) / pr_z
    for gamma in (1.0, 1.3):
        result = run("rmia", rmia_inputs(), a=a, gamma=gamma)
        expected = [np.mean(rx / ratio_z > gamma) for rx in ratio_x]
        np.testing.assert_allclose(result.extra["fraction"], expected)
        assert 0 < expected[0] < 1  # the hand case exercises a strict fraction
        # The score interpolates the fraction (tie-break): within 1/Z below it, never above.
        assert np.all((result.scores <= np.array(expected) + 1e-12) & (result.scores > np.array(expected) - 1 / 3))
    # gamma = 1.3, record 0: 2 of 3 log ratio_z below y = log(ratio_x / gamma); linear between the 2nd and 3rd
    y, knots = np.log(ratio_x[0] / 1.3), np.sort(np.log(ratio_z))
    assert knots[1] < y <= knots[2]
    np.testing.assert_allclose(result.scores[0], (1 + (y - knots[1]) / (knots[2] - knots[1])) / 3, rtol=1e-12)
    np.testing.assert_allclose(result.log_pvalues, [np.log((1 + np.sum(ratio_z >= rx)) / 4) for rx in ratio_x])
    np.testing.assert_allclose(result.extra["log_ratio"], np.log(ratio_x), rtol=1e-12)


def test_rmia_online_uses_mean_over_all_references():
    online = inputs(
        Q_TARGET,
        Q_REFS,
        np.array([[True, False], [False, True]]),
        mode="online",
        population=records(P_TARGET, P_REFS, P_IN),
    )
    result = run("rmia", online)
    ratio_x = expit(Q_TARGET) / expit(Q_REFS).mean(axis=0)
    ratio_z = expit(P_TARGET) / expit(P_REFS).mean(axis=0)
    np.testing.assert_allclose(result.extra["fraction"], [np.mean(rx / ratio_z > 1) for rx in ratio_x])


def _random_rmia_inputs(n: int, z: int, k: int, seed: int) -> AttackInputs:
    rng = np.random.default_rng(seed)
    population = records(rng.normal(size=z), rng.normal(size=(k, z)), balanced_membership(rng, k, z))
    return inputs(rng.normal(1.0, 1.5, size=n), rng.normal(size=(k, n)), population=population)


def test_rmia_sorted_search_equals_dense_computation():
    data = _random_rmia_inputs(n=300, z=400, k=4, seed=5)
    pop, a = data.population, 0.3
    out = ~pop.ref_in
    phi_z = pop.ref_logits[..., 0]
    mean_z = (expit(phi_z) * out).sum(axis=0) / out.sum(axis=0)
    ratio_z = expit(pop.target_logits[:, 0]) / ((1 + a) / 2 * mean_z + (1 - a) / 2)
    mean_x = expit(data.queries.ref_logits[..., 0]).mean(axis=0)
    ratio_x = expit(data.queries.target_logits[:, 0]) / ((1 + a) / 2 * mean_x + (1 - a) / 2)
    for gamma in (0.5, 1.0, 2.0):
        dense = (ratio_x[:, None] / ratio_z[None, :] > gamma).mean(axis=1)
        result = run("rmia", data, a=a, gamma=gamma)
        np.testing.assert_array_equal(result.extra["fraction"], dense)
        # the tie-broken score orders queries lexicographically by (fraction, log ratio)
        order = np.lexsort((result.extra["log_ratio"], dense))
        assert np.all(np.diff(result.scores[order]) > 0)


def test_rmia_ties_broken_by_log_ratio_without_changing_an_untied_roc():
    # 30 queries among 20,000 population ratios: the fraction has no ties, so the ROC must not move.
    data = _random_rmia_inputs(n=30, z=20_000, k=2, seed=6)
    result = run("rmia", data, a=0.3)
    assert np.unique(result.extra["fraction"]).size == 30
    members = np.random.default_rng(7).random(30) < 0.5
    got = roc_curve(members, result.scores, drop_intermediate=False)[:2]
    want = roc_curve(members, result.extra["fraction"], drop_intermediate=False)[:2]
    np.testing.assert_array_equal(np.array(got), np.array(want))
    # One population record: every query ties at fraction 0 or 1; the score ranks them by log ratio.
    few = _random_rmia_inputs(n=300, z=1, k=1, seed=8)
    result = run("rmia", few, a=0.3)
    assert np.unique(result.extra["fraction"]).size <= 2
    np.testing.assert_array_equal(np.argsort(result.scores), np.argsort(result.extra["log_ratio"]))
    assert np.unique(result.scores).size == 300


def test_rmia_memory_stays_linear_in_queries_and_population():
    data = _random_rmia_inputs(n=5000, z=5000, k=2, seed=6)
    tracemalloc.start()
    run("rmia", data, a=0.3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5000 * 5000 * 8 / 8  # an N x Z float64 matrix would need 200 MB


def test_rmia_population_size_subsamples():
    data = _random_rmia_inputs(n=50, z=400, k=2, seed=7)
    fraction = run("rmia", data, a=0.3, population_size=100).extra["fraction"]
    assert np.allclose(fraction * 100, np.round(fraction * 100))  # fractions of 100 samples
    assert not np.allclose(fraction, run("rmia", data, a=0.3).extra["fraction"])


def test_rmia_a_grid_search_picks_best_auc_on_pseudo_target():
    world = GaussianWorld(n=600, seed=8)
    phi, ref_in = world.references(4, seed=9)
    data = inputs(world.phi0[:10], phi[:, :10], population=records(world.phi0, phi, ref_in))
    out = ~ref_in[1:]
    mean_out = (expit(phi[1:]) * out).sum(axis=0) / out.sum(axis=0)
    known = out.any(axis=0)
    aucs = [
        roc_auc_score(ref_in[0][known], (expit(phi[0]) / ((1 + a) / 2 * mean_out + (1 - a) / 2))[known]) for a in A_GRID
    ]
    assert run("rmia", data).extra["a"][0] == A_GRID[int(np.argmax(aucs))]


def test_rmia_single_reference_falls_back_to_default_a():
    data = _random_rmia_inputs(n=20, z=50, k=1, seed=10)
    assert run("rmia", data).extra["a"][0] == 0.3
    assert run("rmia", data, default_a=0.7).extra["a"][0] == 0.7


# ---------------------------------------------------------------- QMIA


def _qmia_records(rng: np.random.Generator, n: int, shift: np.ndarray, noise_dims: int = 0):
    """Non-member hinge 8 x_0 + N(0, 1) (+ shift for members); optional low-variance extra inputs."""
    x = rng.uniform(size=(n, 3))
    if noise_dims:
        x = np.column_stack([x, 0.01 * rng.normal(size=(n, noise_dims))])
    return records(8 * x[:, 0] + rng.normal(size=n) + shift, np.empty((0, n)), x=x)


def _qmia_inputs(noise_dims: int = 0) -> tuple[AttackInputs, np.ndarray]:
    rng = np.random.default_rng(11)
    validation = _qmia_records(rng, 4000, np.zeros(4000), noise_dims)
    members = rng.random(400) < 0.5
    queries = _qmia_records(rng, 400, 2.5 * members, noise_dims)
    return AttackInputs(queries=queries, validation=validation), members


@pytest.fixture
def one_openmp_thread():
    """Gradient boosting's OpenMP threads crawl on a busy 2-core machine; one thread is fast."""
    with threadpool_limits(1, user_api="openmp"):
        yield


@pytest.mark.parametrize("noise_dims, pca", [(0, None), (20, 3)])
def test_qmia_learns_the_conditional_quantile(noise_dims, pca, one_openmp_thread):
    data, members = _qmia_inputs(noise_dims)
    result = run("qmia", data, alpha=0.05, pca_components=pca, max_iter=50)
    true_quantile = 8 * data.queries.x[:, 0] + 1.6448536269514722
    assert np.abs(result.extra["threshold"] - true_quantile).mean() < 0.4
    hinge = data.queries.target_logits[:, 0]
    np.testing.assert_allclose(result.scores, hinge - result.extra["threshold"])
    assert roc_auc_score(members, result.scores) > roc_auc_score(members, hinge) + 0.1


# ---------------------------------------------------------------- requirements


def test_requirement_errors():
    no_refs = inputs(L_OFF_TARGET, np.empty((0, 2)))
    with pytest.raises(AttackRequirementError, match="lira: needs at least 1 reference"):
        run("lira", no_refs)
    with pytest.raises(AttackRequirementError, match="attack-r: needs at least 1 reference"):
        run("attack-r", no_refs)
    with pytest.raises(AttackRequirementError, match="rmia: needs population"):
        run("rmia", inputs(L_OFF_TARGET, L_OFF_REFS))
    with pytest.raises(AttackRequirementError, match="qmia: needs validation"):
        run("qmia", AttackInputs(queries=records(L_OFF_TARGET, L_OFF_REFS, x=np.zeros((2, 3)))))
    no_val_x = AttackInputs(
        queries=records(L_OFF_TARGET, L_OFF_REFS, x=np.zeros((2, 3))), validation=records(L_OFF_TARGET, L_OFF_REFS)
    )
    with pytest.raises(AttackRequirementError, match="qmia: needs the validation records with inputs x"):
        run("qmia", no_val_x)
    with pytest.raises(AttackRequirementError, match="references: 5 requested but only 3"):
        run("lira", inputs(L_OFF_TARGET, L_OFF_REFS), references=5)
