"""``miaudit infer-dataset CONFIG``: the command, registered by ``cli.py`` (typer and rich only at import, so
``miaudit --help`` stays fast). The one vocabulary of flags of the other commands: -o/--out, -f/--force, -s/--set,
-q/--quiet, -v/--verbose; bad input: one line, exit 2, nothing written; Ctrl-C: one line, exit 130."""

from __future__ import annotations

import logging
from pathlib import Path

import typer
from rich.console import Console

from ..errors import MiauditError


def infer_command(
    config: Path = typer.Argument(..., help="YAML: a run config with suspect: and validation: (record indices)"),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="output directory (default ./miaudit-runs/<name>-inference)"
    ),
    force: bool = typer.Option(
        False, "--force", "-f", help="write into a non-empty --out, replacing miaudit's own files"
    ),
    overrides: list[str] | None = typer.Option(None, "--set", "-s", help="override a config key (repeatable)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print warnings and errors only"),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="also print debug lines"),
) -> None:
    """Was a suspect set of records used to train the model? A p-value, a blind guard, the fraction used."""
    from .. import progress
    from ..report import inference, outdir

    err = Console(stderr=True)
    progress.SESSION["trained"] = 0  # what this command trains: an interrupt reports it
    progress.configure_logging(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)
    out = out or Path("miaudit-runs") / f"{config.stem}-inference"
    try:
        with outdir.reserved(out, force):  # first, as for run: nothing is written when anything fails
            from . import infer, request

            answer = infer.infer(request.load(config, overrides or []))
            results = inference.write(answer.results, answer.records, out)
    except MiauditError as e:
        err.print(f"[bold red]error:[/bold red] {e}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=2) from None
    except KeyboardInterrupt:
        from ..data import default_cache_dir

        err.print(progress.interrupted(default_cache_dir(), out), highlight=False, soft_wrap=True)
        raise typer.Exit(code=130) from None
    if not quiet and results.dataset_inference is not None:
        lines = [*inference.console_lines(results.dataset_inference), f"wrote {out}/"]
        Console().print("\n".join(lines), highlight=False, markup=False, soft_wrap=True)
