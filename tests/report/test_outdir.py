"""The output directory is checked before any work (a file, an unwritable path, a non-empty directory
without --force: exit 2, one line, nothing created) and --force replaces only miaudit's own files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from miaudit import api
from miaudit.cli import app
from miaudit.report import outdir


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the audit starts: refusals must come before any data is loaded."""

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("the audit started before --out was refused")

    monkeypatch.setattr(api.audits, "run_config", refuse)


def run_cli(tmp_path: Path, raw: dict, *args: str):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump(raw))
    return CliRunner().invoke(app, ["run", str(cfg), *args])


def refused(res, *words: str) -> str:
    assert res.exit_code == 2, res.output
    [line] = res.output.strip().splitlines()
    assert all(w in line for w in words), line
    return line


def test_out_at_a_file_is_refused_before_work(tmp_path: Path, tiny_raw: dict, no_work: None) -> None:
    f = tmp_path / "afile"
    f.write_text("not a directory")
    refused(run_cli(tmp_path, tiny_raw, "--out", str(f)), str(f), "is a file")
    assert f.read_text() == "not a directory"


def test_out_below_a_file_is_refused(tmp_path: Path, tiny_raw: dict, no_work: None) -> None:
    (tmp_path / "afile").write_text("x")
    refused(run_cli(tmp_path, tiny_raw, "--out", str(tmp_path / "afile" / "sub")), "afile is a file")


def test_unwritable_out_is_refused(tmp_path: Path, tiny_raw: dict, no_work: None) -> None:
    if os.access("/sys", os.W_OK) and not Path("/sys").is_mount():
        pytest.skip("/sys is writable here: no unwritable folder to try")
    refused(run_cli(tmp_path, tiny_raw, "--out", "/sys/miaudit-out/run"), "/sys/miaudit-out/run", "not writable")


def test_nonempty_out_is_refused_without_force(tmp_path: Path, tiny_raw: dict, no_work: None) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "roc.png").write_bytes(b"an earlier run's")
    line = refused(run_cli(tmp_path, tiny_raw, "--out", str(out)), str(out), "not empty", "--force")
    assert "roc.png" in line and (out / "roc.png").read_bytes() == b"an earlier run's"


def test_check_creates_nothing(tmp_path: Path) -> None:
    outdir.check(tmp_path / "a" / "b" / "c")  # creatable: accepted, but not created yet
    assert os.listdir(tmp_path) == []
    outdir.check(tmp_path)  # an empty directory is fine
    outdir.check(tmp_path, force=True)


def test_publish_removes_stale_own_files_and_keeps_others(tmp_path: Path) -> None:
    out, staged = tmp_path / "out", tmp_path / "staged"
    out.mkdir()
    staged.mkdir()
    for name in ("roc.png", "results.json", "notes.txt"):
        (out / name).write_text("old")
    (staged / "results.json").write_text("new")  # a run without membership writes no roc.png
    outdir.publish(staged, out)
    assert sorted(os.listdir(out)) == ["notes.txt", "results.json"]
    assert (out / "results.json").read_text() == "new" and (out / "notes.txt").read_text() == "old"


@pytest.mark.slow
def test_force_replaces_a_run_and_keeps_other_files(tmp_path: Path, tiny_raw: dict) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "report.html").write_text("an earlier run's")
    res = run_cli(tmp_path, tiny_raw, "--out", str(out), "--force")
    assert res.exit_code == 0, res.output
    assert set(os.listdir(out)) == {"notes.txt", *outdir.OUTPUT_FILES}
    assert (out / "notes.txt").read_text() == "mine"
    assert "an earlier run's" not in (out / "report.html").read_text()


@pytest.mark.slow
def test_api_report_refuses_a_nonempty_dir(tmp_path: Path, tiny_raw: dict) -> None:
    result = api.run(tiny_raw)
    result.report(tmp_path / "a")
    with pytest.raises(outdir.OutputDirError, match="force=True"):
        result.report(tmp_path / "a")
    assert result.report(tmp_path / "a", force=True).dataset
