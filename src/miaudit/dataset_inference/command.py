"""``miaudit infer-dataset CONFIG``: the command, registered by ``cli.py`` (typer and rich only at import, so
``miaudit --help`` stays fast). The one vocabulary of flags of the other commands: -o/--out, -f/--force, -s/--set,
-q/--quiet, -v/--verbose, and their error and interrupt handling (``report.console.command``)."""

from __future__ import annotations

from pathlib import Path

import typer

from ..results import AuditReport
from ..workflow.keys import FAIL_ON_HELP, TRACK_HELP


def infer_command(
    config: Path = typer.Argument(..., help="YAML: a run config with suspect: and validation: (record indices)"),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="output directory (default ./miaudit-runs/<name>-inference)"
    ),
    force: bool = typer.Option(
        False, "--force", "-f", help="write into a non-empty --out, replacing miaudit's own files"
    ),
    explain: bool = typer.Option(False, "--explain", help="also print how the answer was reached (as report.md says)"),
    overrides: list[str] | None = typer.Option(None, "--set", "-s", help="override a config key (repeatable)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print warnings and errors only"),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="also print debug lines, and how the answer was reached"
    ),
    fail_on: list[str] | None = typer.Option(None, "--fail-on", metavar="CONDITION", help=FAIL_ON_HELP),
    track: str | None = typer.Option(None, "--track", metavar="URI", help=TRACK_HELP),
) -> None:
    """Was a suspect set of records used to train the model? A p-value, a blind guard, the fraction used."""
    from ..report import inference, outdir
    from ..report.console import answer_summary, command
    from ..workflow.flow import Flow

    where = out or Path("miaudit-runs") / f"{config.stem}-inference"

    def work() -> AuditReport:
        with outdir.reserved(where, force):  # first, as for run: nothing is written when anything fails
            from ..config.files import load_config
            from ..config.run import RunConfig
            from . import infer, request

            asked = load_config(config, overrides or [], RunConfig, request.from_mapping)
            flow.check(asked.cfg)  # gate: and tracking: before any work
            answer = infer.infer(asked)
            return inference.write(answer.results, answer.records, where)

    flow = command(lambda: Flow.of("infer-dataset", fail_on, track), where, quiet, verbose)
    results = command(work, where, quiet, verbose)
    if not quiet:
        answer_summary(results, where, explain or verbose)
    flow.finish(results, where, quiet)
