"""The pooled null: p-values among pseudo-targets' null scores, uniform on a held-out pseudo-target, and the FDR of
every null construction over 200 seeded repetitions with the positive dependence a shared pool creates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from miaudit.stats import fdr, pooled_null
from miaudit.stats.pooled_null import PseudoTargetScores

LEVEL, REPS = 0.05, 200


def model(rng: np.random.Generator, n_null: int, n_members: int, shift: float = 3.0) -> tuple[np.ndarray, ...]:
    """One model's scores: nulls and members on a location and scale of its own (models differ)."""
    loc, scale = rng.normal(0, 2), rng.uniform(0.5, 2.0)
    return loc + scale * rng.normal(size=n_null), loc + scale * (rng.normal(size=n_members) + shift)


def test_pooled_pvalues_uniform_on_a_held_out_pseudo_target() -> None:
    """A pseudo-target's null scores against the pool of the others (each on its own null's scale): their
    p-values are uniform (Kolmogorov-Smirnov over 4,000 of them, and the share below 0.01)."""
    rng = np.random.default_rng(7)
    pseudo = [PseudoTargetScores(*model(rng, 4000, 10)) for _ in range(5)]
    held = pseudo[0].null
    p = np.exp(pooled_null.log_pvalues(pooled_null.standardized(held, held), pooled_null.pool(pseudo[1:])))
    assert stats.kstest(p, "uniform").pvalue > 0.01
    assert abs(np.mean(p <= 0.01) - 0.01) < 3 * math.sqrt(0.01 * 0.99 / p.size)


def test_standardized_pool_by_hand() -> None:
    null = np.arange(11.0)  # median 5, q90 9: scale 4
    assert pooled_null.null_scale(null) == (5.0, 4.0)
    np.testing.assert_allclose(pooled_null.standardized(np.array([5.0, 13.0]), null), [0.0, 2.0])
    assert pooled_null.null_scale(np.zeros(5)) == (0.0, 1.0)  # degenerate: scale 1


def _target_fdp(rng: np.random.Generator, procedure: str, scaled: bool) -> float:
    """One audit: 4 pseudo-targets of 400 nulls each (the pool shared by every query: positively dependent
    p-values), a target with 200 members and 200 non-members, its scale from 300 calibration records."""
    pseudo = [PseudoTargetScores(*model(rng, 400, 0)) for _ in range(4)]
    if not scaled:  # the raw pool is valid only where every model's null is the target's
        pseudo = [PseudoTargetScores(rng.normal(size=400), np.empty(0)) for _ in range(4)]
        null, cal = rng.normal(size=200), None
        members = rng.normal(size=200) + 3.0
    else:
        null, members = model(rng, 200 + 300, 200)
        null, cal = null[:200], null[200:]
    s = np.r_[members, null]
    if cal is not None:
        s = pooled_null.standardized(s, cal)
    p = np.exp(pooled_null.log_pvalues(s, pooled_null.pool(pseudo, scaled)))
    flagged = fdr.procedure_qvalues(p, procedure) <= LEVEL
    return fdr.realized_fdp(flagged, np.arange(400) < 200).value


@pytest.mark.parametrize("scaled", [False, True], ids=["raw-pool", "scaled-pool"])
@pytest.mark.parametrize("procedure", ["bh", "storey-bh", "by"])
def test_fdr_controlled_for_every_null_construction(procedure: str, scaled: bool) -> None:
    """Mean FDP over 200 seeded audits at most the level + 2 SE, per procedure and pool."""
    fdp = np.array([_target_fdp(np.random.default_rng(seed), procedure, scaled) for seed in range(REPS)])
    assert fdp.mean() <= LEVEL + 2 * fdp.std(ddof=1) / math.sqrt(REPS), fdp.mean()


def test_validation_counts_false_discoveries_on_pseudo_targets() -> None:
    """Leave one out over pseudo-targets with members: the realized FDP is the share of nulls among the flags;
    with pseudo-targets whose members do not differ from their nulls, nothing is a true discovery."""
    rng = np.random.default_rng(3)
    pseudo = [PseudoTargetScores(*model(rng, 1000, 500)) for _ in range(4)]
    v = pooled_null.validate(pseudo, LEVEL, "bh")
    assert v is not None and v.fdp.flagged > 100 and v.fdp.value <= 0.1 and v.true_discoveries == v.fdp.flagged - v.fdp.false
    assert pooled_null.validate(pseudo[:1], LEVEL, "bh") is None
    no_members = [PseudoTargetScores(p.null, np.empty(0)) for p in pseudo]
    assert pooled_null.validate(no_members, LEVEL, "bh") is None
