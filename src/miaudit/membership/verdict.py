"""results.json's ``verdict`` and its ``answer``: does the model leak? One decision over every membership test and
FPR level (``stats.verdict``: exact per-test p-values, Holm), worded once for the reports and the console."""

from __future__ import annotations

from ..experiment.run import AttackRun, RunResult
from ..results import Answer, Rejected, Verdict
from ..stats.verdict import decide

HEADLINE_LEVEL = 0.01


def pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def membership_tests(res: RunResult) -> list[AttackRun]:
    """The attack rows that test membership (every row but the risk rankings: out of the verdict and PPV), with
    metrics."""
    return [r for r in res.attacks if not r.attack.info.is_ranking and r.metrics is not None]


def verdict(res: RunResult) -> Verdict | None:
    """results.json's ``verdict``: one decision over every attack and FPR level (``stats.verdict``)."""
    runs, exp = membership_tests(res), res.experiment
    if not runs or exp.is_member is None:
        return None
    levels = tuple(float(k) for k in runs[0].metrics.tpr_at_fpr)  # type: ignore[union-attr]
    v = decide({r.attack.label: r.result.scores for r in runs}, exp.is_member, levels)
    t = v.basis(HEADLINE_LEVEL)
    ci = next(r for r in runs if r.attack.label == t.attack).metrics.tpr_at_fpr_ci[str(t.level)]  # type: ignore
    power = {str(a): v.smallest_detectable_tpr(a) for a in levels}
    tpr = t.tp / t.n_members
    where = f"{t.attack} identifies {pct(tpr)} [{pct(ci[0])}, {pct(ci[1])}] of members at {pct(t.level)} FPR"
    tests = f"{len(v.tests)} tests ({len(runs)} attacks x {len(levels)} FPR levels)"
    if v.leaks:
        said = f"Leaks: {where}, more than chance allows."
        detail = f"exact p = {t.p_value:.2g}; Holm-adjusted over {tests}: {t.adjusted:.2g} <= {v.alpha:g}"
        statement = f"{said[:-1]} ({detail})."
    else:
        need = power.get(str(HEADLINE_LEVEL))
        can = (
            f"This audit would detect a TPR@{pct(HEADLINE_LEVEL)} of {pct(need)} or more."
            if need is not None
            else f"With these numbers of records no TPR@{pct(HEADLINE_LEVEL)} could be told from chance."
        )
        said = (
            "No leak detected: no attack tells members from non-members better than chance; best at "
            f"{pct(t.level)} FPR: {where}. {can}"
        )
        detail = (
            f"family-wise error {v.alpha:g} over {tests}; exact p = {t.p_value:.2g}, Holm-adjusted {t.adjusted:.2g}"
        )
        statement = (
            f"No leak detected: no attack tells members from non-members better than chance at family-wise error "
            f"{v.alpha:g} over {tests}; best at {pct(t.level)} FPR: {where}. {can}"
        )
    return Verdict(
        statement=statement,
        leaks=v.leaks,
        attack=t.attack,
        fpr_level=t.level,
        tpr=tpr,
        tpr_ci=list(ci),
        p_value=t.p_value,
        adjusted_p_value=t.adjusted,
        rule=(
            "leaks when Holm's procedure over every (attack, FPR level) test rejects one at family-wise error "
            f"{v.alpha:g}; each test's exact p-value is the negative hypergeometric tail of the members above the "
            "threshold that flags at most floor(level x non-members) non-members, under exchangeable members and "
            "non-members (docs/concepts.md, the verdict)"
        ),
        family_alpha=v.alpha,
        n_tests=len(v.tests),
        smallest_detectable_tpr=power,
        rejected=[
            Rejected(attack=r.attack, fpr_level=r.level, tpr=r.tp / r.n_members, adjusted_p_value=r.adjusted)
            for r in v.rejected
        ],
        summary=said,  # the console's plain sentence
        detail=detail,
        answer=Answer(
            question="membership",
            verdict="leaks" if v.leaks else "no_leak_detected",
            statistic=f"TPR at {pct(t.level)} FPR ({t.attack})",
            value=tpr,
            p_value=t.adjusted,
            level=v.alpha,
            summary=said,
            detail=f"{said} How: {detail}.",  # the procedure and its numbers
            evidence="verdict",
        ),
    )
