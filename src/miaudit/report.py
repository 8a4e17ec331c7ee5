"""The output directory: results.json, report.md, roc.png, scores.csv.

Everything is first written into a temporary sibling folder and moved into
place at the end, so a failure never leaves a half-written output directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from . import __version__, metrics
from .pipeline import AttackRun, RunResult

OUTPUT_FILES = ("results.json", "report.md", "roc.png", "scores.csv")


def slug(run: AttackRun) -> str:
    """Column-safe name of an attack row, e.g. 'lira_n8'."""
    base = run.spec.params.label or f"{run.spec.name}_n{run.references}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", base)


UNKNOWN_MEMBERSHIP_NOTE = (
    "membership of the queries is unknown: no ROC metrics; each attack's p-values and "
    "the risk ranking (scores.csv, column risk_rank) are the result"
)


def results_json(res: RunResult) -> dict:
    exp, cfg = res.experiment, res.experiment.cfg
    known = exp.membership_known
    out = {
        "miaudit_version": __version__,
        "dataset": cfg.dataset.label,
        "n_records": len(exp.dataset),
        "membership": "known" if known else "unknown",
        "n_queries": len(exp.query_idx),
        "n_members": int(exp.is_member.sum()) if known else None,
        "n_nonmembers": int((~exp.is_member).sum()) if known else None,
        "n_population": len(exp.split.population),
        "n_validation": len(exp.split.validation),
        "model": exp.target.architecture or cfg.model,
        "reference_model": (exp.references[0].architecture or cfg.reference_architecture) if exp.references else None,
        "mode": cfg.mode,
        "seed": cfg.seed,
        "references": len(exp.references),
        "target": {**exp.target_accuracy(), "training_seconds": exp.target.seconds, "source": exp.target.source},
        "reference_models": [
            {"train_accuracy": r.train_accuracy, "seconds": r.seconds, "cached": r.cached} for r in exp.references
        ],
        "attacks": [
            {
                "name": r.spec.name,
                "label": r.spec.label,
                "references": r.references,
                **(r.metrics.to_json() if known else ranking_json(r, exp.query_idx)),
                "seconds": r.seconds,
            }
            for r in res.attacks
        ],
        "config": json.loads(cfg.model_dump_json()),
    }
    return out if known else {**out, "note": UNKNOWN_MEMBERSHIP_NOTE}


def ranking_json(run: AttackRun, query_idx: np.ndarray, top: int = 10) -> dict:
    """Without membership there is no ROC: the most exposed records and how many each test flags."""
    out = {
        "most_exposed": [int(i) for i in query_idx[np.argsort(-risk_values(run), kind="stable")[:top]]],
        "n_nan_scores": int(np.isnan(run.result.scores).sum()),
    }
    if run.result.log_pvalues is not None:
        out["n_p_below"] = {str(a): int((run.result.log_pvalues < np.log(a)).sum()) for a in metrics.ALPHAS}
    return out


# Which attack ranks the records by risk, in order of preference: the Bayesian tests
# (per-record p-values from a model of each record's own score distribution), then
# LiRA's, then the reference-free leverage score, then whatever ran first.
RISK_PRIORITY = ("mr-bmia", "bmia", "lira", "bavaria-n", "gls")


def risk_basis(res: RunResult) -> AttackRun:
    """The attack row whose output orders the per-record risk table."""
    for name in RISK_PRIORITY:
        rows = [r for r in res.attacks if r.spec.name == name]
        if rows:
            return max(rows, key=lambda r: r.references)
    return res.attacks[0]


def risk_values(run: AttackRun) -> np.ndarray:
    """Higher = more exposed: -log p where the attack is a test, else its score."""
    lp = run.result.log_pvalues
    return run.result.scores if lp is None else -lp


def scores_frame(res: RunResult) -> pd.DataFrame:
    """The per-record risk table: one row per query, most exposed first."""
    exp = res.experiment
    rank = np.empty(len(exp.query_idx), dtype=np.int64)
    rank[np.argsort(-risk_values(risk_basis(res)), kind="stable")] = np.arange(1, len(rank) + 1)
    cols = {"risk_rank": rank, "record": exp.query_idx, **exp.query_info}
    if exp.membership_known:
        cols["member"] = exp.is_member.astype(int)
    cols["label"] = exp.dataset.y[exp.query_idx]
    for r in res.attacks:
        s = slug(r)
        cols[f"{s}.score"] = r.result.scores
        if r.result.log_pvalues is not None:
            cols[f"{s}.p_value"] = np.exp(r.result.log_pvalues)
            cols[f"{s}.log_p"] = r.result.log_pvalues
        if "log_p_calibrated" in r.result.extra:
            cols[f"{s}.p_value_calibrated"] = np.exp(r.result.extra["log_p_calibrated"])
    return pd.DataFrame(cols).sort_values("risk_rank", kind="stable").reset_index(drop=True)


def exposed_records_md(res: RunResult, frame: pd.DataFrame, top: int = 10) -> list[str]:
    """The report section listing the most exposed records."""
    basis = risk_basis(res)
    col = f"{slug(basis)}.p_value" if basis.result.log_pvalues is not None else f"{slug(basis)}.score"
    extra = [c for c in frame.columns if c.startswith("gls") and c.endswith(".score") and c != col]
    known = [c for c in ("label", "member") if c in frame.columns]
    lines = [
        "",
        f"## Most exposed records (ranked by {basis.spec.label}: "
        f"{'smallest p-value' if col.endswith('p_value') else 'highest score'})",
        "",
        "| rank | record | " + " | ".join([*known, col, *extra]) + " |",
        "|---|---|" + "---|" * (len(known) + 1 + len(extra)),
    ]
    for row in frame.head(top).to_dict("records"):
        vals = " | ".join([*(str(row[c]) for c in known), *(f"{row[c]:.3g}" for c in [col, *extra])])
        lines.append(f"| {row['risk_rank']} | {row['record']} | {vals} |")
    lines.append(f"\nThe full ranking of all {len(frame)} records is `scores.csv` (column `risk_rank`).")
    return lines


def roc_plot(res: RunResult, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(5.5, 5))
    n_non = int((~res.experiment.is_member).sum())
    for r in res.attacks:
        fpr, tpr = metrics.roc(r.result.scores, res.experiment.is_member)
        shown = fpr > 0  # log axes: the ROC's FPR = 0 points cannot be drawn; steps keep the curve honest
        ax.plot(
            fpr[shown],
            tpr[shown],
            lw=1.4,
            drawstyle="steps-post",
            label=f"{r.spec.label}  AUC {r.metrics.auc:.3f}, TPR@1% {100 * r.metrics.tpr_at_fpr['0.01']:.1f}%",
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
        title=f"{res.experiment.cfg.dataset.label}: membership inference ROC",
    )
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _pct(x: float) -> str:
    return f"{100 * x:.2f}"


def _with_ci(x: float, ci: list[float] | None, scale: float = 100.0, digits: int = 1) -> str:
    """'13.4 [11.4, 15.7]': a number and its 95% interval (percent by default)."""
    if ci is None:
        return f"{scale * x:.{digits}f}"
    return f"{scale * x:.{digits}f} [{scale * ci[0]:.{digits}f}, {scale * ci[1]:.{digits}f}]"


def _level(key: str) -> str:
    return f"{100 * float(key):g}%"


def _threshold(t: float | None) -> str:
    return "-" if t is None else f"{t:.4g}"


def _operating_points_md(results: dict) -> list[str]:
    """Per attack and FPR level: the threshold used and the FPR it realizes, with its interval."""
    levels = list(results["attacks"][0]["tpr_at_fpr"])
    lines = [
        "",
        "## Operating points",
        "",
        "A record is called a member when its score is at or above the threshold (the highest threshold "
        "reaching the table's TPR; '-': none flags a record without exceeding the FPR level). Realized FPR "
        "in percent, with its exact 95% interval.",
        "",
        "| attack | " + " | ".join(f"threshold @{_level(k)} | realized FPR @{_level(k)}" for k in levels) + " |",
        "|---|" + "---|---|" * len(levels),
    ]
    for a in results["attacks"]:
        cells = [
            f"{_threshold(a['threshold'][k])} | {_with_ci(a['realized_fpr'][k], a['realized_fpr_ci'].get(k), digits=2)}"
            for k in levels
        ]
        lines.append(f"| {a['label']} | " + " | ".join(cells) + " |")
    return lines


def _nan_note(results: dict) -> list[str]:
    """Records an attack could not score: ranked least significant (p = 1), and said so."""
    counted = [f"{a['label']} {a['n_nan_scores']}" for a in results["attacks"] if a.get("n_nan_scores")]
    if not counted:
        return []
    return ["", f"NaN scores (ranked last, p = 1): {', '.join(counted)} of {results['n_queries']} records."]


def _ranking_table_md(results: dict) -> list[str]:
    lines = [
        "| attack | refs | records with p < 0.01 | p < 0.05 | most exposed records | reference training s | attack s |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in results["attacks"]:
        flagged = [str(a["n_p_below"][k]) if "n_p_below" in a else "-" for k in ("0.01", "0.05")]
        lines.append(
            f"| {a['label']} | {a['references']} | {' | '.join(flagged)} | "
            f"{', '.join(map(str, a['most_exposed'][:5]))} | {a['seconds']['reference_training']:.1f} | "
            f"{a['seconds']['attack']:.2f} |"
        )
    return ["", f"Note: {results['note']}.", "", *lines]


def report_md(res: RunResult, results: dict, frame: pd.DataFrame) -> str:
    t = results["target"]
    known = results["membership"] == "known"
    audited = (
        f"{results['n_members']} members, {results['n_nonmembers']} non-members"
        if known
        else f"{results['n_queries']} queries of unknown membership"
    )
    accuracies = ", ".join(f"{k.replace('_', ' ')} {v:.3f}" for k, v in t.items() if k.endswith("accuracy"))
    lines = [
        f"# miaudit report: {results['dataset']}",
        "",
        f"- records: {results['n_records']} ({audited}, "
        f"{results['n_population']} population, {results['n_validation']} validation)",
        f"- target {results['model']} ({t['source']}): {accuracies}",
        f"- reference models ({results['reference_model']}, {results['mode']}): {results['references']}"
        if results["references"]
        else "- reference models: none",
        f"- seed {results['seed']}, miaudit {results['miaudit_version']}",
    ]
    if not known:
        lines += [*_ranking_table_md(results), *_nan_note(results), *exposed_records_md(res, frame)]
        return "\n".join(lines) + "\n"
    lines += [
        "",
        "| attack | refs | AUC | TPR@0.1% | TPR@1% | TPR@5% | FPR at p<0.05 (raw / calibrated) "
        "| reference training s | attack s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for a in results["attacks"]:
        tpr = {
            k: _with_ci(v, a["tpr_at_fpr_ci"].get(k)) + (" †" if k in a["unreliable_fpr_levels"] else "")
            for k, v in a["tpr_at_fpr"].items()
        }
        fa = a.get("fpr_at_alpha", {})
        fpr05 = " / ".join(_pct(fa[k]["0.05"]) for k in ("raw", "calibrated") if k in fa) or "-"
        lines.append(
            f"| {a['label']} | {a['references']} | {_with_ci(a['auc'], a['auc_ci'], 1, 3)} | {tpr['0.001']} "
            f"| {tpr['0.01']} | {tpr['0.05']} | {fpr05} | {a['seconds']['reference_training']:.1f} "
            f"| {a['seconds']['attack']:.2f} |"
        )
    unreliable = sorted({lv for a in results["attacks"] for lv in a["unreliable_fpr_levels"]})
    if unreliable:
        lines += [
            "",
            f"† unreliable: with {results['n_nonmembers']} non-members, FPR levels below "
            f"{10 / results['n_nonmembers']:.4f} (10/n) rest on fewer than 10 false positives "
            f"({', '.join(unreliable)}).",
        ]
    lines += [
        "",
        "TPR and FPR in percent. [brackets]: 95% intervals, exact (Clopper-Pearson) for TPR, bootstrap "
        f"({metrics.BOOTSTRAP_RESAMPLES} stratified resamples, seed {metrics.BOOTSTRAP_SEED}) for AUC. "
        "Scores of every record: `scores.csv`; ROC: `roc.png`.",
    ]
    lines += _nan_note(results) + _operating_points_md(results) + exposed_records_md(res, frame)
    return "\n".join(lines) + "\n"


def write(res: RunResult, out_dir: Path) -> dict:
    """Write every output file atomically; return the results dict."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    results = results_json(res)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        (tmp / "results.json").write_text(json.dumps(results, indent=1))
        frame = scores_frame(res)
        (tmp / "report.md").write_text(report_md(res, results, frame))
        if res.experiment.membership_known:  # no ROC without membership
            roc_plot(res, tmp / "roc.png")
        frame.to_csv(tmp / "scores.csv", index=False, float_format="%.8g")
        out_dir.mkdir(exist_ok=True)
        for f in tmp.iterdir():
            os.replace(f, out_dir / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results
