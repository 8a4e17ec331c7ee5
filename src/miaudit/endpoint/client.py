"""The HTTP client: batches, a rate limit, timeouts, retries with backoff, credentials, and the count.

A request is retried after a connection error, a timeout, a 429 (after its Retry-After, when it gives one),
a 5xx or an answer that is not JSON, up to ``retries`` times with the wait doubling from ``backoff``; a 4xx
or an answer of the wrong shape is an error at once (asking again would not change it). Every error is one
``EndpointError`` line naming the endpoint; the answers already received are in the store by then
(``store``), so the rerun resumes where this one stopped.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from ..config.endpoint import EndpointFields
from ..errors import ConfigError, MiauditError
from ..progress import SESSION, log
from . import outputs
from .protocols import MalformedAnswer, wire_format
from .store import AnswerStore, digests, endpoint_key

MAX_RETRY_AFTER = 120.0  # seconds: a longer Retry-After is capped (the audit would look hung)
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class EndpointError(MiauditError):
    """The endpoint could not answer, or answered what cannot be used (one line, naming it)."""


def shown_url(url: str) -> str:
    """The URL as reports show it: no query string (it may carry a key)."""
    p = urlsplit(url)
    return urlunsplit((p.scheme, p.netloc, p.path, "", ""))


@dataclass
class Usage:
    """What the endpoint was asked in this run: records it answered, requests, retries, records from the store."""

    queries: int = 0
    requests: int = 0
    retries: int = 0
    from_store: int = 0
    by_stage: dict[str, int] = field(default_factory=dict)


class _Transient(Exception):
    """A failure worth another try; ``wait`` overrides the backoff (a 429's Retry-After)."""

    def __init__(self, why: str, wait: float | None = None):
        super().__init__(why)
        self.wait = wait


class EndpointClient:
    """Answers for records, from the store where it has them, else from the endpoint in batches."""

    def __init__(self, spec: EndpointFields, store_root: Path, n_classes: int):
        import requests

        assert spec.endpoint is not None
        if spec.output == "top-k" and spec.top_k > n_classes:  # before any query
            raise ConfigError(f"target.top_k: {spec.top_k} exceeds the data's {n_classes} classes; at most {n_classes}")
        self.spec, self.n_classes, self.url = spec, n_classes, spec.endpoint
        self.name = shown_url(spec.endpoint)
        self.wire = wire_format(spec.protocol, spec.adapter, spec.columns)
        self.session = requests.Session()
        self.session.trust_env = urlsplit(self.url).hostname not in LOOPBACK  # no proxy between us and localhost
        self.session.headers["Content-Type"] = "application/json"
        if spec.credentials_env is not None:
            token = os.environ.get(spec.credentials_env)
            if not token:
                raise ConfigError(f"target.credentials_env: the environment variable {spec.credentials_env} is not set")
            self.session.headers["Authorization"] = f"Bearer {token}"
        wire_name = spec.adapter or spec.protocol
        self.store = AnswerStore(store_root, endpoint_key(self.url, wire_name, spec.output, spec.top_k))
        self.width = outputs.width(spec.output, n_classes, spec.top_k)
        self.usage = Usage()
        self._last_request = 0.0
        self._mode_checked = False  # the first batch answered is checked against the declared output mode

    def missing(self, x: np.ndarray) -> int:
        """How many distinct records of ``x`` the store has no answer for."""
        keys = list(dict.fromkeys(digests(x)))
        return len(keys) - len(self.store.get(keys))

    def probe(self) -> None:
        """Whether the endpoint answers at all (any HTTP status will do; a GET, no inference), with the
        retries of a request: a server down fails here, before the references train."""
        import requests

        for attempt in range(self.spec.retries + 1):
            try:
                self.session.get(self.url, timeout=self.spec.timeout)
                return
            except requests.exceptions.InvalidURL as e:
                raise EndpointError(f"endpoint {self.name}: not a URL a request can go to ({e})") from None
            except (requests.ConnectionError, requests.Timeout):
                if attempt == self.spec.retries:
                    raise EndpointError(
                        f"endpoint {self.name}: cannot connect (server down or unreachable; tried "
                        f"{self.spec.retries + 1} times); nothing was asked yet"
                    ) from None
                time.sleep(self.spec.backoff * 2**attempt)

    def rows(self, x: np.ndarray, stage: str) -> np.ndarray:
        """(n, width) stored rows for the records ``x``: from the store, the rest asked (each distinct input
        once) and kept as each batch is answered."""
        keys = digests(x)
        have = self.store.get(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(k for k in keys if k not in have))
        first_row = {k: i for i, k in reversed(list(enumerate(keys)))}
        self.usage.from_store += len(x) - len(missing)
        batch = self.spec.batch_size
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            answered = self._ask(np.stack([x[first_row[k]] for k in chunk]))
            self.store.put(zip(chunk, answered))
            have.update(zip(chunk, answered))
            self.usage.queries += len(chunk)
            SESSION["answers"] += len(chunk)  # what an interrupted run says it kept
            self.usage.by_stage[stage] = self.usage.by_stage.get(stage, 0) + len(chunk)
        return np.stack([have[k] for k in keys]) if keys else np.zeros((0, self.width))

    def _ask(self, x: np.ndarray) -> np.ndarray:
        """One batch, with retries; (n, width) rows."""
        body = json.dumps(self.wire.body(x)).encode()
        tries = self.spec.retries + 1
        for attempt in range(tries):
            try:
                payload = self._post(body)
                answered = outputs.rows(
                    self.wire.parse(payload, len(x)), self.spec.output, len(x), self.n_classes, self.spec.top_k
                )
                if not self._mode_checked:  # the first batch: a mis-declared output mode stops the audit here
                    self._mode_checked = True
                    why = outputs.misdeclared(answered, self.spec.output)
                    if why is not None:
                        raise EndpointError(
                            f"endpoint {self.name}: the answers do not look like output: {self.spec.output}: {why}; "
                            f"only this first batch of {len(x)} records was asked"
                        )
                return answered
            except MalformedAnswer as e:
                raise EndpointError(
                    f"endpoint {self.name}: the answer does not fit output: {self.spec.output} ({e}); "
                    f"{self.usage.queries} records answered so far are kept"
                ) from None
            except _Transient as e:
                if attempt + 1 == tries:
                    raise EndpointError(
                        f"endpoint {self.name}: {e} (tried {tries} times); the {self.usage.queries} records answered "
                        "so far are kept in the store: rerun to resume"
                    ) from None
                wait = e.wait if e.wait is not None else self.spec.backoff * 2**attempt
                self.usage.retries += 1
                log.warning("endpoint %s: %s; retry %d of %d in %.1f s", self.name, e, attempt + 1, tries - 1, wait)
                time.sleep(wait)
        raise AssertionError("unreachable")

    def _post(self, body: bytes) -> object:
        import requests

        if self.spec.rate_limit is not None:
            wait = self._last_request + 1.0 / self.spec.rate_limit - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        self._last_request = time.monotonic()
        self.usage.requests += 1
        try:
            response = self.session.post(self.url, data=body, timeout=self.spec.timeout)
        except requests.exceptions.InvalidURL as e:
            raise EndpointError(f"endpoint {self.name}: not a URL a request can go to ({e})") from None
        except requests.Timeout:
            raise _Transient(f"no answer within {self.spec.timeout:g} s") from None
        except requests.ConnectionError:
            raise _Transient("cannot connect (server down or unreachable)") from None
        status = response.status_code
        if status == 429:
            raise _Transient("429 too many requests", _retry_after(response.headers.get("Retry-After")))
        if status >= 500:  # the server's reason (KServe, MLflow say it in the body) beside the status
            said = server_reason(response.text)
            raise _Transient(f"server error {status}" + (f" ({said})" if said else ""))
        if status >= 400:
            said = server_reason(response.text)
            raise EndpointError(f"endpoint {self.name}: refused the request with {status} ({said})")
        try:
            return response.json()
        except ValueError:
            raise _Transient("the answer is not JSON") from None

    def close(self) -> None:
        self.store.close()
        self.session.close()


REASON_CHARS = 600


def server_reason(text: str) -> str:
    """The server's reason from an error body, on one line: the JSON's ``message`` (MLflow) or ``error``/``detail``
    (KServe, FastAPI) where there is one, else the body; cut at ``REASON_CHARS`` (a long Python traceback)."""
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if isinstance(found, dict):
        for key in ("message", "error", "detail"):
            if isinstance(found.get(key), str) and found[key].strip():
                text = found[key]
                break
    said = " ".join(text.split())
    return said if len(said) <= REASON_CHARS else said[: REASON_CHARS - 3] + "..."


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), capped; None when absent."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)
