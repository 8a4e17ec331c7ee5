"""What a run says about how its models were made: the references' training recipe for a user's model
(target.train_fn, or a warning that miaudit's loop trained them), and the one-run DP audit's header (the target's
accuracy on its real records, the audit's power beside "no violation detected")."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import _byo
import pytest
import yaml
from conftest import TINY_RUN
from typer.testing import CliRunner

from miaudit.cli import app

pytestmark = pytest.mark.slow  # trains models (tests/conftest.py holds that rule)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_own_model_references_train_by_the_named_function_or_with_a_warning(isolated_cache: Path) -> None:
    x, y = _byo.tiny_data()
    _byo.write_audit_files(Path("."), x, y)
    attacks = ["attack-p", {"name": "attack-r", "references": 2}]
    raw = _byo.audit_config(Path(".").absolute(), references=2, attacks=attacks)
    calls = len(_byo.TRAIN_FN_CALLS)
    code, output = _byo.run_cli(Path("."), {**raw, "target": {**raw["target"], "train_fn": "_byo:adam_fit"}}, Path("a"))
    assert code == 0, output
    assert len(_byo.TRAIN_FN_CALLS) == calls + 2  # once per reference model
    results = json.loads(Path("a/results.json").read_text())
    assert results["reference_training"] == "train_fn _byo:adam_fit" and "notes" not in results
    assert "warning" not in output.lower() and "train_fn _byo:adam_fit" in output.splitlines()[0]
    assert not list(isolated_cache.rglob("*.safetensors"))  # user code trained them: nothing cached
    code, output = _byo.run_cli(Path("."), raw, Path("b"))
    assert code == 0, output
    assert re.search(
        r"^references: miaudit's loop \(sgd, 2 epochs, lr [\d.]+, batch 16, cosine\); not the recipe", output, re.M
    )
    results = json.loads(Path("b/results.json").read_text())
    assert results["reference_training"].startswith("miaudit's loop (sgd, 2 epochs")
    assert any("not by the recipe that trained your target" in note for note in results["notes"])
    assert "trained by miaudit's loop" in Path("b/report.md").read_text()
    code, output = _byo.run_cli(Path("."), {**raw, "target": {**raw["target"], "train_fn": "_byo:absent"}}, Path("c"))
    assert code == 2 and "target.train_fn: cannot import '_byo:absent'" in output


def test_dp_audit_header_shows_real_accuracy_and_power(isolated_cache: Path) -> None:
    """The header's accuracies are on the target's real records (not the random-label canaries); the verdict
    "no violation detected" comes with the audit's power."""
    raw = copy.deepcopy(TINY_RUN)
    raw.update(canaries={"count": 40, "guesses": 2}, dp_audit={"attack": "attack-p", "declared_epsilon": 8})
    Path("c.yaml").write_text(yaml.safe_dump(raw))
    res = CliRunner().invoke(app, ["dp-audit", "c.yaml", "--out", "o"])
    assert res.exit_code == 0, res.output
    results = json.loads(Path("o/results.json").read_text())
    a, target = results["dp_audit"], results["target"]
    assert (target["train_accuracy"], target["test_accuracy"]) == (
        a["target_train_accuracy"],
        a["target_test_accuracy"],
    )
    assert a["verdict"].startswith("no violation detected") and "too little power" in a["verdict"]
    header = Path("o/report.md").read_text().split("\n|")[0]
    assert f"train accuracy {a['target_train_accuracy']:.3f}, test accuracy {a['target_test_accuracy']:.3f}" in header
