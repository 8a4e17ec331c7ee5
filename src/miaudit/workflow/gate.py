"""The CI gate: conditions on an audit's typed answer that fail a pipeline (``--fail-on``, the ``gate:`` config key,
``miaudit.gate``). docs/workflow.md states the grammar:

    CONDITION := VERDICT | METRIC OP NUMBER
    METRIC    := NAME | NAME@LEVEL          LEVEL: an FPR level the audit computes, 0.1% 1% 5% (or 0.001 0.01 0.05)
    OP        := >  >=  <  <=
    NUMBER    := a share as a fraction or a percent (5% = 0.05), a count (an integer), or an epsilon

The conditions themselves (their names, commands, units and readers) are ``conditions``' two tables; here they are
parsed, judged on a result, and decided on. A condition this result cannot judge (no verdict, a metric absent)
fails the gate, saying why: a gate that cannot look does not pass."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from ..errors import ConfigError
from ..results import AuditReport
from . import verdicts
from .conditions import METRICS, SHARE, VERDICTS, MetricEntry, VerdictEntry, conditions_of
from .verdicts import COMMANDS, Command

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}
_THRESHOLD = re.compile(r"^(?P<name>[a-z_]+)(?:@(?P<level>[^<>=]*))?(?P<op>>=|<=|>|<)(?P<value>.*)$")


@dataclass(frozen=True)
class Condition:
    """One parsed condition: a verdict (``entry`` a ``VerdictEntry``), or a threshold (a ``MetricEntry``, compared
    with ``op`` to ``threshold``, at the FPR ``level`` where it takes one)."""

    text: str
    entry: VerdictEntry | MetricEntry
    op: str = ""
    threshold: float = 0.0
    level: float | None = None

    def judge(self, r: AuditReport, command: Command) -> Finding:
        """Does the condition hold on ``r``? A condition ``r`` cannot answer holds as None (the gate fails)."""
        if isinstance(self.entry, VerdictEntry):
            v = verdicts.BY_COMMAND[command](r)
            if v.word is None:
                return Finding(self, None, None, v.said)
            return Finding(self, v.word == self.entry.name, v.number, f"verdict {v.word}: {v.said}")
        metric = self.entry
        m = metric.readers[command](r, self.level)
        if m is None:
            return Finding(self, None, None, f"this result has no {metric.name} to compare")
        holds = OPS[self.op](m.value, self.threshold)
        return Finding(self, holds, m.value, f"{m.of}: {metric.name} = {metric.unit.show(m.value)}")


@dataclass(frozen=True)
class Finding:
    """A condition judged: holds (True), does not (False), cannot be judged on this result (None)."""

    condition: Condition
    holds: bool | None
    number: float | None
    said: str

    @property
    def fails(self) -> bool:
        return self.holds is not False

    def line(self) -> str:
        what = "cannot be judged" if self.holds is None else "holds" if self.holds else "does not hold"
        return f"{self.condition.text} {what} ({self.said})"


@dataclass(frozen=True)
class GateDecision:
    """The gate's decision on one result: every condition judged; ``exit_code`` 1 when any holds or cannot be
    judged, else 0; ``last_line`` what the CLI prints last."""

    command: Command
    findings: tuple[Finding, ...]

    @property
    def failed(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.fails)

    @property
    def passed(self) -> bool:
        return not self.failed

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    @property
    def last_line(self) -> str:
        if not self.findings:
            return "gate: no conditions"
        if self.passed:
            return "gate passed: " + "; ".join(f.line() for f in self.findings)
        return "gate failed (exit 1): " + "; ".join(f.line() for f in self.failed)


def parse(text: str, where: str, command: Command | None = None) -> Condition:
    """One condition; ``command`` (None: any) the one it must belong to. ConfigError in one line naming ``where``
    (``--fail-on`` or ``gate``) and the expected form."""
    t = re.sub(r"\s+", "", text).lower()
    whose = f"miaudit {command}'s" if command else "the"
    known = (
        ", ".join(conditions_of(command)) if command else ", ".join([*VERDICTS, *(e.form() for e in METRICS.values())])
    )
    if t in VERDICTS:
        cond = Condition(t, VERDICTS[t])
    elif (m := _THRESHOLD.match(t)) is None:
        hint = "; a threshold is METRIC OP NUMBER (e.g. tpr@1%>=5%, auc>0.6)" if t in METRICS else ""
        raise ConfigError(f"{where}: {text!r} is no condition; {whose} conditions: {known}{hint}")
    elif (metric := METRICS.get(m["name"])) is None:
        raise ConfigError(f"{where}: {text!r}: no metric {m['name']!r}; {whose} conditions: {known}")
    else:
        try:
            level = _level(m["level"], metric)
            cond = Condition(t, metric, m["op"], metric.unit.parse(m["value"]), level)
        except ValueError as e:
            raise ConfigError(f"{where}: {text!r}: {e}") from None
    if command is not None and command not in cond.entry.commands:
        theirs = ", ".join(f"miaudit {c}" for c in cond.entry.commands)
        raise ConfigError(
            f"{where}: {text!r} is a condition of {theirs}, not of miaudit {command} ({whose} conditions: {known})"
        )
    return cond


def _level(text: str | None, metric: MetricEntry) -> float | None:
    """The FPR level after ``@`` (1% or 0.01), one of the metric's."""
    if not metric.levels:
        if text is not None:
            raise ValueError(f"{metric.name} takes no @LEVEL")
        return None
    shown = ", ".join(f"{100 * lv:g}%" for lv in metric.levels)
    if not text:
        raise ValueError(f"{metric.name} needs an FPR level: {metric.name}@1% (one of {shown})")
    level = SHARE.parse(text)
    if level not in metric.levels:
        raise ValueError(f"FPR level {text} is none the audit computes ({shown})")
    return level


def split(given: Iterable[str]) -> list[str]:
    """Conditions as given (repeated, or comma-separated in one), blanks dropped."""
    return [c for g in given for c in (p.strip() for p in g.split(",")) if c]


def parse_all(given: Iterable[str], where: str, command: Command | None = None) -> tuple[Condition, ...]:
    return tuple(parse(c, where, command) for c in split(given))


class HasResults(Protocol):
    @property
    def results(self) -> AuditReport: ...


def gate(
    conditions: Iterable[str | Condition], result: AuditReport | HasResults, command: Command | None = None
) -> GateDecision:
    """``miaudit.gate``: the gate's decision on an audit's result (an ``AuditReport`` or an ``AuditResult``).

    Args:
        conditions: as ``--fail-on`` takes them (``"leaks"``, ``"tpr@1%>=5%"``; comma-separated allowed).
        result: what the audit returned.
        command: whose conditions apply (default: the command that wrote ``result``).

    Raises:
        ConfigError: a condition unknown, malformed or not of ``command``.
    """
    r = result if isinstance(result, AuditReport) else result.results
    cmd = command or verdicts.command_of(r)
    if cmd not in COMMANDS:
        raise ConfigError(f"command: {cmd!r} is not one of {', '.join(COMMANDS)}")
    given = list(conditions)
    parsed = [*parse_all([c for c in given if isinstance(c, str)], "gate", cmd)]
    parsed += [parse(c.text, "gate", cmd) for c in given if isinstance(c, Condition)]
    return GateDecision(cmd, tuple(c.judge(r, cmd) for c in parsed))
