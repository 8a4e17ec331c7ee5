"""``attacks: auto``: which attacks an audit runs for the reference models it has.

A table measured on a few data sets did not hold on a data set it was not tuned on (the pair
attacks, best or tied on the four development sets, fell to a fifth of BaVarIA-n on a grayscale CIFAR-10
MLP). So, where it can, auto chooses on the audit's own data: with K >= 2 references, offline, and population
records whose reference membership is known, every attack in ``CANDIDATES`` (those a reference can be scored
by from logits alone) is planned at K, measured on the references as pseudo-targets before any of them runs,
and only the strongest, or the few tied with it, run (``membership/choice.py``).

Elsewhere (one reference, online, no pseudo-targets) auto runs one attack, the first of ``RULE[K]`` the
audit can run: per K the candidates ranked by the leave-one-data-set-out protocol (``benchmarks/lodo/lodo.py``,
``benchmarks/lodo/lodo.md``), by their lowest ratio to the best candidate's TPR@1% over five data sets
(location, digits, the CIFAR-10 subset, AG News, the grayscale CIFAR-10 MLP). The rule picked on any four
stayed at least half the best on the fifth at K = 1, 2, 4 (and within one sd of it on 4, 5, 3 of 5);
``lodo.md`` shows where it did not. A budget between the benchmarked ones takes the rule of the largest
benchmarked K below it. Around them: Attack-P, the
reference-free baseline (it needs population records), and GLS, a per-record risk ranking from the target
alone (not a membership test). ``tests/attacks/test_recommended.py`` holds ``RULE`` to ``lodo.json``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import AttackRequirementError
from . import registry

CANDIDATES: tuple[str, ...] = ("bavaria-n", "lira", "rmia", "pair-lr", "pair-logit")
BASELINES: tuple[str, ...] = ("attack-p", "gls")  # planned by auto around the chosen attacks, where they run
# Which attack orders the records by risk (membership.ranking.risk_basis), in order of preference: the Bayesian tests
# (per-record p-values from a model of each record's own score distribution), then LiRA's, then the
# reference-free leverage score; else the report takes whatever ran first.
RISK_BASIS: tuple[str, ...] = ("mr-bmia", "bmia", "lira", "bavaria-n", "gls")
RULE: dict[int, tuple[str, ...]] = {  # per K the candidates, the leave-one-data-set-out rule's pick first
    1: ("rmia", "pair-lr", "bavaria-n", "pair-logit", "lira"),
    2: ("pair-logit", "rmia", "bavaria-n", "lira", "pair-lr"),
    4: ("lira", "pair-lr", "rmia", "pair-logit", "bavaria-n"),
    8: ("pair-logit", "lira", "rmia", "pair-lr", "bavaria-n"),
}
SOURCE = "benchmarks/lodo/lodo.md"
DEFAULT_REFERENCES = 4  # the default audit's; the Python API's when it has population records


@dataclass(frozen=True)
class AutoRows:
    """The rows auto plans, why, and which of them the audit's own data decides on (empty: all run)."""

    rows: list[dict]
    why: str
    candidates: tuple[str, ...] = ()


def _runs(name: str, k: int, mode: str, provided: set[str]) -> bool:
    try:
        registry.get(name).check(k, mode, provided)
    except registry.AttackRequirementError:
        return False
    return True


def rule(references: int) -> tuple[str, ...]:
    """The leave-one-data-set-out rule's attacks for ``references`` models (the largest benchmarked K below)."""
    budget = max((k for k in RULE if k <= references), default=0)
    return RULE.get(budget, ())


def choose(references: int, mode: str, provided: Iterable[str]) -> AutoRows:
    """The attack rows ``attacks: auto`` plans, and why, for ``references`` models and the inputs provided."""
    have = set(provided)
    base = [name for name in BASELINES if _runs(name, 0, mode, have)]
    on_data = references >= 2 and mode == "offline" and "population" in have
    strong = [n for n in (CANDIDATES if on_data else rule(references)) if _runs(n, references, mode, have)]
    strong = strong if on_data else strong[:1]
    rows = [{"name": n} for n in base] + [{"name": n, "references": references} for n in strong]
    if strong and on_data:
        why = (
            f"with {references} reference models, {', '.join(strong)} measured on the references as "
            "pseudo-targets (no target membership read); the strongest, and those tied with it, run"
        )
    elif strong:
        why = (
            f"with {references} reference model(s), {', '.join(strong)}: the leave-one-data-set-out rule of "
            f"{SOURCE} (the highest worst-case ratio to the best TPR@1% over five data sets, of the attacks this "
            "audit can run)"
        )
    else:
        why = "no reference models: the reference-free baseline"
    why += "; attack-p the baseline" if "attack-p" in base else ""
    why += "".join(f"; {n} a per-record risk ranking, not a membership test" for n in base if registry.is_ranking(n))
    if not rows:
        raise AttackRequirementError(
            "attacks: auto found no attack for this audit (no population records and no models); name attacks"
        )
    return AutoRows(rows, why, tuple(strong) if on_data else ())
