"""``miaudit compare RUN_A RUN_B``: the command, registered by ``miaudit.cli``; it reads the two runs' files
alone (results.json, scores.parquet), and typer and rich only at import, so ``miaudit --help`` stays fast."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

if TYPE_CHECKING:
    from ..results import Comparison


def compare_command(
    run_a: Path = typer.Argument(..., help="run A: a miaudit run directory (results.json, scores.parquet)"),
    run_b: Path = typer.Argument(..., help="run B, e.g. the same audit of a mitigated model"),
    out: Path | None = typer.Option(None, "--out", "-o", help="where compare.json/.md/.html go (default RUN_B)"),
    overrides: list[str] | None = typer.Option(
        None, "--set", "-s", help="override a setting of the comparison, e.g. --set resamples=2000 (repeatable)"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print warnings and errors only"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="also print debug lines"),
) -> None:
    """B against A per shared attack: TPR and AUC differences with 95% bootstrap intervals, a verdict each."""
    from . import compare, compare_files
    from .console import command

    def work() -> tuple[Comparison, Path]:
        settings = compare.settings(overrides or [])
        compare_files.check_destination(out or run_b)
        result = compare.compare(run_a, run_b, resamples=settings.resamples)
        return result, compare_files.write(run_a, run_b, result, out or run_b)

    result, where = command(work, out or run_b, quiet, verbose)
    if quiet:
        return
    Console().print("\n".join(compare_files.lines(result)), highlight=False, markup=False, soft_wrap=True)
    Console().print(f"wrote {where}/compare.json, compare.md, compare.html", highlight=False)
