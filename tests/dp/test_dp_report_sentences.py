"""What a DP audit of a user's function says (issue 54): an uninformative audit said plainly (12), the plan's observers
and power those of the run (13), the attack choice without pseudo-targets said once (14), the references' training
named as the user's function (6). No model is trained here."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

from conftest import TINY_RUN

from miaudit.attack_plan import build
from miaudit.config import run as config
from miaudit.dp import audit
from miaudit.dp.output import one_run_power
from miaudit.membership import decide as records
from miaudit.results import Bound


def cfg_for(**over: Any) -> config.RunConfig:
    raw = copy.deepcopy(TINY_RUN)
    raw.pop("attacks")  # attacks: auto, as the docs' dp-audit example
    raw.update(
        canaries={"count": 300, "kind": "crafted", "guesses": 50},
        dp_training={"function": "miaudit_bench.dp_gallery:correct", "epsilon": 1.0, "delta": 1e-5},
    )
    raw.update(over)
    return config.from_dict(raw)


def black_box(correct: int) -> Bound:
    return Bound(analysis="binomial", epsilon_lower_bound=0.0, max_attainable=2.9, confidence=0.95, delta=1e-5,
                 guesses=100, correct=correct, canaries=300, threat_model="black-box", observer="attack-p")  # fmt: skip


def test_an_audit_of_a_target_at_chance_says_it_could_not_have_seen_anything() -> None:
    cfg = cfg_for()
    at_chance = {"target_train_accuracy": 0.12, "target_test_accuracy": 0.119}
    privacy = {"accounted": {"prv": 1.0}}
    said = audit.one_run_summary(cfg, [black_box(50)], privacy, at_chance, classes=10)
    assert said.violated is False and said.verdict.startswith("no violation detected")
    assert "could not have seen a violation" in said.verdict and "0.120" in said.verdict
    learned = audit.one_run_summary(
        cfg, [black_box(50)], privacy, {**at_chance, "target_train_accuracy": 0.8}, None, 10
    )
    assert "could not have seen" not in learned.verdict  # a target that learned: the verdict as it was
    white = black_box(50).model_copy(update={"threat_model": "white-box", "observer": "noisy updates"})
    assert audit.uninformative(at_chance, 10, [white]) is None  # the noisy updates show a leak whatever the accuracy
    assert audit.uninformative({"target_test_accuracy": 0.5}, 2, []) is not None  # chance is 1 / classes
    assert audit.uninformative({"target_test_accuracy": 0.6}, 2, []) is None


def test_the_plan_counts_the_observers_the_run_tests_a_ranking_attack_included() -> None:
    cfg = cfg_for()
    attacks = build(cfg.model_copy(update={"calibration": None})).attacks
    assert any(a.info.is_ranking for a in attacks)  # gls: a ranking, yet the run scores the canaries with it
    line = one_run_power(cfg)
    assert line is not None and f"{len(attacks)} observer(s)" in line
    cfg_g = cfg_for(canaries={"count": 300, "kind": "crafted", "guesses": 50, "gradient": 200})
    assert f"{len(attacks) + 1} observer(s)" in (one_run_power(cfg_g) or "")


def test_the_attack_choice_without_pseudo_targets_does_not_say_they_were_measured() -> None:
    plan = SimpleNamespace(
        auto="with 2 reference models, lira, rmia measured on the references as pseudo-targets (no target "
        "membership read); the strongest, and those tied with it, run",
        candidates=("lira", "rmia"),
    )
    ran = [SimpleNamespace(attack=SimpleNamespace(name=n)) for n in ("attack-p", "lira", "rmia")]
    res = SimpleNamespace(experiment=SimpleNamespace(plan=plan), attack_choice=None, attacks=ran)
    why = records.attack_choice(res).why  # type: ignore[arg-type]
    assert "measured on the references as pseudo-targets" not in why and "pseudo-targets" not in why
    assert "lira, rmia planned" in why and "every one of them ran" in why


def test_references_trained_by_the_users_function_are_said_to_be() -> None:
    cfg = cfg_for()
    exp = SimpleNamespace(references=[SimpleNamespace(source="trained")], cfg=cfg)
    said = records._reference_training(exp)  # type: ignore[arg-type]
    assert said is not None and "miaudit's loop" not in said and "miaudit_bench.dp_gallery:correct" in said
    recipe = cfg.model_copy(update={"dp_training": cfg.dp_training.model_copy(update={"references": "recipe"})})  # type: ignore[union-attr]
    assert "miaudit's loop" in (
        records._reference_training(SimpleNamespace(references=exp.references, cfg=recipe)) or ""
    )  # type: ignore[arg-type]
