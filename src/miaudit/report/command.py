"""``miaudit report DIR``: a finished run's reports rendered again from its files alone (``report.rebuild``); typer
and rich only at import, so ``miaudit --help`` stays fast."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console


def report_command(
    run_dir: Path = typer.Argument(..., help="a finished run's directory (results.json, scores.parquet or scores.csv)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print warnings and errors only"),
) -> None:
    """Render a finished run's report.md, report.html and roc.png again from its files alone (no model, no cache)."""
    from . import console, rebuild

    written = console.command(lambda: rebuild(run_dir), run_dir, quiet, verbose=False)
    if not quiet:
        Console().print(f"wrote {', '.join(written)} in {run_dir}/", highlight=False, markup=False, soft_wrap=True)
