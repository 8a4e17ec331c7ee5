"""pair-lr and pair-logit: the pairs, the regressions on a case computed by hand, permutation, calibration."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from miaudit.attacks import AttackInputs, RecordSet, calibration, registry
from miaudit.attacks.pair import Pairs, fit_classes, fit_gaussian, training_pairs
from miaudit.errors import AttackRequirementError

SHIFT, IN_VAR, OUT_VAR, SPREAD = 2.0, 0.25, 1.0, 4.0  # IN = m + 2 + N(0, .25), OUT = m + N(0, 1), m ~ N(0, 4)


def logits_of(scores: np.ndarray) -> np.ndarray:
    """Two-class logits (0, s) with label 1: the rescaled logit is exactly s."""
    return np.stack([np.zeros_like(scores), scores], axis=-1)


def synthetic(rng: np.random.Generator, k: int, n_query: int = 600, n_pop: int = 4000, n_val: int = 600) -> tuple:
    """(inputs, is_member): every model's score of record r is m_r + noise, IN models' shifted by SHIFT."""

    def draw(n: int, trained: np.ndarray) -> np.ndarray:  # (models, n) scores, trained: (models, n) bool
        m = rng.normal(0, np.sqrt(SPREAD), n)
        noise = np.where(trained, rng.normal(0, np.sqrt(IN_VAR), trained.shape), rng.normal(0, 1, trained.shape))
        return m + np.where(trained, SHIFT, 0.0) + noise

    def records(n: int, target_in: np.ndarray, ref_in: np.ndarray) -> RecordSet:
        s = draw(n, np.vstack([target_in[None], ref_in]))
        return RecordSet(np.ones(n, dtype=np.int64), logits_of(s[0]), logits_of(s[1:]), ref_in)

    is_member = rng.random(n_query) < 0.5
    pop_in = rng.random((k, n_pop)) < 0.5
    inputs = AttackInputs(
        queries=records(n_query, is_member, np.zeros((k, n_query), dtype=bool)),
        population=records(n_pop, np.zeros(n_pop, dtype=bool), pop_in),
        validation=records(n_val, np.zeros(n_val, dtype=bool), np.zeros((k, n_val), dtype=bool)),
    )
    return inputs, is_member


def test_training_pairs_by_hand():
    s_target = np.array([0.0, 1.0, 2.0])
    s_refs = np.array([[10.0, 11.0, 12.0], [20.0, 21.0, 22.0]])
    ref_in = np.array([[True, False, True], [False, False, True]])
    p = training_pairs(s_target, s_refs, ref_in)
    # unknown model 0: OUT models target + reference 1 where 1 did not train (records 0, 1); record 2 target only
    # unknown model 1: OUT models target + reference 0 where 0 did not train (record 1)
    np.testing.assert_array_equal(p.u, [10, 11, 12, 20, 21, 22])
    np.testing.assert_allclose(p.o, [10, 11, 2, 0, 6, 2])
    np.testing.assert_array_equal(p.n, [2, 2, 1, 1, 2, 1])
    np.testing.assert_array_equal(p.y, [True, False, True, False, False, True])


def test_heteroscedastic_fit_recovers_mean_and_variance():
    rng = np.random.default_rng(0)
    o = rng.normal(0, 1, 40_000)
    u = 1 + 2 * o + rng.normal(0, 1, o.size) * np.exp((0.5 + 0.3 * o) / 2)
    fit = fit_gaussian(Pairs(u, o, np.ones_like(o), None), iterations=3)
    mean, var = fit.moments(Pairs(np.zeros(3), np.array([-1.0, 0.0, 1.0]), np.ones(3), None))
    np.testing.assert_allclose(mean, [-1, 1, 3], atol=0.05)
    np.testing.assert_allclose(np.log(var), [0.2, 0.5, 0.8], atol=0.1)


def test_one_reference_regressions_match_the_gaussian_conditionals_by_hand():
    """K = 1: (o, u) is bivariate normal, so u | o is N(c + b o, v) with b = SPREAD / (SPREAD + OUT_VAR) = 0.8,
    c = SHIFT (IN) or 0 (OUT), v = SPREAD (1 - b) + IN_VAR = 1.05 (IN) or + OUT_VAR = 1.8 (OUT)."""
    inputs, _ = synthetic(np.random.default_rng(1), k=1, n_pop=40_000)
    from miaudit.attacks.pair import population_pairs

    model_in, model_out = fit_classes(population_pairs(inputs, "rescaled_logit"), iterations=3)
    at = Pairs(np.zeros(3), np.array([-2.0, 0.0, 2.0]), np.ones(3), None)
    mean_in, var_in = model_in.moments(at)
    mean_out, var_out = model_out.moments(at)
    np.testing.assert_allclose(mean_in, SHIFT + 0.8 * at.o, atol=0.06)
    np.testing.assert_allclose(mean_out, 0.8 * at.o, atol=0.06)
    np.testing.assert_allclose(var_in, 1.05, rtol=0.12)
    np.testing.assert_allclose(var_out, 1.8, rtol=0.12)


def _permuted(records: RecordSet, order: np.ndarray) -> RecordSet:
    return RecordSet(
        records.labels[order], records.target_logits[order], records.ref_logits[:, order], records.ref_in[:, order]
    )


@pytest.mark.parametrize("attack", ["pair-lr", "pair-logit"])
@pytest.mark.parametrize("k", [1, 3])
def test_permuting_queries_permutes_scores_and_separates_members(attack, k):
    inputs, is_member = synthetic(np.random.default_rng(2), k=k)
    order = np.random.default_rng(3).permutation(len(is_member))
    scores = registry.score(attack, inputs).scores
    shuffled = AttackInputs(_permuted(inputs.queries, order), inputs.population, inputs.validation)
    np.testing.assert_allclose(registry.score(attack, shuffled).scores, scores[order], rtol=1e-10)
    assert roc_auc_score(is_member, scores) > 0.85  # the Bayes-optimal test at K = 1 reaches about 0.9 here


@pytest.mark.parametrize("attack", ["pair-lr", "pair-logit"])
def test_calibrated_fpr_at_five_percent(attack):
    """Conformal p-values (validation records as the null): non-members flagged at p < 0.05 about 5% of the time
    (20 runs x ~300 non-members: sd of the mean about 0.5 points)."""
    fprs = []
    for rep in range(20):
        inputs, is_member = synthetic(np.random.default_rng(100 + rep), k=1, n_pop=1000)
        joined = calibration.with_calibration_queries(inputs)
        info = registry.get(attack)
        result = calibration.split_calibrated(registry.execute(info, info.params(), 1, joined), len(is_member))
        fprs.append(np.mean(result.log_pvalues_calibrated[~is_member] < np.log(0.05)))
    assert 0.035 <= np.mean(fprs) <= 0.065


def test_refuses_online_and_a_population_without_reference_membership():
    inputs, _ = synthetic(np.random.default_rng(4), k=1, n_pop=200)
    online = AttackInputs(inputs.queries, inputs.population, inputs.validation, mode="online")
    with pytest.raises(AttackRequirementError, match="offline"):
        registry.score("pair-lr", online)
    pop = inputs.population
    blind = AttackInputs(inputs.queries, RecordSet(pop.labels, pop.target_logits, pop.ref_logits), inputs.validation)
    with pytest.raises(AttackRequirementError, match="ref_in"):
        registry.score("pair-lr", blind)


def _shifted_target(inputs: AttackInputs, offset: float) -> AttackInputs:
    from dataclasses import replace

    def moved(records: RecordSet) -> RecordSet:
        return replace(records, target_logits=logits_of(records.target_logits[:, 1] + offset))

    return replace(inputs, queries=moved(inputs.queries), population=moved(inputs.population), validation=None)


@pytest.mark.parametrize("k", [1, 4])
def test_a_target_unlike_its_references_collapses_the_pair_attacks_and_they_say_so(k: int, caplog) -> None:
    """The collapse pair.py's docstring warns of: the target's scores shifted by 3 (its references unchanged) leave
    LiRA's TPR@1% where it was and send both pair attacks to chance; each run warns, and only then."""
    from miaudit.stats.metrics import evaluate

    inputs, is_member = synthetic(np.random.default_rng(0), k, n_query=2000, n_pop=4000)

    def tpr(name: str, given: AttackInputs) -> float:
        info = registry.get(name)
        return evaluate(registry.execute(info, info.params(), k, given).scores, is_member, {}, (0.01,)).tpr_at_fpr[
            "0.01"
        ]

    with caplog.at_level("WARNING", logger="miaudit"):
        assert tpr("pair-lr", inputs) > 0.1 and tpr("pair-logit", inputs) > 0.1
    assert not caplog.records
    shifted = _shifted_target(inputs, 3.0)
    with caplog.at_level("WARNING", logger="miaudit"):
        assert tpr("pair-lr", shifted) < 0.02 and tpr("pair-logit", shifted) < 0.02
    assert tpr("lira", shifted) > 0.1
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["pair-lr", "pair-logit"]
    assert "not exchangeable" in caplog.records[0].getMessage()


def test_pair_logit_raw_pvalues_with_validation_records_are_its_conformal_pvalues():
    """With validation records (target and references all OUT: an offline query's very structure) the raw
    p-value is the score's rank among theirs, which the run's calibration computes too: the two agree."""
    inputs, is_member = synthetic(np.random.default_rng(5), k=2, n_pop=1000)
    info = registry.get("pair-logit")
    joined = calibration.with_calibration_queries(inputs)
    result = calibration.split_calibrated(registry.execute(info, info.params(), 2, joined), len(is_member))
    np.testing.assert_array_equal(result.log_pvalues, result.log_pvalues_calibrated)
    np.testing.assert_array_equal(registry.score("pair-logit", inputs).log_pvalues, result.log_pvalues)


def test_pair_logit_without_validation_records_scores_each_out_pair_out_of_fold(monkeypatch):
    """Without validation records the null is every OUT training pair, each scored by a combiner fitted on the
    pairs of other records only (in-sample, the fit would push them low)."""
    from miaudit.attacks import pair

    inputs, _ = synthetic(np.random.default_rng(6), k=2, n_pop=200)
    s_refs = inputs.population.ref_logits[..., 1]  # the rescaled logit of logits (0, s), label 1: s
    record_of = {float(v): r for r in range(s_refs.shape[1]) for v in s_refs[:, r]}  # u -> its record
    fits, scored, fit = [], [], pair.fit_combiner

    def spied(pairs, descriptors, params):
        fits.append({record_of[float(u)] for u in pairs.u})
        combiner, index = fit(pairs, descriptors, params), len(fits) - 1

        class Spy:
            def decision(self, p, d):
                scored.append((index, p))
                return combiner.decision(p, d)

        return Spy()

    monkeypatch.setattr(pair, "fit_combiner", spied)
    blind = AttackInputs(inputs.queries, inputs.population, None)
    registry.score("pair-logit", blind)
    folds = [(i, p) for i, p in scored if i > 0]  # fit 0: the combiner that scores the queries
    assert len(fits) == 1 + pair.FOLDS and len(folds) == pair.FOLDS
    held = [{record_of[float(u)] for u in p.u} for _, p in folds]
    assert all(not (held[j] & fits[i]) for j, (i, _) in enumerate(folds))  # no pair scored by a fit on its record
    every_out = pair.population_pairs(inputs, "rescaled_logit")
    assert sum(p.u.size for _, p in folds) == int((~every_out.y & np.isfinite(every_out.o)).sum())
