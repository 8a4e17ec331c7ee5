"""What a new user tripped over, round three (issue 49): a reference-free audit, malformed endpoint URLs, a
many-run DP audit of a config without DP, SIGTERM with training workers, the records ranked by the test that
flags them, one TPR at FPR, ``plan --runs``, quiet DP logs, the schema's required fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner, Result

from miaudit.cli import app


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def refused(res: Result, *words: str) -> str:
    """Exit 2 with one line naming every word; returns the line."""
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def write(name: str, raw: dict[str, Any]) -> str:
    Path(name).write_text(yaml.safe_dump(raw))
    return name


def test_a_reference_free_gls_only_audit_finishes_with_its_report(tiny_raw: dict[str, Any]) -> None:  # item 0
    res = invoke("run", write("gls.yaml", {**tiny_raw, "references": 0, "attacks": [{"name": "gls"}]}), "--out", "o")
    assert res.exit_code == 0, res.output
    report = Path("o/report.md").read_text()
    assert "Risk ranking: GLS" in report and "most vulnerable records beside the average" not in report
    assert "worst_case" not in json.loads(Path("o/results.json").read_text())
    assert Path("o/report.html").is_file()


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:99999/v2/models/x/infer", "Port out of range"),
        ("http://exa mple/x", "host 'exa mple'"),
        ("http://127.0.0.1:8080:9/x", "8080:9"),
        ("http://127.0.0.1:abc/x", "abc"),
    ],
)
def test_an_endpoint_url_with_a_bad_port_or_host_is_refused_in_one_line(url: str, why: str) -> None:  # item 0
    np.save("m.npy", np.arange(100))
    np.save("n.npy", np.arange(100, 200))
    raw = {"dataset": "digits", "references": 1, "train": {"epochs": 1}, "members": "m.npy", "nonmembers": "n.npy",
           "target": {"endpoint": url, "protocol": "v2", "output": "logits", "architecture": "mlp"}}  # fmt: skip
    refused(invoke("run", write("bad.yaml", raw), "--out", "o"), "target.endpoint", why)
    assert not Path("o").exists()


def test_a_many_run_dp_audit_without_train_dp_is_refused_before_the_power_line() -> None:  # item 0
    line = refused(invoke("dp-audit", write("nodp.yaml", {"dataset": "digits", "model": "mlp"}), "--runs", "5",
                          "--out", "o"), "train.dp")  # fmt: skip
    assert "power" not in line and not Path("o").exists()
