"""``miaudit unlearn``'s report.md, report.html and console lines, rendered from results.json's typed ``unlearning``
section alone (``miaudit.unlearning`` computes it; ``miaudit report DIR`` renders a finished audit again with these):
the verdict sentence first, then the figures with the null each rests on."""

from __future__ import annotations

import jinja2

from ..results import AuditReport
from ..results.unlearning import Estimate, UnlearningSection


def _fmt(e: Estimate, pct: bool = False) -> str:
    if e.value is None:
        return "n/a"
    scale, digits = (100, 1) if pct else (1, 3)
    ci = f" [{scale * e.interval[0]:.{digits}f}, {scale * e.interval[1]:.{digits}f}]" if e.interval else ""
    return f"{scale * e.value:.{digits}f}{'%' if pct else ''}{ci}"


def rows(s: UnlearningSection) -> list[tuple[str, str, str]]:
    """(figure, value, null) rows of the reports' table."""
    ut = s.utility
    orig = lambda a: "n/a" if a.original is None else f"{a.original:.3f}"
    return [
        ("method", s.method.label, ""),
        ("forgotten / retained / unseen records", f"{len(s.forget)} / {s.n_retained} / {s.n_unseen}", ""),
        ("set-level p-value (two-sided)", f"{s.p_value:.4g} (remembered {s.p_remembered:.4g}, over-forgotten "
         f"{s.p_over_forgotten:.4g})", s.test),
        ("selection guard p-value (two-sided)", "n/a" if s.p_selection is None else f"{s.p_selection:.4g}",
         "the retrained models' own signal, forgotten against unseen records of their labels: no claim at 0.01 "
         "or below (the forget set differs from those records by its choice)"),
        (f"records named at FDR {s.fdr}",
         f"{len(s.remembered)} still remembered, {len(s.over_forgotten)} over-forgotten", s.per_record_null),
        ("per-example AUC, unlearned vs retrained", _fmt(s.per_example_auc), s.per_example_auc.null),
        ("population AUC, unlearned vs retrained", _fmt(s.population_auc), s.population_auc.null),
        ("forget-set TPR at 1% FPR before", _fmt(s.tpr_at_1pct_before, True), s.tpr_at_1pct_before.null),
        ("forget-set TPR at 1% FPR after", _fmt(s.tpr_at_1pct_after, True), s.tpr_at_1pct_after.null),
        ("forget-set TPR at 1% FPR, a retrained model", _fmt(s.tpr_at_1pct_retrained, True),
         s.tpr_at_1pct_retrained.null),
        ("retained accuracy: unlearned / original / retrained",
         f"{ut.retained.unlearned:.3f} / {orig(ut.retained)} / {ut.retained.retrained_mean:.3f} ± "
         f"{ut.retained.retrained_sd:.3f}", ""),
        ("test accuracy: unlearned / original / retrained",
         f"{ut.test.unlearned:.3f} / {orig(ut.test)} / {ut.test.retrained_mean:.3f} ± {ut.test.retrained_sd:.3f}", ""),
        ("retained records newly exposed at 1% FPR",
         "n/a" if s.exposure_rose.count is None else
         f"{s.exposure_rose.count} (a retrained model: {s.exposure_rose.retrained_mean})",
         "records no model trained on"),
        ("models: retrained / trained this run", f"{s.retrained_models} / {s.models_trained}", ""),
        ("seconds", f"{s.seconds}", ""),
    ]  # fmt: skip


def markdown(r: AuditReport) -> str:
    s = r.unlearning
    assert s is not None
    lines = [f"**{s.sentence}**", "", f"# miaudit unlearn: {r.dataset}", ""]
    lines += [f"model {r.model}, seed {r.seed}, miaudit {r.miaudit_version}", ""]
    lines += ["| figure | value | rests on |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows(s)]
    if s.remembered:
        lines += ["", f"Still remembered (FDR {s.fdr}): " + ", ".join(map(str, s.remembered[:100]))]
    if s.over_forgotten:
        lines += ["", f"Over-forgotten (FDR {s.fdr}): " + ", ".join(map(str, s.over_forgotten[:100]))]
    lines += ["", "Per forgotten record: forget.csv. What each verdict means: docs/unlearning.md.", ""]
    return "\n".join(lines)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>miaudit unlearn: {{ r.dataset }}</title>
<style>body { font: 14px/1.45 system-ui, sans-serif; max-width: 1100px; margin: 1.5em auto; padding: 0 1em; }
table { border-collapse: collapse; } th, td { padding: .25em .6em; border-bottom: 1px solid #e4e4e4; text-align: left; }
th { background: #f4f4f4; }</style></head>
<body>
<p class="verdict"><strong>{{ s.sentence }}</strong></p>
<h1>miaudit unlearn: {{ r.dataset }}</h1>
<p>model {{ r.model }}, seed {{ r.seed }}, miaudit {{ r.miaudit_version }}</p>
<table><tr><th>figure</th><th>value</th><th>rests on</th></tr>
{% for a, b, c in rows %}<tr><td>{{ a }}</td><td>{{ b }}</td><td>{{ c }}</td></tr>
{% endfor %}</table>
{% if s.remembered %}<h2>Still remembered (FDR {{ s.fdr }})</h2><p>{{ s.remembered | join(", ") }}</p>{% endif %}
{% if s.over_forgotten %}<h2>Over-forgotten (FDR {{ s.fdr }})</h2><p>{{ s.over_forgotten | join(", ") }}</p>{% endif %}
</body></html>
"""


def html(r: AuditReport) -> str:
    s = r.unlearning
    assert s is not None
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return env.from_string(_TEMPLATE).render(r=r, s=s, rows=rows(s))


def explain_lines(r: AuditReport) -> list[str]:
    """What ``miaudit unlearn --explain`` prints under the answer: the verdict sentence with its numbers, the AUCs and
    the records named."""
    s = r.unlearning
    assert s is not None  # an unlearning audit's results always hold its section
    return [
        s.sentence,
        f"per-example AUC {_fmt(s.per_example_auc)}, population AUC {_fmt(s.population_auc)}; "
        f"{len(s.remembered)} remembered, {len(s.over_forgotten)} over-forgotten named at FDR {s.fdr}",
    ]
