"""The figures: log-log ROC of every attack, score histograms, the non-members' p-value histograms.

Each figure's PNG is kept in the store by the content of what it draws (``stats.memo``): a second report
of the same results draws nothing, and imports no matplotlib. Figures are drawn with fixed margins (the
labels' sizes are fixed; matplotlib's tight_layout measured every text and took most of a figure's time), and
the ROC curve keeps the first and last operating point within each 1/200 of a decade of FPR: at most ~2,000
vertices instead of one per record, a 5.5-inch curve identical to the eye. Every figure is drawn from results.json's
typed model and the per-record table alone (scores.parquet: each attack's score and p-value columns)."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..results import AttackRow, AuditReport
from ..stats import memo, metrics
from .ranking import row_slug
from .table import ScoresTable

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

ROC_POINTS_PER_DECADE = 200  # of FPR: finer than the pixels of the drawn curve (module docstring)


def _new_figure(figsize: tuple[float, float]) -> Figure:
    """A matplotlib Figure drawn by Agg into memory: no pyplot, so no global figure list to close, and no
    backend to choose (files only, never a window)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def _figure(kind: str, parts: list[memo.Part], draw: Callable[[], bytes]) -> bytes:
    """The PNG ``draw()`` makes, kept by the content of ``parts`` (what it draws) and matplotlib's version."""
    return memo.memoized(f"figure-{kind}", [metadata.version("matplotlib"), *parts], draw)


def _membership(frame: ScoresTable) -> np.ndarray | None:
    """The queries' membership from the table's ``member`` column; None when unknown."""
    return None if "member" not in frame else np.asarray(frame["member"]).astype(bool)


def _scores(frame: ScoresTable, row: AttackRow) -> np.ndarray:
    return np.asarray(frame[f"{row_slug(row)}.score"], dtype=np.float64)


def roc_plot(results: AuditReport, frame: ScoresTable, path: Path) -> None:
    is_member = _membership(frame)
    if is_member is None:
        raise ValueError("roc_plot: no ROC without the queries' membership")
    curves = [a for a in results.attacks if a.auc is not None and a.tpr_at_fpr is not None]
    parts: list[memo.Part] = [is_member, results.dataset]
    for a in curves:
        parts += [a.label, _scores(frame, a), a.auc, (a.tpr_at_fpr or {})["0.01"]]
    path.write_bytes(_figure("roc", parts, lambda: _draw_roc(results, frame, curves, is_member)))


def _draw_roc(results: AuditReport, frame: ScoresTable, curves: list[AttackRow], is_member: np.ndarray) -> bytes:
    fig = _new_figure((5.5, 5))
    ax = fig.add_subplot()
    n_non = int((~is_member).sum())
    for a in curves:
        fpr, tpr = thinned_roc(*metrics.roc(_scores(frame, a), is_member))
        ax.plot(
            fpr,
            tpr,
            lw=1.4,
            drawstyle="steps-post",
            label=f"{a.label}  AUC {a.auc:.3f}, TPR@1% {100 * (a.tpr_at_fpr or {})['0.01']:.1f}%",
        )
    ax.plot([1e-5, 1], [1e-5, 1], "k:", lw=0.8)
    ax.axvline(1.0 / max(n_non, 1), color="grey", lw=0.6, ls="--")
    ax.set(
        xscale="log",
        yscale="log",
        xlim=(max(1e-4, 0.5 / max(n_non, 1)), 1),
        ylim=(1e-3, 1),
        xlabel="false positive rate",
        ylabel="true positive rate",
    )
    ax.set_title(f"{results.dataset}: membership inference ROC", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.subplots_adjust(left=0.14, right=0.97, bottom=0.1, top=0.93)
    return _png(fig, dpi=130)


def thinned_roc(fpr: np.ndarray, tpr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ROC's points with FPR > 0 (log axes cannot show FPR = 0), keeping the first and last point within
    each 1/``ROC_POINTS_PER_DECADE`` of a decade of FPR: the steps' shape at the drawn resolution."""
    shown = fpr > 0
    fpr, tpr = fpr[shown], tpr[shown]
    if fpr.size < 3:
        return fpr, tpr
    bucket = np.floor(np.log10(fpr) * ROC_POINTS_PER_DECADE)
    edge = bucket[1:] != bucket[:-1]
    keep = np.r_[True, edge] | np.r_[edge, True]  # first and last of every bucket
    return fpr[keep], tpr[keep]


def _png(fig: Figure, dpi: int = 100) -> bytes:
    """The figure's PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def png_uri(fig_or_path: Figure | Path) -> str:
    """A figure or a PNG file as a data: URI."""
    return _uri(fig_or_path.read_bytes() if isinstance(fig_or_path, Path) else _png(fig_or_path))


def _grid(n: int) -> tuple[Figure, list[Axes]]:
    """A figure of n panels, three per row, with fixed margins (in inches, so any number of rows fits)."""
    cols = min(3, n)
    rows = math.ceil(n / cols)
    width, height = 4.2 * cols, 3.0 * rows
    fig = _new_figure((width, height))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    fig.subplots_adjust(
        left=0.55 / width, right=1 - 0.15 / width, bottom=0.5 / height, top=1 - 0.35 / height, wspace=0.3, hspace=0.55
    )
    return fig, list(axes.flat[:n])


def score_histograms(results: AuditReport, frame: ScoresTable) -> str:
    """Per attack: members' and non-members' scores on shared bins (all queries when membership is unknown)."""
    is_member = _membership(frame)
    drawn = [(a.label, _scores(frame, a)) for a in results.attacks]
    parts: list[memo.Part] = [is_member]
    for label, scores in drawn:
        parts += [label, scores]
    return _uri(_figure("scores", parts, lambda: _draw_scores(drawn, is_member)))


def _draw_scores(drawn: list[tuple[str, np.ndarray]], is_member: np.ndarray | None) -> bytes:
    fig, axes = _grid(len(drawn))
    for ax, (label, scores) in zip(axes, drawn):
        finite = np.isfinite(scores)
        bins = np.histogram_bin_edges(scores[finite], bins=40).tolist() if finite.any() else 10
        if is_member is None:
            ax.hist(scores[finite], bins=bins, color="tab:grey", label="queries")
        else:
            for mask, name, color in ((is_member, "members", "tab:red"), (~is_member, "non-members", "tab:blue")):
                ax.hist(scores[finite & mask], bins=bins, alpha=0.55, color=color, label=name)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("score (higher = more likely member)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    return _png(fig)


def pvalue_histograms(results: AuditReport, frame: ScoresTable) -> tuple[str | None, list[str]]:
    """Per test: the non-members' p-values, calibrated where the attack calibrates them (the table's ``log_p``
    column: the p-values miaudit quotes). Under the null they are uniform, so a calibrated test's histogram is flat
    at density 1. Also which set each shows."""
    tests = [a for a in results.attacks if a.p_values is not None and f"{row_slug(a)}.log_p" in frame]
    if not tests:
        return None, []
    is_member = _membership(frame)
    shown = np.ones(len(frame), bool) if is_member is None else ~is_member
    who = "queries" if is_member is None else "non-members"
    kinds = [str(a.p_values) for a in tests]
    labels = [a.label for a in tests]
    log_ps = [np.asarray(frame[f"{row_slug(a)}.log_p"], dtype=np.float64) for a in tests]
    parts: list[memo.Part] = [who, shown]
    for label, kind, log_p in zip(labels, kinds, log_ps):
        parts += [label, kind, log_p]
    png = _figure("pvalues", parts, lambda: _draw_pvalues(labels, kinds, log_ps, shown, who))
    return _uri(png), [f"{label}: {kind}" for label, kind in zip(labels, kinds)]


def _draw_pvalues(labels: list[str], kinds: list[str], log_ps: list[np.ndarray], shown: np.ndarray, who: str) -> bytes:
    fig, axes = _grid(len(labels))
    for ax, label, kind, log_p in zip(axes, labels, kinds, log_ps):
        ax.hist(np.exp(np.asarray(log_p)[shown]), bins=20, range=(0, 1), density=True, color="tab:blue", alpha=0.7)
        ax.axhline(1.0, color="k", ls=":", lw=1, label="uniform")
        ax.set_title(f"{label}: {kind} p-values, {who}", fontsize=9)
        ax.set_xlabel("p-value", fontsize=8)
        ax.set_ylabel("density", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    return _png(fig)
