"""compare.json (``miaudit compare RUN_A RUN_B``, ``miaudit.compare``): B against A per membership test both runs
hold, or two unlearning runs side by side, as one typed model built by ``report.compare`` and written as is."""

from __future__ import annotations

import json

from pydantic import ConfigDict

from .base import Interval, JsonObject, Number, Section
from .unlearning import Estimate, UnlearningSection

SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"


class Change(Section):
    """One measure in both runs and B - A, with its bootstrap interval (``stats.difference``)."""

    a: Number
    """the measure in run A"""
    b: Number
    """the measure in run B"""
    difference: Number
    """B - A"""
    ci: Interval
    """B - A's 95% percentile interval of a stratified bootstrap [low, high]"""


class AttackChange(Section):
    attack: str
    """the attack's label, the same in both runs"""
    verdict: str | None
    """one sentence on TPR at 1% FPR and AUC: B leaks less / more than A, or no detectable difference; None
    without a 1% FPR level in both runs"""
    auc: Change
    """the AUC"""
    tpr_at_fpr: dict[str, Change]
    """FPR level -> the TPR there"""


class ComparedData(Section):
    a: str
    """the data set run A audited"""
    b: str
    """the data set run B audited"""
    same: bool
    """whether the data's fingerprints are equal"""


class UnlearningRun(Section):
    """One unlearning run's answer, as its results.json's ``unlearning`` section gives it."""

    method: str
    """how the unlearned model was made, with its hyperparameters"""
    verdict: str
    """verified, not_forgotten or over_forgotten"""
    p_value: Number
    """the set-level test's two-sided p-value"""
    p_remembered: Number
    """its upper tail (still remembered)"""
    p_over_forgotten: Number
    """its lower tail"""
    per_example_auc: Estimate
    """AUC of telling the unlearned model from retrained ones on the forget set (0.5 on exact retraining)"""
    population_auc: Estimate
    """the same with one threshold for every record"""
    tpr_at_1pct_after: Estimate
    """forget-set TPR at 1% FPR on the unlearned model"""
    test_accuracy: Number
    """the unlearned model's accuracy on records no model trained on"""
    forget: int
    """records forgotten"""
    remembered: int
    """forgotten records named as still remembered at the run's FDR"""
    over_forgotten: int
    """forgotten records named as over-forgotten"""

    @classmethod
    def of(cls, s: UnlearningSection) -> UnlearningRun:
        return cls(
            method=s.method.label,
            verdict=s.verdict,
            p_value=s.p_value,
            p_remembered=s.p_remembered,
            p_over_forgotten=s.p_over_forgotten,
            per_example_auc=s.per_example_auc,
            population_auc=s.population_auc,
            tpr_at_1pct_after=s.tpr_at_1pct_after,
            test_accuracy=s.utility.test.unlearned,
            forget=len(s.forget),
            remembered=len(s.remembered),
            over_forgotten=len(s.over_forgotten),
        )


class UnlearningComparison(Section):
    """Two unlearning runs (``miaudit unlearn``) side by side."""

    a: UnlearningRun
    """run A's answer"""
    b: UnlearningRun
    """run B's"""
    same_forget: bool
    """whether both runs forgot the same records of the same data"""
    reading: str
    """how to read the two: each verdict rests on its own run's tests; no test of B against A is made"""


class Comparison(Section):
    """compare.json: did a mitigation change what the attacks find?"""

    model_config = ConfigDict(title="miaudit compare.json")

    a: str
    """run A: its directory, or "in-memory run\""""
    b: str
    """run B"""
    warnings: list[str]
    """what a reader must know before the numbers: different data, attacks not compared"""
    paired: bool
    """whether the bootstrap resampled the shared records of both runs together"""
    pairing: str
    """how the runs' records were lined up, in words"""
    data: ComparedData
    """the data sets audited"""
    confidence: Number
    """the intervals' confidence"""
    resamples: int
    """bootstrap resamples per interval"""
    attacks: list[AttackChange]
    """one entry per membership test in both runs (none for two unlearning runs)"""
    only_in_a: list[str]
    """attack labels only in run A: not compared"""
    only_in_b: list[str]
    """attack labels only in run B: not compared"""
    unlearning: UnlearningComparison | None = None
    """two unlearning runs: their verdicts, p-values and AUCs side by side (absent for membership audits)"""

    def dump(self) -> JsonObject:
        return self.model_dump(exclude_unset=True)

    def to_json(self) -> str:
        return json.dumps(self.dump(), indent=1)

    @classmethod
    def json_schema(cls) -> JsonObject:
        """The JSON Schema (draft 2020-12) of compare.json (``miaudit schema compare``)."""
        return {"$schema": SCHEMA_URI, **cls.model_json_schema(mode="validation")}
