"""The Plan: attack rows resolved once, labels unique, requirements checked before any work."""

from __future__ import annotations

from typing import Any

import pytest

from miaudit import attack_plan
from miaudit.config import run as config
from miaudit.errors import AttackRequirementError, ConfigError


def build(**raw: Any) -> attack_plan.Plan:
    return attack_plan.build(config.from_dict(raw))


def test_resolved_rows_and_references_to_train() -> None:
    p = build(references=8, attacks=["attack-p", {"name": "bmia"}, {"name": "lira", "references": 4}, "rmia"])
    assert [(a.name, a.references) for a in p.attacks] == [("attack-p", 0), ("bmia", 1), ("lira", 4), ("rmia", 8)]
    assert [a.label for a in p.attacks] == ["attack-p", "bmia (n=1)", "lira (n=4)", "rmia (n=8)"]
    assert p.attacks[1].params.samples == 1000  # defaults resolved
    assert p.references == 8 and p.needs_last_layer == "bmia"


def test_only_the_reference_models_some_attack_uses_are_trained() -> None:
    assert build(references=8, attacks=["attack-p", {"name": "lira", "references": 2}]).references == 2
    assert build(references=8, attacks=["attack-p", "gls"]).references == 0


def test_variants_of_one_attack_get_labels_from_the_parameters_that_differ() -> None:
    p = build(references=1, attacks=[{"name": "bmia", "samples": 50, "hessian": "diag"}, {"name": "bmia"}])
    assert [a.label for a in p.attacks] == [
        "bmia (n=1, samples=50, hessian=diag)",
        "bmia (n=1, samples=1000, hessian=kron)",
    ]
    assert (
        build(attacks=["attack-p", {"name": "attack-p", "signal": "loss"}]).attacks[1].label == "attack-p (signal=loss)"
    )


def test_a_users_label_is_kept_and_twins_are_refused() -> None:
    p = build(references=1, attacks=[{"name": "bmia", "label": "fast"}, {"name": "bmia"}])
    assert [a.label for a in p.attacks] == ["fast", "bmia (n=1)"]
    with pytest.raises(ConfigError, match=r"^attacks.1: its label 'bmia \(n=1\)' is also attacks.0's"):
        build(references=1, attacks=["bmia", "bmia"])
    with pytest.raises(ConfigError, match="attacks.1: its label 'x'"):
        build(attacks=[{"name": "attack-p", "label": "x"}, {"name": "gls", "label": "x"}])


@pytest.mark.parametrize(
    ("raw", "error", "message"),
    [
        ({"attacks": [{"name": "nope"}]}, ConfigError, "attacks.0.name: unknown attack 'nope'"),
        ({"attacks": [{"name": "bmia", "samples": 1}]}, ConfigError, "attacks.0.samples: Input should be greater"),
        ({"attacks": [{"name": "bmia", "posterior": "swag2"}]}, ConfigError, "attacks.0.posterior: unknown posterior"),
        ({"references": 1, "attacks": ["mr-bmia"]}, AttackRequirementError, "attacks.0: mr-bmia: needs at least 2"),
        ({"mode": "online", "attacks": ["bmia"]}, AttackRequirementError, "attacks.0: bmia: runs in offline mode"),
        (
            {"split": {"population": 0.4, "validation": 0.0}, "calibration": "none", "attacks": ["qmia"]},
            AttackRequirementError,
            "attacks.0: qmia: needs validation inputs",
        ),
    ],
)
def test_refused_before_any_work(raw: dict, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        build(**raw)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_calibration_provides_validation_records_from_the_population() -> None:
    no_val = {"population": 0.4, "validation": 0.0}
    assert attack_plan.config_roles(config.from_dict({"split": no_val})) == {"population", "validation"}
    assert attack_plan.config_roles(config.from_dict({"split": no_val, "calibration": "none"})) == {"population"}


def test_fewest_references_for_the_python_api() -> None:
    assert attack_plan.fewest_references(["attack-p", "gls"]) == 0
    assert attack_plan.fewest_references(["bmia", {"name": "lira", "references": 3}, "mr-bmia"]) == 3


def test_a_causal_lm_gets_no_attack_reading_a_classifiers_last_layer() -> None:  # issue 54 item 1
    # GLS reads penultimate features and a linear head; gpt-tiny has neither: auto plans around it (plan lists what
    # run runs), and naming it is refused in one line before any training, not an AttributeError after it
    lm = {"dataset": {"name": "ag_news", "subset": 2000}, "model": "gpt-tiny", "references": 4}
    auto = build(**lm)
    assert "gls" not in [a.name for a in auto.attacks] and "gls" not in (auto.auto or "")
    assert {"attack-p", "lira"} <= {a.name for a in auto.attacks}
    assert "gls" in [a.name for a in build(references=4).attacks]  # a classifier keeps it
    with pytest.raises(AttackRequirementError, match=r"attacks\.0: gls: needs a classifier's penultimate features"):
        build(**lm, attacks=["gls"])
    # the Python API says it of a model object, whatever the config's model
    assert "gls" not in [a.name for a in attack_plan.build(config.from_dict({"references": 4}), causal_lm=True).attacks]
