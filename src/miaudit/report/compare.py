"""``miaudit compare RUN_A RUN_B`` and ``miaudit.compare(a, b)``: did a mitigation change what the attacks find?

For every membership test both runs hold (matched by label), B - A in TPR at each FPR level and in AUC with a
95% bootstrap interval (``stats.difference``): paired over the shared records when the runs scored the same
records of the same data, independent otherwise (different data are allowed, and said). One sentence per
attack, on TPR at 1% FPR: B leaks less / more than A when the interval excludes 0, else no detectable change.
Written as compare.json, compare.md and compare.html (both ROC curves per attack).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import DataError
from ..stats import difference
from .ranking import slug_of
from .sections import is_ranking

HEADLINE = "0.01"


def load_run(run: Any) -> tuple[dict, pd.DataFrame, str]:
    """(results.json, per-record table, name) of a run directory, or of an in-memory audit result."""
    if hasattr(run, "to_json") and hasattr(run, "scores"):
        return run.to_json(), run.scores, "in-memory run"
    where = Path(run)
    try:
        results = json.loads((where / "results.json").read_text())
        table = where / "scores.parquet"
        frame = pd.read_parquet(table) if table.exists() else pd.read_csv(where / "scores.csv")
    except (OSError, ValueError) as e:
        raise DataError(f"compare: {where} is not a miaudit run directory ({type(e).__name__}: {e})") from None
    if results.get("membership") != "known":
        raise DataError(f"compare: {where} audited records of unknown membership; there is no ROC to compare")
    return results, frame, str(where)


def attack_scores(frame: pd.DataFrame, attack: dict, records: np.ndarray | None) -> difference.Scored:
    """One attack's scores, in the order of ``records`` when given (paired runs)."""
    col = f"{slug_of(attack['name'], attack['label'], attack['references'])}.score"
    f = frame if records is None else frame.set_index("record").loc[records].reset_index()
    return difference.Scored(f[col].to_numpy(float), f["member"].to_numpy(bool))


def _pairing(ra: dict, rb: dict, fa: pd.DataFrame, fb: pd.DataFrame) -> tuple[bool, str, np.ndarray | None]:
    """(paired, how, the shared records in order) from the data fingerprints and the audited records."""
    same_data = ra.get("data_fingerprint") == rb.get("data_fingerprint")
    if not same_data:
        return False, "different data (fingerprints differ): runs resampled independently", None
    ma = dict(zip(fa["record"], fa["member"]))
    same = ma == dict(zip(fb["record"], fb["member"]))
    if not same:
        return False, "same data, different audited records: runs resampled independently", None
    return True, "same data and records: paired bootstrap over the shared records", np.sort(fa["record"].to_numpy())


def _sentence(label: str, d: difference.Difference) -> str:
    numbers = (
        f"TPR@1% {100 * d.a:.1f} -> {100 * d.b:.1f}, difference {100 * d.difference:+.1f} "
        f"[{100 * d.ci[0]:+.1f}, {100 * d.ci[1]:+.1f}]"
    )
    if d.ci[1] < 0:
        return f"{label}: B leaks less than A: {numbers}"
    if d.ci[0] > 0:
        return f"{label}: B leaks more than A: {numbers}"
    return f"{label}: no detectable difference: {numbers}"


def compare(a: Any, b: Any, resamples: int = difference.RESAMPLES) -> dict:
    """B against A for every membership test both runs hold.

    Args:
        a: run A: a run directory (results.json and scores.parquet/csv) or an ``AuditResult``.
        b: run B, the same.
        resamples: bootstrap resamples.

    Returns:
        compare.json's content: how the runs were paired, and per attack the differences with intervals and
        a one-line verdict.

    Raises:
        DataError: a directory that is no run, a run of unknown membership, or no attack in common.
    """
    (ra, fa, name_a), (rb, fb, name_b) = load_run(a), load_run(b)
    paired, how, records = _pairing(ra, rb, fa, fb)
    by_label = {x["label"]: x for x in rb["attacks"]}
    shared = [x for x in ra["attacks"] if x["label"] in by_label and not is_ranking(x) and "tpr_at_fpr" in x]
    if not shared:
        raise DataError(f"compare: {name_a} and {name_b} have no membership test in common (matched by label)")
    rows = []
    for x in shared:
        levels = tuple(float(k) for k in x["tpr_at_fpr"] if k in by_label[x["label"]]["tpr_at_fpr"])
        diff = difference.compare(
            attack_scores(fa, x, records), attack_scores(fb, by_label[x["label"]], records), levels, paired, resamples
        )
        as_json = {k: {"a": d.a, "b": d.b, "difference": d.difference, "ci": list(d.ci)} for k, d in diff.items()}
        rows.append({
            "attack": x["label"],
            "verdict": _sentence(x["label"], diff[HEADLINE]) if HEADLINE in diff else None,
            "auc": as_json.pop("auc"),
            "tpr_at_fpr": as_json,
        })  # fmt: skip
    return {
        "a": name_a,
        "b": name_b,
        "paired": paired,
        "pairing": how,
        "data": {
            "a": ra.get("dataset"),
            "b": rb.get("dataset"),
            "same": ra.get("data_fingerprint") == rb.get("data_fingerprint"),
        },
        "confidence": 0.95,
        "resamples": resamples,
        "attacks": rows,
        "only_in_a": [x["label"] for x in ra["attacks"] if x["label"] not in by_label],
        "only_in_b": sorted(set(by_label) - {x["label"] for x in ra["attacks"]}),
    }
