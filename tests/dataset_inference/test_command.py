"""The command's flags: the vocabulary of the other commands, and its help answered without loading torch."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from miaudit.cli import app


def test_the_flags_of_the_other_commands() -> None:
    text = CliRunner().invoke(app, ["infer-dataset", "--help"], env={"COLUMNS": "200"}).output
    for flag in ("--out", "-o", "--force", "-f", "--set", "-s", "--quiet", "-q", "--verbose", "-v"):
        assert flag in text


def test_registering_the_command_loads_no_torch() -> None:
    code = "import sys, miaudit.cli; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
