"""What a run answers (``report.findings``, ``report.leak_verdict``): the verdict, the records at risk, the
worst case beside the average, and why ``attacks: auto`` ran what it ran."""

from __future__ import annotations

from pydantic import Field

from .base import ByLevel, Interval, IntervalByLevel, Number, Section


class Rejected(Section):
    attack: str = Field(description="the attack's label")
    fpr_level: Number = Field(description="the FPR level of the test")
    tpr: Number = Field(description="the TPR there, in [0, 1]")
    adjusted_p_value: Number = Field(description="its Holm-adjusted p-value")


class Verdict(Section):
    """Does the model leak: Holm over every (membership test, FPR level)."""

    statement: str = Field(description="the verdict in one or two sentences, as the report prints it")
    leaks: bool = Field(description="whether Holm's procedure rejects at least one test at family_alpha")
    attack: str | None = Field(None, description="the label of the attack the statement rests on")
    fpr_level: Number | None = Field(None, description="the FPR level of that test")
    tpr: Number | None = Field(None, description="that attack's TPR at that level, in [0, 1]")
    tpr_ci: Interval | None = Field(None, description="the TPR's exact (Clopper-Pearson) 95% interval")
    p_value: Number | None = Field(
        None, description="the test's exact p-value (negative hypergeometric tail, ``stats.verdict``)"
    )
    adjusted_p_value: Number | None = Field(None, description="its Holm-adjusted p-value over every test")
    rule: str | None = Field(None, description="when the verdict says leaks, and what its p-values assume")
    family_alpha: Number | None = Field(None, description="the family-wise error level the tests are held to")
    n_tests: int | None = Field(None, description="how many (attack, FPR level) tests the family holds")
    smallest_detectable_tpr: dict[str, Number | None] | None = Field(
        None, description="FPR level -> the smallest TPR this audit could tell from chance; None: none could be"
    )
    rejected: list[Rejected] = Field(default_factory=list, description="every test Holm's procedure rejects")


class RealizedFDP(Section):
    """Non-members among the flagged records, with its exact interval."""

    value: Number = Field(description="the share of the flagged records that are non-members, in [0, 1]")
    ci: Interval = Field(description="its exact (Clopper-Pearson) interval; [0, 1] when nothing is flagged")
    flagged: int = Field(description="records flagged")
    non_members: int = Field(description="non-members among them")
    above_level: bool = Field(description="whether value exceeds the FDR level")


class PseudoTargets(Section):
    count: int = Field(description="references that played the target")
    null_scores: int = Field(description="scores in the pooled null")
    realized_fdp: RealizedFDP | None = Field(
        None, description="the same procedure's realized FDP on the pseudo-targets; absent where none could be measured"
    )


class Claim(Section):
    """One attack's records at risk (``records_at_risk.by_attack``)."""

    count: int = Field(description="records flagged at the run's FDR")
    procedure: str = Field(description="the FDR procedure (bh, storey-bh, by: ``stats.fdr.PROCEDURES``)")
    pooled: bool = Field(description="p-values from the references' pooled null; false: calibrated or raw")
    pseudo_target_fdp: Number | None = Field(None, description="the realized FDP on the pseudo-targets (pooled only)")
    count_calibrated: int | None = Field(
        None, description="records Benjamini-Hochberg flags on the attack's own (calibrated or raw) p-values"
    )
    at_floor: int | None = Field(
        None, description="records whose calibrated p-value sits at the conformal floor 1 / (n + 1)"
    )


class RecordsAtRisk(Section):
    fdr: Number = Field(description="the false-discovery rate the records are named at (the config's fdr)")
    attack: str | None = Field(description="the label of the attack whose records are named; None: no p-values")
    count: int | None = Field(None, description="records flagged")
    procedure: str | None = Field(None, description="the FDR procedure (``stats.fdr.PROCEDURES``)")
    assumes: str | None = Field(None, description="what that procedure needs to hold")
    p_values: str | None = Field(None, description="the p-values it ran on: calibrated, raw, or a pooled null")
    expected_false_discoveries_at_most: Number | None = Field(None, description="fdr x count")
    smallest_p_value: Number | None = Field(
        None, description="the smallest p-value the null allows, 1 / (N + 1); None for raw p-values"
    )
    null_share_estimate: Number | None = Field(
        None, description="Storey's estimate of the share of non-members among the queries (pi0)"
    )
    pseudo_targets: PseudoTargets | None = Field(
        None, description="a pooled null: the references that played the target, and how the procedure did on them"
    )
    realized_fdp: RealizedFDP | None = Field(None, description="membership known: the realized FDP on the target")
    n_calibration_records: int | None = Field(None, description="held-out records the p-values are calibrated on")
    calibration_records_needed: int | None = Field(
        None, description="calibration records BH would need to be able to flag a single query"
    )
    by_attack: dict[str, Claim] = Field(default_factory=dict, description="attack label -> its own claim")
    note: str = Field("", description="one sentence: whose count, on which p-values, by which procedure")


class WorstCell(Section):
    members: int = Field(description="members among these records")
    tpr: Number | None = Field(description="the share of them flagged, in [0, 1]; None: no member here")
    ci: Interval | None = Field(description="its exact (Clopper-Pearson) interval")


class WorstCase(Section):
    """Each membership test's TPR on the members a membership-free score ranks most vulnerable (Aerni et al.)."""

    vulnerability: str = Field(description="the membership-free score that ranks the records")
    fpr_level: Number = Field(description="the FPR of the threshold, set on all non-members")
    by_attack: dict[str, dict[str, WorstCell]] = Field(
        description='attack label -> "average" or the top share of queries ("top_0.01", "top_0.1") -> its TPR'
    )


class Candidate(Section):
    name: str = Field(description="the candidate attack")
    pseudo_target_tpr: ByLevel = Field(description="FPR level -> its TPR pooled over the pseudo-targets' members")
    pseudo_target_tpr_ci: IntervalByLevel = Field(description="FPR level -> that TPR's Clopper-Pearson 95% interval")
    per_pseudo_target: list[Number] = Field(description="its TPR at the choice's level on each pseudo-target")
    decision: str = Field(description='"run" or "left out"')
    why: str = Field(description="the reason for the decision")


class AttackChoice(Section):
    """``attacks: auto``: why these attacks ran (``experiment.choice``)."""

    attacks: str = Field(description='"auto"')
    why: str = Field(description="why these attacks ran")
    rule: str | None = Field(None, description="the rule that chose: pseudo-targets or leave-one-data-set-out")
    level: Number | None = Field(None, description="the FPR level the candidates are ranked at")
    pseudo_targets: int | None = Field(None, description="references that played the target")
    references_per_pseudo_target: int | None = Field(
        None, description="the references each pseudo-target's attack used"
    )
    pseudo_members: int | None = Field(None, description="members, pooled over the pseudo-targets")
    pseudo_nonmembers: int | None = Field(None, description="non-members per pseudo-target")
    chosen: list[str] | None = Field(None, description="the candidates that ran")
    candidates: list[Candidate] | None = Field(None, description="every candidate's estimate and decision")
