"""The report stage: every output file of a run, written atomically.

results.json (``records`` builds the typed ``miaudit.results.AuditReport`` once; every file below renders it),
report.md (``markdown``), report.html (``html``), roc.png
(``plots``), scores.csv and scores.parquet (``ranking``), at_risk.csv (``at_risk``). Everything is first written
into a temporary sibling folder and moved into place at the end (``outdir.publish``),
so a failure never leaves a half-written output directory.
"""

from __future__ import annotations

import csv
import shutil
import tempfile
from pathlib import Path

import numpy as np

from ..experiment.run import RunResult
from ..results import AuditReport
from . import at_risk, dp_section, html, outdir
from .leak_verdict import attack_kind
from .markdown import report_md
from .plots import roc_plot
from .ranking import risk_basis, slug
from .records import audit_report, results_json
from .scores import scores_frame

OUTPUT_FILES = outdir.OUTPUT_FILES

__all__ = [
    "OUTPUT_FILES",
    "attack_kind",
    "audit_report",
    "load_results",
    "results_json",
    "risk_basis",
    "scores_frame",
    "slug",
    "write",
    "write_dp",
]


def load_results(path: str | Path) -> AuditReport:
    """A results.json read back (``AuditReport.load``), a file of the previous format migrated with each attack's
    kind from the registry."""
    return AuditReport.load(path, kind_of=attack_kind)


def write(res: RunResult, out_dir: Path, results: AuditReport | None = None) -> AuditReport:
    """Write every output file atomically; return the report (``results``: the run's, already built)."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    results = results if results is not None else audit_report(res)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        results.write(tmp / "results.json")
        claims = at_risk.named(res)
        frame = scores_frame(res, claims)
        (tmp / "report.md").write_text(report_md(res, results, frame))
        if res.experiment.membership_known:  # no ROC without membership
            roc_plot(res, tmp / "roc.png")
        frame.write_csv(tmp / "scores.csv")
        frame.write_parquet(tmp / "scores.parquet")
        at_risk.flagged_table(res, claims[1]).write_csv(tmp / "at_risk.csv")
        html.write(res, results, frame, claims[1], tmp)
        outdir.publish(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


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
