"""The exit codes of every auditing command with and without ``--fail-on``: 1 when a condition holds (its line
last), 0 when none does or none is given. ``run`` and ``score`` audit for real (test_mlflow.py, the workflow check);
here the DP, unlearning and dataset-inference audits are replaced by a result of each verdict (the gate, the
config's ``gate:`` key and the flags are the real ones), so the wiring of each command is tested in milliseconds."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from _built import CONFIGS, dp, inferred, unlearned
from _cli import invoke

from miaudit.results import AuditReport


def fake(monkeypatch: pytest.MonkeyPatch, command: str, result: AuditReport) -> None:
    """``command``'s audit answers ``result`` at once (its config is still read and checked)."""
    if command == "dp-audit":
        import miaudit.api

        monkeypatch.setattr(miaudit.api, "dp_audit", lambda *a, **k: result)
    elif command == "unlearn":
        import miaudit.unlearning.output

        monkeypatch.setattr(miaudit.unlearning.output, "verify_config", lambda *a, **k: result)
    else:
        import miaudit.dataset_inference.infer
        import miaudit.report.inference

        monkeypatch.setattr(
            miaudit.dataset_inference.infer, "infer", lambda *a: SimpleNamespace(results=result, records=None)
        )
        monkeypatch.setattr(miaudit.report.inference, "write", lambda results, *a: results)


def last(output: str) -> str:
    return [line for line in output.splitlines() if line.strip()][-1]


@pytest.mark.parametrize(
    ("command", "result", "condition", "code"),
    [
        ("dp-audit", dp(True), "violation", 1),
        ("dp-audit", dp(False), "violation", 0),
        ("dp-audit", dp(False, eps=2.5), "epsilon_lb>2", 1),
        ("unlearn", unlearned("not_forgotten"), "not_forgotten", 1),
        ("unlearn", unlearned("verified"), "not_forgotten,over_forgotten", 0),
        ("unlearn", unlearned("over_forgotten"), "over_forgotten", 1),
        ("infer-dataset", inferred(True), "used", 1),
        ("infer-dataset", inferred(False), "used", 0),
        ("infer-dataset", inferred(None), "used", 1),  # inconclusive: the gate cannot pass what it cannot judge
    ],
)
def test_each_commands_exit_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: str,
                                 result: AuditReport, condition: str, code: int) -> None:  # fmt: skip
    fake(monkeypatch, command, result)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(CONFIGS[command]))
    args = [command, str(path), "--out", str(tmp_path / "o"), "--quiet"]
    assert invoke(*args).exit_code == 0  # no condition: nothing to report
    res = invoke(*args, "--fail-on", condition)
    assert res.exit_code == code, res.output
    if code:
        assert last(res.output).startswith("gate failed (exit 1): ") and condition.split(",")[0] in last(res.output)
    else:
        assert res.output.strip() == ""  # --quiet: a passing gate says nothing
    with_key: dict[str, Any] = {**CONFIGS[command], "gate": condition}  # the same from the config's gate: key
    path.write_text(yaml.safe_dump(with_key))
    assert invoke(*args).exit_code == code


def test_a_passing_gate_says_so_last(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake(monkeypatch, "dp-audit", dp(False))
    monkeypatch.setattr("miaudit.report.console.answer_summary", lambda *a: None)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(CONFIGS["dp-audit"]))
    res = invoke(
        "dp-audit", str(path), "--out", str(tmp_path / "o"), "--fail-on", "violation", "--fail-on", "epsilon_lb>3"
    )
    assert res.exit_code == 0
    assert last(res.output) == (
        "gate passed: violation does not hold (verdict no_violation: epsilon lower bound 2.5 against the claimed 1 "
        "(confidence 0.95)); epsilon_lb>3 does not hold (epsilon lower bound: epsilon_lb = 2.5)"
    )
