"""Models trained together (training/stacked.py): each member takes the steps it would take alone (to float
tolerance), on its own seed, order and augmentation; batch norm keeps per-member statistics; the stack's
memory bound."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from miaudit.config.run import TrainConfig
from miaudit.models import build_model
from miaudit.training.loop import EpochBatches, predict_logits, seeded_model, train
from miaudit.training.stacked import MB, Member, bytes_per_member, members_that_fit, train_together

ARCHS = {"mlp": (12,), "cnn": (3, 8, 8), "resnet": (3, 8, 8), "airbench": (3, 16, 16)}


def records(shape: tuple[int, ...], n: int = 48, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, *shape)).astype(np.float32), rng.integers(0, 4, n)


def members(arch: str, seeds: list[int], n: int = 48) -> list[Member]:
    """One member per seed: weights seeded by it, a random half of the records chosen by it."""
    x, y = records(ARCHS[arch], n)
    out = []
    for s in seeds:
        idx = np.random.default_rng(s).permutation(n)[: n // 2]
        out.append(Member(seeded_model(lambda: build_model(arch, ARCHS[arch], 4), s), x[idx], y[idx], s))
    return out


def max_diff(a: nn.Module, b: nn.Module) -> float:
    """Largest difference over the float parameters and buffers (batch norm's running statistics too)."""
    pairs = zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    return max((p - q).abs().max().item() for p, q in pairs if p.dtype.is_floating_point)


def alone(member: Member, cfg: TrainConfig) -> nn.Module:
    """The member's model trained alone by the one-at-a-time loop, from the same initial weights."""
    model = seeded_model(lambda: build_model_like(member.model), member.seed)
    model.load_state_dict(member.model.state_dict())
    train(model, member.x, member.y, cfg, member.seed)
    return model


def build_model_like(model: nn.Module) -> nn.Module:
    import copy

    return copy.deepcopy(model)


@pytest.mark.slow
@pytest.mark.parametrize("arch", list(ARCHS))
def test_one_step_together_equals_one_step_alone(arch: str) -> None:
    """Same state, same batch (the whole training set, one step): the same weights, to float tolerance."""
    cfg = TrainConfig(epochs=1, batch_size=24, lr=0.1)
    stack = members(arch, [1, 2, 3])
    singles = [alone(m, cfg) for m in stack]
    train_together(stack, cfg)
    for m, single in zip(stack, singles, strict=True):
        assert max_diff(m.model, single) < 1e-5
        assert max_diff(m.model, seeded_model(lambda: build_model(arch, ARCHS[arch], 4), m.seed)) > 1e-3  # it moved


@pytest.mark.slow
def test_several_epochs_with_augmentation_stay_together() -> None:
    """Two epochs of flip-crop on a CNN (batch norm): each member ends where alone it would, to float
    tolerance, and its eval-mode logits (running statistics) agree too."""
    cfg = TrainConfig(epochs=2, batch_size=8, lr=0.05, augment="flip-crop")
    stack = members("cnn", [4, 5])
    singles = [alone(m, cfg) for m in stack]
    reports = train_together(stack, cfg)
    for m, single, report in zip(stack, singles, reports, strict=True):
        assert max_diff(m.model, single) < 1e-4
        np.testing.assert_allclose(predict_logits(m.model, m.x), predict_logits(single, m.x), atol=1e-4)
        assert report.seconds > 0 and 0 <= report.train_accuracy <= 1


@pytest.mark.slow
def test_the_airbench_recipe_together_equals_alone() -> None:
    """airbench's network with its recipe (label smoothing, the triangle schedule, flip-crop; batch norm): one
    epoch of three steps together ends where alone it would, to float tolerance, eval logits included."""
    cfg = TrainConfig(
        epochs=1, batch_size=8, lr=0.2, label_smoothing=0.2, schedule="triangle", augment="flip-crop", momentum=0.85
    )
    stack = members("airbench", [1, 2])
    singles = [alone(m, cfg) for m in stack]
    train_together(stack, cfg)
    for m, single in zip(stack, singles, strict=True):
        assert max_diff(m.model, single) < 1e-4
        np.testing.assert_allclose(predict_logits(m.model, m.x), predict_logits(single, m.x), atol=1e-4)


@pytest.mark.slow
def test_each_member_follows_its_own_seed() -> None:
    """Members sharing records and initial weights but not seeds draw other orders and augmentations, so
    they end apart; each still equals its seed's model trained alone."""
    cfg = TrainConfig(epochs=2, batch_size=8, lr=0.05, augment="flip")
    x, y = records(ARCHS["cnn"], 24)
    init = seeded_model(lambda: build_model("cnn", ARCHS["cnn"], 4), 0).state_dict()

    def member(seed: int) -> Member:
        model = build_model("cnn", ARCHS["cnn"], 4)
        model.load_state_dict(init)
        return Member(model, x, y, seed)

    stack = [member(7), member(8)]
    singles = [alone(m, cfg) for m in stack]
    train_together(stack, cfg)
    assert max_diff(stack[0].model, stack[1].model) > 1e-3
    assert all(max_diff(m.model, s) < 1e-4 for m, s in zip(stack, singles, strict=True))
    orders = [
        torch.cat([idx for _, idx in EpochBatches(torch.tensor(x), torch.tensor(y), cfg, s).items]) for s in (7, 8)
    ]
    assert not torch.equal(*orders)


def test_members_need_equal_training_sets() -> None:
    a, b = members("mlp", [1, 2])
    with pytest.raises(ValueError, match="as many records"):
        train_together([a, Member(b.model, b.x[:-1], b.y[:-1], b.seed)], TrainConfig(epochs=1))


def test_memory_bound_cuts_the_stack() -> None:
    """A member's measured size covers its weights, gradients and momentum; the budget caps the stack."""
    model = build_model("mlp", (64,), 10)
    x, _ = records((64,), 32)
    cfg = TrainConfig(batch_size=32)
    weights = sum(p.numel() * 4 for p in model.parameters())
    per = bytes_per_member(model, x, cfg)
    assert per >= 3 * weights
    budget_mb = 5 * per / MB
    fits = members_that_fit(model, x, cfg.model_copy(update={"stack_memory_mb": max(1, int(budget_mb))}), "cpu", 100)
    assert 1 <= fits <= max(1, int(budget_mb) * MB // per)
    tiny = cfg.model_copy(update={"stack_memory_mb": 1})
    assert members_that_fit(build_model("mlp", (512,), 10), records((512,), 32)[0], tiny, "cpu", 64) == 1
    capped = cfg.model_copy(update={"models_at_once": 3, "stack_memory_mb": 10_000})
    assert members_that_fit(model, x, capped, "cpu", 16) == 3
    assert members_that_fit(model, x, cfg.model_copy(update={"stack_memory_mb": 10_000}), "cpu", 16) == 16
