"""Hugging Face sequence classifiers (``model: hf:PATH``) from a local directory, as features + head.

Records are pre-tokenised, packed in the float32 ``x`` every stage already passes around:
``x[:, 0]`` the token ids, ``x[:, 1]`` the attention mask, shape (n, 2, max_length). float32
holds integers exactly below 2**24, far above any vocabulary; the model casts both back to
int64. So training, the cache, logits, BMIA's and GLS's last-layer features and the
calibration records need nothing text-specific: only the data stage tokenises (with the
model's own tokenizer, ``text_encoder``) and this module unpacks.

``features(x)`` is what the classifier's last linear layer reads (BERT: the pooled [CLS]
output after dropout; DistilBERT: after ``pre_classifier``; RoBERTa: after the dense + tanh
of its classification head), ``head`` that layer (``adapters.split_last_linear``).

transformers is imported here only (optional extra ``hf``), and every load is
``local_files_only=True``: nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from ..errors import ModelError
from .base import FeatureHeadModel
from .library import model_source, parse, split_last_linear

DEFAULT_MAX_LENGTH = 128


def require_transformers():
    """The transformers package (extra hf), imported now, its logging quieted; a one-line error without it."""
    try:
        import transformers
    except ImportError:
        raise ModelError("model: hf: models need transformers; pip install 'miaudit[hf]'") from None
    transformers.logging.set_verbosity_error()  # "some weights newly initialised" is expected for a new head
    transformers.logging.disable_progress_bar()
    return transformers


def check_directory(path: str) -> None:
    """The directory exists and holds a config.json (weights and tokenizer are read when built)."""
    d = Path(path).expanduser()
    if not (d / "config.json").is_file():
        raise ModelError(f"model: hf:{path} is not a local directory with a config.json (nothing is downloaded)")
    require_transformers()


def _directory_and_length(spec: str) -> tuple[str, int | None]:
    _, path, options = parse(spec)
    raw = options.pop("max_length", None)
    if options:
        raise ModelError(f"model: unknown option(s) {sorted(options)} in {spec!r}; known: max_length")
    if raw is not None and (not raw.isdigit() or int(raw) < 2):
        raise ModelError(f"model: max_length={raw!r} in {spec!r} is not an integer >= 2")
    return str(Path(path).expanduser()), None if raw is None else int(raw)


def text_encoder(spec: str) -> Callable[[list[str]], np.ndarray]:
    """texts -> float32 (n, 2, max_length): token ids and attention mask, by the model's tokenizer."""
    path, max_length = _directory_and_length(spec)
    try:
        tokenizer = require_transformers().AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as e:
        raise ModelError(f"model: no tokenizer in {path} ({str(e).splitlines()[0][:120]})") from None
    limit = tokenizer.model_max_length if tokenizer.model_max_length < 1_000_000 else DEFAULT_MAX_LENGTH
    length = max_length or min(limit, DEFAULT_MAX_LENGTH)

    def encode(texts: list[str]) -> np.ndarray:
        enc = tokenizer(list(texts), padding="max_length", truncation=True, max_length=length, return_tensors="np")
        return np.stack([enc["input_ids"], enc["attention_mask"]], axis=1).astype(np.float32)

    return encode


class _TokenBody(nn.Module):
    """The transformer with its classifier replaced by identity, on packed (ids, mask) records."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids, mask = x[:, 0].long(), x[:, 1].long()
        return self.model(input_ids=ids, attention_mask=mask).logits


class HFSequenceClassifier(FeatureHeadModel):
    """``AutoModelForSequenceClassification`` from a local directory, for ``n_classes`` labels; a
    classifier of another size is replaced (seeded by the run) and the rest fine-tuned."""

    def __init__(self, spec: str, input_shape: tuple[int, ...], n_classes: int):
        super().__init__()
        path, _ = _directory_and_length(spec)
        if len(input_shape) != 2 or input_shape[0] != 2:
            raise ValueError(
                f"model: {spec} needs tokenised text (records of shape (2, max_length): ids and mask), got "
                f"shape {input_shape}; use a text data set (ag_news)"
            )
        try:
            model = require_transformers().AutoModelForSequenceClassification.from_pretrained(
                path, num_labels=n_classes, local_files_only=True, ignore_mismatched_sizes=True
            )
        except (OSError, ValueError) as e:
            raise ModelError(f"model: cannot load hf:{path} ({str(e).splitlines()[0][:120]})") from None
        positions = getattr(model.config, "max_position_embeddings", None)
        if positions is not None and input_shape[1] > positions:
            raise ValueError(f"model: max_length {input_shape[1]} exceeds the model's {positions} positions")
        body, self.head = split_last_linear(model, n_classes)
        self.body = _TokenBody(body)


@model_source("hf")
def hf_model(spec: str, input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """``hf:PATH``: a local Hugging Face sequence classifier as features + head."""
    return HFSequenceClassifier(spec, input_shape, n_classes)
