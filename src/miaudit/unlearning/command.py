"""``miaudit unlearn CONFIG``: the command, registered by ``cli.py`` (typer and rich only at import, so
``miaudit --help`` stays fast), with the flags and the error and interrupt handling of the others
(``report.console.command``)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..results import AuditReport
from ..workflow.keys import FAIL_ON_HELP, TRACK_HELP


def unlearn_command(
    config: Path = typer.Argument(..., help="YAML audit config with unlearning: {forget, method}"),
    fail_on: list[str] | None = typer.Option(None, "--fail-on", metavar="CONDITION", help=FAIL_ON_HELP),
    track: str | None = typer.Option(None, "--track", metavar="URI", help=TRACK_HELP),
    overrides: list[str] | None = typer.Option(None, "--set", "-s", help="override a config key (repeatable)"),
    force: bool = typer.Option(False, "--force", "-f", help="write into a non-empty --out, replacing its files"),
    out: Path | None = typer.Option(None, "--out", "-o", help="output directory (default miaudit-runs/<name>-unlearn)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print warnings and errors only"),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="also print debug lines, and how the answer was reached"
    ),
    explain: bool = typer.Option(False, "--explain", help="also print how the answer was reached (as report.md says)"),
) -> None:
    """Verify unlearning: did the forgotten records leave the model (a verdict, the records still remembered)."""
    from ..config.files import load_config
    from ..config.run import RunConfig
    from ..report.console import answer_summary, command
    from ..workflow.flow import Flow
    from .config import from_mapping
    from .output import verify_config

    where = out or Path("miaudit-runs") / f"{config.stem}-unlearn"

    def work() -> AuditReport:
        flow.check(load_config(config, overrides or [], RunConfig, from_mapping).cfg)  # before any work
        return verify_config(config, out=where, overrides=overrides or [], force=force)

    flow = command(lambda: Flow.of("unlearn", fail_on, track), where, quiet, verbose)
    result = command(work, where, quiet, verbose)
    if not quiet:
        answer_summary(result, where, explain or verbose)
    flow.finish(result, where, quiet)
