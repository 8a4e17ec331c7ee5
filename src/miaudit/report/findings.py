"""What a run answers, for results.json, the reports and the console: the verdict, the records at risk under
FDR control, and each attack's precision at realistic member priors. The statistics are in ``stats.verdict``,
``stats.fdr`` and ``stats.precision``; this module picks their inputs from a run and words the answer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..experiment.run import AttackRun, RunResult
from ..results import WorstCase, WorstCell
from ..stats import fdr, precision, signals
from ..stats.metrics import clopper_pearson, flagged_at_fpr
from . import at_risk
from .leak_verdict import membership_tests, pct
from .ranking import headline_log_pvalues


def n_calibration(res: RunResult) -> int | None:
    exp = res.experiment
    calibrates = getattr(exp, "calibrates", False)
    return len(getattr(exp.split, exp.calibration_part)) if calibrates else None


def records_at_risk(res: RunResult) -> dict[str, Any]:
    """results.json's ``records_at_risk``: the records named at the run's FDR (``report.at_risk``), by which attack
    and procedure, what that procedure assumes, how it did on the pseudo-targets, and (membership known) the
    realized FDP on the target with its exact interval."""
    level = float(res.experiment.cfg.fdr)
    n_cal, m = n_calibration(res), len(res.experiment.query_idx)
    found, head = at_risk.named(res)
    out: dict[str, Any] = {"fdr": level, "attack": None if head is None else head.run.attack.label}
    if head is None:
        return {**out, "note": "no attack in this run gives p-values: no records can be flagged"}
    count = int(head.flagged.sum())
    out |= {
        "count": count,
        "procedure": head.procedure,
        "assumes": fdr.PROCEDURES[head.procedure],
        "p_values": _p_values_basis(head, n_cal),
        "expected_false_discoveries_at_most": level * count,
        "smallest_p_value": _smallest(head, n_cal),
        **({"null_share_estimate": head.pi0} if head.pi0 is not None else {}),
        **({"pseudo_targets": _validation_json(head)} if head.pooled else {}),
    }  # fmt: skip
    if res.experiment.is_member is not None:
        out["realized_fdp"] = fdr.realized_fdp(head.flagged, res.experiment.is_member).to_json(level)
    calibrated = {r.attack.label: fdr.at_risk(np.exp(lp), level, n_cal) for r in res.attacks
                  if (lp := headline_log_pvalues(r)) is not None}  # fmt: skip
    out |= {
        "n_calibration_records": n_cal,
        "calibration_records_needed": fdr.calibration_needed(m, level),
        "by_attack": {c.run.attack.label: _claim_json(c, calibrated.get(c.run.attack.label)) for c in found},
    }
    out["note"] = note(head, out, m)
    return out


def _smallest(c: at_risk.Claim, n_cal: int | None) -> float | None:
    """The smallest p-value the claim's null allows: 1 / (N + 1) among N null scores; None for raw p-values."""
    if c.pooled:
        return 1 / (c.null_size + 1)
    return None if n_cal is None else fdr.smallest_pvalue(n_cal)


def _p_values_basis(c: at_risk.Claim, n_cal: int | None) -> str:
    if c.pooled:
        pseudo = c.run.pseudo_targets or []
        return f"pooled null: rank among {c.null_size} scores of {len(pseudo)} references as pseudo-targets"
    return "calibrated" if n_cal is not None else "raw (not calibrated)"


def _validation_json(c: at_risk.Claim) -> dict[str, Any]:
    pseudo = c.run.pseudo_targets or []
    out: dict[str, Any] = {"count": len(pseudo), "null_scores": c.null_size}
    if c.validation is not None:
        out["realized_fdp"] = c.validation.to_json(c.level)
    return out


def _claim_json(c: at_risk.Claim, calibrated: fdr.AtRisk | None) -> dict[str, Any]:
    out: dict[str, Any] = {"count": int(c.flagged.sum()), "procedure": c.procedure, "pooled": c.pooled}
    if c.validation is not None:
        out["pseudo_target_fdp"] = c.validation.fdp.value
    if c.target_check is not None:
        out["calibration_records_at_pooled_p_0.01"] = c.target_check
    if calibrated is not None:
        out |= {"count_calibrated": calibrated.count, "at_floor": calibrated.at_floor}
    return out


def note(c: at_risk.Claim, found: dict[str, Any], m: int) -> str:
    """One sentence: whose count, on which p-values, by which procedure, and what holds it."""
    level, label = c.level, c.run.attack.label
    said = f"{found['count']} of {m} records flagged at FDR {level:g} by {label} ({fdr.PROCEDURE_NAMES[c.procedure]}"
    if c.pooled:
        v = c.validation
        said += f" on p-values from a pooled null of {c.null_size} reference scores; "
        if v is None:
            said += "its validity could not be measured: no pseudo-target has records it trained on)"
        else:
            fdp = v.fdp
            said += (f"on the {len(c.run.pseudo_targets or [])} pseudo-targets the same procedure's realized FDP was "
                     f"{pct(fdp.value)} [{pct(fdp.ci[0])}, {pct(fdp.ci[1])}] of {fdp.flagged} flagged"
                     + (", above the level: these claims may not hold)" if fdp.value > level else ")"))  # fmt: skip
    elif found["p_values"] == "calibrated":
        n_cal = found["n_calibration_records"]
        said += f" on calibrated p-values; none can be below 1/({n_cal}+1)"
        if fdr.smallest_pvalue(n_cal) > level / m:
            said += (
                f", so a single record among {m} would need {found['calibration_records_needed']} calibration records"
            )
        said += ")"
    else:
        said += " on raw p-values, NOT calibrated: the FDR holds only as far as the attack's own null model does)"
    if "realized_fdp" in found:
        r = found["realized_fdp"]
        above = (
            " ABOVE the FDR level, its whole interval: the procedure's assumptions do not hold here"
            if r["above_level"]
            else " (above the level, but the level is inside its interval: FDR bounds the expected share over "
            "audits, not one audit's share)"
            if r["value"] > level
            else ""
        )
        said += (f"; realized FDP on the target {pct(r['value'])} [{pct(r['ci'][0])}, {pct(r['ci'][1])}] "
                 f"({r['non_members']} non-members){above}")  # fmt: skip
    return said


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


WORST_CASE_SHARES = (0.01, 0.1)
WORST_CASE_FPR = 0.01


def vulnerability(res: RunResult) -> tuple[str, np.ndarray] | None:
    """A per-query vulnerability score that reads no target membership: the references' mean loss on the record
    (records the references find hard, the atypical ones, leak most: Carlini et al. 2022, Aerni et al. 2024);
    without references, GLS on the target. None when neither is there."""
    exp = res.experiment
    if exp.references:
        queries = exp.attack_inputs().queries
        losses = signals.compute("loss", queries.ref_logits, queries.labels)
        return "the references' mean loss", np.nanmean(np.asarray(losses, dtype=np.float64), axis=0)
    ranking = next((r for r in res.attacks if r.attack.info.is_ranking), None)
    return None if ranking is None else (ranking.attack.label, ranking.result.scores)


def worst_case(res: RunResult) -> WorstCase | None:
    """results.json's ``worst_case`` (Aerni et al. 2024): each membership test's TPR at 1% FPR on the members among
    the records a membership-free vulnerability score puts most at risk (the top 1% and 10% of the queries), with
    the attack table's threshold at that level (``stats.metrics.flagged_at_fpr``: its "average" is the table's TPR).
    None without such a score, membership, or a membership test (a reference-free GLS-only audit)."""
    exp, found, tests = res.experiment, vulnerability(res), membership_tests(res)
    if found is None or exp.is_member is None or not tests:
        return None
    member = np.asarray(exp.is_member, dtype=bool)
    order = np.argsort(-np.nan_to_num(found[1], nan=-np.inf), kind="stable")
    by_attack: dict[str, dict[str, WorstCell]] = {}
    for run in tests:
        hit = flagged_at_fpr(run.result.scores, member, WORST_CASE_FPR)
        rows = {"average": _tpr(hit, member)}
        for share in WORST_CASE_SHARES:
            top = np.zeros(len(hit), bool)
            top[order[: max(1, int(np.ceil(share * len(hit))))]] = True
            rows[f"top_{share:g}"] = _tpr(hit, member & top)
        by_attack[run.attack.label] = rows
    return WorstCase(vulnerability=found[0], fpr_level=WORST_CASE_FPR, by_attack=by_attack)


def _tpr(hit: np.ndarray, among: np.ndarray) -> WorstCell:
    n, k = int(among.sum()), int((hit & among).sum())
    return WorstCell(members=n, tpr=k / n if n else None, ci=list(clopper_pearson(k, n)) if n else None)
