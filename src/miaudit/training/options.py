"""The training recipe's options: ``TrainConfig`` (SGD or DP-SGD, augmentation, models trained together),
``DPConfig`` (DP-SGD and its planted faults) and ``ExecutorConfig`` (where models train). Training defines
them; ``config/run.py`` composes them into ``RunConfig`` (and checks ``train.base``, an LM directory, there:
``lm`` sits above ``training``). Each derives from ``Strict`` (``miaudit.strict``). No torch here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from ..strict import Strict

# The one vocabulary of image augmentation, of train.augment and the config's queries.augment (config/settings.py
# reads it from here: training owns augmentation, training/augment.py).
Augment = Literal["none", "flip", "flip-crop"]
TrainAugment = Annotated[
    Augment, Field(description="image data: random horizontal flip, and 4-pixel padded random crop (seeded)")
]


def _at_least_one_model(v: int | str) -> int | str:
    if isinstance(v, int) and v < 1:
        raise ValueError(f"expected auto or a whole number of models, at least 1; got {v}")
    return v


# train.models_at_once: auto or N >= 1. The bound is checked after validation rather than as ge=1 on the int, so
# the config's JSON Schema (``miaudit config --schema``) stays as published and the error names both forms.
ModelsAtOnce = Annotated[int | Literal["auto"], AfterValidator(_at_least_one_model)]


class SamplingFault(Strict):
    """The accountant is told a sampling rate ``accounted_rate_factor`` times smaller than the one used."""

    accounted_rate_factor: float = Field(gt=1, description="rate used / rate accounted (above 1: a broken claim)")


class PlantedFault(Strict):
    """A self-test of the DP audits, never a way to train: a bug planted on purpose into DP-SGD, so the declared
    epsilon is false and an audit with power must flag it. Each kind is planted only when its key is given:
    ``noise_scale: s`` draws s times the noise the accountants are told of; ``clip: none`` skips per-sample
    clipping; ``clip: after_mean`` clips the batch's mean gradient instead of each record's; ``sampling:
    {accounted_rate_factor: f}`` tells the accountants (and the noise calibration) a rate f times smaller than the
    one used; ``noise: per_epoch`` draws noise once per epoch (the epoch's first step; its other steps add none);
    ``public_pass: true`` trains one non-private epoch on the private data before DP-SGD."""

    noise_scale: float | None = Field(default=None, gt=0, lt=1, description="noise drawn / noise accounted (< 1)")
    clip: Literal["none", "after_mean"] | None = Field(default=None, description="none | after_mean")
    sampling: SamplingFault | None = Field(default=None, description="{accounted_rate_factor: f}, f > 1")
    noise: Literal["per_epoch"] | None = Field(default=None, description="per_epoch: noise once per epoch")
    public_pass: bool | None = Field(default=None, description="true: one non-private epoch before DP-SGD")

    @model_validator(mode="after")
    def _something_planted(self) -> PlantedFault:
        if self.public_pass is False:
            raise ValueError("public_pass: give true to plant the fault, or remove the key")
        if not self.kinds():
            raise ValueError(
                "planted_fault: name the fault: noise_scale: s, clip: none | after_mean, "
                "sampling: {accounted_rate_factor: f}, noise: per_epoch, or public_pass: true"
            )
        return self

    def kinds(self) -> dict[str, Any]:
        """The faults planted, as given: {key: value}."""
        return {k: v for k, v in self.model_dump(exclude_none=True).items()}

    def description(self) -> str:
        """What was planted, in words, for every output."""
        said = {
            "noise_scale": lambda v: f"noise drawn at {v:g}x the noise accounted",
            "clip": lambda v: (
                "per-sample clipping skipped"
                if v == "none"
                else "the batch's mean gradient clipped instead of each record's"
            ),
            "sampling": lambda v: (
                f"the accountant told a sampling rate {v['accounted_rate_factor']:g}x smaller than the one used"
            ),
            "noise": lambda v: "noise drawn once per epoch (the epoch's other steps add none)",
            "public_pass": lambda v: "one non-private epoch on the private data before DP-SGD",
        }
        return "; ".join(said[k](v) for k, v in self.kinds().items())


class DPConfig(Strict):
    """DP-SGD (Opacus): per-sample clipping to ``max_grad_norm``, Gaussian noise, Poisson sampling. Give the
    privacy target (``epsilon``, ``delta``: the noise multiplier is calibrated by the RDP accountant) or the
    ``noise_multiplier`` itself. The target trains this way; the reference models only with ``references``."""

    epsilon: float | None = Field(default=None, gt=0, description="declared epsilon (noise calibrated to reach it)")
    delta: float = Field(default=1e-5, ge=0, lt=1)
    noise_multiplier: float | None = Field(default=None, gt=0)
    max_grad_norm: float = Field(default=1.0, gt=0)
    references: bool = Field(default=False, description="train the reference models with DP-SGD as well")
    planted_fault: PlantedFault | None = Field(
        default=None, description="self-test of the audit: a DP-SGD bug planted on purpose (PlantedFault's kinds)"
    )

    @model_validator(mode="after")
    def _one_noise(self) -> DPConfig:
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError("give exactly one of epsilon (calibrated noise) or noise_multiplier")
        return self


class ExecutorConfig(Strict):
    """Where models train: in this process (local), or as Ray tasks (``pip install miaudit[ray]``) that write
    into the store, which must then be on storage every worker sees (``cache_dir``)."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = Field(default=None, description="auto: join a running cluster; none: start a local one")
    num_workers: int | None = Field(default=None, ge=1, description="tasks at once (default: as the cluster allows)")
    cpus_per_task: float = Field(default=1.0, gt=0)
    gpus_per_task: float = Field(default=0.0, ge=0)
    max_retries: int = Field(default=2, ge=0, description="Ray retries of a failed task")


class TrainConfig(Strict):
    """SGD with momentum and weight decay: the papers' recipe (DP-SGD with ``dp``)."""

    epochs: int = Field(default=30, ge=1, description="passes over the training records")
    batch_size: int = Field(default=64, ge=1, description="records per SGD step")
    lr: float = Field(default=0.1, gt=0, description="learning rate")
    optimizer: Literal["sgd", "adamw"] = Field(default="sgd", description="sgd (with momentum), or adamw")
    momentum: float = Field(default=0.9, ge=0, lt=1, description="SGD momentum")
    weight_decay: float = Field(default=5e-4, ge=0, description="L2 penalty")
    schedule: Literal["cosine", "constant", "triangle"] = Field(
        default="cosine",
        description="learning-rate schedule per epoch: cosine, constant, or triangle (airbench's: from 0.2 lr up "
        "to lr at 23% of the epochs, then down to 0.07 lr)",
    )
    label_smoothing: float = Field(default=0.0, ge=0, lt=1, description="label smoothing of the cross-entropy loss")
    precision: Literal["fp32", "bf16", "fp16"] = Field(
        default="fp32", description="mixed precision (autocast) for the forward pass; fp16 scales the loss"
    )
    augment: TrainAugment = "none"
    loader_workers: int = Field(
        default=0, ge=0, description="DataLoader processes preparing (augmenting) batches; same weights as 0"
    )
    models_at_once: ModelsAtOnce = Field(
        default="auto",
        description="models of one recipe trained together, each on its own records, seed, order and "
        "augmentation, stored apart; auto: on a CPU the target and references in worker processes, one per torch "
        "thread, one thread each; on an accelerator stacked into one model (torch.func) as many as stack_memory_mb "
        "holds; N: stacks of N; 1: one at a time",
    )
    stack_memory_mb: int = Field(
        default=2048, ge=1, description="most memory a stack of models trained together may take (MB); cut to fit"
    )
    dp: DPConfig | None = Field(default=None, description="train with DP-SGD (Opacus, extra dp)")
    base: str | None = Field(
        default=None,
        description="causal LMs: hf:PATH of a local base LM every model miaudit trains is fine-tuned from "
        "(the references; the target unless target: is given)",
    )

    @model_validator(mode="after")
    def _smoothing_without_dp(self) -> TrainConfig:
        if self.dp is not None and self.label_smoothing > 0:
            raise ValueError("label_smoothing: DP-SGD training (train.dp) does not smooth labels; set it to 0")
        return self
