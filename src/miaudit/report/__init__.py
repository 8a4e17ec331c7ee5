"""The report stage: every output file of a run, written atomically, rendered from the typed results alone.

A membership audit's decisions are made once before anything is written (``miaudit.membership.decide``: the verdict,
the records at risk and why none, the worst case, PPV, the headline attack of ``auto``): results.json (the typed
``miaudit.results.AuditReport``) and the per-record table, scores.csv and scores.parquet. ``write_decided`` writes
those two and renders every other file from them alone: report.md (``markdown``), report.html (``html``), roc.png
(``plots``), at_risk.csv (``at_risk``); so ``rebuild`` (``miaudit report DIR``) renders them again from a finished
run's files, with no model, as it does the other audits' reports (``dp_section``, ``unlearning``, ``inference``).
Everything is first written into a temporary sibling folder and moved into place at the end (``outdir.publish``),
so a failure never leaves a half-written output directory.
"""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..results import AuditReport
from . import at_risk, dp_section, html, inference, outdir, unlearning
from .markdown import report_md
from .plots import roc_plot
from .ranking import attack_kind
from .table import ScoresTable

OUTPUT_FILES = outdir.OUTPUT_FILES

__all__ = [
    "OUTPUT_FILES",
    "attack_kind",
    "rebuild",
    "load_results",
    "write_decided",
    "write_dp",
    "write_texts",
]


def load_results(path: str | Path) -> AuditReport:
    """A results.json read back (``AuditReport.load``), a file of the previous format migrated with each attack's
    kind from the registry."""
    return AuditReport.load(path, kind_of=attack_kind)


def write_decided(
    results: AuditReport, frame: ScoresTable, out_dir: Path, preview: html.Preview | None = None
) -> AuditReport:
    """Write every output file of a decided membership audit atomically (``miaudit.membership.decide``): results.json
    and the per-record table as decided, the others rendered from those two alone; return the report."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        results.write(tmp / "results.json")
        frame.write_csv(tmp / "scores.csv")
        frame.write_parquet(tmp / "scores.parquet")
        at_risk.flagged_table(results, frame).write_csv(tmp / "at_risk.csv")
        _render(results, frame, tmp, preview)
        outdir.publish(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def _render(results: AuditReport, frame: ScoresTable, out_dir: Path, preview: html.Preview | None = None) -> None:
    """report.md, roc.png (membership known) and report.html of a membership audit, from results.json's model and
    the per-record table alone."""
    (out_dir / "report.md").write_text(report_md(results, frame))
    if results.membership_known:  # no ROC without membership
        roc_plot(results, frame, out_dir / "roc.png")
    html.write(results, frame, out_dir, preview)


REBUILT = ("report.md", "report.html", "roc.png")


def rebuild(run_dir: Path) -> list[str]:
    """``miaudit report DIR``: a finished run's report.md, report.html and (membership known) roc.png rendered again
    from its files alone, no model, no cache, no data set (report.html then shows no record thumbnails): a
    membership audit's from results.json and scores.parquet (else scores.csv); a dataset-inference run's, an
    unlearning audit's and a DP audit's without attacks from results.json. Each file replaced atomically; returns
    the files written."""
    run_dir = Path(run_dir)
    results = load_results(run_dir / "results.json")
    if results.dataset_inference is not None:
        return write_texts(
            run_dir, {"report.md": inference.report_md(results), "report.html": inference.render_html(results)}
        )
    if results.dp_audit is not None and not results.attacks:  # white-box or multi-run (``dp.output``)
        title = "multi-run DP audit" if results.dp_audit.kind == "multi-run" else "white-box DP audit"
        md = "\n".join(dp_section.report_md(results, title)) + "\n"
        return write_texts(run_dir, {"report.md": md, "report.html": html.render_dp(results, title)})
    if results.unlearning is not None:
        return write_texts(
            run_dir, {"report.md": unlearning.markdown(results), "report.html": unlearning.html(results)}
        )
    if not results.attacks:
        raise DataError(f"{run_dir}: results.json holds no attack and no section miaudit report renders")
    found = [run_dir / name for name in ("scores.parquet", "scores.csv") if (run_dir / name).is_file()]
    if not found:
        raise DataError(f"{run_dir}: no scores.parquet or scores.csv beside results.json (the per-record table)")
    frame = ScoresTable.read(found[0])
    tmp = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.", dir=run_dir.parent))
    try:
        _render(results, frame, tmp)
        written = [name for name in REBUILT if (tmp / name).exists()]
        for name in written:
            os.replace(tmp / name, run_dir / name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return written


def write_texts(run_dir: Path, texts: dict[str, str]) -> list[str]:
    """Write each text file into ``run_dir`` atomically (beside it, then renamed into place); the files' names."""
    for name, text in texts.items():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=run_dir)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, run_dir / name)
    return list(texts)


def write_dp(results: AuditReport, columns: dict[str, np.ndarray], title: str, out_dir: Path) -> AuditReport:
    """A DP audit without attacks (white-box only, or multi-run; ``dp.output``): results.json, report.md (its
    verdict and DP section), report.html and scores.csv (``columns``: one row per canary or trained model),
    atomically."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        results.write(tmp / "results.json")
        (tmp / "report.md").write_text("\n".join(dp_section.report_md(results, title)) + "\n")
        (tmp / "report.html").write_text(html.render_dp(results, title), encoding="utf-8")
        _write_columns(columns, tmp / "scores.csv")
        outdir.publish(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def _write_columns(columns: dict[str, np.ndarray], path: Path) -> None:
    """A small table as CSV: integers as they are, floats to 8 significant digits, NaN as an empty cell."""

    def cell(v: object) -> str:
        if isinstance(v, float | np.floating):
            return "" if np.isnan(v) else f"{v:.8g}"
        return str(v)

    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(list(columns))
        writer.writerows([cell(v) for v in row] for row in zip(*(np.asarray(c).tolist() for c in columns.values())))
