"""Every auditing command refuses a bad gate or an unusable tracker in one line, exit 2, before any work: nothing
written, no model trained (conftest fails a test that steps an optimizer without the slow mark)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml
from _built import CONFIGS
from _cli import invoke, refused

OTHERS = {"run": "used", "score": "violation", "dp-audit": "leaks", "unlearn": "leaks", "infer-dataset": "auc_lo>0.5"}


def config(tmp_path: Path, command: str, **keys: object) -> str:
    path = tmp_path / f"{command}.yaml"
    path.write_text(yaml.safe_dump({**CONFIGS[command], **keys}))
    return str(path)


@pytest.mark.parametrize(
    ("command", "fail_on", "said"),
    [
        ("run", "bogus", "is no condition"),
        ("score", "tpr@2%>=5%", "FPR level 2% is none"),
        ("dp-audit", "epsilon_lb>-1", "epsilon is at least 0"),
        ("unlearn", "remembered>1.5", "count is a whole number"),
        ("infer-dataset", "auc>2", "share is a fraction"),
    ],
)
def test_a_bad_fail_on_is_one_line_naming_it(tmp_path: Path, command: str, fail_on: str, said: str) -> None:
    out = tmp_path / "out"
    refused(invoke(command, config(tmp_path, command), "--fail-on", fail_on, "--out", str(out)), "--fail-on: ", said)
    assert not out.exists()


@pytest.mark.parametrize("command", CONFIGS)
def test_another_commands_condition_is_refused_by_flag_and_by_key(tmp_path: Path, command: str) -> None:
    out, other = tmp_path / "out", OTHERS[command]
    line = refused(invoke(command, config(tmp_path, command), "--fail-on", other, "--out", str(out)), "--fail-on: ")
    assert f"not of miaudit {command}" in line
    line = refused(invoke(command, config(tmp_path, command, gate=[other]), "--out", str(out)), "gate: ")
    assert f"not of miaudit {command}" in line and f"miaudit {command}'s conditions: " in line
    assert not out.exists()


def test_a_malformed_gate_key_is_refused_as_the_config_is_read(tmp_path: Path) -> None:
    refused(invoke("run", config(tmp_path, "run", gate="leaks, tpr>=5%"), "--out", "o"), "gate: ", "FPR level")
    refused(invoke("run", config(tmp_path, "run", gate=[3]), "--out", "o"), "gate.0")


def test_comma_separated_and_repeated_conditions_are_one_list(tmp_path: Path) -> None:
    from miaudit.config.run import from_dict
    from miaudit.workflow.gate import split

    assert from_dict({"gate": "leaks, tpr@1%>=5%"}).gate == ("leaks", "tpr@1%>=5%")
    assert split(["leaks,auc>0.6", " at_risk>0 "]) == ["leaks", "auc>0.6", "at_risk>0"]


@pytest.mark.parametrize("command", CONFIGS)
def test_an_unusable_tracker_is_refused_before_any_work(tmp_path: Path, command: str) -> None:
    out = tmp_path / "out"
    tracking = {"mlflow": "http://127.0.0.1:9", "experiment": "x"}  # port 9 (discard): nothing listens
    line = refused(invoke(command, config(tmp_path, command, tracking=tracking), "--out", str(out)), "tracking.mlflow")
    if importlib.util.find_spec("mlflow") is not None:
        assert "no MLflow tracking server answers at http://127.0.0.1:9" in line
    else:
        assert "MLflow is not installed" in line
    assert not out.exists()
    line = refused(invoke(command, config(tmp_path, command), "--track", "http://127.0.0.1:9", "--out", str(out)))
    assert "tracking.mlflow" in line and not out.exists()


def test_a_bad_tracking_key_names_it(tmp_path: Path) -> None:
    refused(invoke("run", config(tmp_path, "run", tracking={"experiment": "x"}), "--out", "o"), "tracking.mlflow")
    refused(invoke("run", config(tmp_path, "run", tracking={"mlflow": "x", "bogus": 1}), "--out", "o"), "tracking.")
