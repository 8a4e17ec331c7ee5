"""compare.json, compare.md and compare.html (both runs' ROC per attack; two unlearning runs' answers side by side)
from ``compare.compare``'s result."""

from __future__ import annotations

import html
import os
import shutil
import tempfile
from pathlib import Path

from ..errors import OutputDirError
from ..results import Change, Comparison, UnlearningComparison
from ..results.unlearning import Estimate
from ..stats import metrics
from .compare import Run, attack_scores, load_run
from .plots import png_uri, thinned_roc


def _cell(d: Change, scale: float = 100, digits: int = 1) -> str:
    lo, hi = d.ci
    return (
        f"A {scale * d.a:.{digits}f} -> B {scale * d.b:.{digits}f}, "
        f"B - A {scale * d.difference:+.{digits}f} [{scale * lo:+.{digits}f}, {scale * hi:+.{digits}f}]"
    )


def _estimate(e: Estimate, scale: float = 1, digits: int = 3) -> str:
    if e.value is None:
        return "n/a"
    ci = f" [{scale * e.interval[0]:.{digits}f}, {scale * e.interval[1]:.{digits}f}]" if e.interval else ""
    return f"{scale * e.value:.{digits}f}{ci}"


def unlearning_rows(u: UnlearningComparison) -> list[tuple[str, str, str]]:
    """(measure, run A, run B): two unlearning runs' answers, one measure a row."""
    measures = [
        ("method", lambda r: r.method),
        ("verdict", lambda r: r.verdict),
        ("p-value (two-sided)", lambda r: f"{r.p_value:.4g}"),
        ("p remembered / over-forgotten", lambda r: f"{r.p_remembered:.4g} / {r.p_over_forgotten:.4g}"),
        ("per-example AUC [95%]", lambda r: _estimate(r.per_example_auc)),
        ("population AUC [95%]", lambda r: _estimate(r.population_auc)),
        ("forget-set TPR@1% after, % [95%]", lambda r: _estimate(r.tpr_at_1pct_after, 100, 1)),
        ("test accuracy", lambda r: f"{r.test_accuracy:.4f}"),
        ("records forgotten / remembered / over-forgotten", lambda r: f"{r.forget} / {r.remembered} / "
         f"{r.over_forgotten}"),
    ]  # fmt: skip
    return [(name, str(show(u.a)), str(show(u.b))) for name, show in measures]


def _unlearning_lines(u: UnlearningComparison) -> list[str]:
    width = max(len(m) for m, _, _ in unlearning_rows(u))
    out = [f"{'':{width}}  A | B"]
    out += [f"{m:{width}}  {a} | {b}" for m, a, b in unlearning_rows(u)]
    return out


def lines(c: Comparison) -> list[str]:
    """The console's lines: the warnings first, then per attack its verdict, TPR at each level and AUC with
    intervals (two unlearning runs: their answers side by side)."""
    out = [*c.warnings, f"A: {c.a}", f"B: {c.b}"]
    if c.unlearning is not None:
        return [*out, f"{c.pairing}", "", *_unlearning_lines(c.unlearning)]
    out += [f"{c.pairing}; 95% bootstrap intervals ({c.resamples} resamples)", ""]
    for row in c.attacks:
        out.append(row.verdict or row.attack)
        for level, d in row.tpr_at_fpr.items():
            out.append(f"  {row.attack} TPR@{100 * float(level):g}%: {_cell(d)}")
        out.append(f"  {row.attack} AUC: {_cell(row.auc, 1, 3)}")
    return out


def markdown(c: Comparison) -> str:
    if c.unlearning is not None:
        text = [f"# miaudit compare: A = {c.a}, B = {c.b}", "", *(f"**{w}**\n" for w in c.warnings)]
        text += [f"Two unlearning runs, {c.unlearning.reading}.", "", "| | A | B |", "|---|---|---|"]
        text += [f"| {m} | {a} | {b} |" for m, a, b in unlearning_rows(c.unlearning)]
        return "\n".join(text) + "\n"
    levels = list(c.attacks[0].tpr_at_fpr)
    head = ["attack", *(f"TPR@{100 * float(k):g}% [95%]" for k in levels), "AUC [95%]"]
    rows = [[r.attack, *(_cell(r.tpr_at_fpr[k]) for k in levels), _cell(r.auc, 1, 3)] for r in c.attacks]
    text = [f"# miaudit compare: A = {c.a}, B = {c.b}", "", *(f"**{w}**" for w in c.warnings)]
    text += ["", f"{c.pairing}.", ""]
    text += [f"- {r.verdict}" for r in c.attacks if r.verdict]
    text += ["", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    text += ["| " + " | ".join(r) + " |" for r in rows]
    text += ["", "TPR in percent. Differences are B - A with percentile intervals of a stratified bootstrap."]
    return "\n".join(text) + "\n"


def _roc_figure(a: Run, b: Run, c: Comparison) -> str:
    """Both runs' log-log ROC per attack, one panel each, as a data: URI."""
    (ra, fa, _), (rb, fb, _) = load_run(a), load_run(b)
    by_a, by_b = {x.label: x for x in ra.attacks}, {x.label: x for x in rb.attacks}
    n = len(c.attacks)
    from matplotlib.figure import Figure  # here: only compare draws this figure

    fig = Figure(figsize=(3.6 * n, 3.6))
    axes = fig.subplots(1, n, squeeze=False)
    for ax, row in zip(axes[0], c.attacks):
        for run, frame, attack in (("A", fa, by_a[row.attack]), ("B", fb, by_b[row.attack])):
            s = attack_scores(frame, attack, None)
            fpr, tpr = thinned_roc(*metrics.roc(s.scores, s.is_member))
            ax.plot(fpr, tpr, drawstyle="steps-post", lw=1.3, label=run)
        ax.plot([1e-4, 1], [1e-4, 1], "k:", lw=0.8)
        ax.set(xscale="log", yscale="log", xlim=(1e-3, 1), ylim=(1e-3, 1), title=row.attack, xlabel="FPR")
        ax.legend(fontsize=7, loc="lower right")
    axes[0][0].set_ylabel("TPR")
    fig.tight_layout()
    return png_uri(fig)


def check_destination(out_dir: Path) -> None:
    """A one-line ``OutputDirError`` when ``out_dir`` cannot hold compare's files (checked before any work)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputDirError(f"--out: {out_dir} is a file; compare writes a folder (compare.json, .md, .html)")
    parent = next((p for p in out_dir.absolute().parents if p.exists()), None)
    if not out_dir.exists() and parent is not None and not parent.is_dir():
        raise OutputDirError(f"--out: {parent} is a file, so {out_dir} cannot be created")


def write(a: Run, b: Run, c: Comparison, out_dir: Path) -> Path:
    """Write compare.json, compare.md and compare.html into ``out_dir``; return it."""
    out_dir = Path(out_dir)
    check_destination(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputDirError(f"--out: cannot create {out_dir} ({e.strerror})") from None
    staging = Path(tempfile.mkdtemp(prefix=".compare.", dir=out_dir))  # moved into place at the end: an
    try:  # interrupted compare leaves the previous files whole
        _write_files(a, b, c, staging)
        for name in ("compare.json", "compare.md", "compare.html"):
            os.replace(staging / name, out_dir / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


def _write_files(a: Run, b: Run, c: Comparison, out_dir: Path) -> None:
    (out_dir / "compare.json").write_text(c.to_json())
    md = markdown(c)
    (out_dir / "compare.md").write_text(md)
    body = "".join(f"<li>{html.escape(r.verdict)}</li>" for r in c.attacks if r.verdict)
    table = "<pre>" + html.escape("\n".join(lines(c))) + "</pre>"
    figure = "" if c.unlearning is not None else f"<img alt='ROC of both runs' src='{_roc_figure(a, b, c)}'>"
    warned = "".join(f"<p><strong>{html.escape(w)}</strong></p>" for w in c.warnings)
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>miaudit compare</title></head><body>"
        f"<h1>miaudit compare</h1>{warned}<p>A = {html.escape(c.a)}<br>B = {html.escape(c.b)}</p>"
        f"<p>{html.escape(c.pairing)}.</p><ul>{body}</ul>{figure}{table}</body></html>"
    )
    (out_dir / "compare.html").write_text(page, encoding="utf-8")
