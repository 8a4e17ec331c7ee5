"""The workflow flags every auditing command shares (``--fail-on``, ``--track``) and their three moments: ``Flow.of``
parses ``--fail-on`` first (nothing read, nothing written), ``check`` takes the config's ``gate:`` and ``tracking:``
and asks the tracker before any work, ``finish`` logs the written folder, then prints the gate's line last and exits
1 when it fails (2 stays bad input, 0 nothing to report). ``track_folder`` is ``miaudit track DIR``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rich.console import Console

from ..errors import ConfigError
from ..results import AuditReport
from . import tracking
from .gate import Condition, GateDecision, parse_all
from .keys import TrackingConfig
from .verdicts import Command, command_of


class WorkflowKeys(Protocol):
    """A command's config (``RunConfig``, ``ScoreConfig``): its ``gate:`` and ``tracking:`` keys."""

    @property
    def gate(self) -> tuple[str, ...]: ...

    @property
    def tracking(self) -> TrackingConfig | None: ...


def _say(line: str, stderr: bool = False) -> None:
    Console(stderr=stderr).print(line, highlight=False, markup=False, soft_wrap=True)


@dataclass
class Flow:
    """One command's gate conditions and tracker."""

    command: Command
    conditions: tuple[Condition, ...] = ()
    track: str | None = None
    tracking: TrackingConfig | None = None

    @classmethod
    def of(cls, command: Command, fail_on: list[str] | None, track: str | None) -> Flow:
        """``--fail-on`` parsed for ``command``: ConfigError naming ``--fail-on`` for a bad one."""
        if track is not None and not track.strip():
            raise ConfigError("--track: an MLflow tracking URI (http://HOST:PORT, sqlite:///PATH)")
        return cls(command, parse_all(fail_on or [], "--fail-on", command), track)

    def check(self, cfg: WorkflowKeys) -> None:
        """The config read, before any work: its ``gate:`` conditions belong to the command; the tracker answers."""
        self.conditions += parse_all(cfg.gate, "gate", self.command)
        given = cfg.tracking
        if self.track is not None:
            given = given.revised(mlflow=self.track) if given else TrackingConfig(mlflow=self.track)
        self.tracking = given
        if given is not None:
            tracking.check(given)

    def finish(self, results: AuditReport, out: Path, quiet: bool) -> None:
        """The output written: log it (a failing server: one line on stderr, the folder complete), then the gate."""
        if self.tracking is not None:
            try:
                found = tracking.log(out, self.tracking, self.command)
            except tracking.NotLogged as e:
                _say(f"warning: {e}", stderr=True)
            else:
                if not quiet:
                    _say(f"tracked: MLflow run {found.run_id}, experiment {found.experiment} at {found.host}")
        if self.conditions:
            decision = GateDecision(self.command, tuple(c.judge(results, self.command) for c in self.conditions))
            if not quiet or not decision.passed:
                _say(decision.last_line)
            if not decision.passed:
                raise SystemExit(decision.exit_code)


def track_folder(folder: Path, uri: str | None, again: bool) -> str:
    """``miaudit track DIR``: a finished output folder logged as one MLflow run; what to print.

    Raises:
        MiauditError: no results.json, no tracking URI, already logged (without ``again``), a server that does not
            answer or fails midway.
    """
    r = AuditReport.load(folder / "results.json")
    t = tracking.config_of(r, uri)
    if t is None:
        raise ConfigError(f"--track: {folder}/results.json's config has no tracking: key; give --track URI")
    if r.tracking is not None and not again:
        raise ConfigError(
            f"{folder}: already logged as MLflow run {r.tracking.run_id} at {r.tracking.host}; --force logs it again"
        )
    tracking.check(t)
    found = tracking.log(folder, t, command_of(r))
    return f"tracked: {folder}/ as MLflow run {found.run_id}, experiment {found.experiment} at {found.host}"
