"""The one training loop: seeded and deterministic, and logits always in eval mode."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from miaudit.config.run import TrainConfig
from miaudit.models.mlp import MLP
from miaudit.training.loop import accuracy, predict_logits, seeded_model, train


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 5)).astype(np.float32)
    return x, (x[:, 0] + x[:, 1] > 0).astype(np.int64)


def trained(seed: int, schedule: str = "cosine") -> nn.Module:
    x, y = data()
    model = seeded_model(lambda: MLP((5,), 2, hidden=(16,)), seed)
    train(model, x, y, TrainConfig(epochs=5, batch_size=16, lr=0.1, schedule=schedule), seed)
    return model


@pytest.mark.slow
def test_same_seed_same_weights_other_seed_other_weights() -> None:
    a, b, c = trained(1), trained(1), trained(2)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.head.weight, c.head.weight)


@pytest.mark.slow
def test_schedule_changes_the_result() -> None:
    assert not torch.equal(trained(1).head.weight, trained(1, "constant").head.weight)


@pytest.mark.slow
def test_training_learns_and_reports_accuracy() -> None:
    x, y = data()
    model = seeded_model(lambda: MLP((5,), 2, hidden=(16,)), 0)
    report = train(model, x, y, TrainConfig(epochs=30, batch_size=16, lr=0.1), 0)
    assert report.train_accuracy > 0.9 and report.seconds > 0
    assert report.train_accuracy == accuracy(predict_logits(model, x), y)


def test_logits_in_eval_mode_even_from_a_model_left_in_training_mode() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 8), nn.Dropout(0.5), nn.Linear(8, 2)).train()
    x, _ = data()
    first, second = predict_logits(model, x), predict_logits(model, x)
    np.testing.assert_array_equal(first, second)  # no dropout noise
    assert first.dtype == np.float64 and not model.training


def test_accuracy_of_no_records_is_nan() -> None:
    assert np.isnan(accuracy(np.zeros((0, 2)), np.zeros(0, dtype=np.int64)))


@pytest.mark.slow
def test_loader_workers_give_the_same_weights() -> None:
    """Batches prepared (and augmented) by DataLoader worker processes train the same model as in-process."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3, 8, 8)).astype(np.float32)
    y = rng.integers(0, 3, size=40)
    weights = []
    for workers in (0, 2):
        cfg = TrainConfig(epochs=2, batch_size=16, augment="flip-crop", loader_workers=workers)
        model = seeded_model(lambda: nn.Sequential(nn.Flatten(), nn.Linear(192, 3)), seed=1)
        train(model, x, y, cfg, seed=5)
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    torch.testing.assert_close(weights[0], weights[1], rtol=0, atol=0)


@pytest.mark.slow
def test_every_epoch_steps_the_schedule_once() -> None:
    """The cosine schedule reaches its end after exactly cfg.epochs steps, single-record batches skipped."""
    seen = []
    x, y = np.zeros((5, 2), np.float32), np.array([0, 1, 0, 1, 0])
    train(nn.Linear(2, 2), x, y, TrainConfig(epochs=3, batch_size=2), seed=0, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.slow
def test_adamw_trains_and_differs_from_sgd() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    heads = []
    for optimizer, lr in (("adamw", 0.01), ("sgd", 0.1)):
        model = seeded_model(lambda: nn.Linear(4, 2), seed=0)
        report = train(model, x, y, TrainConfig(epochs=20, batch_size=32, lr=lr, optimizer=optimizer), seed=0)
        assert report.train_accuracy > 0.9, optimizer
        heads.append(model.weight.detach().clone())
    assert not torch.allclose(heads[0], heads[1])


@pytest.mark.slow
def test_decay_in_place_is_torchs_sgd_bit_for_bit() -> None:
    """The loop's SGD adds the weight decay to its own gradients in place: the same weights as torch's SGD."""
    from miaudit.training.loop import optimizer_with_schedule

    x, y = data()
    cfg = TrainConfig(epochs=1, lr=0.1, momentum=0.9, weight_decay=0.01)
    heads = []
    for own in (False, True):
        model = seeded_model(lambda: MLP((5,), 2, hidden=(16,)), 0)
        opt, _ = optimizer_with_schedule(model, cfg, own_gradients=own)
        for i in range(5):
            opt.zero_grad(set_to_none=True)
            nn.functional.cross_entropy(
                model(torch.as_tensor(x[i * 16 : (i + 1) * 16])), torch.as_tensor(y[i * 16 : (i + 1) * 16])
            ).backward()
            opt.step()
        assert opt.param_groups[0]["weight_decay"] == 0.01
        heads.append([p.detach().clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*heads, strict=True))


@pytest.mark.slow
def test_triangle_schedule_and_label_smoothing() -> None:
    """airbench's schedule: 0.2 of the rate at the start, all of it at 23% of the epochs, 0.07 at the end; label
    smoothing changes the weights."""
    from miaudit.training.loop import triangle

    assert triangle(0, 100) == pytest.approx(0.2) and triangle(23, 100) == pytest.approx(1.0)
    assert triangle(100, 100) == pytest.approx(0.07) and triangle(50, 100) < 1.0
    assert not torch.equal(trained(1, "triangle").head.weight, trained(1).head.weight)
    x, y = data()
    smooth = seeded_model(lambda: MLP((5,), 2, hidden=(16,)), 1)
    train(smooth, x, y, TrainConfig(epochs=5, batch_size=16, lr=0.1, label_smoothing=0.2), 1)
    assert not torch.equal(smooth.head.weight, trained(1).head.weight)
