"""report.md: the metrics table with intervals, operating points and the most exposed records, rendered from
results.json's typed model and the per-record table alone (what ``miaudit report DIR`` reads back)."""

from __future__ import annotations

from ..lm.canaries import exposure_md
from ..results import AttackRow, AuditReport, BlindBaseline
from ..stats import metrics
from . import dp_section, sections
from .ranking import basis_row, ranked_by
from .table import ScoresTable


def exposed_records_md(results: AuditReport, frame: ScoresTable, named: str | None = None, top: int = 10) -> list[str]:
    """The report section listing the most exposed records: ranked by the test that names the records at risk
    (``named``: ``records_at_risk.attack``), on the p-values that named them."""
    basis = basis_row(results, named)
    col, extra, why = ranked_by(basis, frame, named)
    extra += [c for c in sections.ranking_columns(frame) if c != col]
    known = [c for c in ("label", "member", "at_risk") if c in frame.columns]
    lines = [
        "",
        f"## Most exposed records (ranked by {basis.label}: "
        f"{'smallest p-value' if 'p_value' in col else 'highest score'}{why})",
        "",
        "| rank | record | " + " | ".join([*known, col, *extra]) + " |",
        "|---|---|" + "---|" * (len(known) + 1 + len(extra)),
    ]
    for row in frame.head(top).rows():
        vals = " | ".join([*(str(row[c]) for c in known), *(f"{row[c]:.3g}" for c in [col, *extra])])
        lines.append(f"| {row['risk_rank']} | {row['record']} | {vals} |")
    lines.append(f"\nThe full ranking of all {len(frame)} records is `scores.csv` (column `risk_rank`).")
    lines += sections.ties_note(frame.head(top), col)
    return lines


def _named(results: AuditReport) -> str | None:
    """The attack the records at risk are named by (it ranks the records)."""
    return results.records_at_risk.attack if results.records_at_risk else None


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def _with_ci(x: float, ci: list[float] | list[int | float] | None, scale: float = 100.0, digits: int = 1) -> str:
    """'13.4 [11.4, 15.7]': a number and its 95% interval (percent by default)."""
    if ci is None:
        return f"{scale * x:.{digits}f}"
    return f"{scale * x:.{digits}f} [{scale * ci[0]:.{digits}f}, {scale * ci[1]:.{digits}f}]"


def _level(key: str) -> str:
    return f"{100 * float(key):g}%"


def _threshold(t: float | None) -> str:
    return "-" if t is None else f"{t:.4g}"


def _levels(results: AuditReport) -> list[str]:
    """The FPR levels of the metrics (the standard ones and min_fpr), as the first row has them."""
    return list(results.attacks[0].tpr_at_fpr or {})


def _operating_points_md(results: AuditReport) -> list[str]:
    """Per attack and FPR level: the threshold used and the FPR it realizes, with its interval."""
    levels = _levels(results)
    lines = sections.table_section(
        "Operating points",
        "A record is called a member when its score is at or above the threshold (the highest threshold "
        "reaching the table's TPR; '-': none flags a record without exceeding the FPR level). Realized FPR "
        "in percent, with its exact 95% interval.",
        ["attack", *(f"{what} @{_level(k)}" for k in levels for what in ("threshold", "realized FPR"))],
    )
    for a in results.tests:
        threshold, fpr, fpr_ci = a.threshold or {}, a.realized_fpr or {}, a.realized_fpr_ci or {}
        cells = [f"{_threshold(threshold[k])} | {_with_ci(fpr[k], fpr_ci.get(k), digits=2)}" for k in levels]
        lines.append(f"| {a.label} | " + " | ".join(cells) + " |")
    return lines


def _nan_note(results: AuditReport) -> list[str]:
    """Records an attack could not score: ranked least significant (p = 1), and said so."""
    counted = [f"{a.label} {a.n_nan_scores}" for a in results.attacks if a.n_nan_scores]
    if not counted:
        return []
    return ["", f"NaN scores (ranked last, p = 1): {', '.join(counted)} of {results.n_queries} records."]


def _ranking_table_md(results: AuditReport) -> list[str]:
    lines = [
        "| attack | refs | records at risk (FDR-controlled) | records with raw p < 0.01 (not FDR-controlled) "
        "| raw p < 0.05 | most exposed records | reference training s | attack s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    by_attack = results.records_at_risk.by_attack if results.records_at_risk else {}
    for a in results.attacks:
        flagged = [str(a.n_p_below[k]) if a.n_p_below is not None else "-" for k in ("0.01", "0.05")]
        counted = by_attack[a.label].flagged_count if a.label in by_attack else "-"
        lines.append(
            f"| {a.label} | {a.references} | {counted} | {' | '.join(flagged)} | "
            f"{', '.join(map(str, (a.most_exposed or [])[:5]))} | {a.seconds.reference_training:.1f} | "
            f"{a.seconds.attack:.2f} |"
        )
    return ["", *lines]


def report_md(results: AuditReport, frame: ScoresTable) -> str:
    t = results.target
    known = results.membership_known
    audited = sections.audited_records(results) if known else f"{results.n_queries} queries of unknown membership"
    accuracies = sections.target_fit(t)
    lines = [
        f"# miaudit report: {results.dataset}",
        "",
        *sections.verdict_lines(results),
        *(f"**Note: {note}.**\n" for note in results.notes or []),
        *sections.choice_lines(results),
        f"- records: {results.n_records} ({audited}, "
        f"{results.n_population} population, {results.n_validation} validation)",
        f"- target {results.model} ({t.source}): {accuracies}",
        f"- reference models ({results.reference_model}, {results.mode}): {results.references}, "
        f"trained by {results.reference_training}"
        if results.references
        else "- reference models: none",
        *([f"- {results.reference_budget.sentence()}"] if results.reference_budget else []),
        f"- seed {results.seed}, miaudit {results.miaudit_version}",
    ]
    if not known:
        lines += [*_ranking_table_md(results), *_nan_note(results), *sections.records_at_risk_md(results)]
        lines += exposed_records_md(results, frame, _named(results))
        return "\n".join(lines) + "\n"
    levels = sorted(_levels(results), key=float)  # the standard ones and min_fpr
    lines += [
        "",
        f"| attack | refs | AUC | {' | '.join(f'TPR@{_level(k)}' for k in levels)} | FPR at p<0.05 (raw / calibrated) "
        "| reference training s | attack s |",
        "|---|---|---|" + "---|" * len(levels) + "---|---|---|",
    ]
    for a in results.tests:  # a risk ranking (GLS): its own section
        lines.append(_test_row(a, levels))
    lines += _blind_row(results.blind_baseline) if results.blind_baseline is not None else []
    unreliable = sorted({lv for a in results.attacks for lv in a.unreliable_fpr_levels or []})
    if unreliable and results.n_nonmembers:
        lines += [
            "",
            f"† unreliable: with {results.n_nonmembers} non-members, FPR levels below "
            f"{10 / results.n_nonmembers:.4f} (10/n) rest on fewer than 10 false positives "
            f"({', '.join(unreliable)}).",
        ]
    lines += [
        "",
        "TPR and FPR in percent. [brackets]: 95% intervals, exact (Clopper-Pearson) for TPR, bootstrap "
        f"({metrics.BOOTSTRAP_RESAMPLES} stratified resamples, seed {metrics.BOOTSTRAP_SEED}) for AUC. "
        "Scores of every record: `scores.csv`; ROC: `roc.png`.",
    ]
    lines += _nan_note(results)
    if results.dp_audit is not None:
        lines += dp_section.section_md(results.dp_audit)
    lines += sections.records_at_risk_md(results) + sections.worst_case_md(results)
    lines += sections.ppv_md(results) + sections.deployable_md(results)
    lines += (
        _operating_points_md(results) + exposed_records_md(results, frame, _named(results)) + sections.gls_md(frame)
    )
    if results.canary_exposure is not None:
        lines += exposure_md(results.canary_exposure)
    return "\n".join(lines) + "\n"


def _test_row(a: AttackRow, levels: list[str]) -> str:
    """A membership test's row of the metrics table: AUC, TPR at each level, FPR at p < 0.05, seconds."""
    tpr_ci, unreliable = a.tpr_at_fpr_ci or {}, a.unreliable_fpr_levels or []
    tpr = {k: _with_ci(v, tpr_ci.get(k)) + (" †" if k in unreliable else "") for k, v in (a.tpr_at_fpr or {}).items()}
    fa = a.fpr_at_alpha or {}
    fpr05 = " / ".join(_pct(fa[k]["0.05"]) for k in ("raw", "calibrated") if k in fa) or "-"
    auc = "-" if a.auc is None else _with_ci(a.auc, a.auc_ci, 1, 3)
    return (
        f"| {a.label} | {a.references} | {auc} | {' | '.join(tpr[k] for k in levels)} | {fpr05} "
        f"| {a.seconds.reference_training:.1f} | {a.seconds.attack:.2f} |"
    )


def _blind_row(b: BlindBaseline) -> list[str]:
    """The blind baseline (a text-only classifier, docs/lm-audits.md) as a row under the attacks, and what it is."""
    tpr = {k: _with_ci(v, (b.tpr_at_fpr_ci or {}).get(k)) for k, v in (b.tpr_at_fpr or {}).items()}
    auc = "-" if b.auc is None else _with_ci(b.auc, b.auc_ci, 1, 3)
    return [
        f"| blind baseline (text only) | - | {auc} | {tpr['0.001']} | {tpr['0.01']} | {tpr['0.05']} | - | - | - |",
        "",
        f"Blind baseline: {b.method}; it never sees the model. Near or above the attacks, it says the "
        "members and non-members differ by their text: the split, not the model, is then detected.",
    ]
