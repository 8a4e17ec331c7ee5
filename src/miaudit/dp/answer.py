"""A DP audit's ``answer`` (``results.Answer``): its decision (``violated``, made by ``verdict`` and
``user_code.with_defects``) in the shape every audit ends in: the verdict word, the epsilon lower bound it rests on,
a plain sentence and the procedure behind it (the section's ``verdict`` sentence)."""

from __future__ import annotations

from ..results import Answer, DPAudit


def of(a: DPAudit) -> Answer:
    """violation (the claim rejected, or a defect seen directly), no_violation, or no_claim (no epsilon claimed:
    a lower bound only)."""
    claim = a.compared_with.epsilon if a.compared_with is not None else a.declared_epsilon
    whose = a.compared_with.claim if a.compared_with is not None else "declared"  # "declared", "accounted (RDP)"
    sure = f"{100 * a.confidence:g}% confidence"
    defects = a.training.defects if a.training is not None else []
    if defects:
        word = "violation"
        kinds = ", ".join(d.kind.replace("_", " ") for d in defects)
        summary = f"The training breaks its privacy claim whatever its epsilon: its run shows {kinds}."
    elif a.violated:
        word = "violation"
        summary = (
            f"The training breaks its {whose} epsilon {claim:.3g}: the audit shows it leaks as much as epsilon "
            f"{a.epsilon_lb:.3f} at least ({sure})."
        )
    elif claim is None:
        word = "no_claim"
        summary = f"No epsilon claimed: the training is not private for any epsilon below {a.epsilon_lb:.3f} ({sure})."
    else:
        word = "no_violation"
        weak = a.max_attainable is not None and a.max_attainable <= claim
        could = (
            f"; this audit could show at most {a.max_attainable:.3f}, too little to catch a breach of it"
            if weak
            else ""
        )
        summary = (
            f"No breach of the {whose} epsilon {claim:.3g} found: the audit's lower bound is {a.epsilon_lb:.3f} "
            f"({sure}){could}."
        )
    if a.planted_fault:  # a demonstration: said beside the answer, as in every output
        said = a.planted_fault.get("description", "")
        fault = f"fault planted on purpose, train.dp.planted_fault: {said}"
        summary = f"{summary[:-2]}; {fault})." if summary.endswith(").") else f"{summary[:-1]} ({fault})."
    tests = a.tests or []
    return Answer(
        question="dp",
        verdict=word,
        statistic="epsilon lower bound",
        value=a.epsilon_lb,
        p_value=min(t.holm_adjusted_p_value for t in tests) if tests else None,
        level=round(1 - a.confidence, 12),  # 0.05, not 0.050000000000000044
        summary=summary,
        detail=a.verdict,
        evidence="dp_audit",
    )


def answered(a: DPAudit) -> DPAudit:
    """The section with its ``answer`` set from its decision (the last step of every DP audit's section)."""
    a.answer = of(a)
    return a
