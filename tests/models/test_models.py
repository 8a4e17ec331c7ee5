"""Every architecture splits into features + a linear head (the Laplace and leverage code rely on it)."""

from __future__ import annotations

import pytest
import torch

from miaudit.models import ARCHITECTURES, build_model

IMAGE_SHAPES = [(3, 32, 32), (1, 8, 8)]
CASES = [("mlp", (12,))] + [(arch, shape) for arch in sorted(ARCHITECTURES) for shape in IMAGE_SHAPES]
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


@pytest.mark.parametrize("arch", ["cnn", "resnet"])
def test_conv_model_on_tabular_input_is_a_one_line_error(arch: str) -> None:
    with pytest.raises(ValueError, match=r"needs image inputs .* got shape \(12,\)") as info:
        build_model(arch, (12,), n_classes=3)
    assert "\n" not in str(info.value)


def test_unknown_architecture_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown architecture 'vgg'.*mlp"):
        build_model("vgg", (12,), 3)
