"""``miaudit plan``'s answer (``forecast.forecast``): an audit's power and cost before it runs, as one typed model
(``miaudit schema plan``)."""

from __future__ import annotations

from pydantic import ConfigDict

from .base import JsonObject, Number, Section

SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"


class LevelPower(Section):
    """What the split sizes allow at one FPR level (``stats.power``)."""

    tpr_halfwidth_at_tpr: dict[str, Number]
    """true TPR -> the half-width of the TPR's exact 95% interval there"""
    smallest_detectable_tpr: Number | None
    """the smallest TPR the verdict calls a leak; None: too few records for any"""
    false_positives_allowed: int
    """non-members the threshold may flag at this level"""
    nonmembers_for_reliable_level: int
    """non-members for 10 false positives at this level"""


class MembersForHalfwidth(Section):
    halfwidth: Number
    """the wanted half-width of the TPR interval (``--halfwidth``)"""
    at_tpr: Number
    """at this true TPR"""
    members: int
    """members needed"""


class ModelTime(Section):
    role: str
    """the model's role: target, or reference k/K"""
    cached: bool
    """in the model cache: nothing to train"""
    seconds: Number
    """its predicted training seconds (0 when cached)"""
    in_worker: bool | None = None
    """trained in a worker process (``models_at_once: auto`` on a CPU)"""


class AuditPlan(Section):
    """``miaudit plan``: the audit's split, power at each FPR level, and training time, before it runs."""

    model_config = ConfigDict(title="miaudit plan")

    dataset: str
    """the data set"""
    n_members: int
    """the target's members"""
    n_nonmembers: int
    """its non-members"""
    n_population: int
    """population records (the references train on them)"""
    attacks: list[str]
    """the planned attacks' labels"""
    verdict_tests: int
    """the verdict's (attack, FPR level) tests"""
    levels: dict[str, LevelPower]
    """FPR level -> what the audit can show there"""
    members_for_halfwidth: MembersForHalfwidth
    """members for a TPR interval of the wanted half-width"""
    command: str
    """the command the plan is for: run, run with your target, or dp-audit (one run)"""
    models: list[ModelTime]
    """every model the audit obtains, the target first"""
    seconds_per_epoch: dict[str, Number]
    """target / reference -> one timed epoch"""
    workers: int | None = None
    """worker processes training models (1: none)"""
    estimated_training_seconds: Number
    """the predicted wall-clock training time"""

    @classmethod
    def json_schema(cls) -> JsonObject:
        """The JSON Schema (draft 2020-12) of ``miaudit plan``'s answer (``miaudit schema plan``)."""
        return {"$schema": SCHEMA_URI, **cls.model_json_schema(mode="validation")}
