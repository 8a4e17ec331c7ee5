"""Each command's verdict as one word, read from its typed answer: one small function per command, the only place
the gate and the tracker read a verdict (so a change to how a command decides is followed here, once).

A word is the audit's own verdict (``results.answer.VERDICTS``: the ``--fail-on`` conditions ``leaks``,
``violation``, ``not_forgotten``, ``over_forgotten``, ``used`` among them), read from the answer the audit's package
decided (``AuditReport.answer``); files written before answers fall back on the section's own fields. None where
this result gives no verdict (membership unknown, no claimed epsilon, ``no_claim``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..results import AuditReport

Command = Literal["run", "score", "dp-audit", "unlearn", "infer-dataset"]
COMMANDS: tuple[Command, ...] = ("run", "score", "dp-audit", "unlearn", "infer-dataset")


@dataclass(frozen=True)
class VerdictWord:
    """A command's verdict: its word (None: no verdict), the number it rests on, and that number in words."""

    word: str | None
    number: float | None
    said: str


def _word(r: AuditReport, before_answers: str) -> str | None:
    """The answer's verdict (None for ``no_claim``), or for a file written before answers ``before_answers``."""
    if r.answer is None:
        return before_answers
    return None if r.answer.verdict == "no_claim" else r.answer.verdict


def membership(r: AuditReport) -> VerdictWord:
    """``miaudit run`` and ``score``: does the model leak (``verdict``: Holm over every test and FPR level)."""
    v = r.verdict
    if v is None:
        return VerdictWord(None, None, "this audit gives no leak verdict (membership unknown)")
    p = v.adjusted_p_value if v.adjusted_p_value is not None else v.p_value
    at = (
        f"{v.attack}: TPR {100 * v.tpr:.3g}% at {100 * v.fpr_level:g}% FPR, "
        if v.tpr is not None and v.fpr_level
        else ""
    )
    said = f"{at}Holm-adjusted p = {p:.2g}" if p is not None else at.rstrip(", ")
    return VerdictWord(_word(r, "leaks" if v.leaks else "no_leak_detected"), p, said)


def dp(r: AuditReport) -> VerdictWord:
    """``miaudit dp-audit``: does the audit reject the claimed epsilon (``dp_audit.violated``)."""
    a = r.dp_audit
    if a is None or a.violated is None:
        return VerdictWord(None, None, "this DP audit tests no claimed epsilon (declare one: train.dp or dp_training)")
    claim = f" against the claimed {a.declared_epsilon:g}" if a.declared_epsilon is not None else ""
    said = f"epsilon lower bound {a.epsilon_lb:.3g}{claim} (confidence {a.confidence:g})"
    return VerdictWord(_word(r, "violation" if a.violated else "no_violation"), a.epsilon_lb, said)


def unlearning(r: AuditReport) -> VerdictWord:
    """``miaudit unlearn``: verified, not_forgotten, over_forgotten, or no_claim (no verdict)."""
    u = r.unlearning
    if u is None or u.verdict == "no_claim":
        return VerdictWord(None, None, "this unlearning audit makes no claim (the retrained models cannot tell)")
    p = u.p_over_forgotten if u.verdict == "over_forgotten" else u.p_remembered
    tail = "over-forgotten" if u.verdict == "over_forgotten" else "remembered"
    return VerdictWord(
        _word(r, u.verdict), p, f"p {tail} = {p:.2g} at level {u.level:g}, {len(u.remembered)} records named"
    )


def dataset_inference(r: AuditReport) -> VerdictWord:
    """``miaudit infer-dataset``: was the suspect set used (``dataset_inference.used``; None: inconclusive)."""
    d = r.dataset_inference
    if d is None or d.used is None:
        return VerdictWord(None, None, "this dataset inference is inconclusive (its blind guard or power says so)")
    return VerdictWord(
        _word(r, "used" if d.used else "no_evidence"), d.p_value, f"p = {d.p_value:.2g} at level {d.level:g}"
    )


BY_COMMAND: dict[Command, Callable[[AuditReport], VerdictWord]] = {
    "run": membership,
    "score": membership,
    "dp-audit": dp,
    "unlearn": unlearning,
    "infer-dataset": dataset_inference,
}


def command_of(r: AuditReport) -> Command:
    """Which command wrote a results.json (``miaudit track DIR``, ``miaudit.gate`` without a command)."""
    if r.dataset_inference is not None:
        return "infer-dataset"
    if r.unlearning is not None:
        return "unlearn"
    if r.dp_audited:
        return "dp-audit"
    return "score" if "outputs" in r.config else "run"
