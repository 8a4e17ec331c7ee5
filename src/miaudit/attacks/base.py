"""The one interface every attack implements.

An attack is a function ``fn(inputs: AttackInputs, params) -> AttackResult``.
``AttackInputs`` holds plain arrays (float64 logits, int labels, boolean
membership masks of the *reference* models); only attacks that declare
``needs={"models"}`` (BMIA, GLS) touch torch modules, through ``ModelAccess``.
Nothing here knows which queries are members of the target: that stays with the
pipeline's evaluation step.

Shapes: N queries, C classes, K reference models, Z population records,
V validation records.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["offline", "online"]


class AttackRequirementError(ValueError):
    """An attack was asked to run outside its assumptions (one-line message)."""


class AttackParams(BaseModel):
    """Parameters common to every attack; each attack subclasses this.

    ``references`` is how many of the run's reference models the attack uses
    (the first ``references`` of them); ``None`` means all that were trained.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    references: int | None = Field(default=None, ge=0)
    label: str | None = Field(default=None, description="row name in reports; default name(n=K)")


@dataclass
class RecordSet:
    """What the target and the references output on one set of records."""

    labels: np.ndarray  # (n,) int64
    target_logits: np.ndarray  # (n, C) float64
    ref_logits: np.ndarray  # (K, n, C) float64
    ref_in: np.ndarray | None = None  # (K, n) bool: record in reference k's training set
    x: np.ndarray | None = None  # (n, ...) raw inputs, for attacks that learn from features (QMIA)

    def first(self, k: int) -> RecordSet:
        ref_in = None if self.ref_in is None else self.ref_in[:k]
        return replace(self, ref_logits=self.ref_logits[:k], ref_in=ref_in)


@dataclass
class ModelAccess:
    """Torch-level access for attacks that need models (Laplace, leverage).

    ``reference_train[k]`` is the (x, y) reference k was trained on: the
    attacker trained it, so it may use it. ``memo`` caches expensive derived
    objects (fitted posteriors, features) across attacks of one run; keys must
    name the reference index and every option they depend on.
    """

    target: Any  # torch.nn.Module exposing .features(x) and .head (nn.Linear)
    references: list[Any]
    reference_train: list[tuple[np.ndarray, np.ndarray]]
    query_x: np.ndarray
    device: str = "cpu"
    memo: dict = field(default_factory=dict)

    def first(self, k: int) -> ModelAccess:
        return replace(self, references=self.references[:k], reference_train=self.reference_train[:k])


@dataclass
class AttackInputs:
    """Everything an attack may read. Optional parts are None when not computed."""

    queries: RecordSet
    population: RecordSet | None = None
    validation: RecordSet | None = None
    models: ModelAccess | None = None
    mode: Mode = "offline"
    seed: int = 0

    @property
    def n_references(self) -> int:
        return int(self.queries.ref_logits.shape[0])

    def first(self, k: int) -> AttackInputs:
        """The same inputs restricted to the first k reference models."""
        if k > self.n_references:
            raise AttackRequirementError(f"references: {k} requested but only {self.n_references} were trained")
        return replace(
            self,
            queries=self.queries.first(k),
            population=None if self.population is None else self.population.first(k),
            validation=None if self.validation is None else self.validation.first(k),
            models=None if self.models is None else self.models.first(k),
        )


@dataclass
class AttackResult:
    """Per-query output. Higher score = more likely member.

    ``log_pvalues`` is the one-sided log p-value for H0 "non-member" where the
    attack is a test; rank by it (``-log_pvalues``), never by a saturating CDF.
    ``extra`` holds named per-query arrays (test statistic, degrees of freedom,
    calibrated log p-values ...) that reports may show.

    A NaN score (a record the attack could not score) is the least significant
    result everywhere: metrics rank it lowest, and its log p-values, raw and any
    ``extra["log_p..."]``, are 0 (p = 1), as is every NaN log p-value.
    """

    scores: np.ndarray
    log_pvalues: np.ndarray | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)
        if self.log_pvalues is not None:
            self.log_pvalues = self._least_significant_nan(self.log_pvalues)
        for key in [k for k in self.extra if k.startswith("log_p")]:
            self.extra[key] = self._least_significant_nan(self.extra[key])

    def _least_significant_nan(self, log_p: np.ndarray) -> np.ndarray:
        log_p = np.asarray(log_p, dtype=np.float64)
        return np.where(np.isnan(log_p) | np.isnan(self.scores), 0.0, log_p)
