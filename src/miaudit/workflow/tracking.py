"""Logging an audit to MLflow with its own client (``MlflowClient``), imported only here and only when tracking is
asked: ``check`` before any work (the server answers, the parent run exists), ``log`` once the output folder is
complete (one run: ``logged.contents``, then results.json's ``tracking`` naming it, then the artifacts).

A server that stops answering while ``log`` runs loses nothing: the folder stays complete (results.json without
``tracking``), the half-made run is marked FAILED where the server lets us, and ``NotLogged`` says what was not
logged; ``miaudit track DIR`` logs the folder later."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from ..errors import ConfigError, MiauditError
from ..results import AuditReport, Tracking
from . import logged
from .keys import TrackingConfig
from .verdicts import Command

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

# MLflow retries a failed request 7 times with backoff (minutes): before the audit one quick try tells a wrong URI,
# after it a few tries ride out a blip without holding a CI job for long. A user's own settings win.
CHECK_PATIENCE = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}
LOG_PATIENCE = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",  # our own line names the run; the gate's line stays last
}
BATCH = 100  # MLflow's most params (and tags) per log_batch request; metrics allow 1000


class NotLogged(MiauditError):
    """The tracking server failed while the audit was logged: what was not logged, and how to log it later."""


def host(uri: str) -> str:
    """The URI's host and port, no credentials; ``local`` for a file or database URI."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https") and parts.hostname:
        return parts.hostname + (f":{parts.port}" if parts.port else "")
    return "local"


@contextlib.contextmanager
def _patience(settings: dict[str, str]) -> Iterator[None]:
    """MLflow's retry and timeout settings while the block runs, where the user set none; urllib3's line per retry
    silenced (a failure is said once, by us)."""
    mine = {k: v for k, v in settings.items() if k not in os.environ}
    os.environ.update(mine)
    retries = logging.getLogger("urllib3.connectionpool")
    level = retries.level
    retries.setLevel(logging.ERROR)
    try:
        yield
    finally:
        retries.setLevel(level)
        for k in mine:
            os.environ.pop(k, None)


def _client(t: TrackingConfig) -> MlflowClient:
    """MLflow's client of ``t``'s URI; ConfigError naming ``tracking.mlflow`` where MLflow is not installed or
    refuses the URI."""
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ConfigError(
            "tracking.mlflow: MLflow is not installed in this Python: pip install 'miaudit[tracking]' (mlflow)"
        ) from None
    try:
        return MlflowClient(tracking_uri=t.mlflow)  # it makes its store here, and refuses a URI it will not use
    except Exception as e:  # MLflow 3 refuses a file: store unless MLFLOW_ALLOW_FILE_STORE=true
        raise ConfigError(f"tracking.mlflow: MLflow cannot use {t.mlflow} ({_why(e)})") from None


def _why(e: BaseException) -> str:
    """An MLflow or connection error in a few words (its first line, shortened)."""
    said = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return said if len(said) <= 140 else said[:137] + "..."


def check(t: TrackingConfig) -> None:
    """Before any work: the server answers (one quick request) and the parent run, if named, is there.

    Raises:
        ConfigError: one line naming ``tracking.mlflow`` (or ``tracking.parent_run_id``) and what failed.
    """
    client = _client(t)
    with _patience(CHECK_PATIENCE):
        try:
            client.search_experiments(max_results=1)
        except Exception as e:  # MlflowException, requests' ConnectionError ...: the server is not usable
            said = "no MLflow tracking server answers at" if host(t.mlflow) != "local" else "MLflow cannot use"
            raise ConfigError(f"tracking.mlflow: {said} {t.mlflow} ({_why(e)})") from None
        if t.parent_run_id is not None:
            try:
                client.get_run(t.parent_run_id)
            except Exception as e:
                raise ConfigError(
                    f"tracking.parent_run_id: no run {t.parent_run_id} at {t.mlflow} ({_why(e)})"
                ) from None


def log(out: Path, t: TrackingConfig, command: Command) -> Tracking:
    """Log the finished output folder ``out`` as one MLflow run; record it in ``out``/results.json's ``tracking``.

    Raises:
        NotLogged: the server failed midway: results.json is left without ``tracking``, the message says what was
            not logged and how to log it later.
    """
    path = out / "results.json"
    r = AuditReport.load(path)
    what = logged.contents(r, command, out)
    client = _client(t)
    done: list[str] = []
    run_id = ""
    with _patience(LOG_PATIENCE):
        try:
            exp = client.get_experiment_by_name(t.experiment)
            exp_id = exp.experiment_id if exp is not None else client.create_experiment(t.experiment)
            tags = {**t.tags, **what.tags, **({"mlflow.parentRunId": t.parent_run_id} if t.parent_run_id else {})}
            run_id = client.create_run(exp_id, run_name=t.run_name, tags=tags).info.run_id
            done.append(f"run {run_id}")
            _batches(client, run_id, what)
            done.append("params and metrics")
            found = Tracking(tracker="mlflow", host=host(t.mlflow), experiment=t.experiment, experiment_id=exp_id,
                             run_id=run_id)  # fmt: skip
            given = {name: getattr(r, name) for name in r.model_fields_set}  # validated again whole, not copied over
            type(r).model_validate({**given, "tracking": found}).write(path)  # the artifact names its run
            for f in what.artifacts:
                client.log_artifact(run_id, str(f))
            client.set_terminated(run_id, "FINISHED")
        except Exception as e:
            r.write(path)  # as the audit wrote it: no run named that does not hold it all
            if run_id:
                with contextlib.suppress(Exception), _patience(CHECK_PATIENCE):
                    client.set_terminated(run_id, "FAILED")
            kept = f" (logged: {', '.join(done)}, marked FAILED)" if done else ""
            missing = "artifacts" if "params and metrics" in done else "params, metrics and artifacts"
            raise NotLogged(
                f"tracking: MLflow at {t.mlflow} failed ({_why(e)}): {missing} not logged{kept}; {out}/ is complete: "
                f"log it later with `miaudit track {out}`"
            ) from None
    return found


def _batches(client: MlflowClient, run_id: str, what: logged.Logged) -> None:
    from mlflow.entities import Metric, Param

    now = int(time.time() * 1000)
    metrics = [Metric(k, float(v), now, 0) for k, v in what.metrics.items()]
    params = [Param(k, v) for k, v in what.params.items()]
    for i in range(0, max(len(metrics), len(params)), BATCH):
        client.log_batch(run_id, metrics=metrics[i : i + BATCH], params=params[i : i + BATCH])


def config_of(r: AuditReport, uri: str | None) -> TrackingConfig | None:
    """A finished run's tracking (``miaudit track DIR``): its config's ``tracking:``, the URI replaced by ``uri``."""
    given: Any = r.config.get("tracking")
    if given is None and uri is None:
        return None
    base = dict(given) if isinstance(given, dict) else {}
    try:
        return TrackingConfig.model_validate({**base, **({"mlflow": uri} if uri else {})})
    except ValidationError as e:
        first = e.errors()[0]
        raise ConfigError(f"tracking.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
