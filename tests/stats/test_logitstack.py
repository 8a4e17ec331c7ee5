"""LogitStack: K models' logits read from per-model (memory-mapped) arrays, signals computed in chunks."""

import numpy as np
import pytest

from miaudit.attacks import RecordSet
from miaudit.attacks.calibration import joined_records
from miaudit.stats import signals
from miaudit.stats.logitstack import LogitStack, concat_records


@pytest.fixture
def stack_and_block(tmp_path):
    rng = np.random.default_rng(0)
    per_model = []
    for k in range(3):  # as the store keeps them: float32 .npy files opened as memory maps
        np.save(tmp_path / f"m{k}.npy", rng.normal(size=(50, 4)).astype(np.float32) * 5)
        per_model.append(np.load(tmp_path / f"m{k}.npy", mmap_mode="r"))
    rows = rng.permutation(50)[:37]
    block = np.stack([np.asarray(m[rows], dtype=np.float64) for m in per_model])
    return LogitStack(per_model, rows, 4), block, rng.integers(0, 4, size=37)


def test_behaves_as_the_stacked_block(stack_and_block):
    stack, block, _ = stack_and_block
    assert stack.shape == block.shape == (3, 37, 4) and len(stack) == 3
    np.testing.assert_array_equal(np.asarray(stack), block)
    np.testing.assert_array_equal(stack[1], block[1])
    assert isinstance(stack[1:], LogitStack)
    np.testing.assert_array_equal(np.asarray(stack[1:]), block[1:])
    assert stack[1].dtype == np.float64


@pytest.mark.parametrize("name", list(signals.Signal))
@pytest.mark.parametrize("chunk", [1, 5, 37, 1000])
def test_signals_in_chunks_equal_the_block(stack_and_block, name, chunk):
    stack, block, labels = stack_and_block
    fn = signals.SIGNALS[name]
    chunked = stack.map_records(lambda part, records: fn(part, labels[records]), chunk=chunk)
    np.testing.assert_array_equal(chunked, fn(block, labels))
    np.testing.assert_array_equal(signals.compute(name, stack, labels), fn(block, labels))


def test_joined_record_sets_concatenate_rows(stack_and_block):
    stack, block, labels = stack_and_block
    other = LogitStack(stack.per_model, np.arange(5), 4)
    joined = concat_records(stack, other)
    assert isinstance(joined, LogitStack)
    np.testing.assert_array_equal(np.asarray(joined), np.concatenate([block, np.asarray(other)], axis=1))
    first = RecordSet(labels=labels, target_logits=block[0], ref_logits=stack)
    second = RecordSet(labels=labels[:5], target_logits=block[0, :5], ref_logits=other)
    assert joined_records(first, second).ref_logits.shape == (3, 42, 4)


def test_stacks_of_different_models_do_not_join(stack_and_block):
    stack, _, _ = stack_and_block
    with pytest.raises(ValueError, match="different models"):
        stack.joined(LogitStack(stack.per_model[::-1], stack.rows, 4))
    # arrays (scores-only inputs, tests) still concatenate as arrays
    assert concat_records(np.zeros((2, 3, 4)), np.zeros((2, 1, 4))).shape == (2, 4, 4)
