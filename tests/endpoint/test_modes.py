"""What each output mode allows, decided by the Plan from the registry before any query; the config keys."""

from __future__ import annotations

import pytest

from miaudit import attack_plan
from miaudit.attacks import registry
from miaudit.config.run import from_dict
from miaudit.errors import AttackRequirementError, ConfigError

URL = "http://127.0.0.1:9/v2/models/m/infer"


def cfg(output: str = "logits", attacks="auto", **target):
    return from_dict(
        {
            "dataset": "digits",
            "target": {"endpoint": URL, "output": output, "architecture": "mlp", **target},
            "members": "m.npy",
            "nonmembers": "n.npy",
            "references": 4,
            "attacks": attacks,
        }
    )


def test_auto_on_labels_runs_every_label_only_attack():
    p = attack_plan.build(cfg("label"))
    assert {a.name for a in p.attacks} == {a.name for a in registry.all_attacks() if "label" in a.outputs}
    assert {"label-gap", "label-lira", "label-dist"} <= {a.name for a in p.attacks}
    assert "output: label" in (p.auto or "")


@pytest.mark.parametrize("output", ["logits", "probabilities", "top-k"])
def test_auto_on_logit_outputs_keeps_the_recommended_attacks_an_endpoint_can_feed(output):
    p = attack_plan.build(cfg(output))
    names = {a.name for a in p.attacks}
    assert "rmia" in names and "attack-p" in names
    assert not any("models" in a.info.needs for a in p.attacks)  # no weights behind an endpoint


def test_every_attack_declares_its_outputs_and_label_only_attacks_run_on_all():
    for info in registry.all_attacks():
        assert set(info.outputs) <= set(registry.ALL_OUTPUTS) and info.outputs
        if "labels" in info.needs:
            assert info.outputs == registry.ALL_OUTPUTS and info.queries_per_record


def test_refusal_is_one_line_naming_the_attack_and_the_mode():
    with pytest.raises(AttackRequirementError) as e:
        attack_plan.build(cfg("label", [{"name": "rmia"}]))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("attacks.0: rmia:") and "output: label" in msg and "label-lira" in msg


def test_weights_targets_offer_labels_too():
    raw = {"dataset": "digits", "references": 2, "attacks": [{"name": "label-lira"}, {"name": "lira"}]}
    assert [a.name for a in attack_plan.build(from_dict(raw)).attacks] == ["label-lira", "lira"]


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ({"endpoint": URL, "architecture": "mlp", "checkpoint": "w.safetensors"}, "either a checkpoint"),
        ({"endpoint": URL}, "architecture: an endpoint's references"),
        ({"architecture": "mlp", "checkpoint": "w.safetensors", "output": "label"}, "output: applies to an endpoint"),
        ({"endpoint": "ftp://host/x", "architecture": "mlp"}, "http"),
        ({"endpoint": URL, "architecture": "mlp", "credentials_env": "not a name"}, "NAME of an environment"),
    ],
)
def test_endpoint_keys_are_checked(target, why):
    raw = {"dataset": "digits", "target": target, "members": "m.npy", "nonmembers": "n.npy"}
    with pytest.raises(ConfigError, match=why):
        from_dict(raw)
