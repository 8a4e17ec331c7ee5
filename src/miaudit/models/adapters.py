"""Standard architectures from other libraries, split into ``features`` and a linear ``head``.

A model name ``SOURCE:NAME[key=value,...]`` picks a model of another library:

- ``torchvision:NAME`` (e.g. ``torchvision:resnet18``): any classification model of
  ``torchvision.models.get_model``, built for the data's classes. Options:
  ``cifar_stem=true`` (ResNets: a 3x3 stride-1 first convolution and no max-pool, the
  usual stem for 32x32 images; off by default, as in the named architecture),
  ``weights=FILE`` (a local .safetensors or weights-only .pt state_dict; a classifier
  whose shape differs from the data's classes is left freshly initialised).
- ``timm:NAME`` (optional extra ``timm``): ``timm.create_model(NAME, num_classes=...)``;
  ``weights=FILE`` as above.
- ``hf:PATH`` (optional extra ``hf``): a Hugging Face sequence-classification model from a
  local directory (``config.json``, weights, tokenizer files); see ``models/hf.py``.
  Options: ``max_length=N`` (tokens per record, default min(tokenizer limit, 128)).

Nothing is ever downloaded: weights come from local files only.

The split is the same for every source: the library's last ``nn.Linear`` whose outputs are
the classes becomes ``head`` and is replaced by ``nn.Identity`` in the body, so the body's
output is exactly what the classifier read (pooled, pre-logits, after dropout: identity in
eval mode) and ``forward(x) == head(features(x))`` holds by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch.nn as nn

from .. import storage
from ..errors import ModelError
from . import io
from .base import ImageModel
from .library import SOURCES, is_adapter_name, model_source, parse, split_last_linear


def _flag(options: dict[str, str], key: str) -> bool:
    value = options.pop(key, "false").lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise ModelError(f"model: option {key}={value!r} is not true or false")
    return value in ("true", "1", "yes")


def _no_more(options: dict[str, str], spec: str, known: str) -> None:
    if options:
        raise ModelError(f"model: unknown option(s) {sorted(options)} in {spec!r}; known: {known}")


def _load_local_weights(model: nn.Module, path: str, spec: str) -> None:
    """A local state_dict into ``model``; tensors whose shapes differ (a classifier for other classes)
    stay as initialised, any other mismatch is an error."""
    state = io.read_state_dict(path)
    own = model.state_dict()
    fitting = {k: v for k, v in state.items() if k in own and own[k].shape == v.shape}
    missing = sorted(set(own) - set(fitting))
    if len(missing) > 2:  # a classifier's weight and bias may be left out, nothing else
        raise ModelError(f"model: weights {path} do not fit {spec} (missing or mismatched {missing[:3]} ...)")
    model.load_state_dict(fitting, strict=False)


def _image_shape(input_shape: tuple[int, ...], spec: str) -> tuple[int, int, int]:
    if len(input_shape) != 3:
        raise ValueError(f"model: {spec} needs image inputs (channels, height, width), got shape {input_shape}")
    return (int(input_shape[0]), int(input_shape[1]), int(input_shape[2]))


class AdaptedImageModel(ImageModel):
    """A library's image classifier as ``body`` (classifier replaced by identity) and ``head``."""

    def __init__(self, model: nn.Module, n_classes: int, image_shape: tuple[int, int, int]):
        super().__init__()
        self.image_shape = image_shape
        self.body, self.head = split_last_linear(model, n_classes)


def _cifar_stem(model: nn.Module, spec: str) -> None:
    conv = getattr(model, "conv1", None)
    if not isinstance(conv, nn.Conv2d) or not hasattr(model, "maxpool"):
        raise ModelError(f"model: cifar_stem applies to ResNets (conv1 and maxpool), not {spec}")
    model.conv1 = nn.Conv2d(conv.in_channels, conv.out_channels, 3, 1, 1, bias=False)
    model.maxpool = nn.Identity()


@model_source("torchvision")
def torchvision_model(spec: str, input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    import torchvision

    _, name, options = parse(spec)
    image = _image_shape(input_shape, spec)
    cifar, weights = _flag(options, "cifar_stem"), options.pop("weights", None)
    _no_more(options, spec, "cifar_stem, weights")
    if name not in torchvision.models.list_models(torchvision.models):
        raise ModelError(f"model: torchvision has no classification model {name!r}")
    model = torchvision.models.get_model(name, weights=None, num_classes=n_classes)
    if cifar:
        _cifar_stem(model, spec)
    if weights:
        _load_local_weights(model, weights, spec)
    return AdaptedImageModel(model, n_classes, image)


@model_source("timm")
def timm_model(spec: str, input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    try:
        import timm
    except ImportError:
        raise ModelError(f"model: {spec} needs timm; pip install 'miaudit[timm]'") from None
    _, name, options = parse(spec)
    image = _image_shape(input_shape, spec)
    weights = options.pop("weights", None)
    _no_more(options, spec, "weights")
    try:
        model = timm.create_model(name, pretrained=False, num_classes=n_classes, in_chans=image[0])
    except RuntimeError as e:  # timm's "Unknown model"
        raise ModelError(f"model: timm cannot build {name!r} ({str(e).splitlines()[0]})") from None
    if weights:
        _load_local_weights(model, weights, spec)
    return AdaptedImageModel(model, n_classes, image)


def factory(spec: str) -> Callable[..., nn.Module]:
    """``factory(input_shape, n_classes)`` for an adapter name (validated now)."""
    source, _, _ = parse(spec)
    check(spec)
    return lambda input_shape, n_classes: SOURCES[source](spec, tuple(input_shape), n_classes)


def check(spec: str) -> None:
    """What can be checked before data is loaded: the form, the library, an hf: directory."""
    source, name, options = parse(spec)
    if source == "timm":
        try:
            import timm  # noqa: F401
        except ImportError:
            raise ModelError(f"model: {spec} needs timm; pip install 'miaudit[timm]'") from None
    if source == "hf":
        from .hf import check_directory

        check_directory(name)
    for key in ("weights",):
        if key in options and not Path(options[key]).expanduser().is_file():
            raise ModelError(f"model: {key} file {options[key]} not found")


def source_digest(spec: str) -> str:
    """What fixes the adapted model besides its name: library version and local files (cache keys)."""
    source, name, options = parse(spec)
    hasher = storage.Hasher()
    module: Any = __import__({"hf": "transformers"}.get(source, source))
    hasher.add_value(str(getattr(module, "__version__", "")))
    files = [Path(options["weights"])] if "weights" in options else []
    if source == "hf":
        files += sorted(p for p in Path(name).expanduser().iterdir() if p.is_file())
    for path in files:
        hasher.add_value([path.name, storage.hash_file(path)])
    return hasher.hexdigest(16)


def tokenizer_for(spec: str) -> Callable[[list[str]], Any] | None:
    """The tokenisation an ``hf:`` model needs of text data sets (None for other models)."""
    if not is_adapter_name(spec) or parse(spec)[0] != "hf":
        return None
    from .hf import text_encoder

    return text_encoder(spec)


__all__ = ["SOURCES", "is_adapter_name", "parse", "factory", "check", "split_last_linear", "tokenizer_for"]
