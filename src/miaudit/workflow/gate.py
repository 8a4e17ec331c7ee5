"""The CI gate: conditions on an audit's typed answer that fail a pipeline (``--fail-on``, the ``gate:`` config key,
``miaudit.gate``). docs/workflow.md states the grammar:

    CONDITION := VERDICT | METRIC OP NUMBER
    METRIC    := NAME | NAME@LEVEL          LEVEL: an FPR level the audit computes, 0.1% 1% 5% (or 0.001 0.01 0.05)
    OP        := >  >=  <  <=
    NUMBER    := a share as a fraction or a percent (5% = 0.05), a count (an integer), or an epsilon

Every condition is an entry of ``VERDICTS`` or ``METRICS`` (its name, the commands it belongs to, how it reads the
typed result): the parser, the error messages, the docs table and the tracker's headline metrics read these two
tables. A metric over attacks reads the strongest membership test (the largest value over the attack rows; risk
rankings left out), so a gate fails when any attack crosses. A condition this result cannot judge (no verdict, a
metric absent) fails the gate, saying why: a gate that cannot look does not pass."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..errors import ConfigError
from ..results import AuditReport, Metrics
from . import verdicts
from .verdicts import COMMANDS, Command

FPR_LEVELS = (0.001, 0.01, 0.05)  # stats.metrics.FPR_LEVELS: every audit's TPR levels (tests hold the two equal)


@dataclass(frozen=True)
class Unit:
    """How a threshold is written and shown."""

    name: str
    percent: bool  # a share: 0.05 or 5%
    integer: bool  # a count

    def parse(self, text: str) -> float:
        """The threshold ``text`` in this unit; ValueError saying the expected form."""
        pct = text.endswith("%")
        try:
            value = float(text[:-1] if pct else text)
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None
        if pct and not self.percent:
            raise ValueError(f"{self.name} takes no percent sign (a share does: tpr, auc, p_value ...)")
        value = value / 100 if pct else value
        if self.integer and value != int(value):
            raise ValueError(f"{self.name} is a whole number, not {text}")
        if value < 0 or (self.percent and value > 1):
            shown = "a fraction in [0, 1] or a percent in [0%, 100%]" if self.percent else "at least 0"
            raise ValueError(f"{self.name} is {shown}, not {text}")
        return value

    def show(self, value: float) -> str:
        return f"{100 * value:.3g}%" if self.percent else f"{value:g}" if self.integer else f"{value:.3g}"


SHARE = Unit("share", percent=True, integer=False)
COUNT = Unit("count", percent=False, integer=True)
EPSILON = Unit("epsilon", percent=False, integer=False)


@dataclass(frozen=True)
class Measured:
    """A metric's value on a result, and whose it is (an attack's label, or the command's headline)."""

    value: float
    of: str


Reader = Callable[[AuditReport, float | None], Measured | None]


@dataclass(frozen=True)
class VerdictEntry:
    """A verdict condition: holds when its command's verdict word (``verdicts``) is ``name``."""

    name: str
    commands: tuple[Command, ...]
    about: str


@dataclass(frozen=True)
class MetricEntry:
    """A threshold's metric: its unit, the FPR levels it takes after ``@`` (empty: none), its reader per command."""

    name: str
    unit: Unit
    readers: Mapping[Command, Reader]
    about: str
    levels: tuple[float, ...] = ()

    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(self.readers)

    def form(self) -> str:
        return f"{self.name}@1%" if self.levels else self.name


def _strongest(value: Callable[[Metrics, float | None], float | None]) -> Reader:
    """A reader over the membership tests: the largest value and the attack that has it."""

    def read(r: AuditReport, level: float | None) -> Measured | None:
        got = [(v, a.label) for a in r.tests if (v := value(a, level)) is not None]
        return Measured(*max(got)) if got else None

    return read


def _at(a: Metrics, level: float | None, ci: int | None) -> float | None:
    """A row's TPR at ``level`` (``ci``: 0 the interval's low end)."""
    key = str(level)
    if ci is None:
        return (a.tpr_at_fpr or {}).get(key)
    bounds = (a.tpr_at_fpr_ci or {}).get(key)
    return None if bounds is None else bounds[ci]


def _at_risk(r: AuditReport, _level: float | None) -> Measured | None:
    risk = r.records_at_risk
    if risk is None:
        return None
    return Measured(float(risk.count or 0), f"records at risk at FDR {risk.fdr:g}")


def _epsilon_lb(r: AuditReport, _level: float | None) -> Measured | None:
    return None if r.dp_audit is None else Measured(r.dp_audit.epsilon_lb, "epsilon lower bound")


def _remembered(r: AuditReport, _level: float | None) -> Measured | None:
    return None if r.unlearning is None else Measured(len(r.unlearning.remembered), "forgotten records remembered")


def _unlearning_p(r: AuditReport, _level: float | None) -> Measured | None:
    return None if r.unlearning is None else Measured(r.unlearning.p_value, "unlearning test")


def _inference_p(r: AuditReport, _level: float | None) -> Measured | None:
    d = r.dataset_inference
    return None if d is None else Measured(d.p_value, "dataset inference")


def _inference_auc(r: AuditReport, _level: float | None) -> Measured | None:
    d = r.dataset_inference
    return None if d is None else Measured(d.auc, "suspect against validation records")


def _fraction_used(r: AuditReport, _level: float | None) -> Measured | None:
    d = r.dataset_inference
    return None if d is None or d.fraction is None else Measured(d.fraction.estimate, "suspect set")


MEMBERSHIP: tuple[Command, ...] = ("run", "score")
VERDICTS: dict[str, VerdictEntry] = {
    e.name: e
    for e in (
        VerdictEntry(
            "leaks", MEMBERSHIP, "the audit's verdict is *Leaks* (Holm over every membership test and FPR level)"
        ),
        VerdictEntry("violation", ("dp-audit",), "the DP audit rejects the claimed epsilon"),
        VerdictEntry("not_forgotten", ("unlearn",), "the forgotten records are still remembered"),
        VerdictEntry("over_forgotten", ("unlearn",), "forgotten harder than retraining would (or the model damaged)"),
        VerdictEntry("used", ("infer-dataset",), "the suspect set was used to train the model"),
    )
}
METRICS: dict[str, MetricEntry] = {
    e.name: e
    for e in (
        MetricEntry(
            "auc",
            SHARE,
            {
                **dict.fromkeys(MEMBERSHIP, _strongest(lambda a, _: a.auc)),
                "infer-dataset": _inference_auc,
            },
            "the strongest attack's AUC (infer-dataset: the suspect set's AUC against the validation records)",
        ),
        MetricEntry(
            "auc_lo",
            SHARE,
            dict.fromkeys(MEMBERSHIP, _strongest(lambda a, _: a.auc_ci[0] if a.auc_ci else None)),
            "the low end of the strongest attack's AUC interval (95%, bootstrap)",
        ),
        MetricEntry(
            "tpr",
            SHARE,
            dict.fromkeys(MEMBERSHIP, _strongest(lambda a, lv: _at(a, lv, None))),
            "the strongest attack's TPR at that FPR",
            FPR_LEVELS,
        ),
        MetricEntry(
            "tpr_lo",
            SHARE,
            dict.fromkeys(MEMBERSHIP, _strongest(lambda a, lv: _at(a, lv, 0))),
            "the low end of that TPR's exact 95% interval, the largest over the attacks",
            FPR_LEVELS,
        ),
        MetricEntry(
            "at_risk", COUNT, dict.fromkeys(MEMBERSHIP, _at_risk), "records at risk (named at the config's FDR)"
        ),
        MetricEntry(
            "epsilon_lb",
            EPSILON,
            {"dp-audit": _epsilon_lb},
            "the headline epsilon lower bound",
        ),
        MetricEntry(
            "remembered",
            COUNT,
            {"unlearn": _remembered},
            "forgotten records named as still remembered",
        ),
        MetricEntry(
            "p_value",
            SHARE,
            {
                "unlearn": _unlearning_p,
                "infer-dataset": _inference_p,
            },
            "the verdict's p-value (unlearn: two-sided)",
        ),
        MetricEntry(
            "fraction_used",
            SHARE,
            {"infer-dataset": _fraction_used},
            "the estimated fraction of the suspect set used",
        ),
    )
}
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
}
_THRESHOLD = re.compile(r"^(?P<name>[a-z_]+)(?:@(?P<level>[^<>=]*))?(?P<op>>=|<=|>|<)(?P<value>.*)$")


def conditions_of(command: Command) -> list[str]:
    """A command's conditions, as a user writes them (for error messages and ``--help``)."""
    said = [e.name for e in VERDICTS.values() if command in e.commands]
    return said + [f"{e.form()}>X" for e in METRICS.values() if command in e.commands]


@dataclass(frozen=True)
class Condition:
    """One parsed condition: a verdict (``verdict``) or a threshold (``metric``, ``level``, ``op``, ``threshold``)."""

    text: str
    verdict: VerdictEntry | None = None
    metric: MetricEntry | None = None
    level: float | None = None
    op: str = ""
    threshold: float = 0.0

    @property
    def commands(self) -> tuple[Command, ...]:
        entry = self.verdict or self.metric
        assert entry is not None
        return entry.commands

    def judge(self, r: AuditReport, command: Command) -> Finding:
        """Does the condition hold on ``r``? A condition ``r`` cannot answer holds as None (the gate fails)."""
        if self.verdict is not None:
            v = verdicts.BY_COMMAND[command](r)
            if v.word is None:
                return Finding(self, None, None, v.said)
            return Finding(self, v.word == self.verdict.name, v.number, f"verdict {v.word}: {v.said}")
        assert self.metric is not None
        m = self.metric.readers[command](r, self.level)
        if m is None:
            return Finding(self, None, None, f"this result has no {self.metric.name} to compare")
        shown = self.metric.unit.show(m.value)
        holds = OPS[self.op](m.value, self.threshold)
        return Finding(self, holds, m.value, f"{m.of}: {self.metric.name} = {shown}")


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
        cond = Condition(t, verdict=VERDICTS[t])
    elif (m := _THRESHOLD.match(t)) is None:
        hint = "; a threshold is METRIC OP NUMBER (e.g. tpr@1%>=5%, auc>0.6)" if t in METRICS else ""
        raise ConfigError(f"{where}: {text!r} is no condition; {whose} conditions: {known}{hint}")
    elif (metric := METRICS.get(m["name"])) is None:
        raise ConfigError(f"{where}: {text!r}: no metric {m['name']!r}; {whose} conditions: {known}")
    else:
        try:
            level = _level(m["level"], metric)
            cond = Condition(t, metric=metric, level=level, op=m["op"], threshold=metric.unit.parse(m["value"]))
        except ValueError as e:
            raise ConfigError(f"{where}: {text!r}: {e}") from None
    if command is not None and command not in cond.commands:
        theirs = ", ".join(f"miaudit {c}" for c in cond.commands)
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
