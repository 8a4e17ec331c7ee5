"""Planted faults (``train.dp.planted_fault``, ``miaudit.training.dp_faults``): each refused unless named by its
key, each changing exactly what it names, one DP-SGD step inspected by hand against per-sample gradients computed
here."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn as nn

from miaudit.config import run as config
from miaudit.errors import ConfigError
from miaudit.training import dp_sgd
from miaudit.training.dp_faults import Planted
from miaudit.training.options import DPConfig

pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # Opacus' notes: secure RNG off, backward hooks

CLIP, N, D, K = 1.0, 8, 40, 5  # clipping norm; 8 records of 40 features, 5 classes: 205 parameters


def data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return 5 * torch.randn(N, D, generator=g), torch.randint(0, K, (N,), generator=g)  # gradients of norm > CLIP


def per_sample_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """(N, P): each record's gradient of its own loss, by a backward pass per record."""
    rows = []
    for i in range(len(y)):
        model.zero_grad()
        nn.functional.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        rows.append(torch.cat([p.grad.reshape(-1) for p in model.parameters()]).clone())
    return torch.stack(rows)


def one_step(fault: dict | None, sigma: float, first_of_epoch: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """One DP-SGD step of Opacus with the fault planted, every record in the batch: the update it makes (p.grad
    after noise and scaling), and the per-sample gradients by hand."""
    x, y = data()
    torch.manual_seed(0)
    model = nn.Linear(D, K)
    grads = per_sample_gradients(model, x, y)
    dp = DPConfig(noise_multiplier=sigma, max_grad_norm=CLIP, planted_fault=fault)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=N)  # rate 1
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    private, dp_opt, loss_fn, _ = dp_sgd.make_private(model, opt, loader, sigma, CLIP, seed=3, device="cpu")
    planted = Planted(dp)
    planted.into(private, dp_opt, sigma)
    planted.before_step(dp_opt, first_of_epoch, N)
    dp_opt.zero_grad(set_to_none=True)
    loss_fn(private(x), y).backward()
    assert dp_opt.pre_step()  # noise, then division by the expected batch size (N)
    update = torch.cat([p.grad.reshape(-1) for p in dp_opt.params])
    private.remove_hooks()
    return update, grads


def clipped(g: torch.Tensor) -> torch.Tensor:
    return g * torch.clamp(CLIP / (g.norm(dim=-1, keepdim=True) + 1e-6), max=1.0)


QUIET = 1e-7  # a noise multiplier whose noise is far below the tolerances: the update is its signal


def test_without_a_fault_the_step_is_dp_sgd() -> None:
    update, grads = one_step(None, QUIET)
    assert (grads.norm(dim=1) > 2 * CLIP).all()  # every record is clipped: the faults below differ from it
    assert torch.allclose(update, clipped(grads).sum(0) / N, atol=1e-4)


def test_clip_none_sums_the_unclipped_gradients() -> None:
    update, grads = one_step({"clip": "none"}, QUIET)
    assert torch.allclose(update, grads.sum(0) / N, atol=1e-4)


def test_clip_after_mean_clips_the_batch_mean() -> None:
    update, grads = one_step({"clip": "after_mean"}, QUIET)
    assert torch.allclose(update, clipped(grads.mean(0)), atol=1e-4)
    assert update.norm() == pytest.approx(CLIP, rel=1e-3)  # the mean's norm exceeds the clipping norm


def noise_std(update: torch.Tensor, signal: torch.Tensor, sigma: float) -> float:
    """The noise drawn, in multiples of sigma x CLIP (Opacus divides the noisy sum by N)."""
    return float(((update - signal) * N).std() / (sigma * CLIP))


def test_noise_scale_draws_that_share_of_the_noise() -> None:
    full, grads = one_step(None, 1.0)
    quarter, _ = one_step({"noise_scale": 0.25}, 1.0)
    signal = clipped(grads).sum(0) / N
    assert 0.85 < noise_std(full, signal, 1.0) < 1.15  # 205 draws: the estimate within 15%
    assert 0.85 < noise_std(quarter, signal, 1.0) / 0.25 < 1.15
    assert torch.allclose((quarter - signal), 0.25 * (full - signal), atol=1e-5)  # the same draws, scaled


def test_noise_per_epoch_draws_noise_at_the_epochs_first_step_only() -> None:
    first, grads = one_step({"noise": "per_epoch"}, 1.0, first_of_epoch=True)
    later, _ = one_step({"noise": "per_epoch"}, 1.0, first_of_epoch=False)
    signal = clipped(grads).sum(0) / N
    assert 0.85 < noise_std(first, signal, 1.0) < 1.15
    assert torch.allclose(later, signal, atol=1e-5)  # no noise at all: the clipped mean itself


@pytest.mark.slow
def test_sampling_fault_tells_the_accountant_a_smaller_rate_and_changes_nothing_else() -> None:
    from miaudit.models import build_model

    cfg = config.from_dict({"dataset": "digits", "model": "mlp", "train": {"epochs": 2, "batch_size": 16}})
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 6)).astype(np.float32), rng.integers(0, 3, 64)
    records = {}
    for name, fault in (("correct", None), ("fault", {"sampling": {"accounted_rate_factor": 4}})):
        dp = DPConfig(epsilon=2.0, delta=1e-5, planted_fault=fault)
        torch.manual_seed(0)
        records[name] = dp_sgd.train_dp(build_model("mlp", (6,), 3, hidden=(8,)), x, y, cfg.train, dp, 5).privacy
    correct, fault = records["correct"], records["fault"]
    assert fault["sample_rate"] == pytest.approx(correct["sample_rate"] / 4)  # what the accountants are told
    assert fault["steps"] == correct["steps"] == 2 * 4  # the rate used: 4 batches of 16 per epoch, as before
    assert fault["noise_multiplier"] < correct["noise_multiplier"]  # calibrated to the smaller (false) rate
    assert fault["accounted"]["rdp"] == pytest.approx(2.0, abs=0.02)  # the claim still reads epsilon 2
    assert dp_sgd.accounted(fault["noise_multiplier"], correct["sample_rate"], 8, 1e-5)["rdp"] > 2.5  # the truth
    assert fault["planted_fault"]["sampling"] == {"accounted_rate_factor": 4.0}
    assert "planted_fault" not in correct


@pytest.mark.slow
def test_public_pass_is_one_plain_sgd_epoch_before_dp_sgd() -> None:
    x, y = data()
    cfg = config.from_dict({"dataset": "digits", "model": "mlp", "train": {"epochs": 1, "batch_size": 4}}).train
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    torch.manual_seed(0)
    model = nn.Linear(D, K)
    by_hand = copy.deepcopy(model)
    Planted(DPConfig(noise_multiplier=1.0)).public_pass(model, loader, cfg)  # no fault: nothing happens
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), by_hand.parameters()))
    Planted(DPConfig(noise_multiplier=1.0, planted_fault={"public_pass": True})).public_pass(model, loader, cfg)
    opt = torch.optim.SGD(by_hand.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    for xb, yb in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(by_hand(xb), yb).backward()
        opt.step()
    assert all(torch.allclose(a, b) for a, b in zip(model.parameters(), by_hand.parameters()))


@pytest.mark.parametrize(
    "fault, field",
    [
        ({}, "planted_fault"),
        ({"public_pass": False}, "public_pass"),
        ({"clip": "sometimes"}, "clip"),
        ({"noise": "per_step"}, "noise"),
        ({"sampling": {"accounted_rate_factor": 0.5}}, "accounted_rate_factor"),
        ({"sampling": {}}, "accounted_rate_factor"),
        ({"noise_scale": 2.0}, "noise_scale"),
        ({"clip_none": True}, "clip_none"),
    ],
)
def test_a_fault_is_planted_only_by_its_explicit_key(fault: dict[str, Any], field: str) -> None:
    raw = {"dataset": "digits", "model": "mlp", "train": {"dp": {"epsilon": 1.0, "planted_fault": fault}}}
    with pytest.raises(ConfigError, match=field):
        config.from_dict(raw)


def test_every_fault_kind_is_described() -> None:
    dp = DPConfig(
        epsilon=1.0,
        planted_fault={
            "clip": "after_mean",
            "noise": "per_epoch",
            "sampling": {"accounted_rate_factor": 4},
            "public_pass": True,
            "noise_scale": 0.5,
        },  # fmt: skip
    )
    said = dp.planted_fault.description()
    for words in ("mean gradient clipped", "once per epoch", "4x smaller", "non-private epoch", "0.5x"):
        assert words in said
