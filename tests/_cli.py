"""The command line as the end-to-end tests drive it: a command's result, and the one-line refusal a bad input
gets (exit 2, one line naming every word asked for)."""

from __future__ import annotations

from typer.testing import CliRunner, Result

from miaudit.cli import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def refused(res: Result, *words: str) -> str:
    """Exit 2 with one line naming every word; returns the line."""
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]
