"""The command's flags: the vocabulary of the other commands, and its help answered without loading torch; its start
line says what it does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from miaudit.cli import app


def test_the_flags_of_the_other_commands() -> None:
    text = CliRunner().invoke(app, ["infer-dataset", "--help"], env={"COLUMNS": "200"}).output
    for flag in ("--out", "-o", "--force", "-f", "--set", "-s", "--quiet", "-q", "--verbose", "-v"):
        assert flag in text


def test_registering_the_command_loads_no_torch() -> None:
    code = "import sys, miaudit.cli; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.slow  # trains the tiny run's target and references
def test_the_start_line_says_what_the_command_does(tmp_path: Path, tiny_raw: dict[str, Any]) -> None:
    """Not run's line (``auditing ...; then 2 attack(s): ...``): infer-dataset runs none of the config's attacks."""
    raw = {**tiny_raw, "suspect": list(range(30)), "validation": list(range(200, 240))}
    (tmp_path / "infer.yaml").write_text(yaml.safe_dump(raw))
    result = CliRunner().invoke(app, ["infer-dataset", str(tmp_path / "infer.yaml"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("dataset inference on digits: 30 suspect and 40 validation records; the target (mlp, 3 ")
    assert "2 reference model(s)" in first and "attack(s)" not in first and "auditing" not in result.output
