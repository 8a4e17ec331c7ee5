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


def _fdp(rng: np.random.Generator, construction: str, procedures: tuple[str, ...]) -> list[float]:
    """One audit: 4 pseudo-targets of 400 nulls each (the pool shared by every query: positively dependent
    p-values), a target with 100 members and 300 non-members. ``raw``: every model's null the same; ``scaled``:
    each model on a location and scale of its own, the target's read off 300 calibration records, the pool's tail
    calibrated on them. The realized FDP of each procedure."""
    if construction == "raw":
        pseudo = [PseudoTargetScores(rng.normal(size=400), np.empty(0)) for _ in range(4)]
        null, members, cal = rng.normal(size=300), rng.normal(size=100) + 3.0, None
    else:
        pseudo = [PseudoTargetScores(*model(rng, 400, 0)) for _ in range(4)]
        null, members = model(rng, 300 + 300, 100)
        null, cal = null[:300], null[300:]
    p = np.exp(pooled_null.target_log_pvalues(np.r_[members, null], cal, pseudo))
    member = np.arange(400) < 100
    return [fdr.realized_fdp(fdr.procedure_qvalues(p, proc) <= LEVEL, member).value for proc in procedures]


@pytest.mark.parametrize(
    ("construction", "procedures"),
    [("raw", ("bh", "storey-bh", "by")), ("scaled", ("bh", "by"))],
)
def test_fdr_controlled_for_every_null_construction(construction: str, procedures: tuple[str, ...]) -> None:
    """Mean FDP over 200 seeded audits at most the level + 2 SE, per pool and procedure. Storey's adaptive BH
    only on the raw pool: the scaled pool's tail below the calibration records is an extrapolation, not the
    exactly valid p-values Storey's estimate needs (report.at_risk uses BH there)."""
    fdp = np.array([_fdp(np.random.default_rng(seed), construction, procedures) for seed in range(REPS)])
    bound = LEVEL + 2 * fdp.std(axis=0, ddof=1) / math.sqrt(REPS)
    assert (fdp.mean(axis=0) <= bound).all(), dict(zip(procedures, fdp.mean(axis=0)))
    assert fdp.mean(axis=0)[0] > 0.005  # BH flags some non-members: the test can fail


def test_tail_calibration_by_hand() -> None:
    """Calibration log p-values of 9 records at p = 0.1 ... 0.9, tail 2: above t0 = the 2nd smallest (0.2) the
    conformal rank (1 + #{cal <= p}) / 10; below it p x (3 / 10) / 0.2."""
    cal = np.log(np.arange(1, 10) / 10)
    got = np.exp(pooled_null.tail_calibrated(np.log(np.array([0.5, 0.2, 0.1, 0.01])), cal, tail=2))
    np.testing.assert_allclose(got, [0.6, 0.3, 0.15, 0.015])


def test_validation_counts_false_discoveries_on_pseudo_targets() -> None:
    """Leave one out over pseudo-targets with members: the realized FDP is the share of nulls among the flags.
    With calibration records (300 of each held-out pseudo-target's nulls) it holds; without, the raw pool of
    models on different scales is invalid, and the validation says so."""
    rng = np.random.default_rng(3)
    pseudo = [PseudoTargetScores(*model(rng, 1000, 500)) for _ in range(4)]
    v = pooled_null.validate(pseudo, LEVEL, "bh", 300)
    assert v is not None and v.fdp.flagged > 100 and v.fdp.value <= 0.1
    assert v.true_discoveries == v.fdp.flagged - v.fdp.false
    raw = pooled_null.validate(pseudo, LEVEL, "bh", None)
    assert raw is not None and raw.fdp.ci[0] > 0.2
    assert pooled_null.validate(pseudo[:1], LEVEL, "bh", None) is None
    no_members = [PseudoTargetScores(p.null, np.empty(0)) for p in pseudo]
    assert pooled_null.validate(no_members, LEVEL, "bh", None) is None
