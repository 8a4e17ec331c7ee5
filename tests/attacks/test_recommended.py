"""``attacks: auto`` against the committed frontier results it is taken from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from miaudit import plan
from miaudit.attacks import recommended
from miaudit.config import run as config

FRONTIER = Path(__file__).parents[2] / "benchmarks" / "results" / "frontier.json"
CANDIDATES = {"eb-bmia", "lr-bmia", "rmia-draws"}  # the frontier's new candidates: none won everywhere
OFFLINE = ("location", "digits", "cifar10", "ag_news")


def _best_existing(rows: list[dict], k: int) -> str | None:
    pool = [r for r in rows if r["references"] == k and r["name"] not in CANDIDATES]
    return max(pool, key=lambda r: r["tpr@0.01"]["mean"])["name"] if pool else None


def test_round_two_is_the_candidates_best_or_tied_everywhere() -> None:
    """Protocol amendment 2's rule, recomputed from frontier2.json with frontier_table.py's tie rule."""
    import sys

    sys.path.insert(0, str(FRONTIER.parents[1]))
    from frontier_table import CANDIDATES2, tied_or_best

    results = json.loads((FRONTIER.parent / "frontier2.json").read_text())["datasets"]
    for k in (1, 2, 4, 8):
        tied = [tied_or_best(results[d]["rows"], k, results[d]["n_members"], 3) for d in OFFLINE]
        assert set(recommended.ROUND_TWO[k]) == set.intersection(*tied) & set(CANDIDATES2), f"K = {k}"


def test_table_is_the_frontier_best_per_budget() -> None:
    results = json.loads(FRONTIER.read_text())["datasets"]
    for k, chosen in recommended.FRONTIER_BEST.items():
        winners = {_best_existing(results[d]["rows"], k) for d in OFFLINE} - {None}
        assert winners == set(chosen), f"K = {k}: frontier winners {winners}, auto runs {chosen}"


@pytest.mark.parametrize(("refs", "expected"), [(0, ["attack-p", "gls"]), (4, ["attack-p", "gls", "rmia (n=4)",
                         "bavaria-n (n=4)", "lira (n=4)", "pair-lr (n=4)", "pair-logit (n=4)"]), (6, ["attack-p", "gls",
                         "rmia (n=6)", "bavaria-n (n=6)", "lira (n=6)", "pair-lr (n=6)", "pair-logit (n=6)"]),
                         (32, ["attack-p", "gls", "rmia (n=32)", "bavaria-n (n=32)"])])  # fmt: skip
def test_auto_rows_for_the_references_available(refs: int, expected: list[str]) -> None:
    p = plan.build(config.from_dict({"references": refs}))
    assert [a.label for a in p.attacks] == expected
    assert p.auto and ("frontier_table.md" in p.auto) == (refs > 0)


def test_default_audit_and_init_template_agree() -> None:
    import yaml

    from miaudit.config import describe

    template = config.from_dict(yaml.safe_load(describe.init_yaml()))
    assert template == config.default()
    assert template.attacks == "auto" and template.train.epochs == 30 and template.train.lr == 0.1


def test_without_population_auto_keeps_what_can_run() -> None:
    p = plan.build(config.from_dict({"references": 0}), roles=set())
    assert [a.label for a in p.attacks] == ["gls"]
