"""The command line: a thin shell over the Python API.

    miaudit run [CONFIG]                an audit: results.json, report.md/.html, roc.png, scores
    miaudit init [PATH]                 a commented config with every key and its default
    miaudit config [CONFIG] [--schema]  the config as miaudit reads it, or its JSON schema
    miaudit schema [NAME]               JSON Schema of results.json (default), a config, compare.json or plan
    miaudit attacks [NAME]              the registered attacks; an attack's parameters and needs
    miaudit score CONFIG                an audit of precomputed outputs (no models)
    miaudit export [CONFIG] --out PATH  a run's outputs in the npz or LiRA layout, for `score`
    miaudit dp-audit CONFIG             one-run DP audit with canaries (miaudit.dp)
    miaudit unlearn CONFIG              did forgotten records leave the model (miaudit.unlearning)
    miaudit compare RUN_A RUN_B         B against A: TPR and AUC differences with intervals
    miaudit report RUN_DIR              a finished run's report.md, report.html, roc.png again, from its files
    miaudit plan [CONFIG]               power before the run: intervals, detectable TPR, time
    miaudit infer-dataset CONFIG        was a suspect set of records used to train the model
    miaudit track RUN_DIR               log a finished run's folder to MLflow (docs/workflow.md)
    miaudit bench SUITE                 a benchmark suite
    miaudit --version

One vocabulary of flags on the commands that read a config or write results (docs/running.md): -s/--set, -q/--quiet,
-v/--verbose, -o/--out, -f/--force; Ctrl-C ends each with one line, exit 130, nothing half-written. Bad input
exits with code 2 and a one-line message naming the field; nothing is written. Heavy modules (torch, the
attacks) are imported inside the commands that need them, so ``--help`` answers at once.
"""

from __future__ import annotations

import logging
import sys
import time
import typing
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from ._version import __version__
from .config.files import read, with_overrides
from .config.run import DEFAULT_RUN, RunConfig, from_dict, load
from .config_keys.commands import attacks, init, schema, show_config
from .dataset_inference.command import infer_command
from .errors import ConfigError, MiauditError
from .report.command import report_command
from .report.compare_command import compare_command
from .unlearning.command import unlearn_command
from .workflow.keys import FAIL_ON_HELP, TRACK_HELP

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Membership inference auditing.")
err = Console(stderr=True)
SET_HELP = "override a config key, e.g. --set train.epochs=5 --set attacks.0.samples=200 (repeatable)"
QUIET_HELP = "print warnings and errors only: no progress lines, no summary"
VERBOSE_HELP = "also print debug lines, and the summary's procedures (as --explain)"


def _fail(e: Exception) -> NoReturn:
    from .report.console import refuse

    refuse(e)


def _version(show: bool) -> None:
    if show:
        print(f"miaudit {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version"),
) -> None:
    """Membership inference auditing."""
    from . import progress

    progress.stop_on_sigterm()  # SIGTERM ends a command as Ctrl-C does (exit 143)


OUT_OPTION = typer.Option(None, "--out", "-o", help="output directory (default ./miaudit-runs/<config name>)")
FORCE_OPTION = typer.Option(False, "--force", "-f", help="write into a non-empty --out, replacing miaudit's own files")
SET_OPTION = typer.Option(None, "--set", "-s", help=SET_HELP)
QUIET_OPTION = typer.Option(False, "--quiet", "-q", help=QUIET_HELP)
VERBOSE_OPTION = typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP)
EXPLAIN_OPTION = typer.Option(False, "--explain", help="also print how each answer was reached (as report.md says)")
FAIL_ON_OPTION = typer.Option(None, "--fail-on", metavar="CONDITION", help=FAIL_ON_HELP)
TRACK_OPTION = typer.Option(None, "--track", metavar="URI", help=TRACK_HELP)


def _logging(quiet: bool, verbose: bool) -> None:
    """--quiet: warnings and errors only; --verbose: debug lines too."""
    from . import progress

    progress.configure_logging(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


def _config(config: Path | None, overrides: list[str] | None) -> RunConfig:
    """The config file (none: the built-in default audit) with ``--set`` overrides, validated."""
    if config is not None:
        return load(config, overrides or [])
    return from_dict(with_overrides(DEFAULT_RUN, overrides or []))


@app.command()
def run(
    config: Path | None = typer.Argument(None, help="YAML config; omit for the built-in default audit"),
    out: Path | None = OUT_OPTION,
    force: bool = FORCE_OPTION,
    overrides: list[str] | None = SET_OPTION,
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
    explain: bool = EXPLAIN_OPTION,
    fail_on: list[str] | None = FAIL_ON_OPTION,
    track: str | None = TRACK_OPTION,
) -> None:
    """Run one audit and write results.json, report.md, report.html, roc.png, scores.csv and scores.parquet."""
    from . import progress
    from .report import console, outdir
    from .workflow.flow import Flow

    _logging(quiet, verbose)
    out = out or Path("miaudit-runs") / (config.stem if config else "default")
    cfg, progress.SESSION["trained"], progress.SESSION["answers"] = None, 0, 0  # what an interrupt reports
    try:
        flow = Flow.of("run", fail_on, track)  # first: a bad condition is refused before anything is written
        # then: held by this run before the config's checks import torch, before any data or model
        with outdir.reserved(out, force):
            flow.check(cfg := _config(config, overrides))  # gate: and tracking: before any work
            from . import api

            start = time.perf_counter()
            results = api.run(cfg).report(out, force=force)
    except MiauditError as e:
        _fail(e)
    except KeyboardInterrupt:
        _interrupted(cfg, out)
    if not quiet:
        console.summary(results, out, start, explain or verbose)
    flow.finish(results, out, quiet)  # the tracker, then the gate's line last (exit 1 when it fails)


def _say(line: str) -> None:
    """A line on stderr before the work (a dp-audit's power): plain text, unwrapped."""
    err.print(line, highlight=False, markup=False, soft_wrap=True)


def _interrupted(cfg: RunConfig | None, out: Path | None, trains: bool = True) -> NoReturn:
    """Ctrl-C or SIGTERM: one line saying what the run kept (``trains``: the models it trained), exit 130 or 143
    (the shell's codes for SIGINT and SIGTERM)."""
    from .data import default_cache_dir
    from .progress import Terminated, interrupted

    cache = (cfg.cache_dir if cfg else None) or default_cache_dir()
    err.print(interrupted(cache if trains else None, out), highlight=False, soft_wrap=True)
    raise typer.Exit(code=143 if isinstance(sys.exc_info()[1], Terminated) else 130)


@app.command()
def score(
    config: Path = typer.Argument(..., help="YAML score config: outputs: {layout: npz|lira, path: ...}, attacks ..."),
    fail_on: list[str] | None = FAIL_ON_OPTION,
    track: str | None = TRACK_OPTION,
    overrides: list[str] | None = SET_OPTION,
    out: Path | None = OUT_OPTION,
    force: bool = FORCE_OPTION,
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
    explain: bool = EXPLAIN_OPTION,
) -> None:
    """Audit precomputed outputs (logits and membership masks of models trained elsewhere): no models needed."""
    from . import api, progress
    from .config import scores
    from .report import console, outdir
    from .workflow.flow import Flow

    _logging(quiet, verbose)
    out, progress.SESSION["trained"] = out or Path("miaudit-runs") / config.stem, 0
    try:
        flow = Flow.of("score", fail_on, track)
        flow.check(cfg := scores.load(config, overrides or []))
        with outdir.reserved(out, force):
            start = time.perf_counter()
            results = api.score(cfg).report(out, force=force)
    except MiauditError as e:
        _fail(e)
    except KeyboardInterrupt:
        _interrupted(None, out, trains=False)
    if not quiet:
        console.summary(results, out, start, explain or verbose)
    flow.finish(results, out, quiet)


@app.command("export")
def export_outputs(
    config: Path | None = typer.Argument(None, help="YAML run config; omit for the built-in default audit"),
    out: Path = typer.Option(..., "--out", "-o", help="where to write: a folder (lira) or a .npz file (npz)"),
    layout: str = typer.Option("npz", "--layout", "-l", help="npz (ours) or lira (the LiRA code's directory)"),
    force: bool = typer.Option(False, "--force", "-f", help="replace an existing --out"),
    overrides: list[str] | None = SET_OPTION,
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Write a run's model outputs (target and references, from the cache or trained) for `miaudit score`."""
    from . import api, progress
    from .config.scores import Layout
    from .experiment import export

    if layout not in typing.get_args(Layout):
        _fail(ConfigError(f"--layout: {layout!r} is not {' or '.join(typing.get_args(Layout))}"))
    _logging(quiet, verbose)
    cfg, progress.SESSION["trained"] = None, 0
    try:
        export.destination(out, layout, force)  # before any work (and before the config: its errors come second)
        cfg = _config(config, overrides)
        where = api.export(cfg, out, layout, force=force)
    except MiauditError as e:
        _fail(e)
    except KeyboardInterrupt:
        _interrupted(cfg, out)
    if not quiet:
        Console().print(f"wrote {where} ({layout} layout)")


@app.command("plan")
def plan_audit(
    config: Path | None = typer.Argument(None, help="YAML config; omit for the built-in default audit"),
    overrides: list[str] | None = SET_OPTION,
    halfwidth: float = typer.Option(0.01, "--halfwidth", help="wanted TPR interval half-width, for members needed"),
    runs: int | None = typer.Option(
        None, "--runs", help="plan the many-run DP audit `miaudit dp-audit CONFIG --runs R`: its power and time"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="print warnings and errors only, then the plan"),
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """Power before the run: interval widths, the smallest detectable TPR, records needed, estimated time."""
    from . import api, data, forecast
    from .dp import runs_forecast
    from .forecast import inference_forecast
    from .results import InferencePlan, MultiRunPlan

    _logging(quiet, verbose)
    cfg: RunConfig | None = None
    try:
        raw = read(config) if config is not None else {}
        with data.cache_untouched():  # plan writes nothing: a data set not yet decoded into the cache stays out
            if config is not None and "unlearning" in raw:  # an unlearning audit (miaudit unlearn)
                print("\n".join(forecast.unlearning_lines(config, overrides or [])))
                return
            if config is not None and {"suspect", "validation"} & set(raw):  # dataset inference (infer-dataset)
                said = inference_forecast.lines(inference_forecast.from_config(config, overrides or [], runs))
            else:
                result = api.plan(cfg := _config(config, overrides), halfwidth=halfwidth, runs=runs)
                assert not isinstance(result, InferencePlan)  # a run config's plan
                said = runs_forecast.lines(result) if isinstance(result, MultiRunPlan) else forecast.lines(result)
    except MiauditError as e:
        _fail(e)
    except KeyboardInterrupt:
        _interrupted(cfg, None, trains=False)
    Console().print("\n".join(said), highlight=False, markup=False, soft_wrap=True)


@app.command()
def bench(
    suite: str = typer.Argument(..., help="suite name (a name it does not know gets the list of suites)"),
    out: Path = typer.Option(Path("benchmarks/results"), "--out", "-o", help="folder for <suite>.json and .md"),
    dataset: list[str] | None = typer.Option(None, "--dataset", "-d", help="only these data sets of the suite"),
    seed: list[int] | None = typer.Option(None, "--seed", help="only these seeds"),
) -> None:
    """Run a benchmark suite and write its aggregated results."""
    import miaudit_bench.run

    if suite not in miaudit_bench.run.suite_names():
        _fail(ConfigError(f"suite: unknown suite {suite!r}; expected one of {miaudit_bench.run.suite_names()}"))
    try:
        res = miaudit_bench.run.run_suite(
            suite, out, datasets=dataset, seeds=seed, log=lambda m: err.print(m, highlight=False)
        )
    except MiauditError as e:
        _fail(e)
    Console().print(f"wrote {out}/{suite}.json and {suite}.md in {res['wall_seconds'] / 60:.1f} min")


@app.command("dp-audit")
def dp_audit(
    config: Path = typer.Argument(..., help="YAML config with train.dp (or not) and canaries: {count, kind}"),
    fail_on: list[str] | None = FAIL_ON_OPTION,
    track: str | None = TRACK_OPTION,
    out: Path | None = OUT_OPTION,
    force: bool = FORCE_OPTION,
    explain: bool = EXPLAIN_OPTION,
    runs: int | None = typer.Option(
        None,
        "--runs",
        help="multi-run audit of the algorithm: 2R runs, canaries.count canaries per run, each by a coin",
    ),
    overrides: list[str] | None = SET_OPTION,
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:
    """DP audit: canaries in one training run (or R pairs of runs), epsilon lower bounds, a verdict with its power."""
    from . import api, progress
    from .report import console, outdir
    from .workflow.flow import Flow

    _logging(quiet, verbose)
    out = out or Path("miaudit-runs") / f"{config.stem}-dp"
    cfg, progress.SESSION["trained"] = None, 0  # what this audit trains: an interrupt reports it
    try:
        flow = Flow.of("dp-audit", fail_on, track)
        outdir.check(out, force)  # first, as for run (api.dp_audit holds it while the audit runs)
        flow.check(cfg := _config(config, overrides))
        results = api.dp_audit(cfg, runs=runs, out=out, force=force, say=_say if not quiet else lambda line: None)
    except MiauditError as e:
        _fail(e)
    except KeyboardInterrupt:
        _interrupted(cfg, out)
    if not quiet:
        console.answer_summary(results, out, explain or verbose)
    flow.finish(results, out, quiet)


@app.command("track")
def track_run(
    run_dir: Path = typer.Argument(..., help="a finished run's output folder (its results.json)"),
    track: str | None = typer.Option(
        None, "--track", metavar="URI", help="the MLflow tracking URI (default: its config's)"
    ),
    force: bool = typer.Option(False, "--force", "-f", help="log again a folder already logged"),
) -> None:
    """Log a finished run's folder to MLflow: one run, as the audit itself logs it with tracking: or --track."""
    from .workflow.flow import track_folder

    try:
        said = track_folder(run_dir, track, force)
    except MiauditError as e:
        _fail(e)
    Console().print(said, highlight=False, markup=False, soft_wrap=True)


app.command("infer-dataset")(infer_command)  # dataset_inference/command.py: typer and rich only at import


app.command("unlearn")(unlearn_command)  # unlearning/command.py: typer and rich only at import
app.command("report")(report_command)  # report/command.py: a finished run's reports again, from its files
app.command("compare")(compare_command)  # report/compare_command.py: two finished runs, from their files
app.command()(init)  # config_keys/commands.py: init, config, schema and attacks describe the keys
app.command("config")(show_config)
app.command()(schema)
app.command()(attacks)


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="miaudit")


if __name__ == "__main__":  # pragma: no cover
    main()
