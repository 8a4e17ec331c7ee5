"""Names of other libraries' models (``SOURCE:NAME[key=value,...]``) and the features/head split
every adapter shares (``models/adapters.py``, ``models/hf.py``)."""

from __future__ import annotations

import re
from collections.abc import Callable

import torch.nn as nn

from ..errors import ModelError
from ..registries import Registry

Builder = Callable[[str, tuple[int, ...], int], nn.Module]  # (spec, input_shape, n_classes) -> a fresh model
SOURCES: Registry[Builder] = Registry("model source")  # SOURCE -> its builder (adapters.py, hf.py)
model_source = SOURCES.register  # @model_source("name"): another library's models as SOURCE:NAME
_NAME = re.compile(r"(?P<source>[a-z]+):(?P<name>[^\[\]]+)(?:\[(?P<options>[^\[\]]*)\])?")


def is_adapter_name(name: str) -> bool:
    """Whether ``name`` names a model of another library (``torchvision:``, ``timm:``, ``hf:``)."""
    return name.partition(":")[0] in SOURCES


def parse(spec: str) -> tuple[str, str, dict[str, str]]:
    """``SOURCE:NAME[k=v,...]`` -> (source, name, options); a one-line ModelError when malformed."""
    m = _NAME.fullmatch(spec.strip())
    if m is None or m["source"] not in SOURCES:
        raise ModelError(
            f"model: {spec!r} is not of the form SOURCE:NAME[key=value,...] with SOURCE in {sorted(SOURCES)}"
        )
    options: dict[str, str] = {}
    for item in filter(None, (m["options"] or "").split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ModelError(f"model: option {item!r} of {spec!r} is not key=value")
        options[key.strip()] = value.strip()
    return m["source"], m["name"].strip(), options


def split_last_linear(model: nn.Module, n_classes: int) -> tuple[nn.Module, nn.Linear]:
    """(body, head): the model's last ``nn.Linear`` with ``n_classes`` outputs, replaced in the model
    by ``nn.Identity`` (the body), and that layer (the head)."""
    found = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear) and m.out_features == n_classes]
    if not found:
        raise ModelError(f"model: {type(model).__name__} has no nn.Linear classifier with {n_classes} outputs")
    path, head = found[-1]
    parent_path, _, attr = path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    setattr(parent, attr, nn.Identity())  # also for a Sequential's "3": its children are named attributes
    return model, head


def with_features(model: nn.Module, input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """``model`` with penultimate features, as the attacks reading the last layer need (``FeatureHeadModel``): as it
    is when it has ``features``, else split at its last ``nn.Linear`` classifier (``library.split_last_linear``: the
    same parameters, so the function trains the same model) when that computes the same outputs, else as it is."""
    import copy

    import torch

    from .base import FeatureHeadModel

    if callable(getattr(model, "features", None)):
        return model

    class Split(FeatureHeadModel):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.body, self.head = split_last_linear(inner, n_classes)

    try:
        probe = torch.randn(3, *input_shape, generator=torch.Generator().manual_seed(0))
        trial = copy.deepcopy(model).eval()
        with torch.no_grad():
            same = torch.allclose(trial(probe), Split(copy.deepcopy(trial)).eval()(probe), atol=1e-5)
    except (ModelError, RuntimeError, TypeError, ValueError):
        same = False
    return Split(model) if same else model
