"""``attacks: auto``: the strongest attacks for the reference models an audit has, from committed results.

The table is the "best existing" column of ``benchmarks/results/frontier_table.md`` (``miaudit bench
frontier``, reporting seeds 3-5, offline): per reference budget K, every attack that was the strongest on at
least one of location, digits, the CIFAR-10 subset and AG News. No attack won on all four at any K, so auto
runs each winner (they are cheap beside training the references). Round two
(``benchmarks/results/frontier2_table.md``, protocol amendment 2) adds, at each K it benchmarked (1, 2, 4, 8), the
round-two candidates that were best or tied (within one sd of the best) on all four data sets there:
``pair-logit`` at every K, ``pair-lr`` at K = 1 and 4. A budget between the benchmarked ones
takes the set of the largest benchmarked K below it, with all K references. Around them: Attack-P, the
reference-free baseline (it needs population records), and GLS, a per-record risk ranking from the target
alone (not a membership test). ``tests/attacks/test_recommended.py`` holds this table to frontier.json.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import AttackRequirementError
from . import registry

FRONTIER_BEST: dict[int, tuple[str, ...]] = {
    1: ("rmia", "bavaria-n", "lira"),
    2: ("rmia", "bavaria-n", "mr-bmia"),
    4: ("rmia", "bavaria-n", "lira"),
    8: ("rmia", "bavaria-n"),
    16: ("rmia", "bavaria-n"),
}
ROUND_TWO: dict[int, tuple[str, ...]] = {
    1: ("pair-lr", "pair-logit"),
    2: ("pair-logit",),
    4: ("pair-lr", "pair-logit"),
    8: ("pair-logit",),
}
SOURCE = "benchmarks/results/frontier_table.md"
DEFAULT_REFERENCES = 4  # the default audit's; the Python API's when it has population records


def _runs(name: str, k: int, mode: str, provided: set[str]) -> bool:
    try:
        registry.get(name).check(k, mode, provided)
    except registry.AttackRequirementError:
        return False
    return True


def choose(references: int, mode: str, provided: Iterable[str]) -> tuple[list[dict], str]:
    """The attack rows ``attacks: auto`` runs, and why, for ``references`` models and the inputs provided."""
    have = set(provided)
    base = [name for name in ("attack-p", "gls") if _runs(name, 0, mode, have)]
    budget = max((k for k in FRONTIER_BEST if k <= references), default=0)
    chosen = FRONTIER_BEST.get(budget, ()) + ROUND_TWO.get(budget, ())
    strong = [n for n in chosen if _runs(n, references, mode, have)]
    rows = [{"name": n} for n in base] + [{"name": n, "references": references} for n in strong]
    if strong:
        why = (
            f"with {references} reference model(s), the strongest attacks at K = {budget} in {SOURCE} and "
            f"frontier2_table.md ({', '.join(strong)}: each the best TPR@1% on at least one data set, or tied with "
            "the best on all four; none the best on all)"
        )
    else:
        why = "no reference models: the reference-free baseline"
    why += "; attack-p the baseline" if "attack-p" in base else ""
    why += "; gls a per-record risk ranking, not a membership test" if "gls" in base else ""
    if not rows:
        raise AttackRequirementError(
            "attacks: auto found no attack for this audit (no population records and no models); name attacks"
        )
    return rows, why
