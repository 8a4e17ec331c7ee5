"""The command line: a thin shell over the Python API.

    miaudit run [CONFIG] [--out DIR]   one audit (no CONFIG: the built-in default on digits)
    miaudit attacks                    the registered attacks, one line each

Bad input (config, data, attack requirements) exits with code 2 and a one-line
message naming the field; nothing is written.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from . import config as config_mod
from .attacks import AttackRequirementError, registry
from .data import DataError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Membership inference auditing.")
err = Console(stderr=True)
USER_ERRORS = (config_mod.ConfigError, DataError, AttackRequirementError)


def _fail(e: Exception) -> None:
    err.print(f"[bold red]error:[/bold red] {e}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


@app.command()
def run(config: Optional[Path] = typer.Argument(None, help="YAML config; omit for the built-in default audit"),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="output directory (default ./miaudit-runs/<config name>)")) -> None:
    """Run one audit and write results.json, report.md, roc.png and scores.csv."""
    from . import pipeline, report

    try:
        cfg = config_mod.load(config) if config else config_mod.default()
        out = out or Path("miaudit-runs") / (config.stem if config else "default")
        start = time.perf_counter()
        res = pipeline.run(cfg)
        results = report.write(res, out)
    except USER_ERRORS as e:
        _fail(e)
    table = Table(title=f"{results['dataset']}: target train/test accuracy "
                        f"{results['target']['train_accuracy']:.3f}/{results['target']['test_accuracy']:.3f}")
    for col in ("attack", "AUC", "TPR@0.1%", "TPR@1%", "TPR@5%", "attack s"):
        table.add_column(col, justify="right" if col != "attack" else "left")
    for a in results["attacks"]:
        t = a["tpr_at_fpr"]
        table.add_row(a["label"], f"{a['auc']:.3f}", *(f"{100 * t[k]:.2f}" for k in ("0.001", "0.01", "0.05")),
                      f"{a['seconds']['attack']:.2f}")
    Console().print(table)
    Console().print(f"wrote {out}/ in {time.perf_counter() - start:.0f} s")


@app.command()
def bench(suite: str = typer.Argument(..., help="suite name: smoke, quick, paper, ablations"),
          out: Path = typer.Option(Path("benchmarks/results"), "--out", "-o", help="folder for <suite>.json and .md"),
          dataset: Optional[list[str]] = typer.Option(None, "--dataset", "-d", help="only these data sets of the suite"),
          seed: Optional[list[int]] = typer.Option(None, "--seed", "-s", help="only these seeds")) -> None:
    """Run a benchmark suite and write its aggregated results."""
    from . import bench as bench_mod

    if suite not in bench_mod.SUITES:
        _fail(config_mod.ConfigError(f"suite: unknown suite {suite!r}; expected one of {sorted(bench_mod.SUITES)}"))
    try:
        res = bench_mod.run_suite(suite, out, datasets=dataset, seeds=seed, log=lambda m: err.print(m, highlight=False))
    except USER_ERRORS as e:
        _fail(e)
    Console().print(f"wrote {out}/{suite}.json and {suite}.md in {res['wall_seconds'] / 60:.1f} min")


@app.command()
def attacks() -> None:
    """List the registered attacks."""
    for info in registry.all_attacks():
        print(f"{info.name:<12} {info.summary}")


def main() -> None:  # pragma: no cover - console entry point
    app(prog_name="miaudit")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
