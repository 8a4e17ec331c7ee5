"""A DP audit's part of report.md, report.html and the console, from results.json's typed ``dp_audit``
(``miaudit.results.DPAudit``, built by ``miaudit.dp``): the verdict, the claims, every bound with its power,
what each observer sees. The report renders the section; it never imports ``miaudit.dp``."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results import AuditReport, DPAudit

BOUND_HEADER = [
    "threat model",
    "canaries",
    "observer",
    "analysis",
    "epsilon lower bound",
    "max attainable",
    "correct / guesses",
    "Holm-adjusted p at the claim",
]


def _eps(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def verdict_lines(audit: DPAudit) -> list[str]:
    """The DP verdict (with a planted fault said in it), then the f-DP test with its assumption."""
    gdp = audit.gdp_test
    return [f"**DP verdict: {audit.verdict}**", "", *([gdp.statement, ""] if gdp else [])]


def section_md(audit: DPAudit) -> list[str]:
    """The report.md section: declared and accounted epsilon, the lower bound and how it was obtained, the
    verdict (a one-run or multi-run audit: ``one_run_md``)."""
    if audit.kind in ("one-run", "multi-run"):
        return one_run_md(audit)
    sel = audit.selection_records
    how = (
        f"threshold {audit.threshold:.4g} chosen on a seeded half of the records "
        f"({sel.members} members, {sel.nonmembers} non-members), evaluated on the other half: TPR {audit.tpr:.3f} "
        f"(lower end {audit.tpr_lower:.3f}), realized FPR {audit.realized_fpr:.4f} (upper end {audit.fpr_upper:.4f})"
        if audit.selection == "half" and sel is not None
        else audit.how or ""
    )
    return [
        "",
        f"## Differential privacy audit ({audit.kind})",
        "",
        f"- declared epsilon: {_eps(audit.declared_epsilon)}; accounted epsilon (Opacus): "
        f"{_eps(audit.accounted_epsilon)}; delta {audit.delta:g}",
        f"- empirical epsilon lower bound ({audit.attack}): {audit.epsilon_lb:.3f} at confidence "
        f"{audit.confidence:g}" + (f"; {how}" if how else ""),
        f"- **{audit.verdict}**",
        *([f"- this bound {audit.assumes}"] if audit.assumes is not None else []),
    ]


def claims_line(audit: DPAudit) -> str:
    """'declared epsilon 1.000; accounted RDP 0.998, PRV 0.910; delta 1e-05; confidence 0.95'."""
    accounted = ", ".join(f"{k.upper()} {v:.3f}" for k, v in (audit.accounted or {}).items()) or "-"
    return (
        f"declared epsilon {_eps(audit.declared_epsilon)}; accounted: {accounted}; "
        f"delta {audit.delta:g}; confidence {audit.confidence:g}"
    )


def bound_rows(audit: DPAudit) -> list[list[str]]:
    """The bounds table (one-run): one row per observer and analysis, the f-DP rows with their assumption, each
    binomial row with its Holm-adjusted p-value at the claim."""
    adjusted = {t.observer: t.holm_adjusted_p_value for t in audit.tests or []}
    rows = []
    for b in audit.bounds or []:
        binomial = b.analysis == "binomial"
        rows.append(
            [
                str(b.threat_model),
                f"{b.canaries} {b.canary_kind}",
                str(b.observer),
                "binomial" if binomial else "f-DP (assumes a Gaussian tradeoff curve (mu-GDP))",
                f"{b.epsilon_lower_bound:.3f}",
                f"{b.max_attainable:.3f}",
                f"{b.correct} / {b.guesses}",
                f"{adjusted[b.observer]:.2g}" if binomial and b.observer in adjusted else "-",
            ]
        )
    return rows


def one_run_md(audit: DPAudit) -> list[str]:
    """The report.md section of a one-run audit: the verdict, the claims, every bound with its power, what each
    observer sees (a multi-run audit: ``multi_run_md``)."""
    if audit.kind == "multi-run":
        return multi_run_md(audit)
    lines = ["", "## Differential privacy audit (one-run)", "", f"- **{audit.verdict}**"]
    if audit.gdp_test:
        lines.append(f"- {audit.gdp_test.statement}")
    lines += [f"- {claims_line(audit)}", f"- verdict: {audit.family.method if audit.family else '-'}"]
    if audit.training is not None:  # a user's DP training function (dp_training): whose code, what was seen
        t = audit.training
        lines += [
            f"- audited: your training function `{t.function}` (called {t.calls} times; the target on "
            f"{t.target_records} records, {t.canaries_inserted} of them canaries; references by {t.references_by})",
            f"- the audit saw {t.observed}; it could not see {t.not_observed}",
        ]
        lines += [f"- defect **{d.kind}** (seen directly, any claimed epsilon): {d.detail}" for d in t.defects]
    if audit.target_train_accuracy is not None and audit.target_test_accuracy is not None:
        lines.append(
            f"- model accuracy on its own records: train {audit.target_train_accuracy:.3f}, "
            f"test {audit.target_test_accuracy:.3f}"
        )
    lines += ["", "| " + " | ".join(BOUND_HEADER) + " |", "|" + "---|" * len(BOUND_HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in bound_rows(audit)]
    lines += ["", "What each observer can and cannot see:", ""]
    lines += [f"- {tm}: sees {o.sees}; blind to {o.blind_to}" for tm, o in (audit.observers or {}).items()]
    return lines


def multi_run_md(audit: DPAudit) -> list[str]:
    """The report.md section of a multi-run audit: the verdict, the claims, the threat model and how the runs were
    made (``how``), then every bound from the trained models (the first is the headline the verdict reads)."""
    lines = ["", "## Differential privacy audit (multi-run)", "", f"- **{audit.verdict}**"]
    lines += [f"- {claims_line(audit)}", f"- {audit.how}", ""]
    lines += ["| analysis | epsilon lower bound | max attainable | correct / guesses | runs (with the canary) |"]
    lines += ["|---|---|---|---|---|"]
    lines += [
        f"| {b.analysis}{' (headline)' if i == 0 else ''} | {b.epsilon_lower_bound:.3f} | "
        f"{b.max_attainable:.3f} | {b.correct} / {b.guesses} | {b.runs} ({'-' if b.included is None else b.included}) |"
        for i, b in enumerate(audit.bounds or [])
    ]
    return lines


def console_line(audit: DPAudit) -> str:
    """The console's line under the verdict: the kind, the bounds, the claims, the bound and its power."""
    power = "-" if audit.max_attainable is None else f"{audit.max_attainable:.3f}"
    return (
        f"{audit.kind} audit, {len(audit.bounds or [])} bounds; {claims_line(audit)}; epsilon lower bound "
        f"{audit.epsilon_lb:.3f} of at most {power} attainable ({audit.how})"
    )


@dataclass(frozen=True)
class HTMLContext:
    """The DP audit's variables of report.html's templates (``vars()`` of it is passed to ``render``)."""

    dp_head: list[str]  # the verdict lines on top
    dp_claims: str = ""  # the claims line
    dp_rows: list[list[str]] = field(default_factory=list)  # a one-run audit's bounds table
    dp_header: list[str] = field(default_factory=list)


def html_context(audit: DPAudit | None, head: list[str]) -> HTMLContext:
    """The DP audit's part of report.html: its verdict on top (``head``), its section (``dp_audit.html.j2``)."""
    if audit is None:
        return HTMLContext([])
    return HTMLContext(
        dp_head=head,
        dp_claims=claims_line(audit) if "accounted" in audit.model_fields_set else "",
        dp_rows=bound_rows(audit) if audit.kind == "one-run" else [],
        dp_header=list(BOUND_HEADER),
    )


def report_md(results: AuditReport, title: str) -> list[str]:
    """report.md of a DP audit without attacks (white-box only, or multi-run): its verdict and DP section."""
    assert results.dp_audit is not None
    lines = [f"# miaudit {title}: {results.dataset}", "", *verdict_lines(results.dp_audit)]
    lines += [f"- model {results.model}, seed {results.seed}"]
    return [*lines, *one_run_md(results.dp_audit)]
