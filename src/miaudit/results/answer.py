"""results.json's ``answer``: the one shape every audit ends in (``run``/``score``, ``dp-audit``, ``unlearn``,
``infer-dataset``). A verdict from a small fixed set per question, the statistic and p-value it rests on, a
``summary`` (one plain sentence, no procedure named: the console's first line) and a ``detail`` (the procedure and
its numbers), and where the typed evidence lies (``evidence``: the section of results.json the audit wrote).

Each audit's package builds its answer once, from its own decision, before anything is written; the reports, the
consoles and a ``--fail-on`` read ``verdict`` and never re-decide. Optional in results.json (schema version 5):
files written before it have none."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, model_validator

from .base import Number, Section

Question = Literal["membership", "dp", "unlearning", "dataset_inference"]

VERDICTS: dict[str, tuple[str, ...]] = {
    "membership": ("leaks", "no_leak_detected"),
    "dp": ("violation", "no_violation", "no_claim"),
    "unlearning": ("verified", "not_forgotten", "over_forgotten", "no_claim"),
    "dataset_inference": ("used", "no_evidence", "no_claim"),
}
"""question -> its verdicts (stable words: ``--fail-on`` and scripts read them). membership: ``leaks`` when a
membership test rejects chance at the family-wise level, else ``no_leak_detected``; dp: ``violation`` when the audit
rejects the claimed epsilon (or the run shows a defect), ``no_violation`` when it does not, ``no_claim`` when no
epsilon was claimed (a lower bound only); unlearning: the ``unlearning.verdict``; dataset_inference: ``used``,
``no_evidence`` (read with the power) or ``no_claim`` (a guard found the sets different without the model)."""

EVIDENCE: dict[str, str] = {
    "membership": "verdict",
    "dp": "dp_audit",
    "unlearning": "unlearning",
    "dataset_inference": "dataset_inference",
}
"""question -> the results.json section holding its typed evidence"""

PROCEDURE_NAMES = ("Holm", "Bonferroni", "Storey", "Benjamini", "conformal", "screen", "permutation", "DeLong")
"""words a ``summary`` never holds: they name a procedure, which belongs in ``detail``"""


class Answer(Section):
    """What the audit answers, in one shape for every question: the verdict, the number it rests on, a plain
    sentence and the procedure behind it."""

    model_config = ConfigDict(extra="forbid")

    question: Question
    """membership (does the model leak), dp (does the training keep its epsilon), unlearning (did the forgotten
    records leave), dataset_inference (was the suspect set used)"""
    verdict: str
    """one of the question's fixed verdicts (``results.answer.VERDICTS``)"""
    statistic: str
    """what ``value`` is, in words (e.g. "TPR at 1% FPR", "epsilon lower bound", "AUC, suspects vs validation")"""
    value: Number | None
    """the statistic the verdict rests on; None where none could be computed"""
    p_value: Number | None = None
    """the p-value the verdict is taken on (adjusted where a family of tests is held to one level); None where the
    verdict rests on a bound, not a p-value"""
    level: Number | None = None
    """the level the p-value (or the bound's confidence, 1 - level) is held to"""
    summary: str
    """the answer in one plain sentence, no procedure named (the console's first line)"""
    detail: str
    """the procedure and its numbers behind ``summary`` (the console's with ``--explain``)"""
    evidence: str
    """the results.json section holding the typed evidence (``verdict``, ``dp_audit``, ``unlearning``,
    ``dataset_inference``)"""

    @model_validator(mode="after")
    def _known_verdict(self) -> Answer:
        allowed = VERDICTS[self.question]
        if self.verdict not in allowed:
            raise ValueError(f"verdict {self.verdict!r}: expected one of {', '.join(allowed)} for {self.question}")
        return self
