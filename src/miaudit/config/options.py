"""Optional parts of the run config: where models train (executor), DP-SGD training, DP audits.

Kept apart from ``config.py`` to keep each file short; like it, this module imports no torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Strict(BaseModel):
    """Every config part: unknown keys refused, immutable once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_Strict = Strict


class DPConfig(_Strict):
    """DP-SGD (Opacus): per-sample clipping to ``max_grad_norm``, Gaussian noise, Poisson sampling. Give the
    privacy target (``epsilon``, ``delta``: the noise multiplier is calibrated by the RDP accountant) or the
    ``noise_multiplier`` itself. The target trains this way; the reference models only with ``references``."""

    epsilon: float | None = Field(default=None, gt=0, description="declared epsilon (noise calibrated to reach it)")
    delta: float = Field(default=1e-5, ge=0, lt=1)
    noise_multiplier: float | None = Field(default=None, gt=0)
    max_grad_norm: float = Field(default=1.0, gt=0)
    references: bool = Field(default=False, description="train the reference models with DP-SGD as well")

    @model_validator(mode="after")
    def _one_noise(self) -> DPConfig:
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError("give exactly one of epsilon (calibrated noise) or noise_multiplier")
        return self


class ExecutorConfig(_Strict):
    """Where models train: in this process (local), or as Ray tasks (``pip install miaudit[ray]``) that write
    into the store, which must then be on storage every worker sees (``cache_dir``)."""

    kind: Literal["local", "ray"] = "local"
    address: str | None = Field(default=None, description="auto: join a running cluster; none: start a local one")
    num_workers: int | None = Field(default=None, ge=1, description="tasks at once (default: as the cluster allows)")
    cpus_per_task: float = Field(default=1.0, gt=0)
    gpus_per_task: float = Field(default=0.0, ge=0)
    max_retries: int = Field(default=2, ge=0, description="Ray retries of a failed task")


class DPAuditConfig(_Strict):
    """An epsilon lower bound from one attack's scores (``miaudit.dp``): the threshold is chosen on a seeded
    half of the queries (``selection: half``) or given (``selection: fixed``) and evaluated on the rest."""

    attack: str = Field(description="the attack's label or name, as in attacks")
    confidence: float = Field(default=0.95, gt=0, lt=1)
    delta: float | None = Field(default=None, ge=0, lt=1, description="default: train.dp.delta, else 0")
    selection: Literal["half", "fixed"] = "half"
    threshold: float | None = Field(default=None, description="with selection: fixed, member when score >= it")
    declared_epsilon: float | None = Field(default=None, gt=0, description="default: train.dp.epsilon")

    @model_validator(mode="after")
    def _fixed_threshold(self) -> DPAuditConfig:
        if (self.selection == "fixed") != (self.threshold is not None):
            raise ValueError("threshold: give it with selection: fixed, and only then")
        return self


class CanaryConfig(_Strict):
    """The one-run audit's canaries (Steinke, Nasr & Jagielski 2023): each in the target's training set
    with probability 1/2; the auditor guesses on the ``guesses`` highest and lowest scores (default count/10)."""

    count: int = Field(ge=2)
    kind: Literal["random-label", "natural"] = "random-label"
    guesses: int | None = Field(default=None, ge=1, description="k: guesses 'in' and 'out' each")

    @model_validator(mode="after")
    def _enough(self) -> CanaryConfig:
        if self.guesses is not None and 2 * self.guesses > self.count:
            raise ValueError(f"guesses: 2 x {self.guesses} exceeds count {self.count}")
        return self
