"""The BMIA paper's disjoint split (section 4.1) and the reference models' training subsets."""

from __future__ import annotations

import numpy as np
import pytest

from miaudit.data import reference_subsets, split_indices


@pytest.mark.parametrize("n", [1000, 997, 25])
def test_parts_are_disjoint_with_floor_sizes(n: int) -> None:
    fractions = (0.2, 0.2, 0.4, 0.2)
    split = split_indices(n, seed=0, fractions=fractions)
    parts = list(split.parts().values())
    assert [len(p) for p in parts] == [int(np.floor(f * n)) for f in fractions]
    together = np.concatenate(parts)
    assert len(np.unique(together)) == len(together)  # disjoint
    assert together.min() >= 0 and together.max() < n


def test_custom_fractions_may_leave_records_out() -> None:
    split = split_indices(100, seed=3, fractions=(0.5, 0.3, 0.0, 0.1))
    assert [len(p) for p in split.parts().values()] == [50, 30, 0, 10]


def test_same_seed_same_split_other_seed_other_split() -> None:
    a, b, c = split_indices(500, 7), split_indices(500, 7), split_indices(500, 8)
    for name, part in a.parts().items():
        np.testing.assert_array_equal(part, b.parts()[name])
    assert not np.array_equal(a.members, c.members)


@pytest.mark.parametrize("fractions", [(0.5, 0.5, 0.4, 0.0), (0.2, -0.1, 0.4, 0.2), (0.5, 0.5)])
def test_bad_fractions_are_refused(fractions: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="fractions"):
        split_indices(100, 0, fractions)


@pytest.mark.parametrize("balanced", [False, True])
def test_each_reference_trains_on_half_the_pool(balanced: bool) -> None:
    mask = reference_subsets(101, 6, seed=0, balanced=balanced)
    assert mask.shape == (6, 101) and mask.dtype == bool
    assert set(mask.sum(axis=1)) <= {50, 51}  # an odd pool cannot halve exactly
    assert len({row.tobytes() for row in mask}) == 6  # six different subsets


@pytest.mark.parametrize("k", [2, 4, 8])
def test_balanced_every_record_in_for_half_the_references(k: int) -> None:
    mask = reference_subsets(300, k, seed=1, balanced=True)
    assert (mask.sum(axis=0) == k // 2).all()
    # An attack using only the first 2j references sees a balanced design too.
    for j in range(2, k + 1, 2):
        assert (mask[:j].sum(axis=0) == j // 2).all()


@pytest.mark.parametrize("balanced", [False, True])
def test_first_rows_do_not_depend_on_k(balanced: bool) -> None:
    # Reference j trains on the same records whether the run has 4 or 8 references,
    # so growing a run reuses the cached models.
    np.testing.assert_array_equal(
        reference_subsets(200, 4, seed=2, balanced=balanced), reference_subsets(200, 8, seed=2, balanced=balanced)[:4]
    )


def test_reference_subsets_follow_the_seed() -> None:
    np.testing.assert_array_equal(reference_subsets(100, 4, seed=5), reference_subsets(100, 4, seed=5))
    assert not np.array_equal(reference_subsets(100, 4, seed=5), reference_subsets(100, 4, seed=6))
