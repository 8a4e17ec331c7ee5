"""``target: {endpoint: URL, ...}``: a deployed model the audit can only query (docs/endpoint.md).

The keys sit beside ``architecture`` in ``TargetConfig`` (this class is one of its bases), so a config reads
``target: {endpoint: URL, protocol: v2, output: logits, architecture: mlp}``. No credential is ever a key:
``credentials_env`` names the environment variable that holds one, read when the client starts.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from ..strict import Strict

Protocol = Literal["v2", "mlflow"]
OutputMode = Literal["logits", "probabilities", "top-k", "label"]
OUTPUT_MODES: tuple[OutputMode, ...] = ("logits", "probabilities", "top-k", "label")
_HOST = re.compile(r"[A-Za-z0-9._~-]+|[0-9A-Fa-f:.]+")  # a name or an IPv4 address, or an IPv6 one (no brackets)
URL_EXAMPLE = "http://127.0.0.1:8080/v2/models/NAME/infer"


def url_problem(v: str) -> str | None:
    """Why ``v`` is not an http(s) URL a request can be sent to (scheme, host, port), or None."""
    try:
        parts = urlsplit(v)
        port = parts.port  # raises on a port out of 0-65535 or not a number ("8080:9", "abc")
    except ValueError as e:
        return f"{e}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "no http(s) scheme or no host"
    if not _HOST.fullmatch(parts.hostname):
        return f"the host {parts.hostname!r} is not a host name or address"
    if port == 0:
        return "port 0"
    return None


class EndpointFields(Strict):
    """How to query a deployed model: where, in which protocol, what it answers, and the client's manners."""

    endpoint: str | None = Field(
        default=None,
        description="the model's inference URL (v2: http://HOST:PORT/v2/models/NAME/infer; mlflow: "
        "http://HOST:PORT/invocations); no model weights are read",
    )
    protocol: Protocol = Field(
        default="v2", description="v2 (Open Inference Protocol: KServe, Triton, MLServer) or mlflow (/invocations)"
    )
    adapter: str | None = Field(
        default=None,
        description="package.module:Class whose instances have body(x) -> JSON and parse(payload, n) -> arrays, "
        "for any other JSON API (replaces protocol)",
    )
    columns: list[str] | None = Field(
        default=None,
        description="protocol: mlflow, a model logged from a pandas DataFrame (a column signature): its input "
        "column names, one per feature in order; the body is then {dataframe_split: {columns, data}}",
    )
    output: OutputMode = Field(
        default="logits",
        description="what the endpoint answers per record: logits, probabilities, top-k (classes and their "
        "probabilities) or label",
    )
    top_k: int = Field(default=1, ge=1, description="output: top-k: how many classes each answer holds")
    batch_size: int = Field(default=256, ge=1, description="records per request")
    rate_limit: float | None = Field(default=None, gt=0, description="at most this many requests per second")
    timeout: float = Field(default=30.0, gt=0, description="seconds to wait for one answer")
    retries: int = Field(
        default=4, ge=0, description="retries of a request after a connection error, a timeout, 429 or 5xx"
    )
    backoff: float = Field(
        default=0.5, ge=0, description="seconds before the first retry, doubled each time (429's Retry-After wins)"
    )
    credentials_env: str | None = Field(
        default=None,
        description="environment variable holding a bearer token, sent as Authorization: Bearer ...; the "
        "token is never written anywhere",
    )

    @field_validator("endpoint")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        why = url_problem(v)
        if why is not None:
            raise ValueError(f"expected an http(s) URL such as {URL_EXAMPLE}, got {v!r} ({why})")
        parts = urlsplit(v)
        if parts.username or parts.password:
            raise ValueError(
                "credentials do not go in the URL (it is written to results.json); put the token in "
                "an environment variable and name it in credentials_env"
            )
        return v

    @field_validator("credentials_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and not v.replace("_", "a").isalnum():
            raise ValueError(f"expected the NAME of an environment variable (letters, digits, _), got {v!r}")
        return v
