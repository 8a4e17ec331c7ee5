"""What a run answers (``membership.findings``, ``membership.verdict``): the verdict, the records at risk, the
worst case beside the average, and why ``attacks: auto`` ran what it ran."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from .answer import Answer
from .base import ByLevel, Count, Interval, IntervalByLevel, Number, Section, Share


class Rejected(Section):
    attack: str
    """the attack's label"""
    fpr_level: Number
    """the FPR level of the test"""
    tpr: Number
    """the TPR there, in [0, 1]"""
    adjusted_p_value: Number
    """its Holm-adjusted p-value"""


class Verdict(Section):
    """Does the model leak: Holm over every (membership test, FPR level)."""

    statement: str
    """the verdict in one or two sentences"""
    summary: str | None = None
    """the verdict in one plain sentence, no procedure named (the console's first line); absent in files of schema
    version 4 and earlier"""
    detail: str | None = None
    """the procedure and its numbers behind ``summary`` (``rule`` says what they assume)"""
    leaks: bool
    """whether Holm's procedure rejects at least one test at family_alpha"""
    attack: str | None = None
    """the label of the attack the statement rests on"""
    fpr_level: Number | None = None
    """the FPR level of that test"""
    tpr: Number | None = None
    """that attack's TPR at that level, in [0, 1]"""
    tpr_ci: Interval | None = None
    """the TPR's exact (Clopper-Pearson) 95% interval"""
    p_value: Number | None = None
    """the test's exact p-value: the negative hypergeometric tail of the members above the threshold, under exchangeable
    members and non-members (``stats.verdict``)"""
    adjusted_p_value: Number | None = None
    """its Holm-adjusted p-value over every test"""
    rule: str | None = None
    """when the verdict says leaks, and what its p-values assume"""
    family_alpha: Number | None = None
    """the family-wise error level the tests are held to"""
    n_tests: int | None = None
    """how many (attack, FPR level) tests the family holds"""
    smallest_detectable_tpr: dict[str, Number | None] | None = None
    """FPR level -> the smallest TPR this audit could tell from chance; None: none could be"""
    rejected: list[Rejected] = Field(default_factory=list)
    """every test Holm's procedure rejects"""
    answer: Answer | None = None
    """the answer in the shape every audit ends in (verdict word, statistic, p-value, summary, detail:
    ``results.answer``); absent in files written before it"""


class RealizedFDP(Section):
    """Non-members among the flagged records, with its exact interval."""

    model_config = ConfigDict(extra="forbid")

    value: Number
    """the share of the flagged records that are non-members, in [0, 1]"""
    ci: Interval
    """its exact (Clopper-Pearson) interval; [0, 1] when nothing is flagged"""
    flagged: int
    """records flagged"""
    non_members: int
    """non-members among them"""
    above_level: bool
    """whether the interval's low end exceeds the FDR level: the realized FDP is above it beyond chance (FDR bounds
    an expectation, so one audit's share above the level with the level inside its interval is no breach)"""


class PooledFDP(RealizedFDP):
    """Read from files written before issue 45 only (nothing writes it now): the pooled procedure's realized FDP on
    the pseudo-targets."""

    procedure: str
    """the FDR procedure"""
    worst_pseudo_target: Number
    """the highest single pseudo-target's FDP"""
    members_flagged: int
    """members flagged over all pseudo-targets"""


class PseudoTargets(Section):
    """Read from files written before issue 45 only (nothing writes it now): the references as pseudo-targets of the
    pooled null."""

    model_config = ConfigDict(extra="forbid")

    count: int
    """references that played the target"""
    null_scores: int
    """scores in the pooled null"""
    realized_fdp: PooledFDP | None = None
    """the same procedure's realized FDP on the pseudo-targets; absent where none could be measured"""


class PooledCheck(Section):
    """Read from files written before issue 45 only (nothing writes it now): the target's calibration records against
    the pooled null."""

    model_config = ConfigDict(extra="forbid")

    records: int
    """calibration records"""
    share_at_p_001: Number | None = Field(default=None, alias="share_at_p_0.01")
    """their share at pooled p <= 0.01"""
    ci: Interval
    """its exact interval"""
    anti_conservative: bool
    """whether the interval's low end is above 1%"""


class Claim(Section):
    """One attack's records at risk under the same procedure as the headline (``records_at_risk.by_attack``)."""

    model_config = ConfigDict(extra="forbid")

    flagged: int | None = None
    """records this attack flags at the run's FDR under the headline's procedure (the screened conformal p-values
    and Storey's BH: scores.csv's ``q_value_screened``)"""
    bh_count: int | None = None
    """records Benjamini-Hochberg flags at the run's FDR on this attack's own p-values, every query, no screen:
    scores.csv's ``q_value`` at or below the FDR (what an auditor recomputes from the ``p_value`` column)"""
    count: int | None = None
    """files written before this version: records flagged at the run's FDR (now ``flagged``)"""
    procedure: str
    """the FDR procedure (bh, storey-bh, by: ``stats.fdr.PROCEDURES``)"""
    basis: Literal["screened", "raw"] | None = None
    """the p-values: conformal ranks among the screened calibration records (``stats.screened``), or the attack's raw
    ones (no calibration records); absent in files written before issue 45"""
    tested: int | None = None
    """queries tested (those the screen kept)"""
    at_floor: int | None = None
    """tested records whose p-value sits at the smallest possible, 1 / (n + 1)"""
    needed_at_floor: int | None = None
    """records the procedure needs at that floor before it flags any"""
    pooled: bool | None = None
    """files written before issue 45: whether the p-values came from the references' pooled null"""
    pseudo_target_fdp: Number | None = None
    """files written before issue 45: the realized FDP on the pseudo-targets (pooled only)"""
    count_calibrated: int | None = None
    """files written before issue 45: records BH flagged on the attack's calibrated p-values"""
    calibration_check: PooledCheck | None = Field(default=None, alias="calibration_records_at_pooled_p_0.01")
    """files written before issue 45: the target's calibration records against the pooled null"""

    @property
    def flagged_count(self) -> int:
        """Records this attack flags under the headline's procedure, whichever version wrote the file."""
        return self.flagged if self.flagged is not None else self.count or 0


class Screen(Section):
    """The records the procedure tests, chosen from the references alone (``stats.screened``)."""

    model_config = ConfigDict(extra="forbid")

    vulnerability: str
    """the score that ranks the records, computed from the references only (never the target)"""
    fraction: Number
    """the share of queries and calibration records together kept (the top of the vulnerability score)"""
    queries: int
    """queries kept: the m of the FDR procedure"""
    calibration_records: int
    """calibration records kept: the p-values' resolution, 1 / (n + 1)"""


class RecordsAtRisk(Section):
    """The records named at the run's FDR, by one attack fixed before any membership is read (``report.at_risk``)."""

    model_config = ConfigDict(extra="forbid")

    fdr: Number
    """the false-discovery rate the records are named at (the config's fdr)"""
    attack: str | None
    """the label of the attack whose records are named; None: no attack gives p-values"""
    attack_rule: str | None = None
    """how that attack was chosen (a rule that reads no membership)"""
    count: Count | None = None
    """records flagged"""
    why_none: str | None = None
    """none flagged: why, with the number that decides it; None when records are flagged"""
    procedure: str | None = None
    """the FDR procedure (``stats.fdr.PROCEDURES``)"""
    assumes: str | None = None
    """what that procedure needs to hold"""
    p_values: str | None = None
    """the p-values it ran on: screened conformal, or raw"""
    screen: Screen | None = None
    """which records were tested, chosen from the references alone"""
    expected_false_discoveries_at_most: Number | None = None
    """fdr x count: the bound on the expected number of false flags among them"""
    smallest_p_value: Number | None = None
    """the smallest p-value the null allows, 1 / (n + 1); None for raw p-values"""
    null_share_estimate: Number | None = None
    """Storey's estimate of the share of non-members among the tested queries (pi0)"""
    at_smallest_p_value: int | None = None
    """tested records at that smallest p-value"""
    needed_at_smallest_p_value: int | None = None
    """records the procedure needs there before it can flag any"""
    realized_fdp: RealizedFDP | None = None
    """membership known: the realized FDP on the target"""
    n_calibration_records: int | None = None
    """held-out records the p-values are calibrated on (before the screen)"""
    calibration_records_needed: int | None = None
    """calibration records (within the screen) the procedure would need to be able to flag a single record"""
    by_attack: dict[str, Claim] = Field(default_factory=dict)
    """attack label -> its own count under the same procedure (never the headline's)"""
    pseudo_targets: PseudoTargets | None = None
    """files written before issue 45: the pooled null's references and how its procedure did on them"""
    note: str = ""
    """the detail: whose count, on which p-values, by which procedure, and why none where none is flagged"""
    summary: str | None = None
    """the answer in one plain sentence, no procedure named (the console's line), e.g. "none can be named at 5% FDR:
    188 calibration records are too few to single one out (about 6,400 needed)."; absent in files of schema version
    4 and earlier"""


class WorstCell(Section):
    members: Count
    """members among these records"""
    tpr: Share | None
    """the share of them flagged, in [0, 1]; None: no member here"""
    ci: Interval | None
    """its exact (Clopper-Pearson) interval"""


class WorstCase(Section):
    """Each membership test's TPR on the members a membership-free score ranks most vulnerable (Aerni et al.)."""

    vulnerability: str
    """the membership-free score that ranks the records"""
    fpr_level: Number
    """the FPR of the threshold, set on all non-members"""
    by_attack: dict[str, dict[str, WorstCell]]
    """attack label -> "average" or the top share of queries ("top_0.01", "top_0.1") -> its TPR"""


class Candidate(Section):
    name: str
    """the candidate attack"""
    pseudo_target_tpr: ByLevel
    """FPR level -> its TPR pooled over the pseudo-targets' members"""
    pseudo_target_tpr_ci: IntervalByLevel
    """FPR level -> that TPR's Clopper-Pearson 95% interval"""
    per_pseudo_target: list[Number]
    """its TPR at the choice's level on each pseudo-target"""
    decision: str
    """the choice's decision: "run" or "left out" (``why`` says why)"""
    why: str
    """the reason for the decision"""


class AttackChoice(Section):
    """``attacks: auto``: why these attacks ran (``membership.choice``)."""

    attacks: str
    """the config's attacks: "auto" (its only value here)"""
    why: str
    """why these attacks ran"""
    rule: str | None = None
    """the rule that chose: pseudo-targets (each candidate run with references in the target's place) or
    leave-one-data-set-out (the audit has no pseudo-targets)"""
    level: Number | None = None
    """the FPR level the candidates are ranked at"""
    pseudo_targets: int | None = None
    """references that played the target"""
    references_per_pseudo_target: int | None = None
    """the references each pseudo-target's attack used"""
    pseudo_members: int | None = None
    """members, pooled over the pseudo-targets"""
    pseudo_nonmembers: int | None = None
    """non-members per pseudo-target"""
    chosen: list[str] | None = None
    """the candidates that ran"""
    candidates: list[Candidate] | None = None
    """every candidate's estimate and decision"""
