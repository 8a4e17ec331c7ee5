"""What a run answers (``report.findings``, ``report.leak_verdict``): the verdict, the records at risk, the
worst case beside the average, and why ``attacks: auto`` ran what it ran."""

from __future__ import annotations

from pydantic import Field

from .base import ByLevel, Interval, IntervalByLevel, Number, Section


class Rejected(Section):
    attack: str
    fpr_level: Number
    tpr: Number
    adjusted_p_value: Number


class Verdict(Section):
    """Does the model leak: Holm over every (membership test, FPR level)."""

    statement: str
    leaks: bool
    attack: str  # the headline test: the smallest adjusted p-value at the headline FPR level
    fpr_level: Number
    tpr: Number
    tpr_ci: Interval
    p_value: Number
    adjusted_p_value: Number
    rule: str
    family_alpha: Number
    n_tests: int
    smallest_detectable_tpr: dict[str, Number | None]  # FPR level -> the TPR this audit could tell from chance
    rejected: list[Rejected]


class RealizedFDP(Section):
    """Non-members among the flagged records, with its exact interval."""

    value: Number
    ci: Interval
    flagged: int
    non_members: int
    above_level: bool


class PseudoTargets(Section):
    count: int
    null_scores: int
    realized_fdp: RealizedFDP | None = None


class Claim(Section):
    """One attack's records at risk (``records_at_risk.by_attack``)."""

    count: int
    procedure: str
    pooled: bool
    pseudo_target_fdp: Number | None = None
    count_calibrated: int | None = None
    at_floor: int | None = None


class RecordsAtRisk(Section):
    fdr: Number
    attack: str | None
    count: int | None = None
    procedure: str | None = None
    assumes: str | None = None
    p_values: str | None = None
    expected_false_discoveries_at_most: Number | None = None
    smallest_p_value: Number | None = None
    null_share_estimate: Number | None = None
    pseudo_targets: PseudoTargets | None = None
    realized_fdp: RealizedFDP | None = None
    n_calibration_records: int | None = None
    calibration_records_needed: int | None = None
    by_attack: dict[str, Claim] = Field(default_factory=dict)
    note: str = ""


class WorstCell(Section):
    members: int
    tpr: Number | None
    ci: Interval | None


class WorstCase(Section):
    """Each membership test's TPR on the members a membership-free score ranks most vulnerable (Aerni et al.)."""

    vulnerability: str
    fpr_level: Number
    by_attack: dict[str, dict[str, WorstCell]]  # label -> "average" / "top_0.01" ... -> cell


class Candidate(Section):
    name: str
    pseudo_target_tpr: ByLevel
    pseudo_target_tpr_ci: IntervalByLevel
    per_pseudo_target: list[Number]
    decision: str
    why: str


class AttackChoice(Section):
    """``attacks: auto``: why these attacks ran (``experiment.choice``)."""

    attacks: str
    why: str
    rule: str | None = None
    level: Number | None = None
    pseudo_targets: int | None = None
    references_per_pseudo_target: int | None = None
    pseudo_members: int | None = None
    pseudo_nonmembers: int | None = None
    chosen: list[str] | None = None
    candidates: list[Candidate] | None = None
