"""What results.json says about the run itself: the target, the reference models, the endpoint, calibration,
an LM audit's canary exposure, and the environment that produced the numbers."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Number, Section


class Target(Section):
    """The audited model's fit (an LM's loss and perplexity instead of accuracy), source and DP-SGD settings."""

    train_accuracy: Number | None = None
    test_accuracy: Number | None = None
    train_loss: Number | None = None
    train_perplexity: Number | None = None
    test_loss: Number | None = None
    test_perplexity: Number | None = None
    training_seconds: Number | None = None
    source: str
    dp: dict[str, Any] | None = None  # the DP-SGD settings and accountants (``training.dp_sgd``)

    def fit(self) -> dict[str, Number]:
        """The fit figures present, as written (``accuracy`` or ``loss``/``perplexity`` keys)."""
        dumped = self.model_dump(exclude_unset=True)
        return {k: v for k, v in dumped.items() if k.endswith(("accuracy", "loss", "perplexity"))}


class Endpoint(Section):
    """A deployed model's queries: what was spent and how (``endpoint.target``)."""

    url: str
    protocol: str
    output: str
    top_k: int | None = None
    queries_spent: int
    requests: int
    retries: int
    answered_from_store: int
    queries_by_stage: dict[str, int]
    probability_floor: Number | None = None


class ReferenceModel(Section):
    train_accuracy: Number | None
    seconds: Number | None
    cached: bool | None


class Calibration(Section):
    calibrated: bool
    records: int


class ExposedCanary(Section):
    secret: str
    repetitions: int
    log_perplexity: Number
    rank: Number
    exposure: Number


class CanaryExposure(Section):
    """An LM audit's secret-sharer canaries (``lm.canaries``)."""

    method: str
    estimator: str
    candidates: int
    candidates_scored: int
    max_exposure: Number
    prefix: str
    mean_exposure_by_repetitions: dict[str, Number]
    canaries: list[ExposedCanary]


class Environment(Section):
    """What produced the numbers: versions (None: not installed), platform, torch threads (None: torch never
    ran), device."""

    miaudit: str
    python: str
    numpy: str | None = None
    scipy: str | None = None
    torch: str | None = None
    laplace_torch: str | None = Field(None, alias="laplace-torch")
    scikit_learn: str | None = Field(None, alias="scikit-learn")
    pydantic: str | None = None
    platform: str
    torch_threads: int | None
    device: str
