"""report.html: one self-contained page (images as data: URIs, no script, no external file)
for a reviewer: the metrics table, the ROC, each attack's score distributions, the
non-members' p-value histograms, the most exposed records, the config and environment; rendered from results.json's
typed model and the per-record table alone (a record's thumbnail or text only where the data set is at hand).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import jinja2
import numpy as np
import yaml

from ..results import AttackRow, AuditReport
from . import at_risk, dp_section, sections
from .plots import png_uri, pvalue_histograms, score_histograms
from .ranking import basis_row, ranked_by, row_slug
from .table import ScoresTable

Preview = Callable[[int], tuple[str, str] | None]  # a record's ID -> ("image", data URI) or ("text", its text)

TOP_RECORDS = 20
LISTED_AT_RISK = 500  # flagged records listed in the page (all of them: at_risk.csv)


_env = jinja2.Environment(
    loader=jinja2.PackageLoader("miaudit", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _interval(ci, scale: float = 1.0, digits: int = 3) -> str:
    """' [lo, hi]' for a two-number interval, else nothing (intervals are optional in results.json)."""
    if isinstance(ci, list | tuple) and len(ci) == 2 and all(isinstance(v, int | float) for v in ci):
        return f" [{scale * ci[0]:.{digits}f}, {scale * ci[1]:.{digits}f}]"
    return ""


def metric_rows(attacks: Sequence[AttackRow], known: bool) -> list[dict]:
    """The metrics table's cells, from results.json; intervals shown where present (auc_ci, tpr_at_fpr_ci)."""
    rows = []
    for a in (a for a in attacks if not (known and a.is_ranking)):  # a risk ranking (GLS): its own section
        cells = _test_cells(a) if known else _ranking_cells(a)
        rows.append({"label": a.label, "refs": a.references, "cells": cells, "seconds": a.seconds})
    return rows


def _ranking_cells(a: AttackRow) -> list[str]:
    below = a.n_p_below or {}
    return [*(str(below.get(k, "-")) for k in ("0.01", "0.05")), ", ".join(map(str, (a.most_exposed or [])[:5]))]


def _test_cells(a: AttackRow) -> list[str]:
    tpr, tpr_ci, unreliable = a.tpr_at_fpr or {}, a.tpr_at_fpr_ci or {}, a.unreliable_fpr_levels or []
    cells = ["-" if a.auc is None else f"{a.auc:.3f}{_interval(a.auc_ci)}"]
    for k in sorted(tpr, key=float):  # the standard levels and min_fpr
        mark = " †" if k in unreliable else ""
        cells.append(f"{100 * tpr[k]:.2f}{_interval(tpr_ci.get(k), 100, 2)}{mark}")
    fa = a.fpr_at_alpha or {}
    cells.append(" / ".join(f"{100 * fa[k]['0.05']:.2f}" for k in ("raw", "calibrated") if k in fa) or "-")
    return cells


def exposed_records(
    results: AuditReport, frame: ScoresTable, named: str | None = None
) -> tuple[str, list[str], list[list[str]]]:
    """The most exposed records: ranked by the test that names the records at risk (``named``), as in report.md."""
    basis = basis_row(results, named)
    col, extra, why = ranked_by(basis, frame, named)
    shown = ("risk_rank", "record", "set", "position", "member", "label", "at_risk")
    columns = [c for c in frame.columns if c in shown]
    columns += [col, *extra] + ([f"{row_slug(basis)}.score"] if not col.endswith(".score") else [])
    columns = [c for c in dict.fromkeys(columns) if c in frame.columns]
    top = frame.head(TOP_RECORDS)
    cells = [[_cell(row[c]) for c in columns] for row in top.rows(columns)]
    return basis.label + why, columns, cells


def flagged_records(results: AuditReport, frame: ScoresTable, preview: Preview | None) -> tuple[list[str], list[dict]]:
    """The records named at risk (``at_risk.flagged_table``), smallest q first: their cells and a preview (thumbnail
    or text) where the data set is at hand and has one."""
    table = at_risk.flagged_table(results, frame).head(LISTED_AT_RISK)
    columns = [c for c in table.columns if c not in ("procedure",)]
    rows = []
    for row in table.rows(columns):
        record = row["record"]
        assert isinstance(record, int), "scores.csv's record column holds ints"
        shown = preview(record) if preview is not None else None
        rows.append({"cells": [_cell(row[c]) for c in columns], "preview": shown})
    return columns, rows


def _tpr_headers(results: AuditReport) -> list[str]:
    return [f"TPR@{100 * float(k):g}%" for k in sorted(results.attacks[0].tpr_at_fpr or {}, key=float)]


def _cell(v: object) -> str:
    """Record IDs, ranks and labels as the integers they are (a record is found by its ID); numbers to 3 digits."""
    if isinstance(v, str | int | np.integer):
        return str(v)
    return f"{v:.3g}"


def render(
    results: AuditReport, frame: ScoresTable, roc_png: Path | None = None, preview: Preview | None = None
) -> str:
    known = results.membership_known
    pvalue_uri, pvalue_kinds = pvalue_histograms(results, frame)
    named = results.records_at_risk.attack if results.records_at_risk else None
    basis, columns, records = exposed_records(results, frame, named)
    flagged_columns, flagged = flagged_records(results, frame, preview)
    return _env.get_template("report.html.j2").render(
        r=results,
        known=known,
        header=["AUC", *_tpr_headers(results), "FPR at p<0.05 (raw / calibrated)"]
        if known
        else ["raw p < 0.01", "raw p < 0.05", "most exposed records"],
        rows=metric_rows(results.attacks, known),
        unreliable=sorted({lv for a in results.attacks for lv in a.unreliable_fpr_levels or []}),
        roc=png_uri(roc_png) if roc_png is not None and roc_png.is_file() else None,
        scores=score_histograms(results, frame),
        pvalues=pvalue_uri,
        pvalue_kinds=pvalue_kinds,
        basis=basis,
        columns=columns,
        records=records,
        n_records=len(frame),
        config=yaml.safe_dump(results.config, sort_keys=False, default_flow_style=None),
        environment=results.environment.model_dump(exclude_unset=True),
        gls_purpose=sections.GLS_PURPOSE,
        gls_validation=sections.GLS_VALIDATION,
        gls_top=sections.gls_top(frame),
        ppv_cell=sections.ppv_cell,
        risk_note=sections.records_at_risk_note(results),
        at_risk_means=sections.AT_RISK_MEANS.format(fdr=results.records_at_risk.fdr) if results.records_at_risk else "",
        target_fit=sections.target_fit,
        ppv_undefined=sections.PPV_UNDEFINED,
        flagged_columns=flagged_columns,
        flagged=flagged,
        thumbnail_pixels=at_risk.THUMBNAIL_PIXELS,
        worst_case_note=sections.WORST_CASE_NOTE.format(
            fpr=100 * results.worst_case.fpr_level, by=results.worst_case.vulnerability
        )
        if results.worst_case
        else "",
        worst_case_header=sections.worst_case_header,
        worst_case_cell=sections.worst_case_cell,
        audited=sections.audited_records(results) if known else "",
        **vars(dp_context(results)),
    )


def render_dp(results: AuditReport, title: str) -> str:
    """report.html of a DP audit without attacks (white-box only, or multi-run): its verdict and DP section."""
    config = yaml.safe_dump(results.config, sort_keys=False, default_flow_style=None)
    return _env.get_template("dp_report.html.j2").render(
        r=results, title=title, config=config, **vars(dp_context(results))
    )


def dp_context(results: AuditReport) -> dp_section.HTMLContext:
    """The DP audit's part of report.html: its verdict on top, its section (``dp_audit.html.j2``)."""
    head = [line.replace("**", "") for line in sections.verdict_lines(results) if line] if results.dp_audited else []
    return dp_section.html_context(results.dp_audit, head)


def write(results: AuditReport, frame: ScoresTable, out_dir: Path, preview: Preview | None = None) -> Path:
    """Write ``out_dir/report.html`` (embedding ``out_dir/roc.png`` when it is there)."""
    path = Path(out_dir) / "report.html"
    path.write_text(render(results, frame, Path(out_dir) / "roc.png", preview), encoding="utf-8")
    return path
