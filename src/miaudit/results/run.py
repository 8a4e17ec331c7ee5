"""What results.json says about the run itself: the target, the reference models, the endpoint, calibration,
an LM audit's canary exposure, and the environment that produced the numbers."""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field, JsonValue

from .base import Number, Section

# The DP-SGD settings and the accountants' epsilons as the trainer records them (``training.dp_sgd``,
# ``dp.multi_run.privacy_record``): its keys are the trainer's, so it stays an open JSON object.
DPSGDRecord: TypeAlias = dict[str, JsonValue]


class Target(Section):
    """The audited model's fit (an LM's loss and perplexity instead of accuracy), source and DP-SGD settings."""

    train_accuracy: Number | None = None
    """the share of its training records it classifies right, in [0, 1]; in a one-run DP audit, of its real records
    only (not the canaries)"""
    test_accuracy: Number | None = None
    """accuracy on records it did not train on, in [0, 1]"""
    query_accuracy: Number | None = None
    """membership unknown: its accuracy on the queries"""
    population_accuracy: Number | None = None
    """membership unknown: its accuracy on the population records (known non-members: the closest to a test
    accuracy)"""
    train_loss: Number | None = None
    """a causal LM's mean per-token loss on its training texts (nats)"""
    train_perplexity: Number | None = None
    """exp(train_loss)"""
    test_loss: Number | None = None
    """a causal LM's mean per-token loss on texts it did not train on (nats)"""
    test_perplexity: Number | None = None
    """exp(test_loss)"""
    training_seconds: Number | None = None
    """wall-clock seconds its training took"""
    source: str
    """where the target came from: "trained" by miaudit, else what the user gave"""
    dp: DPSGDRecord | None = None
    """the DP-SGD settings and the accountants' epsilons (``training.dp_sgd``)"""

    def fit(self) -> list[tuple[str, Number]]:
        """The fit figures present, in the order written: (key, value), an ``accuracy`` or ``loss``/``perplexity``
        key."""
        dumped = self.model_dump(exclude_unset=True)
        return [(k, v) for k, v in dumped.items() if k.endswith(("accuracy", "loss", "perplexity")) and v is not None]


class Endpoint(Section):
    """A deployed model's queries: what was spent and how (``endpoint.target``)."""

    url: str
    """the endpoint queried"""
    protocol: str
    """the wire protocol (or adapter) spoken to it"""
    output: str
    """what it answers per record: logits, probabilities, top-k or label"""
    top_k: int | None = None
    """output top-k: how many classes each answer holds"""
    queries_spent: int
    """records the endpoint answered in this run"""
    requests: int
    """HTTP requests made"""
    retries: int
    """requests retried after an error or timeout"""
    answered_from_store: int
    """records answered from the store of earlier answers, not re-sent"""
    queries_by_stage: dict[str, int]
    """stage of the audit -> records it sent"""
    probability_floor: Number | None = None
    """the floor put under an answered probability of 0 before its logarithm (the smallest normal float32)"""


class ReferenceModel(Section):
    train_accuracy: Number | None
    """accuracy on its training records, in [0, 1]"""
    seconds: Number | None
    """wall-clock seconds its training took (a cached model's as measured when it trained)"""
    cached: bool | None
    """read from the model store rather than trained in this run"""


class Calibration(Section):
    calibrated: bool
    """whether p-values were calibrated on held-out non-members"""
    records: int
    """how many held-out records calibrated them; 0 when not calibrated"""


class ExposedCanary(Section):
    secret: str
    """the canary's secret"""
    repetitions: int
    """how many times it was inserted into the training texts"""
    log_perplexity: Number
    """the target's log-perplexity of the canary"""
    rank: Number
    """its rank by log-perplexity among the candidate secrets (exact or estimated: ``estimator``)"""
    exposure: Number
    """log2 |R| - log2 rank, in bits"""


class CanaryExposure(Section):
    """An LM audit's secret-sharer canaries (``lm.canaries``)."""

    method: str
    """how exposure was measured (Carlini et al. 2019, the secret sharer)"""
    estimator: str
    """how the rank among all candidates was estimated"""
    candidates: int
    """|R|, how many secrets the canary's format allows"""
    candidates_scored: int
    """how many of them were scored"""
    max_exposure: Number
    """log2 |R|, the largest exposure possible (bits)"""
    prefix: str
    """the text every canary starts with"""
    mean_exposure_by_repetitions: dict[str, Number]
    """repetitions -> the canaries' mean exposure"""
    canaries: list[ExposedCanary]
    """every canary inserted"""


class Environment(Section):
    """What produced the numbers: versions (None: not installed), platform, torch threads (None: torch never
    ran), device."""

    miaudit: str
    """miaudit's version"""
    python: str
    """Python's version"""
    numpy: str | None = None
    """numpy's version"""
    scipy: str | None = None
    """scipy's version"""
    torch: str | None = None
    """torch's version"""
    laplace_torch: str | None = Field(None, alias="laplace-torch")
    """laplace-torch's version"""
    scikit_learn: str | None = Field(None, alias="scikit-learn")
    """scikit-learn's version"""
    pydantic: str | None = None
    """pydantic's version"""
    platform: str
    """the operating system and machine (``platform.platform``)"""
    torch_threads: int | None
    """torch's intra-op threads; None: torch never ran"""
    device: str
    """the device models ran on (cpu, cuda, ...)"""


class Tracking(Section):
    """Where the audit was logged in an experiment tracker (``tracking:`` or ``--track``; ``miaudit track DIR``):
    written once the run's params, metrics and artifacts are all logged, absent otherwise."""

    tracker: Literal["mlflow"]
    """the tracker"""
    host: str
    """the tracking URI's host (and port; no credentials), or ``local`` for a file or database URI"""
    experiment: str
    """the experiment's name"""
    experiment_id: str
    """the experiment's id on that server"""
    run_id: str
    """the run's id: ``MlflowClient(URI).get_run(run_id)``"""
