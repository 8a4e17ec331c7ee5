"""``miaudit compare RUN_A RUN_B`` and ``miaudit.compare(a, b)``: did a mitigation change what the attacks find?

For every membership test both runs hold (matched by label), B - A in TPR at each FPR level and in AUC with a
95% bootstrap interval (``stats.difference``): paired over the shared records when the runs scored the same
records of the same data (a ``miaudit score`` of a run's own export included), independent otherwise
(different data are allowed, and a warning leads the output, beside one naming the attacks not in both runs).
One sentence per attack on TPR at 1% FPR and AUC: B leaks less / more than A by the measure whose interval
excludes 0, else no detectable difference. Written as compare.json, compare.md and compare.html (both ROC
curves per attack).

Two unlearning runs (``miaudit unlearn``) have no attack table: their verdicts, p-values and AUCs are set side by
side, each resting on its own run's tests (no test of B against A is made).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
import pandas as pd
from pydantic import Field

from ..config.files import validated, with_overrides
from ..errors import DataError
from ..results import (
    AttackChange,
    AttackRow,
    AuditReport,
    Change,
    ComparedData,
    Comparison,
    UnlearningComparison,
    UnlearningRun,
)
from ..stats import difference
from ..strict import Strict
from .ranking import attack_kind, slug_of
from .table import ScoresTable

HEADLINE = "0.01"


class CompareSettings(Strict):
    """What ``miaudit compare --set KEY=VALUE`` may change: compare reads two runs, not a config, so its
    ``--set`` keys are these settings (an unknown key is refused in one line, never ignored)."""

    resamples: int = Field(default=difference.RESAMPLES, ge=100, description="bootstrap resamples per interval")


def settings(overrides: list[str] | tuple[str, ...] = ()) -> CompareSettings:
    """The comparison's settings with ``--set`` overrides applied and checked."""
    return validated(CompareSettings, with_overrides({}, overrides), "--set")


@runtime_checkable
class InMemoryRun(Protocol):
    """An audit's result in memory (``miaudit.AuditResult``): its results.json and per-record table."""

    @property
    def results(self) -> AuditReport: ...

    @property
    def scores(self) -> pd.DataFrame: ...


# a run to compare: its output directory, or an audit's result in memory
Run: TypeAlias = str | os.PathLike[str] | InMemoryRun


def _name(run: Run) -> str:
    return "in-memory run" if isinstance(run, InMemoryRun) else str(Path(run))


def load_run(run: Run) -> tuple[AuditReport, pd.DataFrame, str]:
    """(results.json, per-record table, name) of a run directory (results.json of the previous format
    migrated), or of an in-memory audit result."""
    if isinstance(run, InMemoryRun):
        return run.results, run.scores, "in-memory run"
    where = Path(run)
    try:  # the reports' one reader of the per-record table (pyarrow), as a data frame for the pairing below
        table = where / "scores.parquet"
        frame = ScoresTable.read(table if table.exists() else where / "scores.csv").to_pandas()
    except (OSError, ValueError) as e:
        raise DataError(f"compare: {where} is not a miaudit run directory ({type(e).__name__}: {e})") from None
    results = AuditReport.load(where / "results.json", kind_of=attack_kind)
    if results.dp_audit is not None and not results.attacks:  # a multi-run or white-box DP audit: no attack rows
        raise DataError(
            f"compare: {where} is a {results.dp_audit.kind} DP audit with no attack table, only an epsilon lower "
            f"bound ({results.dp_audit.epsilon_lb:.3f}); compare compares attacks' ROCs: read the two bounds in "
            "their report.md"
        )
    if not results.membership_known:
        raise DataError(f"compare: {where} audited records of unknown membership; there is no ROC to compare")
    return results, frame, str(where)


def _unlearning_report(run: Run) -> AuditReport | None:
    """The results.json of an unlearning run (``miaudit unlearn``), None for any other run."""
    if isinstance(run, InMemoryRun):
        results = run.results
    else:
        path = Path(run) / "results.json"
        if not path.is_file():
            return None
        results = AuditReport.load(path, kind_of=attack_kind)
    return results if results.unlearning is not None else None


UNLEARNING_READING = (
    "side by side: each verdict and p-value rests on its own run's tests (its forget set against its models "
    "retrained without it), each AUC's interval is its own run's; no test of B against A is made"
)


def compare_unlearning(name_a: str, ra: AuditReport, name_b: str, rb: AuditReport) -> Comparison:
    """Two unlearning runs side by side: verdicts, p-values, AUCs; warnings where they forgot different records
    of different data."""
    ua, ub = ra.unlearning, rb.unlearning
    assert ua is not None and ub is not None  # both are unlearning runs (_unlearning_report)
    same_data = ra.data_fingerprint == rb.data_fingerprint
    same_forget = same_data and sorted(ua.forget) == sorted(ub.forget)
    warnings = []
    if not same_data:
        warnings.append(f"warning: A audited {ra.dataset}, B audited {rb.dataset}: different data")
    elif not same_forget:
        warnings.append("warning: the runs forgot different records: each verdict is about its own forget set")
    return Comparison(
        a=name_a,
        b=name_b,
        warnings=warnings,
        paired=False,
        pairing="two unlearning runs, " + UNLEARNING_READING,
        data=ComparedData(a=ra.dataset, b=rb.dataset, same=same_data),
        confidence=0.95,
        resamples=0,
        attacks=[],
        only_in_a=[],
        only_in_b=[],
        unlearning=UnlearningComparison(
            a=UnlearningRun.of(ua), b=UnlearningRun.of(ub), same_forget=same_forget, reading=UNLEARNING_READING
        ),
    )


def attack_scores(
    frame: pd.DataFrame, attack: AttackRow, records: np.ndarray | None, by: str = "record"
) -> difference.Scored:
    """One attack's scores, in the order of ``records`` (ids in column ``by``) when given (paired runs)."""
    col = f"{slug_of(attack.name, attack.label, attack.references)}.score"
    f = frame if records is None else frame.set_index(by).loc[records].reset_index()
    return difference.Scored(f[col].to_numpy(float), f["member"].to_numpy(bool))


@dataclass(frozen=True)
class Pairing:
    """How two runs' records line up: paired over ``records`` (ids in columns ``by_a``, ``by_b``), or not."""

    paired: bool
    how: str
    records: np.ndarray | None = None
    by_a: str = "record"
    by_b: str = "record"


def _audited(frame: pd.DataFrame, by: str) -> set[tuple[object, object, object]]:
    """(record id, member, label): the audited records as a run saw them (ids are unique in a run's table)."""
    return set(zip(frame[by], frame["member"], frame["label"] if "label" in frame else frame["member"]))


def _pairing(ra: AuditReport, rb: AuditReport, fa: pd.DataFrame, fb: pd.DataFrame) -> Pairing:
    """Paired when both runs audited the same records of the same data: the same data fingerprint and records,
    or (a ``miaudit score`` of a run's own export) the other run's records by their ids in the original data
    (``original_record``), with the same membership and labels."""
    if ra.data_fingerprint == rb.data_fingerprint:
        if _audited(fa, "record") != _audited(fb, "record"):
            return Pairing(False, "same data, different audited records: runs resampled independently")
        how = "same data and records: paired bootstrap over the shared records"
        return Pairing(True, how, np.sort(fa["record"].to_numpy()))
    by_a = "original_record" if "original_record" in fa else "record"
    by_b = "original_record" if "original_record" in fb else "record"
    if "original_record" in (by_a, by_b) and _audited(fa, by_a) == _audited(fb, by_b):
        return Pairing(
            True,
            "the same records by their ids in the original data (original_record), with the same membership and "
            "labels: paired bootstrap over the shared records",
            np.sort(fa[by_a].to_numpy()),
            by_a,
            by_b,
        )
    return Pairing(False, "different data (fingerprints differ): runs resampled independently")


def _direction(d: difference.Difference) -> str | None:
    """'less' or 'more' leakage in B when the interval excludes 0, else None."""
    return "less" if d.ci[1] < 0 else "more" if d.ci[0] > 0 else None


def _sentence(label: str, tpr: difference.Difference, auc: difference.Difference) -> str:
    """One line per attack from both headline measures, TPR at 1% FPR and AUC, each with its own 95% interval
    (each read alone: a change either interval shows is named with the measure that shows it)."""
    numbers = (
        f"TPR@1% A {100 * tpr.a:.1f} -> B {100 * tpr.b:.1f}, B - A {100 * tpr.difference:+.1f} "
        f"[{100 * tpr.ci[0]:+.1f}, {100 * tpr.ci[1]:+.1f}]; AUC A {auc.a:.3f} -> B {auc.b:.3f}, "
        f"B - A {auc.difference:+.3f} [{auc.ci[0]:+.3f}, {auc.ci[1]:+.3f}]"
    )
    seen = {name: way for name, way in (("TPR@1%", _direction(tpr)), ("AUC", _direction(auc))) if way}
    if not seen:
        return f"{label}: no detectable difference in TPR@1% or AUC: {numbers}"
    if len(set(seen.values())) > 1:
        return (
            f"{label}: mixed: B leaks less than A by {', '.join(k for k, v in seen.items() if v == 'less')}, "
            f"more by {', '.join(k for k, v in seen.items() if v == 'more')}: {numbers}"
        )
    way, by = next(iter(seen.values())), " and ".join(seen)
    quiet = " (no detectable difference in " + ("AUC" if by == "TPR@1%" else "TPR@1%") + ")" if len(seen) == 1 else ""
    return f"{label}: B leaks {way} than A by {by}{quiet}: {numbers}"


def _warnings(ra: AuditReport, rb: AuditReport, pairing: Pairing, only_a: list[str], only_b: list[str]) -> list[str]:
    """What a reader must know before the numbers: different data sets, attacks not compared."""
    out = []
    if not pairing.paired and ra.data_fingerprint != rb.data_fingerprint:
        out.append(
            f"warning: A audited {ra.dataset}, B audited {rb.dataset}: different data, so every "
            "difference below mixes the data with the model"
        )
    if only_a or only_b:
        parts = [f"{', '.join(x)} (only in {w})" for x, w in ((only_a, "A"), (only_b, "B")) if x]
        out.append(f"warning: not compared, not in both runs: {'; '.join(parts)}")
    return out


def _change(d: difference.Difference) -> Change:
    return Change(a=d.a, b=d.b, difference=d.difference, ci=list(d.ci))


def compare(a: Run, b: Run, resamples: int = difference.RESAMPLES) -> Comparison:
    """B against A for every membership test both runs hold.

    Args:
        a: run A: a run directory (results.json and scores.parquet/csv) or an ``AuditResult``.
        b: run B, the same.
        resamples: bootstrap resamples.

    Returns:
        compare.json (``results.Comparison``): how the runs were paired, and per attack the differences with
        intervals and a one-line verdict.

    Raises:
        DataError: a directory that is no run, a run of unknown membership, or no attack in common.
    """
    unlearning_a, unlearning_b = _unlearning_report(a), _unlearning_report(b)
    if unlearning_a is not None and unlearning_b is not None:
        return compare_unlearning(_name(a), unlearning_a, _name(b), unlearning_b)
    if unlearning_a is not None or unlearning_b is not None:
        which, plain = ("A", "B") if unlearning_a is not None else ("B", "A")
        raise DataError(
            f"compare: run {which} is an unlearning run (miaudit unlearn), run {plain} is not; compare sets two "
            "membership audits, or two unlearning runs, side by side"
        )
    (ra, fa, name_a), (rb, fb, name_b) = load_run(a), load_run(b)
    pairing = _pairing(ra, rb, fa, fb)
    by_label = {x.label: x for x in rb.attacks}
    shared = [x for x in ra.tests if x.label in by_label and x.tpr_at_fpr is not None]
    if not shared:
        raise DataError(f"compare: {name_a} and {name_b} have no membership test in common (matched by label)")
    rows = []
    for x in shared:
        other = by_label[x.label]
        levels = tuple(float(k) for k in x.tpr_at_fpr or {} if k in (other.tpr_at_fpr or {}))
        diff = difference.compare(
            attack_scores(fa, x, pairing.records, pairing.by_a),
            attack_scores(fb, other, pairing.records, pairing.by_b),
            levels,
            pairing.paired,
            resamples,
        )
        head = diff.tpr_at_fpr.get(HEADLINE)
        rows.append(
            AttackChange(
                attack=x.label,
                verdict=None if head is None else _sentence(x.label, head, diff.auc),
                auc=_change(diff.auc),
                tpr_at_fpr={k: _change(d) for k, d in diff.tpr_at_fpr.items()},
            )
        )
    only_a = [x.label for x in ra.attacks if x.label not in by_label]
    only_b = sorted(set(by_label) - {x.label for x in ra.attacks})
    return Comparison(
        a=name_a,
        b=name_b,
        warnings=_warnings(ra, rb, pairing, only_a, only_b),
        paired=pairing.paired,
        pairing=pairing.how,
        data=ComparedData(a=ra.dataset, b=rb.dataset, same=ra.data_fingerprint == rb.data_fingerprint),
        confidence=0.95,
        resamples=resamples,
        attacks=rows,
        only_in_a=only_a,
        only_in_b=only_b,
    )
