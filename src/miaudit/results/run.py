"""What results.json says about the run itself: the target, the reference models, the endpoint, calibration,
an LM audit's canary exposure, and the environment that produced the numbers."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from .base import Number, Section


class Target(Section):
    """The audited model's fit (an LM's loss and perplexity instead of accuracy), source and DP-SGD settings."""

    train_accuracy: Number | None = Field(None, description="accuracy on its training records, in [0, 1]")
    test_accuracy: Number | None = Field(None, description="accuracy on records it did not train on, in [0, 1]")
    train_loss: Number | None = Field(
        None, description="a causal LM's mean per-token loss on its training texts (nats)"
    )
    train_perplexity: Number | None = Field(None, description="exp(train_loss)")
    test_loss: Number | None = Field(
        None, description="a causal LM's mean per-token loss on texts it did not train on (nats)"
    )
    test_perplexity: Number | None = Field(None, description="exp(test_loss)")
    training_seconds: Number | None = Field(
        None, description="wall-clock seconds its training took; None: not trained here"
    )
    source: str = Field(description='where the target came from: "trained" by miaudit, else what the user gave')
    dp: dict[str, Any] | None = Field(
        None, description="the DP-SGD settings and the accountants' epsilons (``training.dp_sgd``)"
    )

    def fit(self) -> dict[str, Number]:
        """The fit figures present, as written (``accuracy`` or ``loss``/``perplexity`` keys)."""
        dumped = self.model_dump(exclude_unset=True)
        return {k: v for k, v in dumped.items() if k.endswith(("accuracy", "loss", "perplexity"))}


class Endpoint(Section):
    """A deployed model's queries: what was spent and how (``endpoint.target``)."""

    url: str = Field(description="the endpoint queried")
    protocol: str = Field(description="the wire protocol (or adapter) spoken to it")
    output: str = Field(description="what it answers per record: logits, probabilities, top-k or label")
    top_k: int | None = Field(None, description="output top-k: how many classes each answer holds")
    queries_spent: int = Field(description="records sent to the endpoint")
    requests: int = Field(description="HTTP requests made")
    retries: int = Field(description="requests retried after an error or timeout")
    answered_from_store: int = Field(description="records answered from the store of earlier answers, not re-sent")
    queries_by_stage: dict[str, int] = Field(description="stage of the audit -> records it sent")
    probability_floor: Number | None = Field(
        None,
        description="the floor put under an answered probability of 0 before its logarithm "
        "(the smallest normal float32)",
    )


class ReferenceModel(Section):
    train_accuracy: Number | None = Field(description="accuracy on its training records, in [0, 1]")
    seconds: Number | None = Field(description="wall-clock seconds its training took")
    cached: bool | None = Field(description="read from the model store rather than trained in this run")


class Calibration(Section):
    calibrated: bool = Field(description="whether p-values were calibrated on held-out non-members")
    records: int = Field(description="how many held-out records calibrated them; 0 when not calibrated")


class ExposedCanary(Section):
    secret: str = Field(description="the canary's secret")
    repetitions: int = Field(description="how many times it was inserted into the training texts")
    log_perplexity: Number = Field(description="the target's log-perplexity of the canary")
    rank: Number = Field(
        description="its rank by log-perplexity among the candidate secrets (exact or estimated: ``estimator``)"
    )
    exposure: Number = Field(description="log2 |R| - log2 rank, in bits")


class CanaryExposure(Section):
    """An LM audit's secret-sharer canaries (``lm.canaries``)."""

    method: str = Field(description="how exposure was measured (Carlini et al. 2019, the secret sharer)")
    estimator: str = Field(description="how the rank among all candidates was estimated")
    candidates: int = Field(description="|R|, how many secrets the canary's format allows")
    candidates_scored: int = Field(description="how many of them were scored")
    max_exposure: Number = Field(description="log2 |R|, the largest exposure possible (bits)")
    prefix: str = Field(description="the text every canary starts with")
    mean_exposure_by_repetitions: dict[str, Number] = Field(description="repetitions -> the canaries' mean exposure")
    canaries: list[ExposedCanary] = Field(description="every canary inserted")


class Environment(Section):
    """What produced the numbers: versions (None: not installed), platform, torch threads (None: torch never
    ran), device."""

    miaudit: str = Field(description="miaudit's version")
    python: str = Field(description="Python's version")
    numpy: str | None = Field(None, description="numpy's version")
    scipy: str | None = Field(None, description="scipy's version")
    torch: str | None = Field(None, description="torch's version")
    laplace_torch: str | None = Field(None, alias="laplace-torch", description="laplace-torch's version")
    scikit_learn: str | None = Field(None, alias="scikit-learn", description="scikit-learn's version")
    pydantic: str | None = Field(None, description="pydantic's version")
    platform: str = Field(description="the operating system and machine (``platform.platform``)")
    torch_threads: int | None = Field(description="torch's intra-op threads")
    device: str = Field(description="the device models ran on (cpu, cuda, ...)")
