"""The gate's conditions, one typed registry: ``VERDICTS`` (a command's verdict word) and ``METRICS`` (a headline
number with its unit, the FPR levels it takes, its reader per command). The parser and its error messages
(``gate``), docs/workflow.md's table (tests hold it equal) and the tracker's headline metrics (``logged``) all read
these two tables. A metric over attacks reads the strongest membership test (the largest value over the attack
rows; risk rankings left out), so a gate fails when any attack crosses."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..results import AuditReport, Metrics
from .verdicts import Command

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


def conditions_of(command: Command) -> list[str]:
    """A command's conditions, as a user writes them (for error messages and ``--help``)."""
    said = [e.name for e in VERDICTS.values() if command in e.commands]
    return said + [f"{e.form()}>X" for e in METRICS.values() if command in e.commands]
