"""`miaudit dp-audit` at the command line: the DP verdict heads report.md and report.html (the console: its answer
in plain words), report.html has the DP section, canaries are called canaries, a planted fault is said beside the
verdict, `--runs` speaks of runs and says its power before training, Ctrl-C says what was kept, and no raw dict or
RuntimeWarning reaches the output."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import TINY_RUN
from typer.testing import CliRunner, Result

from miaudit.cli import app
from miaudit.dp import multi_run, output

pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")

DP = {"epsilon": 4.0, "delta": 1e-5, "max_grad_norm": 1.0}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def config(path: str, **overrides: Any) -> str:
    raw = copy.deepcopy(TINY_RUN)
    raw["train"] = {**raw["train"], "dp": {**DP, **overrides.pop("dp", {})}}
    Path(path).write_text(yaml.safe_dump({**raw, **overrides}))
    return path


def dp_audit(*args: str) -> Result:
    res = CliRunner().invoke(app, ["dp-audit", *args])
    assert "{'" not in res.output and "RuntimeWarning" not in res.output, res.output  # row 15: no raw dict
    return res


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def html_text(path: Path) -> str:
    parser = _Text()
    parser.feed(path.read_text())
    return " ".join(" ".join(parser.parts).split())


def first_line(text: str) -> str:
    return next(line for line in text.splitlines() if line.strip() and not line.startswith("#"))


@pytest.mark.slow
def test_dp_verdict_heads_every_output_and_report_html_has_the_dp_section() -> None:
    """Rows 1 and 2: a black-box dp-audit (crafted canaries, two attacks)."""
    res = dp_audit(config("c.yaml", canaries={"count": 40, "kind": "crafted", "guesses": 10}), "--out", "o")
    assert res.exit_code == 0, res.output
    a = json.loads(Path("o/results.json").read_text())["dp_audit"]
    assert isinstance(a["violated"], bool) and a["verdict"].startswith(("violation", "no violation detected"))
    md, html = Path("o/report.md").read_text(), html_text(Path("o/report.html"))
    head = first_line(md).replace("**", "")
    assert head.startswith("DP verdict: ") and a["verdict"] in head
    # the console answers first in plain words (the answer's summary); the procedure stays in report.md
    assert first_line(res.stdout) == a["answer"]["summary"] and a["answer"]["detail"] == a["verdict"]
    assert a["answer"]["verdict"] == ("violation" if a["violated"] else "no_violation")
    assert html.split("miaudit report: digits", 2)[-1].strip().startswith(f"DP verdict: {a['verdict']}")
    assert "Differential privacy audit" in html and f"{a['epsilon_lb']:.3f}" in html
    assert f"{a['max_attainable']:.3f}" in html and "can and cannot see" in html
    for text in (md, html):  # canaries are canaries: no "identifies ... of members" about them
        assert "canaries included" in text and not re.search(r"identifies[^.;]* of members", text)
    for text in (md, html):  # the records lines ("20 canaries included", records at risk): canaries, not members
        records = [line for line in text.splitlines() if re.search(r"records\b.*\b\d+ (?:members|non-members)\b", line)]
        assert all("canar" in line for line in records), records


@pytest.mark.slow
def test_a_planted_fault_is_said_beside_the_verdict_in_every_output() -> None:
    """Row 3: a white-box dp-audit of a run drawing a tenth of the noise."""
    fault = {"epsilon": 2.0, "planted_fault": {"noise_scale": 0.1}}
    path = config("f.yaml", dp=fault, canaries={"count": 100, "kind": "dirac", "guesses": 20})
    res = dp_audit(path, "--out", "f")
    assert res.exit_code == 0, res.output
    a = json.loads(Path("f/results.json").read_text())["dp_audit"]
    assert a["violated"] and a["planted_fault"]["noise_scale"] == 0.1
    for text in (Path("f/report.md").read_text(), html_text(Path("f/report.html"))):
        said = " ".join(text.split())
        assert re.search(r"violation \(fault planted on purpose, train\.dp\.planted_fault: noise drawn at 0\.1x", said)
    said = " ".join(res.stdout.split())  # the console's answer, in plain words, says it too
    assert re.search(r"breaks its .*fault planted on purpose, train\.dp\.planted_fault: noise drawn at 0\.1x", said)


@pytest.mark.slow
def test_multi_run_audit_says_its_power_before_training_and_speaks_of_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Row 12: the power line comes before the first model trains (here: training is interrupted at once); the
    report of a real 2-run audit says nothing of one run, nan figures or '1 canaries'."""
    path = config("m.yaml", train={"epochs": 1, "batch_size": 16, "lr": 0.05, "dp": DP}, canaries={"count": 2,
                  "kind": "crafted"})  # fmt: skip

    def training(cfg: Any, runs: int) -> None:
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(output.multi_run, "run", training)
        res = dp_audit(path, "--runs", "2", "--out", "m0")
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert res.exit_code == 130 and lines[0].startswith("power: 4 runs x 2 canaries per run"), res.output
    assert "too little power to detect any violation of the declared epsilon 4" in lines[0]
    res = dp_audit(path, "--runs", "2", "--out", "m")
    assert res.exit_code == 0, res.output
    for text in (Path("m/report.md").read_text(), html_text(Path("m/report.html"))):
        assert "multi-run" in text and not re.search(r"one-run|\bnan\b|\b1 canaries\b", text, re.I)
    assert multi_run.RUN_ROLE  # the runs' own seeds


def test_interrupt_says_what_the_cache_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Row 13: Ctrl-C during dp-audit: one line, exit 130, nothing written."""

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(output, "audit", interrupted)
    res = dp_audit(config("c.yaml", canaries={"count": 40, "kind": "crafted"}), "--out", "o")
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert res.exit_code == 130 and len(lines) == 1 and lines[0].startswith("interrupted:"), res.output
    assert "nothing was written to o" in lines[0] and not Path("o").exists()
