"""An unlearning audit's ``answer`` (``results.Answer``): its decision (``unlearning.verdict``, made in ``audit``
and ``verify``) in the shape every audit ends in: the verdict word, the p-value it rests on, one plain sentence
and the procedure with its numbers (the section's ``sentence`` and ``test``)."""

from __future__ import annotations

from ..results import Answer
from ..results.unlearning import UnlearningSection
from .verify import GUARD_LEVEL


def of(s: UnlearningSection) -> Answer:
    f, auc = len(s.forget), s.per_example_auc
    statistic = "per-example AUC, unlearned vs retrained models"
    value: float | None = auc.value
    p_value: float | None = s.p_value
    level: float | None = s.level
    if s.verdict == "no_claim":
        summary = (
            f"No claim: models that never trained on the {f} forgotten records already tell them from other records, "
            "so the audit cannot tell what unlearning left."
        )
        p_value, level = s.p_selection, GUARD_LEVEL
    elif s.verdict == "verified":
        summary = f"Forgetting verified: the unlearned model treats the {f} forgotten records as retrained models do."
    elif s.verdict == "not_forgotten":
        summary = (
            f"Not forgotten: the unlearned model still knows the {f} forgotten records better than retrained models "
            f"do; {len(s.remembered)} of them named as still remembered."
        )
    elif s.damaged:
        t = s.utility.test
        summary = (
            f"Over-forgotten: the unlearning damaged the model (test accuracy {t.unlearned:.2f} against "
            f"{t.retrained_mean:.2f} for retrained models), so the forgotten records do not stand out from the rest."
        )
        statistic, value, p_value, level = "test accuracy of the unlearned model", t.unlearned, None, None
    else:
        summary = (
            f"Over-forgotten: the unlearned model knows the {f} forgotten records less than retrained models do, "
            f"which reveals who asked to be forgotten; {len(s.over_forgotten)} of them named."
        )
    rests_on = {"statistic": statistic, "value": value, "p_value": p_value, "level": level}
    detail = f"{s.sentence} The test: {s.test}."
    return Answer(question="unlearning", verdict=s.verdict, summary=summary, detail=detail, evidence="unlearning",
                  **rests_on)  # fmt: skip


def answered(s: UnlearningSection) -> UnlearningSection:
    """The section with its ``answer`` set from its verdict (the last step of the audit)."""
    s.answer = of(s)
    return s
