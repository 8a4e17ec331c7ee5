"""The console answers (issue 55): `miaudit run` prints the verdict first, then a few plain lines, records at risk
in one sentence and no procedure's name; `--explain` prints the procedures report.md names; `miaudit report DIR`
renders report.md again from the run's files alone, the same lines."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from miaudit.cli import app

PROCEDURE_WORDS = ("storey", "benjamini", "conformal", "screen")


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.mark.slow
def test_the_console_answers_and_explains_on_request(tiny_raw: dict[str, Any], tmp_path: Path) -> None:
    Path("run.yaml").write_text(yaml.safe_dump(tiny_raw))
    res = CliRunner().invoke(app, ["run", "run.yaml", "--out", "out"])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    assert lines[0].startswith("Verdict: ") and len(lines) <= 16, res.stdout
    assert not [w for w in PROCEDURE_WORDS if w in res.stdout.lower()], res.stdout
    risk = [line for line in lines if line.startswith("Records at risk: ")]
    assert len(risk) == 1 and lines[lines.index(risk[0]) + 1].startswith("wrote out/"), res.stdout
    md = Path("out/report.md").read_text()
    assert any(w in md.lower() for w in PROCEDURE_WORDS)  # the procedure stays in report.md

    explained = CliRunner().invoke(app, ["run", "run.yaml", "--out", "out", "--force", "--explain"])
    assert explained.exit_code == 0, explained.output
    said = explained.stdout.lower()
    assert "records at risk: " in said and "storey" in said and "family-wise error" in said  # on request

    # the reports again from the files alone: results.json and the per-record table (parquet, else csv)
    md = Path("out/report.md").read_text()  # the second run's (its seconds differ from the first's)
    for table in ("scores.parquet", "scores.csv"):
        again = tmp_path / f"again-{table}"
        shutil.copytree("out", again)
        for name in ("report.md", "report.html", "roc.png", *({"scores.parquet"} - {table})):
            (again / name).unlink()
        res = CliRunner().invoke(app, ["report", str(again)])
        assert res.exit_code == 0, res.output
        assert (again / "report.md").read_text() == md
        assert (again / "report.html").is_file() and (again / "roc.png").is_file()


def test_report_refuses_a_folder_that_is_no_run(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1 and "results.json" in res.output
