"""Causal language models: membership audits of documents in an LM's training data.

``model: gpt-tiny`` (a GPT-2 built from scratch with a word-level tokenizer over the audited corpus) or
``model: hf:PATH`` of a local causal LM directory. A record is a text, tokenised and truncated to
``max_length`` tokens, packed in the float32 ``x`` every stage passes around (token ids and attention
mask, as ``models/hf.py`` does). The model's per-record output is one binary "decision" with
probability exp(mean token log-likelihood) (``model.sequence_logits``), so the classifier attacks
(Attack-P, LiRA, RMIA, BaVarIA) run unchanged on the sequence score; the token-level attacks
(``attacks/lm_reference_free.py``) and BMIA's LM-head posterior (``head_laplace.py``) read the
per-token outputs (``tokens.py``). ``blind.py`` is the text-only baseline reported beside them;
``canaries.py`` the secret-sharer canaries' exposure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .names import is_causal_lm

if TYPE_CHECKING:  # annotations only: ``import miaudit.lm`` (the config's checks) stays free of torch and pandas
    import torch.nn as nn

    from ..data import Dataset, Split
    from ..training.loop import ProgressFn, TrainReport
    from ..training.options import TrainConfig
    from .canaries import CanaryExposureConfig
    from .data import TextDataset, TextSource
    from .model import CausalLM


class _Fitted(Protocol):
    @property
    def logits(self) -> np.ndarray: ...


class AuditedLM(Protocol):
    """What ``perplexities`` reads of an experiment (``experiment.Experiment``, in a layer above)."""

    @property
    def dataset(self) -> Dataset: ...

    @property
    def split(self) -> Split: ...

    @property
    def is_member(self) -> np.ndarray | None: ...

    @property
    def target(self) -> _Fitted: ...


def load_texts(
    source: TextSource, spec: str, *, drop_short: bool, canaries: CanaryExposureConfig | None
) -> TextDataset:
    """The config's texts as a ``data.TextDataset``, tokenised for model ``spec``, its (causal LM) target. For a
    user's own target every text is kept (``drop_short`` False: its index files count the rows;
    ``experiment.own_lm`` sets short ones aside)."""
    from .canaries import words
    from .data import load

    reserved = words(canaries) if canaries is not None else ()  # the canaries' words: in gpt-tiny's vocabulary
    return load(source, spec, drop_short=drop_short, reserved=reserved)


def recipe(
    settings: TrainConfig, device: str, ds: Dataset, spec: str, fresh: bool = False
) -> tuple[Callable[[], CausalLM], Callable[..., TrainReport], int, dict[str, Any]]:
    """How ``experiment.build`` obtains model ``spec`` on the texts ``ds``: (a builder of fresh models, the
    training loop's fit, epochs, the cache key's spec). miaudit's loop trains it: the cross-entropy of the
    sequence logits (``model.sequence_logits``) is the LM loss. Models start from ``train.base`` (``settings``) when the
    config gives one, else from ``spec`` (``fresh``: its architecture with new weights, for references of a
    user's own LM). The key holds the tokenizer's (gpt-tiny's is built from the data) and, for ``hf:``, the
    directory's digest."""
    from ..errors import ModelError
    from ..models import adapters
    from ..training.loop import train
    from .data import TextDataset
    from .model import build
    from .names import check_vocabulary

    if not isinstance(ds, TextDataset):
        raise ModelError(f"model: {spec} is a causal language model; the target must be one too")
    start = settings.base or spec
    fresh = fresh and not settings.base
    train_key = settings.model_dump(exclude={"base"})  # the start is the key's arch: keys from before base hold
    key = {"arch": start, "input_shape": ds.input_shape, "train": train_key, "lm": ds.tokenizer_key}
    if fresh:
        key["init"] = "fresh"
    if start.startswith("hf:"):
        key["arch_source"] = adapters.source_digest(start)
    if settings.base:
        check_vocabulary(settings.base, len(ds.tokenizer), "train.base")

    def fit(module: nn.Module, x: np.ndarray, y: np.ndarray, seed: int, progress: ProgressFn) -> TrainReport:
        return train(module, x, y, settings, seed, device, progress)

    return (lambda: build(start, ds.tokenizer, fresh=fresh)), fit, settings.epochs, key


def perplexities(exp: AuditedLM) -> dict[str, float]:
    """results.json's target fit for an LM audit of known membership: the mean over texts of their mean token
    NLL (loss, nats per token) and its exp (perplexity), on the members (train) and the non-members (test); {}
    for any other audit."""
    if not getattr(exp.dataset, "texts", None) or exp.is_member is None:  # a TextDataset has texts
        return {}
    nll = -np.asarray(exp.target.logits[:, 0], dtype=np.float64)  # the sequence logit is the mean log-likelihood
    train, test = float(nll[exp.split.members].mean()), float(nll[exp.split.nonmembers].mean())
    return {
        "train_loss": train,
        "test_loss": test,
        "train_perplexity": float(np.exp(train)),
        "test_perplexity": float(np.exp(test)),
    }


__all__ = ["is_causal_lm", "load_texts", "recipe", "perplexities"]
