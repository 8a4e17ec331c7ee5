"""``attacks: auto`` against the leave-one-data-set-out results its rule is taken from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from miaudit import attack_plan
from miaudit.attacks import recommended, registry
from miaudit.config import run as config

LODO = Path(__file__).parents[2] / "benchmarks" / "lodo" / "lodo.json"


def test_rule_is_the_leave_one_data_set_out_pick_per_budget() -> None:
    """RULE[K] is benchmarks/lodo/lodo.py's ranking on every data set, and its pick is nowhere below half the best."""
    budgets = json.loads(LODO.read_text())["budgets"]
    assert set(recommended.RULE) == {int(k) for k in budgets}
    for k, b in budgets.items():
        assert recommended.RULE[int(k)] == tuple(b["ranking"]) and b["ranking"][0] == b["rule"], f"K = {k}"
        assert b["worst_ratio"][b["rule"]] >= 0.5, f"K = {k}: {b['rule']} below half the best somewhere"


@pytest.mark.parametrize(("refs", "expected", "candidates"), [
    (0, ["attack-p", "gls"], ()),
    (1, ["attack-p", "gls", f"{recommended.RULE[1][0]} (n=1)"], ()),
    (4, ["attack-p", "gls", *(f"{n} (n=4)" for n in recommended.CANDIDATES)], recommended.CANDIDATES),
    (32, ["attack-p", "gls", *(f"{n} (n=32)" for n in recommended.CANDIDATES)], recommended.CANDIDATES),
])  # fmt: skip
def test_auto_rows_for_the_references_available(refs: int, expected: list[str], candidates: tuple) -> None:
    p = attack_plan.build(config.from_dict({"references": refs}))
    assert [a.label for a in p.attacks] == expected
    assert p.candidates == candidates
    assert p.auto and ("pseudo-targets" in p.auto) == bool(candidates)


def test_online_auto_takes_the_rule() -> None:
    p = attack_plan.build(config.from_dict({"references": 4, "mode": "online"}))
    runs_online = [n for n in recommended.rule(4) if "online" in registry.get(n).modes]
    assert p.candidates == () and [a.name for a in p.attacks][2:] == runs_online[:1]


def test_default_audit_and_init_template_agree() -> None:
    import yaml

    from miaudit.config import describe

    template = config.from_dict(yaml.safe_load(describe.init_yaml()))
    assert template == config.default()
    assert template.attacks == "auto" and template.train.epochs == 30 and template.train.lr == 0.1


def test_without_population_auto_keeps_what_can_run() -> None:
    p = attack_plan.build(config.from_dict({"references": 0}), roles=set())
    assert [a.label for a in p.attacks] == ["gls"]
