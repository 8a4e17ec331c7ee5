"""The paper's disjoint split (BMIA paper, section 4.1) and reference-model subsets.

Indices only: the split decides who is a member; the attacker-facing code gets
the queries (members and non-members, shuffled together) without that column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, kw_only=True)
class Split:
    """Record indices per role (keyword arguments only: four index arrays must not be swapped silently)."""

    members: np.ndarray  # target's training set
    nonmembers: np.ndarray  # target's test set
    population: np.ndarray  # reference models' data pool
    validation: np.ndarray  # QMIA training / conformal calibration

    def parts(self) -> dict[str, np.ndarray]:
        return {
            "members": self.members,
            "nonmembers": self.nonmembers,
            "population": self.population,
            "validation": self.validation,
        }


def split_indices(n: int, seed: int, fractions: tuple[float, float, float, float] = (0.2, 0.2, 0.4, 0.2)) -> Split:
    """Random disjoint parts with the given fractions of n records."""
    if len(fractions) != 4 or any(f < 0 for f in fractions) or sum(fractions) > 1 + 1e-9:
        raise ValueError(f"split: expected four non-negative fractions summing to at most 1, got {fractions}")
    perm = np.random.default_rng(np.random.SeedSequence([seed, 0x5917])).permutation(n)
    sizes = [int(np.floor(f * n)) for f in fractions]
    cuts = np.cumsum(sizes)
    parts = np.split(perm[: cuts[-1]], cuts[:-1])
    members, nonmembers, population, validation = (np.sort(p) for p in parts)
    return Split(members=members, nonmembers=nonmembers, population=population, validation=validation)


def reference_subsets(pool_size: int, k: int, seed: int, balanced: bool = False) -> np.ndarray:
    """(k, pool_size) boolean mask: row j selects reference j's training records.

    Each row is a random half of the pool. With ``balanced`` (online LiRA's
    design) every record is IN for exactly half the references (k even), so each
    point has as many IN as OUT observations. Rows are drawn one after another,
    so the first rows do not depend on k: a run with more references reuses the
    cached models of a smaller one.
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x4EF]))
    mask = np.zeros((k, pool_size), dtype=bool)
    half = pool_size // 2
    for j in range(k):
        if balanced and j % 2:
            # Complementary pairs: every even prefix (an attack using the first
            # references of the run) is balanced too.
            mask[j] = ~mask[j - 1]
        else:
            mask[j, rng.permutation(pool_size)[:half]] = True
    return mask


def hold_out_validation(split: Split, fraction: float, seed: int) -> Split:
    """Move a seeded ``fraction`` of the population into the (empty) validation part: records no model
    trains on, for calibration, when the audit has no validation records of its own."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0xCA1]))
    moved = rng.permutation(split.population)[: int(np.floor(fraction * len(split.population)))]
    population = np.setdiff1d(split.population, moved)
    validation = np.sort(np.concatenate([split.validation, moved]))
    return Split(members=split.members, nonmembers=split.nonmembers, population=population, validation=validation)
