"""results.json's ``attacks``: one row per attack run, a membership test or a risk ranking (``kind``, a fact of
the attack's registry entry), with its ROC metrics where membership is known, else its ranking of the queries."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from .base import ByLevel, Interval, Number, Section

Kind: TypeAlias = Literal["test", "ranking"]


class Seconds(Section):
    reference_training: Number
    attack: Number


class PPVCell(Section):
    """The PPV at one prior and FPR level: None where no non-member is flagged (no point estimate)."""

    ppv: Number | None
    ci: Interval | None


class Metrics(Section):
    """The ROC metrics of a row (``stats.metrics``): present where the queries' membership is known."""

    auc: Number | None = None
    auc_ci: Interval | None = None
    tpr_at_fpr: ByLevel | None = None
    tpr_at_fpr_ci: dict[str, Interval] | None = None
    realized_fpr: ByLevel | None = None
    realized_fpr_ci: dict[str, Interval] | None = None
    threshold: dict[str, Number | None] | None = None
    unreliable_fpr_levels: list[str] | None = None
    n_nan_scores: int | None = None
    fpr_at_alpha: dict[str, ByLevel] | None = None  # "raw" / "calibrated" -> alpha -> FPR


class AttackRow(Metrics):
    name: str
    label: str
    kind: Kind
    references: int
    params: dict[str, Any]
    p_values: Literal["calibrated", "raw"] | None
    most_exposed: list[int] | None = None  # membership unknown: the records ranked most exposed
    n_p_below: dict[str, int] | None = None
    ppv: dict[str, dict[str, PPVCell]] | None = None  # "prior_0.1" -> FPR level -> cell
    deployable: dict[str, Any] | None = None  # FPR level -> realized on the target; "pseudo_targets"
    seconds: Seconds

    @property
    def is_ranking(self) -> bool:
        return self.kind == "ranking"


class BlindBaseline(Metrics):
    """An LM audit's text-only classifier (``lm.blind``), with the attacks' metric fields."""

    method: str
    warning: str | None = None
