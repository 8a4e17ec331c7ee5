"""The report sections that answer the user's question, from the typed results.json (``miaudit.results``):
the verdict (heading report.md, report.html and the console), the records at risk under FDR control, precision
at member priors, and GLS as a risk ranking rather than a row of the attack table."""

from __future__ import annotations

import re

import numpy as np

from ..attacks import registry
from ..results import AuditReport, PPVCell, Target, WorstCell
from . import dp_section
from .table import ScoresTable

GLS_VALIDATION = (
    "Validated against per-record vulnerability: Spearman +0.39 [+0.34, +0.45] with the online-LiRA score of "
    "each training record on location (32 shadow models; `benchmarks/gls/gls_validation.md`), about the "
    "loss's +0.36; its top 5% hold 14% of LiRA's top 5% (chance: 5%)."
)
GLS_PURPOSE = (
    "GLS (the generalized leverage score of the target's last layer) ranks records by exposure from the target "
    "alone, without reference models. It is a risk ranking, not a membership test: its AUC as a test says nothing "
    "(members have low leverage once fitted), so it is kept out of the attack table and the verdict. Use it to "
    "choose which records to review or protect first."
)


def table_section(title: str, note: str, header: list[str]) -> list[str]:
    """A report.md section: its title, what it shows, and the head of its table."""
    return ["", f"## {title}", "", note, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]


def ranking_columns(frame: ScoresTable) -> list[str]:
    """The score columns of the risk rankings' rows in the per-record table."""
    names = tuple(registry.rankings())
    return [c for c in frame.columns if names and c.startswith(names) and c.endswith(".score")]


def verdict_lines(results: AuditReport) -> list[str]:
    """The verdict sentence: the first thing each report says. A DP audit's is its DP verdict; its membership
    verdict follows, about the canaries."""
    v = results.verdict
    if results.dp_audit is not None and results.dp_audited:
        lines = dp_section.verdict_lines(results.dp_audit)
        return lines + ([f"Canaries: {canary_words(v.statement)}{dp_permits(results)}", ""] if v else [])
    return [f"**Verdict: {v.statement}**", ""] if v else []


def dp_permits(results: AuditReport) -> str:
    """Beside a canary leak that does not violate the claim: the sentence that DP at that epsilon permits it."""
    v, dp = results.verdict, results.dp_audit
    if v is None or not v.leaks or dp is None or dp.violated:
        return ""
    eps = dp.compared_with.epsilon if dp.compared_with is not None else dp.declared_epsilon
    at = f" at epsilon {eps:.3g}" if eps is not None else ""
    return (
        f" This is no violation: DP{at} bounds how much more often a canary is identified when included than when "
        "left out (by at most a factor e^epsilon, plus delta), it does not forbid every leak; a leak this size is "
        f"one DP{at} permits."
    )


def canary_words(text: str) -> str:
    """A membership sentence about canaries: members are the included canaries, non-members the left-out ones."""
    text = re.sub(r"\bnon-members\b", "left-out canaries", text)
    return re.sub(r"\bmembers\b", "included canaries", text)


def audited_records(results: AuditReport) -> str:
    """'90 members, 110 non-members', or in a DP audit '90 canaries included, 110 canaries left out'."""
    if results.dp_audited:
        return f"{results.n_members} canaries included, {results.n_nonmembers} canaries left out"
    return f"{results.n_members} members, {results.n_nonmembers} non-members"


def choice_lines(results: AuditReport, table: bool = True) -> list[str]:
    """Why these attacks ran, when ``attacks: auto`` chose them; with ``table`` (report.md) every candidate's
    pseudo-target estimate and why it ran or not, else (the terminal) one line of the estimates."""
    choice = results.attack_choice
    if not choice:
        return []
    lines = [f"Attacks: auto, {choice.why}.", ""]
    if not choice.candidates or choice.level is None:
        return lines
    level = str(choice.level)
    if not table:
        each = ", ".join(f"{c.name} {100 * c.pseudo_target_tpr[level]:.1f}" for c in choice.candidates)
        return [
            *lines[:1],
            f"Pseudo-target TPR@{100 * choice.level:g}%: {each}; ran {', '.join(choice.chosen or [])}.",
            "",
        ]
    lines += [
        f"Each candidate on {choice.pseudo_targets} references as pseudo-targets ({choice.pseudo_members} "
        f"members pooled, {choice.references_per_pseudo_target} references each; no target membership read):",
        "",
        f"| candidate | pseudo-target TPR@{100 * choice.level:g}% [95% interval] | per pseudo-target "
        "| run or left out, and why |",
        "|---|---|---|---|",
    ]
    for c in choice.candidates:
        lo, hi = c.pseudo_target_tpr_ci[level]
        each = ", ".join(f"{100 * t:.1f}" for t in c.per_pseudo_target)
        lines.append(
            f"| {c.name} | {100 * c.pseudo_target_tpr[level]:.2f} [{100 * lo:.1f}, {100 * hi:.1f}] | {each} | {c.why} |"
        )
    lines.append("")
    return lines


def records_at_risk_note(results: AuditReport) -> str:
    """The records-at-risk sentence, in canary words in a DP audit (its queries are canaries)."""
    note = results.records_at_risk.note if results.records_at_risk else ""
    return canary_words(note) if results.dp_audited else note


AT_RISK_MEANS = (
    "What a flag means for one record: the attack finds the target's outputs on it unusual enough to call it a "
    "member, and the procedure keeps the expected share of false flags among all the flagged records at most "
    "{fdr:g}. It is not proof that this record was trained on (some flags are false, which ones is unknown), and "
    "a record not flagged is not shown safe: it may leak below what this audit can detect."
)


def records_at_risk_md(results: AuditReport) -> list[str]:
    r = results.records_at_risk
    if not r or r.count is None:
        return []
    lines = ["", f"## Records at risk (FDR {r.fdr:g})", "", r.note + ".", "", AT_RISK_MEANS.format(fdr=r.fdr), ""]
    if r.attack_rule:
        lines += [f"The attack that names them, {r.attack}, is {r.attack_rule}.", ""]
    lines += [
        f"Procedure: {r.assumes}. P-values: {r.p_values}. The records: at_risk.csv (and the column at_risk "
        f"of scores.csv); in expectation at most {r.expected_false_discoveries_at_most or 0:.2g} of them are false "
        "discoveries.",
        "",
        "| attack | records at q <= FDR | BH on its own p-values | procedure | p-values | queries tested "
        "| at the p-value floor | needed there |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, a in r.by_attack.items():
        lines.append(
            f"| {label} | {a.flagged_count} | {_or_dash(a.bh_count)} | {a.procedure} | {a.basis or '-'} | "
            f"{_or_dash(a.tested)} | {_or_dash(a.at_floor)} | {_or_dash(a.needed_at_floor)} |"
        )
    return [canary_words(line) for line in lines] if results.dp_audited else lines


def _or_dash(x: object) -> str:
    return "-" if x is None else str(x)


def target_fit(target: Target) -> str:
    """'train accuracy 0.641, test accuracy 0.563', or an LM's 'train loss 7.735 (perplexity 2287.8), ...'."""
    if target.train_perplexity is not None:
        parts = (
            ("train", target.train_loss, target.train_perplexity),
            ("test", target.test_loss, target.test_perplexity),
        )
        return ", ".join(
            f"{part} loss {loss:.3f} (perplexity {perplexity:.1f})"
            for part, loss, perplexity in parts
            if loss is not None and perplexity is not None
        )
    return ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in target.fit() if k.endswith("accuracy"))


PPV_UNDEFINED = "undefined: no non-member flagged at that level, so no point estimate (the interval still holds)"


def ppv_cell(cell: PPVCell) -> str:
    """'12.5 [3.1, 40.2]', or 'undefined [lo, hi]' where no non-member is flagged (no point estimate)."""
    lo, hi = cell.ci or (0.0, 1.0)
    point = "undefined" if cell.ppv is None else f"{100 * cell.ppv:.1f}"
    return f"{point} [{100 * lo:.1f}, {100 * hi:.1f}]"


WORST_CASE_NOTE = (
    "TPR in percent [95% interval] at {fpr:g}% FPR, the attack table's threshold (so 'all members' is the table's "
    "TPR at {fpr:g}% FPR), on the members among the records {by} ranks most exposed (no membership used to rank "
    "them; Aerni et al. 2024): an average can hide the records that leak most."
)


def worst_case_md(results: AuditReport) -> list[str]:
    w = results.worst_case
    if not w or not w.by_attack:  # a reference-free GLS-only audit has no membership test to show
        return []
    groups = list(next(iter(w.by_attack.values())))
    lines = table_section(
        "The most vulnerable records beside the average",
        WORST_CASE_NOTE.format(fpr=100 * w.fpr_level, by=w.vulnerability),
        ["attack", *(worst_case_header(g) for g in groups)],
    )
    for label, rows in w.by_attack.items():
        lines.append(f"| {label} | " + " | ".join(worst_case_cell(rows[g]) for g in groups) + " |")
    return lines


def worst_case_header(group: str) -> str:
    return "all members" if group == "average" else f"members in the top {100 * float(group[4:]):g}%"


def worst_case_cell(cell: WorstCell) -> str:
    if cell.tpr is None or cell.ci is None:
        return "- (no members)"
    return f"{_ci(cell.tpr, cell.ci)} (n={cell.members})"


def ppv_md(results: AuditReport) -> list[str]:
    rows = [a for a in results.attacks if a.ppv is not None]
    if not rows or rows[0].ppv is None:
        return []
    priors = list(rows[0].ppv)
    lines = [
        "",
        "## Precision at realistic member priors",
        "",
        "PPV in percent at 1% FPR (95% interval): of the records an attack calls members, the share that are, "
        f"when members are this share of the candidates (prior); {PPV_UNDEFINED}. Every FPR level: results.json "
        "`ppv`.",
        "",
        "| attack | " + " | ".join(f"prior {100 * float(p.removeprefix('prior_')):g}%" for p in priors) + " |",
        "|---|" + "---|" * len(priors),
    ]
    lines += [f"| {a.label} | " + " | ".join(ppv_cell(a.ppv[p]["0.01"]) for p in priors) + " |" for a in rows if a.ppv]
    return lines


def gls_top(frame: ScoresTable, top: int = 10) -> tuple[list[str], list[list[str]]]:
    """The records GLS ranks most exposed: (columns, rows of cells); no columns when GLS did not run."""
    col = next(iter(ranking_columns(frame)), None)
    if col is None:
        return [], []
    ranked = frame.sorted_by(col, descending=True).head(top)
    known = [c for c in ("member", "label") if c in frame.columns]
    rows = [[str(row["record"]), *(str(row[c]) for c in known), f"{row[col]:.3g}"] for row in ranked.rows()]
    return ["record", *known, "GLS"], rows


def gls_md(frame: ScoresTable, top: int = 10) -> list[str]:
    columns, rows = gls_top(frame, top)
    if not columns:
        return []
    lines = ["", "## Risk ranking: GLS", "", GLS_PURPOSE, "", GLS_VALIDATION, ""]
    lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return lines + ["| " + " | ".join(cells) + " |" for cells in rows]


def deployable_md(results: AuditReport) -> list[str]:
    rows = [a for a in results.attacks if a.deployable]
    if not rows or not rows[0].deployable:
        return []
    levels = [k for k in rows[0].deployable if k != "pseudo_targets"]
    lines = table_section(
        "Deployable thresholds (set on the references alone)",
        "Each reference model in the target's place (scored against the other references; every audited record is "
        "a known non-member of it) gives the threshold an attacker could set without the target's membership. "
        "Realized FPR and TPR on the target in percent [95% interval]: an FPR above its level means the "
        "table's operating point is not one an attacker could reach.",
        ["attack", *(f"{what} @{100 * float(k):g}%" for k in levels for what in ("FPR", "TPR"))],
    )
    for a in rows:
        cells = []
        for k in levels:
            d = (a.deployable or {})[k]  # a level's cell (the count of pseudo-targets sits beside them)
            assert not isinstance(d, int), f"deployable.{k}: an FPR level's cell"
            cells += [_ci(d.realized_fpr, d.realized_fpr_ci), _ci(d.tpr, d.tpr_ci)]
        lines.append(f"| {a.label} | " + " | ".join(cells) + " |")
    return lines


def _ci(x: float, ci: list[float] | list[int | float]) -> str:
    return f"{100 * x:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def ties_note(shown: ScoresTable, col: str) -> list[str]:
    """Say when the listed records tie (their order among themselves is then arbitrary)."""
    if not col.endswith("p_value") or not len(shown):
        return []
    ties = int((shown[col] == shown[col][0]).sum())
    q = col.removesuffix("p_value") + "q_value"
    same_q = q in shown and len(np.unique(shown[q][~np.isnan(shown[q])])) == 1
    if ties < 2 and not same_q:
        return []
    said = f"{ties} of these share the smallest p-value" if ties > 1 else ""
    said += ("; " if said else "") + (f"all have q = {shown[q][0]:.3g}" if same_q else "")
    return [f"Ranked by p-value (equivalently by q-value): {said}, so their order says little; records at risk "
            "are those with q at most the FDR (above)."]  # fmt: skip
