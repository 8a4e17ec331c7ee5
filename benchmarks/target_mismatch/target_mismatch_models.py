"""Targets trained unlike their references (issue 38 part 1), for ``benchmarks/target_mismatch/target_mismatch.py``:
configs name them as ``model: target_mismatch_models:small_mlp`` (or ``dropout_mlp``) with ``reference_model: mlp``,
run with ``benchmarks/target_mismatch/`` on PYTHONPATH."""

from torch import nn

from miaudit.models.mlp import MLP


def small_mlp(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """A narrower, shallower tanh MLP (256-128) than the default (1024-512-256-128)."""
    return MLP(input_shape, n_classes, hidden=(256, 128))


def dropout_mlp(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """The default widths with dropout 0.5 after every hidden layer: a less overfit target."""
    model = MLP(input_shape, n_classes)
    layers: list[nn.Module] = []
    for layer in model.body:
        layers.append(layer)
        if isinstance(layer, nn.Tanh):
            layers.append(nn.Dropout(0.5))
    model.body = nn.Sequential(*layers)
    return model
