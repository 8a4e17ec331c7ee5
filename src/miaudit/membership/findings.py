"""What a run answers, for results.json, the reports and the console: the verdict, the records at risk under
FDR control, and each attack's precision at realistic member priors. The statistics are in ``stats.verdict``,
``stats.fdr``, ``stats.multiple_testing`` and ``stats.precision``; this module picks their inputs from a run and
words the answer."""

from __future__ import annotations

import numpy as np

from ..experiment.run import AttackRun, RunResult
from ..results import PPVByPrior, PPVCell, WorstCase, WorstCell
from ..results.findings import Claim, RealizedFDP, RecordsAtRisk, Screen
from ..stats import fdr, multiple_testing, precision, signals
from ..stats.metrics import clopper_pearson, flagged_at_fpr
from . import at_risk
from .ranking import headline_log_pvalues
from .verdict import membership_tests, pct


def n_calibration(res: RunResult) -> int | None:
    exp = res.experiment
    calibrates = getattr(exp, "calibrates", False)
    return len(getattr(exp.split, exp.calibration_part)) if calibrates else None


def records_at_risk(res: RunResult, found: list[at_risk.Claim], head: at_risk.Claim | None) -> RecordsAtRisk:
    """results.json's ``records_at_risk``: the records named at the run's FDR (``found``, ``head``:
    ``at_risk.named``), by which attack (and the rule that chose it), which procedure on which p-values, what it
    assumes, every other attack's count under it, why none where none is flagged, (membership known) the realized
    FDP with its exact interval, and the answer in one plain sentence (``summary``)."""
    level = float(res.experiment.cfg.fdr)
    n_cal = n_calibration(res)
    if head is None:
        nothing = "no attack in this run gives p-values: no records can be flagged"
        return RecordsAtRisk(
            fdr=level, attack=None, count=0, why_none=nothing, note=nothing,
            summary=f"none can be named at {pct(level)} FDR: no attack in this run gives p-values.",
        )  # fmt: skip
    count = int(head.flagged.sum())
    sc = head.screened
    where = head.where
    realized = None
    if res.experiment.is_member is not None:
        realized = fdr.realized_fdp(head.flagged, res.experiment.is_member).to_json(level)
    m = len(res.experiment.query_idx)
    why = None if count else why_none(head, m)
    return RecordsAtRisk(
        fdr=level,
        attack=head.run.attack.label,
        attack_rule=at_risk.attack_rule(res),
        count=count,
        why_none=why,
        procedure=head.procedure,
        assumes=fdr.PROCEDURES[head.procedure],
        p_values=_p_values_basis(head),
        **({"screen": Screen(vulnerability=where.vulnerability, fraction=where.fraction, queries=sc.m,
                             calibration_records=sc.n_calibration)} if sc is not None and where is not None else {}),
        expected_false_discoveries_at_most=level * count,
        **({"smallest_p_value": sc.floor, "null_share_estimate": sc.pi0, "at_smallest_p_value": sc.at_floor,
            "needed_at_smallest_p_value": sc.needed_at_floor} if sc is not None else {}),
        **({"realized_fdp": realized} if realized is not None else {}),
        n_calibration_records=n_cal,
        **({"calibration_records_needed": sc.calibration_needed} if sc is not None else {}),
        by_attack={c.run.attack.label: _claim(c) for c in found},
        note=note(head, count, realized, why, m),
        summary=summary(head, count),
    )  # fmt: skip


def _p_values_basis(c: at_risk.Claim) -> str:
    if c.screened is None:
        return "raw (not calibrated)"
    return f"screened conformal: rank among the {c.screened.n_calibration} calibration records the screen kept"


def _claim(c: at_risk.Claim) -> Claim:
    sc = c.screened
    extra = {} if sc is None else {"tested": sc.m, "at_floor": sc.at_floor, "needed_at_floor": sc.needed_at_floor}
    own = headline_log_pvalues(c.run)  # the p_value column; its q_value is Benjamini-Hochberg of it
    bh = {} if own is None else {"bh_count": int((multiple_testing.bh_qvalues(np.exp(own)) <= c.level).sum())}
    return Claim(flagged=int(c.flagged.sum()), **bh, procedure=c.procedure, basis=c.basis, **extra)


def why_none(c: at_risk.Claim, m: int) -> str:
    """No record flagged: why, with the number that decides it."""
    name, level = c.run.attack.label, c.level
    qs = c.q[np.isfinite(c.q)]
    smallest_q = f"{float(qs.min()):.2g}" if qs.size else "none"
    sc = c.screened
    if sc is None:
        return (f"No record can be named at FDR {level:g}: BH flags the k smallest p-values when the k-th is at most "
                f"{level:g} x k / {m}, and no k meets it for {name} (its smallest q-value is {smallest_q}, above "
                f"{level:g})")  # fmt: skip
    if sc.m == 0 or sc.n_calibration == 0:
        return (f"No record can be named at FDR {level:g}: the screen kept {sc.m} queries and {sc.n_calibration} "
                "calibration records, too few to test")  # fmt: skip
    return (
        f"No record can be named at FDR {level:g}: with {sc.n_calibration} calibration records in the screen no "
        f"p-value of {name} is below 1/{sc.n_calibration + 1} = {sc.floor:.2g}, and "
        f"{fdr.PROCEDURE_NAMES[c.procedure]} over the {sc.m} screened queries flags records there only when at "
        f"least {sc.needed_at_floor} of them are; {sc.at_floor} are, and no larger p-value has enough records at or "
        f"below it (smallest q-value {smallest_q}). Naming one record alone would take {sc.calibration_needed} "
        f"calibration records in the screen, or a leak that puts {sc.needed_at_floor} screened records above every "
        "calibration record"
    )


def summary(c: at_risk.Claim, count: int) -> str:
    """The records at risk in one plain sentence, no procedure named (the console's line; ``note``: the detail)."""
    level = pct(c.level)
    if count:
        expected = c.level * count
        return (f"{count} named at {level} FDR by {c.run.attack.label} (at_risk.csv); at most {expected:.2g} of them "
                "expected to be false.")  # fmt: skip
    sc = c.screened
    if sc is None:
        label = c.run.attack.label
        return f"none can be named at {level} FDR by {label}: no p-value is small enough among the queries."
    if sc.m == 0 or sc.n_calibration == 0:
        return f"none can be named at {level} FDR: too few records to test."
    if sc.calibration_needed > sc.n_calibration:
        return (f"none can be named at {level} FDR: {sc.n_calibration} calibration records are too few to single one "
                f"out (about {_about(sc.calibration_needed)} needed).")  # fmt: skip
    return f"none can be named at {level} FDR: no record stands out enough from the calibration records."


def _about(n: int) -> str:
    """A count to two significant digits, with thousands separators: 6439 -> '6,400'."""
    return f"{int(float(f'{n:.2g}')):,}"


def note(c: at_risk.Claim, count: int, realized: RealizedFDP | None, why: str | None, m: int) -> str:
    """One sentence: whose count, on which p-values, by which procedure, and what holds it."""
    level, label = c.level, c.run.attack.label
    said = f"{count} of {m} records flagged at FDR {level:g} by {label} ({fdr.PROCEDURE_NAMES[c.procedure]}"
    sc = c.screened
    if sc is not None:
        said += (
            f" on conformal p-values of the {sc.m} queries a screen on the references' mean loss kept, among the "
            f"{sc.n_calibration} calibration records it kept; none can be below 1/({sc.n_calibration}+1))"
        )
    else:
        said += " on raw p-values, NOT calibrated: the FDR holds only as far as the attack's own null model does)"
    if realized is not None:
        r = realized
        above = (
            " ABOVE the FDR level, its whole interval: the procedure's assumptions do not hold here"
            if r.above_level
            else " (above the level, but the level is inside its interval: FDR bounds the expected share over "
            "audits, not one audit's share)"
            if r.value > level
            else ""
        )
        said += (f"; realized FDP on the target {pct(r.value)} [{pct(r.ci[0])}, {pct(r.ci[1])}] "
                 f"({r.non_members} non-members){above}")  # fmt: skip
    if why:
        said += ". " + why
    return said


def ppv(run: AttackRun, n_members: int, n_nonmembers: int) -> PPVByPrior:
    """Per member prior and FPR level: the PPV at the operating point, with its 95% interval."""
    m = run.metrics
    assert m is not None
    out: PPVByPrior = {}
    for prior in precision.PRIORS:
        at: dict[str, PPVCell] = {}
        for level, tpr in m.tpr_at_fpr.items():
            tp, fp = round(tpr * n_members), round(m.realized_fpr[level] * n_nonmembers)
            value, ci = precision.ppv_interval(tp, n_members, fp, n_nonmembers, prior)
            at[level] = PPVCell(ppv=value, ci=list(ci))  # ppv None: no non-member flagged, no point estimate
        out[f"prior_{prior:g}"] = at
    return out


WORST_CASE_SHARES = (0.01, 0.1)
WORST_CASE_FPR = 0.01


def vulnerability(res: RunResult, where: at_risk.Screen | None = None) -> tuple[str, np.ndarray] | None:
    """A per-query vulnerability score that reads no target membership: the references' mean loss on the record
    (records the references find hard, the atypical ones, leak most: Carlini et al. 2022, Aerni et al. 2024; the
    screen's, ``where``, when it computed it); without references, GLS on the target. None when neither is there."""
    exp = res.experiment
    if where is not None and where.query_vulnerability is not None:
        return at_risk.VULNERABILITY, where.query_vulnerability
    if exp.references:
        queries = exp.attack_inputs().queries
        losses = signals.compute("loss", queries.ref_logits, queries.labels)
        return at_risk.VULNERABILITY, np.nanmean(np.asarray(losses, dtype=np.float64), axis=0)
    ranking = next((r for r in res.attacks if r.attack.info.is_ranking), None)
    return None if ranking is None else (ranking.attack.label, ranking.result.scores)


def worst_case(res: RunResult, where: at_risk.Screen | None = None) -> WorstCase | None:
    """results.json's ``worst_case`` (Aerni et al. 2024): each membership test's TPR at 1% FPR on the members among
    the records a membership-free vulnerability score puts most at risk (the top 1% and 10% of the queries), with
    the attack table's threshold at that level (``stats.metrics.flagged_at_fpr``: its "average" is the table's TPR).
    None without such a score, membership, or a membership test (a reference-free GLS-only audit)."""
    exp, found, tests = res.experiment, vulnerability(res, where), membership_tests(res)
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
