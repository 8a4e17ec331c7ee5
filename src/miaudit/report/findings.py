"""What a run answers, for results.json, the reports and the console: the verdict, the records at risk under
FDR control, and each attack's precision at realistic member priors. The statistics are in ``stats.verdict``,
``stats.fdr`` and ``stats.precision``; this module picks their inputs from a run and words the answer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..experiment.run import AttackRun, RunResult
from ..stats import fdr, precision
from ..stats import verdict as rule
from .ranking import headline_log_pvalues, risk_basis

RANKINGS = frozenset({"gls"})  # per-record risk rankings, not membership tests: out of the verdict and PPV
HEADLINE_LEVEL = 0.01


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def membership_tests(res: RunResult) -> list[AttackRun]:
    """The attack rows that test membership (every row but the risk rankings), with metrics."""
    return [r for r in res.attacks if r.attack.name not in RANKINGS and r.metrics is not None]


def verdict(res: RunResult) -> dict[str, Any] | None:
    """results.json's ``verdict``: one decision over every attack and FPR level (``stats.verdict``)."""
    runs, exp = membership_tests(res), res.experiment
    if not runs or exp.is_member is None:
        return None
    levels = tuple(float(k) for k in runs[0].metrics.tpr_at_fpr)  # type: ignore[union-attr]
    v = rule.decide({r.attack.label: r.result.scores for r in runs}, exp.is_member, levels)
    t = v.basis(HEADLINE_LEVEL)
    ci = next(r for r in runs if r.attack.label == t.attack).metrics.tpr_at_fpr_ci[str(t.level)]  # type: ignore
    power = {str(a): v.smallest_detectable_tpr(a) for a in levels}
    tpr = t.tp / t.n_members
    where = f"{t.attack} identifies {_pct(tpr)} [{_pct(ci[0])}, {_pct(ci[1])}] of members at {_pct(t.level)} FPR"
    tests = f"{len(v.tests)} tests ({len(runs)} attacks x {len(levels)} FPR levels)"
    if v.leaks:
        statement = (
            f"Leaks: {where}, more than chance allows (exact p = {t.p_value:.2g}; Holm-adjusted over {tests}: "
            f"{t.adjusted:.2g} <= {v.alpha:g})."
        )
    else:
        need = power.get(str(HEADLINE_LEVEL))
        statement = (
            f"No leak detected: no attack tells members from non-members better than chance at family-wise error "
            f"{v.alpha:g} over {tests}; best at {_pct(t.level)} FPR: {where}. "
            + (
                f"This audit would detect a TPR@{_pct(HEADLINE_LEVEL)} of {_pct(need)} or more."
                if need is not None
                else f"With these numbers of records no TPR@{_pct(HEADLINE_LEVEL)} could be told from chance."
            )
        )
    return {
        "statement": statement,
        "leaks": v.leaks,
        "attack": t.attack,
        "fpr_level": t.level,
        "tpr": tpr,
        "tpr_ci": list(ci),
        "p_value": t.p_value,
        "adjusted_p_value": t.adjusted,
        "rule": (
            "leaks when Holm's procedure over every (attack, FPR level) test rejects one at family-wise error "
            f"{v.alpha:g}; each test's exact p-value is the negative hypergeometric tail of the members above the "
            "threshold that flags at most floor(level x non-members) non-members, under exchangeable members and "
            "non-members (docs/concepts.md, the verdict)"
        ),
        "family_alpha": v.alpha,
        "n_tests": len(v.tests),
        "smallest_detectable_tpr": power,
        "rejected": [
            {"attack": r.attack, "fpr_level": r.level, "tpr": r.tp / r.n_members, "adjusted_p_value": r.adjusted}
            for r in v.rejected
        ],
    }


def _records_attack(res: RunResult, basis: str | None) -> AttackRun | None:
    """The attack whose p-values give the records at risk: the one ranking the most exposed records (report.md),
    else the verdict's, else the first with p-values."""
    tested = [r for r in res.attacks if headline_log_pvalues(r) is not None]
    named = [r for r in tested if r is risk_basis(res)] or [r for r in tested if r.attack.label == basis]
    return next(iter(named or tested), None)


def n_calibration(res: RunResult) -> int | None:
    exp = res.experiment
    calibrates = getattr(exp, "calibrates", False)
    return len(getattr(exp.split, exp.calibration_part)) if calibrates else None


def records_at_risk(res: RunResult, basis: str | None) -> dict[str, Any]:
    """results.json's ``records_at_risk``: Benjamini-Hochberg at the run's FDR on each attack's headline p-values."""
    level = float(res.experiment.cfg.fdr)
    n_cal, m = n_calibration(res), len(res.experiment.query_idx)
    head = _records_attack(res, basis)
    logs = {r.attack.label: headline_log_pvalues(r) for r in res.attacks}
    per = {label: fdr.at_risk(np.exp(lp), level, n_cal) for label, lp in logs.items() if lp is not None}
    out: dict[str, Any] = {"fdr": level, "attack": None if head is None else head.attack.label}
    if head is None:
        return {**out, "note": "no attack in this run gives p-values: no records can be flagged"}
    mine = per[head.attack.label]
    out |= {
        "count": mine.count,
        "expected_false_discoveries_at_most": mine.false_discoveries_bound,
        "smallest_p_value": None if n_cal is None else fdr.smallest_pvalue(n_cal),
        "n_calibration_records": n_cal,
        "calibration_records_needed": fdr.calibration_needed(m, level),
        "records_at_floor": mine.at_floor,
        "by_attack": {label: {"count": a.count, "at_floor": a.at_floor} for label, a in per.items()},
        "note": floor_note(mine, n_cal, m, level),
    }
    return out


def floor_note(a: fdr.AtRisk, n_cal: int | None, m: int, level: float) -> str:
    """What the count can and cannot say, given the conformal floor."""
    said = f"{a.count} of {a.n_tested} records flagged at FDR {level:g} (Benjamini-Hochberg on calibrated p-values)"
    if n_cal is None:
        return said + "; p-values are raw (not calibrated): BH's guarantee holds only as far as they are valid"
    floor = fdr.smallest_pvalue(n_cal)
    note = f"; no p-value can be below 1/({n_cal}+1) = {floor:.3g} with {n_cal} calibration records"
    if floor > level / m:
        note += f" (to flag a single record among {m} needs {fdr.calibration_needed(m, level)})"
    if a.at_floor > 1:
        note += f"; {a.at_floor} records tie at that floor: their order among themselves is uninformative"
    return said + note


def ppv(run: AttackRun, n_members: int, n_nonmembers: int) -> dict[str, Any]:
    """Per member prior and FPR level: the PPV at the operating point, with its 95% interval."""
    m = run.metrics
    assert m is not None
    out: dict[str, Any] = {}
    for prior in precision.PRIORS:
        at: dict[str, Any] = {}
        for level, tpr in m.tpr_at_fpr.items():
            tp, fp = round(tpr * n_members), round(m.realized_fpr[level] * n_nonmembers)
            value, ci = precision.ppv_interval(tp, n_members, fp, n_nonmembers, prior)
            at[level] = {"ppv": value, "ci": list(ci)}  # ppv None: no non-member flagged, no point estimate
        out[f"prior_{prior:g}"] = at
    return out
