"""The command line: a thin shell over the Python API.

    miaudit run [CONFIG] [--out DIR] [--force]   one audit (no CONFIG: the built-in default on digits)
    miaudit attacks                              the registered attacks, one line each

Bad input (config, data, attack requirements) exits with code 2 and a one-line
message naming the field; nothing is written.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from . import config as config_mod
from . import outdir
from .attacks import registry
from .errors import MiauditError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Membership inference auditing.")
err = Console(stderr=True)


def _fail(e: Exception) -> None:
    err.print(f"[bold red]error:[/bold red] {e}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=2)


@app.command()
def run(
    config: Path | None = typer.Argument(None, help="YAML config; omit for the built-in default audit"),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="output directory (default ./miaudit-runs/<config name>)"
    ),
    force: bool = typer.Option(
        False, "--force", "-f", help="write into a non-empty --out, replacing miaudit's own files there"
    ),
) -> None:
    """Run one audit and write results.json, report.md, report.html, roc.png, scores.csv and scores.parquet."""
    from . import api

    try:
        cfg = config_mod.load(config) if config else config_mod.default()
        out = out or Path("miaudit-runs") / (config.stem if config else "default")
        outdir.check(out, force)  # before any data is loaded or model trained
        start = time.perf_counter()
        results = api.run(cfg).report(out, force=force)  # checked again: another run may have written there since
    except MiauditError as e:
        _fail(e)
    for note in results.get("notes", []):  # first: what the numbers below do not promise
        Console().print(f"[bold yellow]note:[/bold yellow] {note}", highlight=False)
    Console().print(_metrics_table(results) if results["membership"] == "known" else _ranking_table(results))
    Console().print(f"wrote {out}/ in {time.perf_counter() - start:.0f} s")


def _metrics_table(results: dict) -> Table:
    t = results["target"]
    table = Table(
        title=f"{results['dataset']}: target train/test accuracy {t['train_accuracy']:.3f}/{t['test_accuracy']:.3f}"
    )
    for col in ("attack", "AUC", "TPR@0.1%", "TPR@1%", "TPR@5%", "attack s"):
        table.add_column(col, justify="right" if col != "attack" else "left")
    for a in results["attacks"]:
        tpr = a["tpr_at_fpr"]
        table.add_row(
            a["label"],
            f"{a['auc']:.3f}",
            *(f"{100 * tpr[k]:.2f}" for k in ("0.001", "0.01", "0.05")),
            f"{a['seconds']['attack']:.2f}",
        )
    return table


def _ranking_table(results: dict) -> Table:
    """Queries of unknown membership: no ROC, the records each attack puts most at risk."""
    table = Table(title=f"{results['dataset']}: {results['n_queries']} queries, membership unknown (no ROC)")
    for col in ("attack", "p < 0.01", "p < 0.05", "most exposed records", "attack s"):
        table.add_column(col, justify="left" if col in ("attack", "most exposed records") else "right")
    for a in results["attacks"]:
        flagged = [str(a["n_p_below"][k]) if "n_p_below" in a else "-" for k in ("0.01", "0.05")]
        table.add_row(a["label"], *flagged, ", ".join(map(str, a["most_exposed"][:5])), f"{a['seconds']['attack']:.2f}")
    return table


@app.command()
def bench(
    suite: str = typer.Argument(..., help="suite name: smoke, quick, paper, ablations, frontier"),
    out: Path = typer.Option(Path("benchmarks/results"), "--out", "-o", help="folder for <suite>.json and .md"),
    dataset: list[str] | None = typer.Option(None, "--dataset", "-d", help="only these data sets of the suite"),
    seed: list[int] | None = typer.Option(None, "--seed", "-s", help="only these seeds"),
) -> None:
    """Run a benchmark suite and write its aggregated results."""
    from . import bench as bench_mod

    if suite not in bench_mod.SUITES:
        _fail(config_mod.ConfigError(f"suite: unknown suite {suite!r}; expected one of {sorted(bench_mod.SUITES)}"))
    try:
        res = bench_mod.run_suite(suite, out, datasets=dataset, seeds=seed, log=lambda m: err.print(m, highlight=False))
    except MiauditError as e:
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
