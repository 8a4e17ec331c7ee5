"""``miaudit infer-dataset``'s report: the verdict sentence first, then what the test could see (power), the
figures (p-value, the blind guard, the fraction used) and what the test assumes, in report.md, report.html and the
console, from results.json's typed ``dataset_inference``; ``write`` puts the files on disk atomically."""

from __future__ import annotations

import csv
import shutil
import tempfile
from pathlib import Path

import jinja2
import numpy as np
import yaml

from ..results import AuditReport, DatasetInference
from . import outdir

_env = jinja2.Environment(
    loader=jinja2.PackageLoader("miaudit", "templates"), autoescape=True, undefined=jinja2.StrictUndefined
)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def power_line(d: DatasetInference) -> str:
    """What the test could see, from the leak measured before the answer; what would help where it saw little."""
    p = d.power
    wide = d.fraction is not None and d.fraction.wide
    helps = (
        f" The fraction's interval is wider than half: more suspect records (now {d.n_suspect}) or more reference "
        f"models (they measure how far a used record stands out) would narrow it."
        if wide
        else ""
    )
    if p.basis == "unmeasured" or p.member_auc is None:
        return (
            f"Power: not measured: {p.unmeasured_because or 'no reference models to measure it on'}; with 2 or more "
            f"reference models that never trained on these records the report would say what use the test can see."
            + helps
        )
    need = (
        "no suspect set of any size would be detected against these validation records"
        if p.smallest_suspect_set is None
        else f"{p.smallest_suspect_set} fully used suspect records suffice for {_pct(p.power)} power"
    )
    sees = (
        "not even the whole set's use is detected with that power"
        if p.detectable_fraction is None
        else f"use of {_pct(p.detectable_fraction)} or more of these {d.n_suspect} suspects is detected with that power"
    )
    every = ""
    if p.power_if_all_used is not None:
        every = f"; had every suspect been used, the test would say so with probability {_pct(p.power_if_all_used)}"
    return (
        f"Power (per-record effect AUC {p.member_auc:.2f}, from known members of the references as pseudo-targets): "
        f"at level {d.level:g}, {need}; {sees}{every}.{helps}"
    )


def figure_rows(d: DatasetInference) -> list[tuple[str, str]]:
    which = "blind guard" if d.blind.shifted else "reference guard"
    used = {True: "yes", False: "no evidence", None: f"no claim ({which})"}[d.used]
    score = "calibrated against the references" if d.calibrated else "not calibrated: no references"
    rows = [
        ("used", used),
        ("p-value", f"{d.p_value:.3g} (one-sided; level {d.level:g}; {d.permutations} permutations)"),
        (f"AUC, suspects vs validation ({score})", f"{d.auc:.3f} (direction {d.direction:+.3f})"),
        ("records", f"{d.n_suspect} suspect, {d.n_validation} validation"),
        ("features", ", ".join(d.features)),
        ("blind guard AUC", f"{d.blind.auc:.3f} [{d.blind.ci[0]:.3f}, {d.blind.ci[1]:.3f}]"),
    ]
    if d.references_guard is not None:
        g = d.references_guard
        rows.append(("reference guard AUC (their own signals)", f"{g.auc:.3f} [{g.ci[0]:.3f}, {g.ci[1]:.3f}]"))
    if d.fraction is not None:
        f = d.fraction
        rows.append(
            ("fraction used", f"{f.estimate:.2f} [{f.ci[0]:.2f}, {f.ci[1]:.2f}] (member AUC {f.member_auc:.3f})")
        )
    elif d.blind.shifted:
        rows.append(("fraction used", "not estimated: the records differ without the model (the blind guard)"))
    elif d.references_guard is not None and d.references_guard.shifted:
        rows.append(("fraction used", "not estimated: the references tell the sets apart (the reference guard)"))
    else:
        rows.append(("fraction used", "not estimated: no references to measure a member's effect on"))
    if d.at_least is not None:
        rows.append(("fraction used, at least", f"{d.at_least:.2f} (one-sided 95%, from the test's AUC alone)"))
    return rows


def _first(records: object, shown: int = 8) -> str:
    given = records if isinstance(records, list) else []
    more = f", ... ({len(given)} in all)" if len(given) > shown else ""
    return ", ".join(map(str, given[:shown])) + more


def question_line(results: AuditReport) -> str:
    """The question asked: the suspect and validation records (results.json's ``config`` holds every index)."""
    c = results.config
    return (
        f"Asked about suspect records {_first(c.get('suspect'))} against validation records "
        f"{_first(c.get('validation'))}; every index in results.json's `config` (`suspect`, `validation`)."
    )


def report_md(results: AuditReport) -> str:
    d = results.dataset_inference
    assert d is not None
    lines = [f"# miaudit infer-dataset: {results.dataset}", "", f"**{d.verdict}**", "", power_line(d), ""]
    lines += ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in figure_rows(d)), ""]
    lines += [question_line(results), ""]
    lines += [f"Blind guard: {d.blind.classifier}.", "", "## What the test assumes", ""]
    lines += [f"- {a}" for a in d.assumptions]
    lines += ["", f"model {results.model}, seed {results.seed}, {results.references} reference model(s), "
              f"miaudit {results.miaudit_version}"]  # fmt: skip
    return "\n".join(lines) + "\n"


def render_html(results: AuditReport) -> str:
    d = results.dataset_inference
    assert d is not None
    config = yaml.safe_dump(results.config, sort_keys=False, default_flow_style=None)
    return _env.get_template("dataset_inference.html.j2").render(
        r=results, d=d, power=power_line(d), rows=figure_rows(d), config=config
    )


def explain_lines(d: DatasetInference) -> list[str]:
    """``miaudit infer-dataset --explain``'s lines under the answer: the verdict sentence, then the power line."""
    return [d.verdict, power_line(d)]


def write(results: AuditReport, records: dict[str, np.ndarray], out_dir: Path) -> AuditReport:
    """results.json, report.md, report.html and scores.csv (one row per suspect and validation record: its
    features and its score), atomically."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        results.write(tmp / "results.json")
        (tmp / "report.md").write_text(report_md(results), encoding="utf-8")
        (tmp / "report.html").write_text(render_html(results), encoding="utf-8")
        with (tmp / "scores.csv").open("w", newline="") as f:
            out = csv.writer(f, lineterminator="\n")
            out.writerow(list(records))
            for row in zip(*(np.asarray(c).tolist() for c in records.values())):
                out.writerow([f"{v:.8g}" if isinstance(v, float) else v for v in row])
        outdir.publish(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results
