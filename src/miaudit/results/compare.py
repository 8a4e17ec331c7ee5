"""compare.json (``miaudit compare RUN_A RUN_B``, ``miaudit.compare``): B against A per membership test both runs
hold, as one typed model built by ``report.compare`` and written as is."""

from __future__ import annotations

import json

from pydantic import ConfigDict

from .base import Interval, JsonObject, Number, Section

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
    """one entry per membership test in both runs"""
    only_in_a: list[str]
    """attack labels only in run A: not compared"""
    only_in_b: list[str]
    """attack labels only in run B: not compared"""

    def dump(self) -> JsonObject:
        return self.model_dump(exclude_unset=True)

    def to_json(self) -> str:
        return json.dumps(self.dump(), indent=1)

    @classmethod
    def json_schema(cls) -> JsonObject:
        """The JSON Schema (draft 2020-12) of compare.json (``miaudit schema compare``)."""
        return {"$schema": SCHEMA_URI, **cls.model_json_schema(mode="validation")}
