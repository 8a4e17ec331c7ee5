"""Every architecture splits into features + a linear head (the Laplace and leverage code rely on it)."""

from __future__ import annotations

import pytest
import torch

from miaudit.models import ARCHITECTURES, build_model

IMAGE_SHAPES = [(3, 32, 32), (1, 8, 8)]
AIRBENCH_SHAPE = (3, 16, 16)  # airbench pools three times, then 3x3: it needs images of at least 16x16
CASES = [("mlp", (12,)), ("airbench", AIRBENCH_SHAPE)] + [
    (arch, shape) for arch in sorted(ARCHITECTURES) for shape in IMAGE_SHAPES if arch != "airbench" or shape[1] >= 16
]
CASE_IDS = [f"{arch}-{'x'.join(map(str, shape))}" for arch, shape in CASES]


@pytest.mark.parametrize(("arch", "input_shape"), CASES, ids=CASE_IDS)
def test_forward_is_head_of_features(arch: str, input_shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    model = build_model(arch, input_shape, n_classes=5).eval()
    x = torch.randn(4, *input_shape)
    with torch.no_grad():
        features = model.features(x)
        logits = model(x)
    assert isinstance(model.head, torch.nn.Linear)
    assert features.shape == (4, model.head.in_features) and logits.shape == (4, 5)
    torch.testing.assert_close(logits, model.head(features), rtol=0, atol=0)


@pytest.mark.parametrize("arch", ["cnn", "resnet"])
def test_conv_model_accepts_a_bare_height_width(arch: str) -> None:
    model = build_model(arch, (8, 8), n_classes=3).eval()
    with torch.no_grad():
        assert model(torch.randn(2, 8, 8)).shape == (2, 3)


@pytest.mark.parametrize("arch", ["cnn", "resnet", "airbench"])
def test_conv_model_on_tabular_input_is_a_one_line_error(arch: str) -> None:
    with pytest.raises(ValueError, match=r"needs image inputs .* got shape \(12,\)") as info:
        build_model(arch, (12,), n_classes=3)
    assert "\n" not in str(info.value)


def test_unknown_architecture_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown architecture 'vgg'.*mlp"):
        build_model("vgg", (12,), 3)


def test_airbench_is_the_airbench94_network() -> None:
    """airbench94's shape on CIFAR-10: a 2x2 whitening conv of 24 filters, widths 64-256-256, 256 features; its
    3x3 convolutions start at the identity on their first channels; images under 16x16 are a one-line error."""
    model = build_model("airbench", (3, 32, 32), n_classes=10)
    convs = [m for m in model.body.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [tuple(c.weight.shape[:2]) for c in convs] == [
        (24, 3),
        (64, 24),
        (64, 64),
        (256, 64),
        (256, 256),
        (256, 256),
        (256, 256),
    ]
    assert model.head.in_features == 256 and model.head.out_features == 10
    first = convs[1].weight.detach()
    assert torch.equal(first[:24, :, 1, 1], torch.eye(24)) and first[:24, :, 0, 0].abs().sum() == 0
    assert sum(p.numel() for p in model.parameters()) > 1_900_000
    with pytest.raises(ValueError, match="at least 16x16, got 8x8") as info:
        build_model("airbench", (1, 8, 8), n_classes=3)
    assert "\n" not in str(info.value)
