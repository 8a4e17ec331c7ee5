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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .names import is_causal_lm

if TYPE_CHECKING:  # annotations only: ``import miaudit.lm`` (the config's checks) stays free of torch and pandas
    import torch.nn as nn

    from ..data import Dataset, Split
    from ..training.loop import ProgressFn, TrainReport
    from ..training.options import TrainConfig
    from .canaries import CanaryExposureConfig
    from .data import TextDataset
    from .model import CausalLM


class TextSource(Protocol):
    """What the LM layer reads of ``dataset:`` (``config.records.DataConfig``, in the config layer above)."""

    @property
    def name(self) -> str | None: ...

    @property
    def path(self) -> Path | None: ...

    @property
    def text_column(self) -> str | None: ...

    @property
    def subset(self) -> int | None: ...

    @property
    def data_dir(self) -> Path | None: ...

    @property
    def label(self) -> str: ...


class TextsConfig(Protocol):
    """What ``data.load`` reads of a run's config (``config.run.RunConfig``, in the config layer above)."""

    @property
    def dataset(self) -> TextSource: ...

    @property
    def cache_dir(self) -> Path | None: ...

    @property
    def seed(self) -> int: ...


class LMConfig(TextsConfig, Protocol):
    """What the LM layer reads of a run's config (``config.run.RunConfig``, in the config layer above)."""

    @property
    def canary_exposure(self) -> CanaryExposureConfig | None: ...

    @property
    def target_architecture(self) -> str: ...

    @property
    def target(self) -> object | None: ...

    @property
    def train(self) -> TrainConfig: ...

    @property
    def device(self) -> str: ...


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


def load_texts(cfg: LMConfig) -> TextDataset:
    """The config's texts as a ``data.TextDataset``, tokenised for its (causal LM) target. For a user's own
    target every text is kept (its index files count the rows; ``experiment.own_lm`` sets short ones aside)."""
    from .canaries import words
    from .data import load

    spec = cfg.canary_exposure
    reserved = words(spec) if spec is not None else ()  # the canaries' words: in gpt-tiny's vocabulary
    return load(cfg, cfg.target_architecture, drop_short=cfg.target is None, reserved=reserved)


def recipe(
    cfg: LMConfig, ds: Dataset, spec: str, fresh: bool = False
) -> tuple[Callable[[], CausalLM], Callable[..., TrainReport], int, dict[str, Any]]:
    """How ``experiment.build`` obtains model ``spec`` on the texts ``ds``: (a builder of fresh models, the
    training loop's fit, epochs, the cache key's spec). miaudit's loop trains it: the cross-entropy of the
    sequence logits (``model.sequence_logits``) is the LM loss. Models start from ``train.base`` when the
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
    start = cfg.train.base or spec
    fresh = fresh and not cfg.train.base
    train_key = cfg.train.model_dump(exclude={"base"})  # the start is the key's arch: keys from before base hold
    key = {"arch": start, "input_shape": ds.input_shape, "train": train_key, "lm": ds.tokenizer_key}
    if fresh:
        key["init"] = "fresh"
    if start.startswith("hf:"):
        key["arch_source"] = adapters.source_digest(start)
    if cfg.train.base:
        check_vocabulary(cfg.train.base, len(ds.tokenizer), "train.base")

    def fit(module: nn.Module, x: np.ndarray, y: np.ndarray, seed: int, progress: ProgressFn) -> TrainReport:
        return train(module, x, y, cfg.train, seed, cfg.device, progress)

    return (lambda: build(start, ds.tokenizer, fresh=fresh)), fit, cfg.train.epochs, key


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
