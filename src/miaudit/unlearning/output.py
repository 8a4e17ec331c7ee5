"""``miaudit unlearn``'s outputs: results.json (the ``unlearning`` section beside the keys a run has), report.md
and report.html (the verdict sentence first), forget.csv (per forgotten record: its score and both p-values),
the unlearned model miaudit made (``unlearned.safetensors``), the original training records (``members.npy``) and
the forgotten ones (``forget.npy``): what an auditor gives back as an own model (docs/unlearning.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2
import numpy as np

from ..config.files import load_config, with_overrides
from ..config.run import RunConfig
from ..report import outdir
from ..report.records import without_attacks
from ..results import AuditReport, Calibration, Target
from ..results.unlearning import Estimate, UnlearningSection
from . import verify
from .audit import UnlearnFn, Verification, run
from .config import UnlearnConfig, as_config, from_mapping

FILES = ("results.json", "report.md", "report.html", "forget.csv", "unlearned.safetensors", "members.npy", "forget.npy")


def results(u: UnlearnConfig, v: Verification) -> AuditReport:
    """results.json: the keys a run has where they apply (the target is the unlearned model), and ``unlearning``."""
    cfg, ds, s = u.cfg, v.records.dataset, v.section
    config = as_config(u)
    source = "trained" if s.method.name == "retrain" else s.method.label
    target = Target(
        train_accuracy=s.utility.retained.unlearned,
        test_accuracy=s.utility.test.unlearned,
        source=f"unlearned: {source}",
    )
    return without_attacks(
        cfg,
        ds,
        cfg.target_architecture,
        target,
        Calibration(calibrated=True, records=s.n_unseen),
        config,
        unlearning=s,
        references=(s.retrained_models, "retrained on the retained records by miaudit's loop (the original's recipe)"),
    )


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


def console_lines(r: AuditReport, out: Path) -> list[str]:
    """What ``miaudit unlearn`` prints when done: the verdict sentence first."""
    s = r.unlearning
    assert s is not None  # an unlearning audit's results always hold its section
    return [
        s.sentence,
        f"per-example AUC {_fmt(s.per_example_auc)}, population AUC {_fmt(s.population_auc)}; "
        f"{len(s.remembered)} remembered, {len(s.over_forgotten)} over-forgotten named at FDR {s.fdr}",
        f"wrote {out}/",
    ]


def forget_csv(v: Verification) -> str:
    q_up, q_low = verify.qvalues(v.p_remembered), verify.qvalues(v.p_over_forgotten)
    out = ["record,z,p_remembered,q_remembered,p_over_forgotten,q_over_forgotten"]
    for i, z, a, b, c, d in zip(v.records.forget, v.z_forget, v.p_remembered, q_up, v.p_over_forgotten, q_low):
        out.append(f"{int(i)},{z:.6g},{a:.6g},{b:.6g},{c:.6g},{d:.6g}")
    return "\n".join(out) + "\n"


def write(u: UnlearnConfig, v: Verification, out: Path) -> AuditReport:
    """Every output file into ``out`` (held by the caller: ``outdir.reserved``)."""
    from safetensors.torch import save

    out.mkdir(parents=True, exist_ok=True)
    r = results(u, v)
    state = {k: t.detach().cpu().contiguous() for k, t in v.module.state_dict().items()}
    # bytes, then an ordinary write: safetensors' save_file creates its file 0600 whatever the umask
    (out / "unlearned.safetensors").write_bytes(save(state))
    np.save(out / "members.npy", v.records.members.astype(np.int64))
    np.save(out / "forget.npy", v.records.forget.astype(np.int64))
    (out / "forget.csv").write_text(forget_csv(v), encoding="utf-8")
    (out / "report.md").write_text(markdown(r), encoding="utf-8")
    (out / "report.html").write_text(html(r), encoding="utf-8")
    r.write(out / "results.json")
    return r


def verify_config(
    config: str | Path | Mapping[str, object],
    *,
    unlearn_fn: UnlearnFn | None = None,
    out: str | Path | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
) -> AuditReport:
    """``miaudit.verify_unlearning``: the config read and checked, the audit run, and (with ``out``) every file
    written into ``out``, which is held from before the first model trains (``outdir.reserved``)."""
    if isinstance(config, str | Path):
        u = load_config(config, list(overrides), RunConfig, from_mapping)
    else:
        u = from_mapping(with_overrides(dict(config), list(overrides)))
    if out is None:
        return results(u, run(u, unlearn_fn))
    with outdir.reserved(Path(out), force):
        return write(u, run(u, unlearn_fn), Path(out))
