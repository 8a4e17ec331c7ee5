"""Each built-in unlearning method on a case small enough to check by hand: a linear model, one step."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn

from miaudit.unlearning import methods
from miaudit.unlearning.config import MethodConfig

pytestmark = pytest.mark.slow  # every test here trains a model (or steps an optimizer)

X_F, Y_F = np.array([[1.0, 0.0]], dtype=np.float32), np.array([0])  # one forgotten record
X_R, Y_R = np.array([[0.0, 1.0], [1.0, 1.0]], dtype=np.float32), np.array([1, 0])  # two retained records


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Linear(2, 2)


def grad(m: nn.Module, x: np.ndarray, y: np.ndarray) -> list[torch.Tensor]:
    """The gradient of the mean cross-entropy on (x, y) at m's weights."""
    m = nn.Linear(2, 2).requires_grad_(True)
    m.load_state_dict(model().state_dict())
    loss = nn.functional.cross_entropy(m(torch.as_tensor(x)), torch.as_tensor(y))
    return list(torch.autograd.grad(loss, list(m.parameters())))


def run(name: str, **kw: float) -> nn.Module:
    cfg = MethodConfig(name=name, epochs=1, lr=0.5, batch_size=8, **kw)
    return methods.unlearned(model(), cfg, (X_F, Y_F), (X_R, Y_R), n_classes=2, seed=0, batch_size=8)


def params(m: nn.Module) -> list[torch.Tensor]:
    return [p.detach() for p in m.parameters()]


def test_noop_is_an_unchanged_copy() -> None:
    original = model()
    got = methods.unlearned(original, MethodConfig(name="noop"), (X_F, Y_F), (X_R, Y_R), 2, 0, 8)
    assert got is not original
    assert all(torch.equal(a, b) for a, b in zip(params(got), params(original)))


@pytest.mark.parametrize(
    ("name", "direction"),
    [("finetune", "retain descent"), ("gradient-ascent", "forget ascent")],
)
def test_one_step_by_hand(name: str, direction: str) -> None:
    """One batch holds every record: one SGD step (momentum has no history yet): w -/+ lr x gradient."""
    x, y, sign = (X_R, Y_R, -1.0) if direction == "retain descent" else (X_F, Y_F, 1.0)
    expected = [w + sign * 0.5 * g for w, g in zip(params(model()), grad(model(), x, y))]
    got = params(run(name))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, expected))


def test_neggrad_plus_one_step_by_hand() -> None:
    g_r, g_f = grad(model(), X_R, Y_R), grad(model(), X_F, Y_F)
    expected = [w - 0.5 * (0.8 * a - 0.2 * b) for w, a, b in zip(params(model()), g_r, g_f)]
    got = params(run("neggrad-plus", alpha=0.8))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, expected))


def test_random_label_descends_on_a_wrong_label() -> None:
    """Two classes: the only wrong label of the forgotten record (0) is 1; one step of descent on it."""
    expected = [w - 0.5 * g for w, g in zip(params(model()), grad(model(), X_F, 1 - Y_F))]
    got = params(run("random-label"))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, expected))


def test_retrain_is_not_an_edit_and_the_original_is_untouched() -> None:
    original = model()
    before = [p.clone() for p in params(original)]
    methods.unlearned(original, MethodConfig(name="gradient-ascent", epochs=3), (X_F, Y_F), (X_R, Y_R), 2, 0, 8)
    assert all(torch.equal(a, b) for a, b in zip(params(original), before))
    with pytest.raises(ValueError, match="fresh model"):
        methods.unlearned(original, MethodConfig(name="retrain"), (X_F, Y_F), (X_R, Y_R), 2, 0, 8)


def test_user_function_edits_or_returns() -> None:
    def zero(m: nn.Module, forget: tuple, retain: tuple) -> None:
        assert forget[0].shape == (1, 2) and retain[0].shape == (2, 2)
        with torch.no_grad():
            for p in m.parameters():
                p.zero_()

    got = methods.by_user(model(), zero, (X_F, Y_F), (X_R, Y_R), seed=0)
    assert all(float(p.detach().abs().sum()) == 0 for p in got.parameters())
    with pytest.raises(TypeError, match="unlearn_fn"):
        methods.by_user(model(), lambda m, f, r: 3, (X_F, Y_F), (X_R, Y_R), seed=0)


def test_scrub_first_epoch_by_hand() -> None:
    """The student starts as the teacher: the max pass's KL and its gradient are 0 (no step), so one epoch is one
    min step whose KL gradient is 0 too: one step of descent on the retained records' cross-entropy."""
    expected = [w - 0.5 * g for w, g in zip(params(model()), grad(model(), X_R, Y_R))]
    got = params(run("scrub"))
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(got, expected))


def test_scrub_max_pass_moves_the_forget_outputs_away_from_the_teacher() -> None:
    cfg = MethodConfig(name="scrub", epochs=2, lr=0.5, batch_size=8, max_epochs=2)
    teacher = model()
    got = methods.unlearned(teacher, cfg, (X_F, Y_F), (X_R, Y_R), n_classes=2, seed=0, batch_size=8)
    with torch.no_grad():
        t, s = teacher(torch.as_tensor(X_F)), got(torch.as_tensor(X_F))
    assert not torch.allclose(t, s)
