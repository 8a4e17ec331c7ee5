"""results.json's ``attacks``: one row per attack run, a membership test or a risk ranking (``kind``, a fact of
the attack's registry entry), with its ROC metrics where membership is known, else its ranking of the queries."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import JsonValue

from .base import ByLevel, Count, Interval, IntervalByLevel, Number, Section, Share, ShareByLevel

Kind: TypeAlias = Literal["test", "ranking"]


class Seconds(Section):
    reference_training: Number
    """the training seconds of the reference models the attack uses, summed (a cached model's as measured when it
    trained)"""
    attack: Number
    """wall-clock seconds the attack itself ran (``experiment.run``)"""


class PPVCell(Section):
    """The PPV at one prior and FPR level: None where no non-member is flagged (no point estimate)."""

    ppv: Number | None
    """the positive predictive value at this prior, in [0, 1] (``stats.precision``)"""
    ci: Interval | None
    """its 95% interval [low, high]"""


# member prior ("prior_0.1") -> FPR level -> the precision there
PPVByPrior: TypeAlias = dict[str, dict[str, PPVCell]]


class DeployableAt(Section):
    """A threshold set on the references as pseudo-targets at one FPR level, and what it realizes on the target."""

    threshold: Number | None
    """the pooled pseudo-targets' threshold: a record is called a member when its score is at least this; None: it
    flags nothing"""
    realized_fpr: Number
    """the FPR it realizes on the target's non-members (which no threshold saw)"""
    realized_fpr_ci: Interval
    """its exact (Clopper-Pearson) interval: a deployed threshold's FPR can exceed the level it was set for, and
    this says by how much it may"""
    tpr: Number
    """the TPR it realizes on the target's members"""
    tpr_ci: Interval
    """its exact (Clopper-Pearson) interval, for comparison with the TPR at the level set on the target itself
    (``tpr_at_fpr``)"""


class Metrics(Section):
    """The ROC metrics of a row (``stats.metrics``): present where the queries' membership is known."""

    auc: Share | None = None
    """area under the ROC curve in [0, 1], ties counting 1/2"""
    auc_ci: Interval | None = None
    """the AUC's 95% stratified bootstrap percentile interval [low, high] (seeded)"""
    tpr_at_fpr: ShareByLevel | None = None
    """FPR level (0.001, 0.01, 0.05: ``stats.metrics.FPR_LEVELS``) -> the true-positive rate at the threshold that flags
    at most that share of the non-members"""
    tpr_at_fpr_ci: IntervalByLevel | None = None
    """FPR level -> the TPR's exact (Clopper-Pearson) interval"""
    realized_fpr: ShareByLevel | None = None
    """FPR level -> the false-positive rate that threshold realizes"""
    realized_fpr_ci: IntervalByLevel | None = None
    """FPR level -> the realized FPR's exact (Clopper-Pearson) interval"""
    threshold: dict[str, Number | None] | None = None
    """FPR level -> the score at or above which a record is called a member; None: flags none"""
    unreliable_fpr_levels: list[str] | None = None
    """the FPR levels below 10 / non-members: too few non-members to estimate the TPR there"""
    n_nan_scores: Count | None = None
    """how many queries the attack gave no score (NaN)"""
    fpr_at_alpha: dict[str, ByLevel] | None = None
    """"raw" / "calibrated" -> alpha -> the share of non-members with p < alpha"""


class Ranking(Section):
    """A row's ranking where membership is unknown (no ROC): the records most exposed and the p-values' counts."""

    most_exposed: list[int] | None = None
    """the indices of the records the attack ranks most exposed (at most 10)"""
    n_nan_scores: int | None = None
    """how many queries the attack gave no score (NaN)"""
    n_p_below: dict[str, int] | None = None
    """alpha -> how many queries have a p-value below it"""


class AttackRow(Metrics):
    name: str
    """the attack's registry name"""
    label: str
    """the row's unique label (the config's label:, else name and what tells it apart)"""
    kind: Kind
    """a membership test or a per-record risk ranking (the attack's registry entry)"""
    references: int
    """how many reference models the attack used"""
    params: dict[str, JsonValue]
    """the attack's parameters, defaults resolved (``attack_plan.build``)"""
    p_values: Literal["calibrated", "raw"] | None
    """whether the row's p-values are calibrated on held-out non-members; None: the attack gives none"""
    most_exposed: list[int] | None = None
    """membership unknown: the indices of the records the attack ranks most exposed (at most 10)"""
    n_p_below: dict[str, int] | None = None
    """membership unknown: alpha -> how many queries have a p-value below it"""
    ppv: PPVByPrior | None = None
    """member prior ("prior_0.1") -> FPR level -> the precision there (``membership.findings``)"""
    deployable: dict[str, DeployableAt | int] | None = None
    """FPR level -> a threshold set on references as pseudo-targets (no target membership) and the FPR and TPR it
    realizes on the target, with exact intervals; pseudo_targets: how many (``experiment.deployable``)"""
    seconds: Seconds
    """where the row's time went"""

    @property
    def is_ranking(self) -> bool:
        return self.kind == "ranking"


class BlindBaseline(Metrics):
    """An LM audit's text-only classifier (``lm.blind``), with the attacks' metric fields."""

    method: str
    """the text-only classifier used (``lm.blind``)"""
    warning: str | None = None
    """set when the baseline is above chance and near or above the attacks (``lm.blind.warning``)"""
