"""The CI gate's grammar, its registry read on typed results of every command, and its decision (``miaudit.gate``)."""

from __future__ import annotations

import pytest
from _built import dp, inferred, membership, unlearned

import miaudit
from miaudit.errors import ConfigError
from miaudit.results import AuditReport
from miaudit.stats import metrics
from miaudit.workflow import verdicts
from miaudit.workflow.conditions import FPR_LEVELS, METRICS, VERDICTS, MetricEntry, VerdictEntry
from miaudit.workflow.gate import GateDecision, gate, parse


def test_every_fpr_level_is_the_audits() -> None:
    assert FPR_LEVELS == metrics.FPR_LEVELS  # the gate's levels are the ones every audit computes


@pytest.mark.parametrize(
    ("text", "verdict", "metric", "level", "op", "threshold"),
    [
        ("leaks", "leaks", None, None, "", 0.0),
        ("tpr@1%>=5%", None, "tpr", 0.01, ">=", 0.05),
        (" TPR @ 0.01 >= 0.05 ", None, "tpr", 0.01, ">=", 0.05),  # spaces and case do not matter
        ("tpr_lo@0.1%>0", None, "tpr_lo", 0.001, ">", 0.0),
        ("auc>0.6", None, "auc", None, ">", 0.6),
        ("auc<=60%", None, "auc", None, "<=", 0.6),
        ("at_risk>0", None, "at_risk", None, ">", 0.0),
    ],
)
def test_the_grammar(text: str, verdict: str | None, metric: str | None, level: float | None, op: str,
                     threshold: float) -> None:  # fmt: skip
    c = parse(text, "--fail-on", "run")
    assert (c.entry.name, type(c.entry)) == ((verdict, VerdictEntry) if verdict else (metric, MetricEntry))
    assert (c.level, c.op) == (level, op) and c.threshold == pytest.approx(threshold)


@pytest.mark.parametrize(
    ("text", "command", "said"),
    [
        ("bogus", "run", "'bogus' is no condition; miaudit run's conditions: leaks, auc>X"),
        ("violation", "run", "'violation' is a condition of miaudit dp-audit, not of miaudit run"),
        ("leaks", "unlearn", "'leaks' is a condition of miaudit run, miaudit score, not of miaudit unlearn"),
        ("epsilon_lb>2", "score", "not of miaudit score"),
        ("auc", "run", "a threshold is METRIC OP NUMBER"),
        ("tpr>=5%", "run", "tpr needs an FPR level: tpr@1% (one of 0.1%, 1%, 5%)"),
        ("tpr@2%>=5%", "run", "FPR level 2% is none the audit computes"),
        ("auc@1%>0.5", "run", "auc takes no @LEVEL"),
        ("auc>1.5", "run", "share is a fraction in [0, 1] or a percent in [0%, 100%], not 1.5"),
        ("auc>-1", "run", "share is a fraction in [0, 1]"),
        ("auc>x", "run", "'x' is not a number"),
        ("auc>", "run", "'' is not a number"),
        ("at_risk>0.5", "run", "count is a whole number, not 0.5"),
        ("at_risk>5%", "run", "count takes no percent sign"),
        ("epsilon_lb>2%", "dp-audit", "epsilon takes no percent sign"),
        ("nope>1", "run", "no metric 'nope'"),
    ],
)
def test_bad_conditions_are_one_line_naming_the_flag(text: str, command: verdicts.Command, said: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse(text, "--fail-on", command)
    assert str(e.value).startswith("--fail-on: ") and said in str(e.value) and "\n" not in str(e.value)


def test_every_entry_belongs_to_known_commands_and_each_command_has_a_verdict() -> None:
    for entry in [*VERDICTS.values(), *METRICS.values()]:
        assert entry.commands and set(entry.commands) <= set(verdicts.COMMANDS), entry.name
    for command in verdicts.COMMANDS:
        assert any(command in e.commands for e in VERDICTS.values()), command
        assert command in verdicts.BY_COMMAND


def test_membership_conditions_read_the_strongest_attack() -> None:
    r = membership()
    d = gate(["leaks", "auc>0.65", "tpr@1%>=5%", "tpr_lo@1%>=6%", "at_risk>2", "auc_lo>=0.7"], r, "run")
    holds = {f.condition.text: f.holds for f in d.findings}
    assert holds == {"leaks": True, "auc>0.65": True, "tpr@1%>=5%": True, "tpr_lo@1%>=6%": False,
                     "at_risk>2": True, "auc_lo>=0.7": False}  # fmt: skip
    tpr = next(f for f in d.findings if f.condition.text == "tpr@1%>=5%")
    assert tpr.number == pytest.approx(0.08) and "rmia" in tpr.said and "8%" in tpr.said  # whose, in the unit
    assert d.exit_code == 1 and d.last_line.startswith("gate failed (exit 1): leaks holds (verdict leaks: rmia")


def test_a_gate_that_nothing_crosses_passes() -> None:
    d = gate(["leaks", "tpr@1%>=50%", "at_risk>3"], membership(leaks=False), "run")
    assert d.passed and d.exit_code == 0 and not d.failed
    assert d.last_line.startswith("gate passed: leaks does not hold (verdict no_leak")


def test_a_condition_the_result_cannot_answer_fails_the_gate() -> None:
    no_verdict = membership().model_copy(update={"verdict": None})
    d = gate(["leaks"], no_verdict, "run")
    assert d.exit_code == 1 and d.findings[0].holds is None
    assert "leaks cannot be judged (this audit gives no leak verdict" in d.last_line


@pytest.mark.parametrize(
    ("result", "conditions", "holds"),
    [
        (dp(True), ["violation", "epsilon_lb>2", "epsilon_lb>3"], [True, True, False]),
        (dp(False), ["violation"], [False]),
        (dp(None), ["violation"], [None]),  # no claimed epsilon: no verdict to read
        (unlearned("not_forgotten"), ["not_forgotten", "over_forgotten", "remembered>3", "p_value<1%"],
         [True, False, True, True]),
        (unlearned("verified"), ["not_forgotten", "over_forgotten"], [False, False]),
        (unlearned("no_claim"), ["not_forgotten"], [None]),
        (inferred(True), ["used", "p_value<=0.001", "auc>0.95", "fraction_used>0.5"], [True, True, False, None]),
        (inferred(None), ["used"], [None]),
    ],
)  # fmt: skip
def test_the_other_commands_conditions(result: AuditReport, conditions: list[str], holds: list[bool | None]) -> None:
    d = gate(conditions, result)  # the command read from the result itself
    assert [f.holds for f in d.findings] == holds
    assert d.exit_code == (0 if all(h is False for h in holds) else 1)


def test_the_command_is_read_from_the_result() -> None:
    assert verdicts.command_of(membership()) == "run"
    assert verdicts.command_of(dp(True)) == "dp-audit"
    assert verdicts.command_of(unlearned("verified")) == "unlearn"
    assert verdicts.command_of(inferred(True)) == "infer-dataset"
    with pytest.raises(ConfigError, match="gate: 'used' is a condition of miaudit infer-dataset"):
        gate(["used"], membership())


def test_the_python_api_returns_the_decision() -> None:
    class Held:  # what miaudit.run returns: an AuditResult with .results
        results = membership()

    d = miaudit.gate(["leaks, auc>0.9"], Held())  # type: ignore[attr-defined]
    assert isinstance(d, GateDecision) and [f.holds for f in d.findings] == [True, False] and d.exit_code == 1


def test_every_gate_verdict_is_a_verdict_an_audit_gives() -> None:
    """The gate's verdict conditions are words of the audits' own answers (results.answer.VERDICTS): a renamed
    verdict cannot leave a condition that never holds."""
    from miaudit.results.answer import VERDICTS as ANSWERED

    given = {word for words in ANSWERED.values() for word in words}
    assert set(VERDICTS) <= given, set(VERDICTS) - given
