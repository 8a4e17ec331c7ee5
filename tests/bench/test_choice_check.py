"""benchmarks/choice/choice_check.py's mirror: a pseudo-target moved to stand to its references as the target stands
to its own (the variant the session-8 protocol compared with the plain pseudo-audit); and
benchmarks/target_mismatch/target_mismatch.py's quantile map."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from miaudit.attacks import RecordSet
from tests.attacks.test_pair import logits_of, synthetic

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"  # its study folders are not packages: on sys.path
sys.path[:0] = [str(BENCH / "choice"), str(BENCH / "target_mismatch")]
import choice_check  # noqa: E402
import target_mismatch  # noqa: E402


def test_mirror_gives_a_pseudo_target_the_targets_distance_from_its_references() -> None:
    """References that share training records agree on a record more than the target agrees with them: here
    they share a per-record term of variance 0.5 the target lacks, and the target sits 1 above them. The
    mirror measures both on the population (all non-members of the target) and moves each pseudo-target so
    that its scores differ from its references' as the target's do; the plain pseudo-audit is not. By
    hand (record spread 4, OUT noise 1): the target on a reference has slope 4 / 5.5 and residual variance
    5 - 16 / 5.5, a pseudo-target on its reference 4.5 / 5.5 and 5.5 - 4.5**2 / 5.5."""
    rng = np.random.default_rng(5)
    inputs, _ = synthetic(rng, k=4, n_query=300, n_pop=20_000, n_val=100)

    def moved(records: RecordSet) -> RecordSet:
        common = rng.normal(0, np.sqrt(0.5), len(records.labels))
        refs = np.asarray(records.ref_logits)[..., 1] + common
        return replace(records, target_logits=logits_of(records.target_logits[:, 1] + 1.0), ref_logits=logits_of(refs))

    inputs = replace(inputs, queries=moved(inputs.queries), population=moved(inputs.population))
    audits = choice_check.choice.pseudo_audits(inputs, 4)
    for m in choice_check.mirrors(inputs.population, 4, audits, regress=True).values():
        assert abs(m.shift - 1.0) < 0.15 and abs(m.slope - (4 - 4.5) / 5.5) < 0.03
        assert abs(m.noise**2 - (5 - 16 / 5.5 - 5.5 + 4.5**2 / 5.5)) < 0.12
    pop = inputs.population
    target_gap = pop.target_logits[:, 1] - pop.ref_logits[1][:, 1]
    out = ~pop.ref_in[1]
    for audit, close in ((choice_check.mirrored(inputs, 4, regress=True)[0][0], True), (audits[0], False)):
        nonmembers = audit.inputs.queries
        gap = (nonmembers.target_logits[:, 1] - nonmembers.ref_logits[0][:, 1])[~audit.is_member]
        same = abs(gap.mean() - target_gap[out].mean()) < 0.25 and abs(gap.var() / target_gap[out].var() - 1) < 0.2
        assert same == close


def test_quantile_map_puts_the_targets_population_scores_on_the_references_law() -> None:
    """Target non-members N(3, 4), references' OUT law N(0, 1): after the map the target's population scores
    have mean 0 and sd 1, and its order is kept."""
    rng = np.random.default_rng(6)
    s = rng.normal(3, 2, 5000)
    records = RecordSet(np.ones(5000, dtype=np.int64), logits_of(s), logits_of(s[None]))
    moved = target_mismatch.mapped(records, s, rng.normal(0, 1, 20_000))
    new = moved.target_logits[:, 1]
    assert abs(new.mean()) < 0.05 and abs(new.std() - 1) < 0.05
    assert (np.argsort(new, kind="stable") == np.argsort(s, kind="stable")).mean() > 0.99
