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
    seconds: Number | None
    """its predicted training seconds (0 when cached; None: trained by the user's train_fn, not timed)"""
    in_worker: bool | None = None
    """trained in a worker process (``models_at_once: auto`` on a CPU)"""


class MeasuredTime(Section):
    seconds: Number
    """the median training seconds of such models on this machine (their meta.json in the cache)"""
    models: int
    """how many such models the cache holds"""


class QueryCost(Section):
    """An endpoint audit's queries, before any is sent."""

    records: int
    """records whose answers the audit reads"""
    to_ask: int
    """of them, not in the answer store: each costs one query"""
    batch_size: int
    """records per request"""
    requests: int
    """requests to send"""
    label_only_extra: bool
    """output: label: the label-only attacks' perturbed queries come on top"""


class MultiRunPlan(Section):
    """``miaudit plan CONFIG --runs R``: the many-run DP audit before it runs (``miaudit schema plan``'s sibling)."""

    command: str
    """the command planned"""
    runs: int
    """R: runs with and runs without each canary"""
    models: int
    """2R models trained"""
    canaries_per_run: int
    """canaries in each run, each by a fair coin"""
    power: str
    """the power line: the largest bound correct DP-SGD lets the audit show, against the claim"""
    seconds_per_epoch_of_a_stack: Number
    """one epoch of one stack timed on this machine"""
    estimated_training_seconds: Number
    """the predicted training time of the 2R models"""


class PlannedTraining(Section):
    """The models a planned command obtains and their training time (``forecast.models_time``), an endpoint's
    queries: the keys ``AuditPlan`` and ``InferencePlan`` share."""

    command: str
    """the command the plan is for: run, run with your target, dp-audit (one run), or infer-dataset and whose models
    it obtains"""
    models: list[ModelTime]
    """every model the audit obtains, the target first"""
    seconds_per_epoch: dict[str, Number]
    """target / reference -> one timed epoch"""
    measured: dict[str, MeasuredTime] | None = None
    """target / reference -> the training time measured on this machine for such models in the cache"""
    workers: int | None = None
    """worker processes training models (1: none)"""
    references_by: str | None = None
    """the user's train_fn that trains the references (not timed)"""
    estimated_training_seconds: Number
    """the predicted wall-clock training time"""
    queries: QueryCost | None = None
    """an endpoint's query cost"""


class PowerAt(Section):
    """What the dataset-inference test of these set sizes sees at one per-record member AUC (``power.py``)."""

    member_auc: Number
    """the AUC of a used record against unused ones, on the test's features (the leak per record)"""
    power_if_all_used: Number
    """the chance that the test says "used" when every suspect record was used"""
    detectable_fraction: Number | None
    """the smallest fraction of the suspect set whose use the test detects with ``InferencePlan.power``; None: not
    even the whole set"""
    smallest_suspect_set: int | None
    """the fewest suspect records, all used, detected with that power against these validation records; None: no
    number would"""


class InferencePlan(PlannedTraining):
    """``miaudit plan`` of an infer-dataset config: the record sets, the test's power before the answer, and the
    models to train or load (those of ``miaudit run`` on the config) with their training time."""

    model_config = ConfigDict(title="miaudit plan (infer-dataset)")

    dataset: str
    """the data set"""
    n_records: int
    """records in the data set"""
    n_suspect: int
    """suspect records"""
    n_validation: int
    """validation records (known not used)"""
    level: Number
    """the p-value below which the verdict is "used" (``inference.level``)"""
    permutations: int
    """label permutations of the test's null"""
    references: int
    """reference models the run config plans (their attacks give features; their members scale the fraction)"""
    power: Number
    """the power ``detectable_fraction`` and ``smallest_suspect_set`` are for"""
    power_at: list[PowerAt]
    """what the test sees at a few per-record member AUCs (the answer's own power uses the references' AUC)"""

    @classmethod
    def json_schema(cls) -> JsonObject:
        """The JSON Schema (draft 2020-12) of ``miaudit plan``'s answer for an infer-dataset config (``miaudit schema
        inference-plan``)."""
        return {"$schema": SCHEMA_URI, **cls.model_json_schema(mode="validation")}


class AuditPlan(PlannedTraining):
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
    dp_power: str | None = None
    """a config with canaries: the one-run DP audit's power line, said before training"""
    reference_budget: str | None = None
    """``references: {budget: B}``: the design the budget buys and its cost ratio, said before training"""

    @classmethod
    def json_schema(cls) -> JsonObject:
        """The JSON Schema (draft 2020-12) of ``miaudit plan``'s answer (``miaudit schema plan``)."""
        return {"$schema": SCHEMA_URI, **cls.model_json_schema(mode="validation")}
