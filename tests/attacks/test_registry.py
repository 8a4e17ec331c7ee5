"""The attack registry: registration, summaries, requirement checks and the array-level entry point."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit.attacks import AttackInputs, AttackResult, RecordSet, registry
from miaudit.errors import AttackRequirementError


def records(n: int = 6, k: int = 2) -> RecordSet:
    rng = np.random.default_rng(0)
    return RecordSet(
        labels=rng.integers(0, 3, n), target_logits=rng.normal(size=(n, 3)), ref_logits=rng.normal(size=(k, n, 3))
    )


def test_every_attack_has_a_one_line_summary_and_a_params_model() -> None:
    assert len(registry.names()) >= 14
    for info in registry.all_attacks():
        assert info.summary and "\n" not in info.summary
        assert info.params().references is None or info.params().references >= 0


def test_registering_a_name_twice_is_refused() -> None:
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.register("lira")(lambda inputs, params: AttackResult(scores=np.zeros(1)))


def test_score_checks_requirements_and_names_the_attack() -> None:
    inputs = AttackInputs(queries=records())
    with pytest.raises(AttackRequirementError, match="^attack-p: needs population inputs"):
        registry.score("attack-p", inputs)
    with pytest.raises(AttackRequirementError, match="references: 5 requested but only 2 were given"):
        registry.score("lira", inputs, references=5)
    assert registry.score("lira", inputs).scores.shape == (6,)


def test_execute_refuses_scores_of_the_wrong_shape() -> None:
    info = registry.AttackInfo(
        "broken", lambda inputs, params: AttackResult(scores=np.zeros(2)), registry.get("lira").params, "x"
    )
    with pytest.raises(RuntimeError, match=r"broken returned scores of shape \(2,\), expected \(6,\)"):
        registry.execute(info, info.params(), 0, AttackInputs(queries=records()))


def test_provided_inputs_by_name() -> None:
    assert registry.provided_by(AttackInputs(queries=records())) == set()
    full = AttackInputs(queries=records(), population=records(), validation=records())
    assert registry.provided_by(full) == {"population", "validation"}


def test_kind_is_a_fact_of_the_entry() -> None:
    assert registry.get("gls").kind == "ranking" and registry.is_ranking("gls") and registry.is_ranking("GLS")
    assert registry.get("lira").kind == "test" and not registry.is_ranking("lira")
    assert not registry.is_ranking("an attack of an older results.json")  # unknown: a test, as before
    assert registry.rankings() == [a.name for a in registry.all_attacks() if a.kind == "ranking"] == ["gls"]


def test_a_ranking_with_pvalues_or_an_unknown_kind_is_refused() -> None:
    fn = registry.get("gls").fn
    with pytest.raises(RuntimeError, match="a risk ranking returns no p-values"):
        registry.AttackInfo(name="x", fn=fn, params=registry.AttackParams, summary="x", kind="ranking", pvalues=True)
    with pytest.raises(RuntimeError, match="is not test or ranking"):
        registry.AttackInfo(name="x", fn=fn, params=registry.AttackParams, summary="x", kind="score")  # type: ignore[arg-type]


def test_pvalues_are_declared_per_mode() -> None:
    fn = registry.get("lira").fn

    def entry(**facts):
        return registry.AttackInfo(name="x", fn=fn, params=registry.AttackParams, summary="x", **facts)

    assert entry(pvalues=True).pvalue_modes == ("offline", "online") and entry(pvalues=True).pvalues_said == "yes"
    assert entry().pvalue_modes == () and not entry().pvalues_in("offline") and entry().pvalues_said == "no"
    some = entry(pvalues=("offline",))
    assert some.pvalues_in("offline") and not some.pvalues_in("online") and some.pvalues_said == "offline only"
    assert registry.get("exp-family").pvalue_modes == ("offline",)
    with pytest.raises(RuntimeError, match="modes"):
        entry(modes=("offline",), pvalues=("online",))
    with pytest.raises(RuntimeError, match="a risk ranking returns no p-values"):
        entry(kind="ranking", pvalues=("offline",))
