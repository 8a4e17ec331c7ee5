"""``target:``, a model the user trained outside miaudit: its architecture and weights, or the URL of an
endpoint serving it (``EndpointFields``); the functions named are imported when read, so a typo fails first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from ..strict import Strict
from .checks import architecture_name, importable
from .endpoint import EndpointFields


class TargetConfig(EndpointFields, Strict):
    """A model the user trained outside miaudit: how to build it and where its weights are, or the URL of an
    endpoint serving it (``EndpointFields``), with the architecture miaudit trains the references in."""

    architecture: str | None = Field(
        default=None,
        description="built-in name or package.module:factory "
        "(called as factory(input_shape, n_classes)); default: model",
    )
    checkpoint: Path | None = Field(
        default=None,
        description=".safetensors, or a weights-only .pt/.pth state_dict (none for an hf: causal LM directory, "
        "which holds its weights)",
    )
    _known = field_validator("architecture")(architecture_name)  # a typo in a factory's path fails now
    train_fn: str | None = Field(
        default=None,
        description="package.module:function that trains the reference models as the target was trained, "
        "called as function(model, x, y); default: miaudit's loop with train",
    )
    _importable = field_validator("train_fn")(importable)

    @model_validator(mode="after")
    def _weights_or_endpoint(self) -> TargetConfig:
        if self.endpoint is None:
            stray = sorted(set(self.model_fields_set) & set(EndpointFields.model_fields) - {"endpoint"})
            if stray:
                raise ValueError(f"{stray[0]}: applies to an endpoint; add endpoint: URL, or remove it")
            return self
        if self.checkpoint is not None:
            raise ValueError("checkpoint: give either a checkpoint (the weights) or an endpoint (queries), not both")
        if self.architecture is None:
            raise ValueError(
                "architecture: an endpoint's references are trained by miaudit in the architecture named here "
                "(a built-in name or package.module:factory), e.g. architecture: mlp"
            )
        if self.columns is not None and (self.protocol != "mlflow" or self.adapter is not None):
            raise ValueError("columns: the input column names of an mlflow model (protocol: mlflow); remove it")
        if "top_k" in self.model_fields_set and self.output != "top-k":
            raise ValueError(
                f"top_k: applies to output: top-k, not output: {self.output}; remove it or set output: top-k"
            )
        return self


class Endpoint(TargetConfig):
    """A deployed model to audit by querying it: ``miaudit.audit(target=miaudit.Endpoint(url, architecture="mlp",
    output="label"), members=..., ...)``. The options are ``target:``'s in a config (docs/endpoint.md):
    ``protocol`` (v2, mlflow), ``adapter``, ``output`` (logits, probabilities, top-k, label), ``top_k``,
    ``batch_size``, ``rate_limit`` (requests per second), ``timeout``, ``retries``, ``backoff``,
    ``credentials_env`` (the name of the environment variable holding a bearer token) and ``architecture``,
    the references' (required)."""

    def __init__(self, url: str, **options: Any) -> None:
        try:
            super().__init__(endpoint=url, **options)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "url"
            raise ConfigError(f"Endpoint.{where}: {first['msg']}") from None
