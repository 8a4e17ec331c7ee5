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

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from ..errors import AttackRequirementError
from ..stats.logitstack import LogitStack
from ..training.options import ExecutorConfig

if TYPE_CHECKING:  # torch loads with the first model attack: attacks on outputs alone never need it
    import torch

    from ..training.augment import View

T = TypeVar("T")

Mode = Literal["offline", "online"]


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
    ref_logits: np.ndarray | LogitStack  # (K, n, C) float64, or K models' logits left in the store (at scale)
    ref_in: np.ndarray | None = None  # (K, n) bool: record in reference k's training set
    x: np.ndarray | None = None  # (n, ...) raw inputs, for attacks that learn from features (QMIA)
    # queries.augment: logits on A views of each record (view 0: the record itself, = the logits above)
    target_views: np.ndarray | None = None  # (A, n, C) float64
    ref_views: np.ndarray | None = None  # (A, K, n, C) float64

    def first(self, k: int) -> RecordSet:
        ref_in = None if self.ref_in is None else self.ref_in[:k]
        ref_views = None if self.ref_views is None else self.ref_views[:, :k]
        return replace(self, ref_logits=self.ref_logits[:k], ref_in=ref_in, ref_views=ref_views)


@dataclass
class ModelAccess:
    """Torch-level access for attacks that need models (Laplace, leverage).

    ``reference_train[k]`` is the (x, y) reference k was trained on: the
    attacker trained it, so it may use it. ``memo`` caches expensive derived
    objects (features, fitted posteriors) across the attacks of one run; it is
    shared by every ``first(k)`` view, so reference k means the same model in all.
    """

    target: Any  # torch.nn.Module exposing .features(x) and .head (nn.Linear)
    references: list[Any]
    reference_train: list[tuple[np.ndarray, np.ndarray]]
    query_x: np.ndarray
    query_set: str = "queries"  # names the records query_x holds, in memo keys
    device: str = "cpu"
    memo: dict[tuple, Any] = field(default_factory=dict)
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # where posterior fits run (bmia)
    query_views: tuple[View, ...] = ()  # queries.augment's views of the queries (empty: none asked)

    def first(self, k: int) -> ModelAccess:
        return replace(self, references=self.references[:k], reference_train=self.reference_train[:k])

    def model(self, which: int | None) -> torch.nn.Module:
        """Reference ``which``, or the target for None."""
        return self.target if which is None else self.references[which]

    def features(self, which: int | None, record_set: str, x: np.ndarray) -> torch.Tensor:
        """Penultimate features (float64, on ``device``) of model ``which`` (None: the target) on the
        named record set, whose inputs are ``x``: one backbone pass per model and set in a run."""
        from ..models.features import penultimate

        return self.memoized(("features", which, record_set), lambda: penultimate(self.model(which), x, self.device))

    def query_features(self, which: int | None) -> torch.Tensor:
        """Penultimate features of model ``which`` (None: the target) on the queries."""
        return self.features(which, self.query_set, self.query_x)

    def query_view_features(self, which: int | None) -> list[torch.Tensor]:
        """Penultimate features of model ``which`` on each view of the queries (``queries.augment``)."""
        import torch

        from ..training import augment

        images = torch.as_tensor(self.query_x)
        return [
            self.features(which, f"{self.query_set}@{tuple(v)}", augment.view(images, v).numpy())
            for v in self.query_views
        ]

    def memoized(self, key: tuple, build: Callable[[], T]) -> T:
        """``build()`` once per run for ``key``, which must name every option the value depends on."""
        if key not in self.memo:
            self.memo[key] = build()
        return self.memo[key]


class TargetOracle(Protocol):
    """A target known only by its answers (an endpoint, ``miaudit.endpoint``)."""

    def labels(self, x: np.ndarray, asked_by: str) -> np.ndarray:
        """(n,) int64: the target's predicted class for each input (``asked_by``: the attack, for the count)."""
        ...

    def usage(self) -> dict:
        """What results.json states about the queries (``endpoint``)."""
        ...


@dataclass
class LabelAccess:
    """What label-only attacks ask: the target's predicted labels on inputs they make (an endpoint's answers,
    or the target module's argmax), and each reference model's on the same inputs."""

    target: Callable[[np.ndarray, str], np.ndarray]  # (x, asked_by) -> (n,) int64
    references: list[Callable[[np.ndarray], np.ndarray]]  # x -> (n,) int64

    def first(self, k: int) -> LabelAccess:
        return replace(self, references=self.references[:k])


@dataclass
class AttackInputs:
    """Everything an attack may read. Optional parts are None when not computed."""

    queries: RecordSet
    population: RecordSet | None = None
    validation: RecordSet | None = None
    models: ModelAccess | None = None
    mode: Mode = "offline"
    seed: int = 0
    labels: LabelAccess | None = None  # label-only attacks: predicted labels on inputs they make

    def require_labels(self) -> LabelAccess:
        """The label access, for attacks that declare needs={"labels"}."""
        if self.labels is None:
            raise AttackRequirementError("needs the target's and the references' labels on new inputs (labels)")
        return self.labels

    def require(self, part: Literal["population", "validation"], inputs_x: bool = False) -> RecordSet:
        """The named record set (with its inputs x when asked): an attack's declared need, one-line error
        when absent (the Plan refuses such an attack before it runs; this guards direct calls)."""
        records = getattr(self, part)
        if records is None or (inputs_x and records.x is None):
            raise AttackRequirementError(f"needs the {part} records{' with inputs x' if inputs_x else ''}")
        return records

    def require_models(self) -> ModelAccess:
        """The torch models, for attacks that declare needs={"models"}."""
        if self.models is None:
            raise AttackRequirementError("needs the models (target and references), which these inputs lack")
        return self.models

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
            labels=None if self.labels is None else self.labels.first(k),
        )


@dataclass
class AttackResult:
    """Per-query output. Higher score = more likely member.

    ``log_pvalues`` is the one-sided log p-value for H0 "non-member" where the
    attack is a test; rank by it (``-log_pvalues``), never by a saturating CDF.
    ``log_pvalues_calibrated`` is the conformal one, the statistic ranked among
    records known not to be members (BMIA paper F.1), when the attack made it.
    ``extra`` holds named per-query arrays (test statistic, degrees of freedom ...)
    that reports may show.

    A NaN score (a record the attack could not score) is the least significant
    result everywhere: metrics rank it lowest, and its log p-values, raw and
    calibrated, are 0 (p = 1), as is every NaN log p-value.
    """

    scores: np.ndarray
    log_pvalues: np.ndarray | None = None
    log_pvalues_calibrated: np.ndarray | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)
        if self.log_pvalues is not None:
            self.log_pvalues = self._least_significant_nan(self.log_pvalues)
        if self.log_pvalues_calibrated is not None:
            self.log_pvalues_calibrated = self._least_significant_nan(self.log_pvalues_calibrated)

    def _least_significant_nan(self, log_p: np.ndarray) -> np.ndarray:
        log_p = np.asarray(log_p, dtype=np.float64)
        return np.where(np.isnan(log_p) | np.isnan(self.scores), 0.0, log_p)
