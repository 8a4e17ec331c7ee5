"""Config validation at the edge: every mistake is one line naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from miaudit import attack_plan
from miaudit.config import run as config
from miaudit.errors import AttackRequirementError, ConfigError


def config_error(raw: Any) -> str:
    with pytest.raises((ConfigError, AttackRequirementError)) as info:
        attack_plan.build(config.from_dict(raw))
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        ({"bogus_key": 1}, "bogus_key"),
        ({"attacks": [{"name": "attack-p", "bogus": 1}]}, "attacks.0.bogus"),
        ({"train": {"epochs": "many"}}, "train.epochs"),
        ({"references": "eight"}, "references"),
        ({"attacks": ["attack-p", {"name": "attack-p", "signal": "margin"}]}, "attacks.1.signal"),
        ({"attacks": [{"name": "nope"}]}, "attacks.0.name: unknown attack 'nope'"),
        ({"references": 2, "attacks": [{"name": "attack-p", "references": 3}]}, "attacks.0.references: 3 exceeds"),
        ({"mode": "online", "references": 3}, "references: online mode needs an even number"),
        ({"model": "vgg"}, "model: unknown architecture 'vgg'"),
        ({"train": {"label_smoothing": 0.1, "dp": {"epsilon": 8}}}, "train: label_smoothing: DP-SGD training"),
        ({"dataset": {"name": "digits", "path": "x.npz"}}, "dataset: give exactly one"),
        ({"split": {"target_train": 0.5, "target_test": 0.5, "population": 0.5}}, "split: fractions sum to 1.700"),
        ([1, 2], "config: expected a mapping"),
    ],
)
def test_mistakes_are_one_line_naming_the_key(raw: Any, names: str) -> None:
    assert config_error(raw).startswith(names)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^config: file .*absent.yaml not found$"):
        config.load(tmp_path / "absent.yaml")


def test_bad_yaml_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("references: [1, 2\nseed: 0\n")
    with pytest.raises(ConfigError, match="broken.yaml is not valid YAML") as info:
        config.load(path)
    assert "\n" not in str(info.value)


def test_spec_example_parses(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(
        "dataset: location\nmodel: mlp\nseed: 0\n"
        "train: {epochs: 30, batch_size: 64, lr: 0.1, momentum: 0.9, weight_decay: 5.0e-4}\n"
        "references: 8\nattacks:\n  - {name: bmia, references: 1, samples: 1000, hessian: kron}\n"
        "  - {name: lira, references: 8}\n  - {name: rmia, references: 2}\n"
    )
    cfg = config.load(path)
    assert cfg.dataset.name == "location" and cfg.references == 8
    planned = attack_plan.build(cfg)
    assert [(a.name, a.references) for a in planned.attacks] == [("bmia", 1), ("lira", 8), ("rmia", 2)]
    assert planned.attacks[1].label == "lira (n=8)" and planned.references == 8


def test_empty_file_is_refused_and_the_default_is_valid(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    with pytest.raises(ConfigError, match="empty.yaml is empty; give the keys to change"):
        config.load(path)
    assert config.default().dataset.name == "digits"


def test_config_is_frozen(tiny_config: config.RunConfig) -> None:
    with pytest.raises(ValidationError, match="frozen"):
        tiny_config.seed = 1  # type: ignore[misc]


def test_the_attacks_shared_choices_are_read_off_the_registries() -> None:
    from miaudit import posteriors
    from miaudit.attacks import registry
    from miaudit.config import describe

    lines = {line.split(":")[0].strip(): line for line in describe.choice_lines()}
    takers = [a.name for a in registry.all_attacks() if "posterior" in a.params.model_fields]
    assert lines["posterior"] == f"  posterior: ({', '.join(takers)}) {' | '.join(posteriors.names())}"
    assert {"bmia", "mr-bmia", "eb-bmia"} <= set(takers)
    assert "exp-family" in lines["family"] and "gaussian-equal-var" in lines["family"]


@pytest.mark.parametrize(("key", "command"), [("suspect", "infer-dataset"), ("unlearning", "unlearn")])
def test_another_commands_key_names_that_command(key: str, command: str) -> None:
    """A run config holding an infer-dataset or unlearn key: the one line says which command reads it."""
    with pytest.raises(ConfigError, match=rf"^{key}: a key of `miaudit {command}`, not of this command"):
        config.from_dict({"dataset": "digits", "model": "mlp", key: [1, 2, 3, 4]})
    with pytest.raises(ConfigError, match=r"^suspct: unknown key; known keys"):
        config.from_dict({"dataset": "digits", "model": "mlp", "suspct": 1})
