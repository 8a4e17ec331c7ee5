"""Auditing a causal LM the user trained: its weights come in, miaudit trains the references.

Both front doors end in ``own_model.audit_given``, as for a classifier. The config: ``target: hf:PATH``
(or ``{architecture: hf:PATH}``; the directory holds the weights and the tokenizer, a ``checkpoint`` is
optional) with ``members``/``nonmembers`` (or ``queries``) index files counting the rows of the data
set's texts. The Python API: ``miaudit.audit(PATH or a loaded transformers model, members=[texts], ...)``
(``TextSets``). The references are fine-tuned from ``train.base`` when given (the base the user's LM was
fine-tuned from), from ``reference_model`` when given, else trained from scratch with the target's
architecture: never from the target's own weights, which hold the members.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import lm
from ..attack_plan import Plan
from ..config.run import AUDITED, RunConfig
from ..data import Dataset
from ..errors import DataError, ModelError
from ..lm import names
from ..lm.data import TextDataset, Tokenizer, encode, hf_tokenizer, max_length_for, short_records
from ..lm.model import CausalLM, TransformersLM, build
from ..progress import log
from . import datasets
from .base import AuditRecords, Experiment
from .own_model import UserTrainFn, audit_given, membership_from_files, user_fit
from .recipes import ModelRecipe

if TYPE_CHECKING:
    import torch.nn as nn

NEW_WEIGHTS = "new weights"  # a reference of the target's architecture trained from scratch, as reports name it


def audits_lm(cfg: RunConfig) -> bool:
    """Whether the config's ``target:`` is a causal LM."""
    return cfg.target is not None and names.is_causal_lm(cfg.target_architecture)


def reference_recipe(cfg: RunConfig, ds: Dataset) -> ModelRecipe:
    """The references of a user's LM: from ``train.base`` or ``reference_model``, else the target's
    architecture with new weights (warned: a fine-tuned LM's references should start from its base)."""
    spec = cfg.reference_architecture
    fresh = cfg.train.base is None and cfg.reference_model is None and spec.startswith("hf:")
    if fresh:
        log.warning(
            "references: trained from scratch with the target's architecture; if your LM was fine-tuned from a "
            "base, give train.base: hf:BASE so the references are fine-tuned from it as the target was"
        )
    make, fit, epochs, key = lm.recipe(cfg.train, cfg.device, ds, spec, fresh=fresh)
    name = cfg.train.base or (f"{spec}, {NEW_WEIGHTS}" if fresh else spec)
    return ModelRecipe(architecture=name, build=make, fit=fit, epochs=epochs, cache_spec=key)


def from_config(cfg: RunConfig, plan: Plan) -> Experiment:
    """The experiment for ``target: hf:PATH`` (``cfg.target``): load, check, train the references."""
    from ..models import io

    assert cfg.target is not None
    spec = cfg.target_architecture
    ds = cast(TextDataset, datasets.load(cfg))  # every text kept: the index files count the rows
    short = short_records(ds)
    split, query_idx, is_member = membership_from_files(cfg, ds, unusable=short)
    for role, idx in (("members", split.members), ("nonmembers", split.nonmembers), ("queries", query_idx)):
        _refuse_short(np.intersect1d(idx, short), role)
    module: Any = build(spec, ds.tokenizer)
    path = names.hf_path(spec)
    source = f"hf directory {path.name}" if path is not None else spec
    if cfg.target.checkpoint is not None:
        module = io.load_weights(module, io.read_state_dict(cfg.target.checkpoint), spec)
        source = f"checkpoint {Path(cfg.target.checkpoint).name}"
    recipe, by = reference_recipe(cfg, ds), ""
    if cfg.target.train_fn is not None:  # user code trains the references: never cached
        fit = user_fit(io.import_factory(cfg.target.train_fn))
        recipe, by = replace(recipe, fit=fit, cache_spec=None), f"train_fn {cfg.target.train_fn}"
    records = AuditRecords(dataset=ds, split=split, query_idx=query_idx, is_member=is_member)
    return audit_given(cfg, plan, records, module, recipe, source=source, architecture=spec, references_by=by)


def _refuse_short(bad: np.ndarray, role: str) -> None:
    if bad.size:
        raise DataError(
            f"{role}: {bad.size} text(s) of fewer than two tokens, nothing to predict (e.g. record {bad[0]}); "
            "leave them out"
        )


def _texts(value: object, role: str) -> list[str]:
    """A set of texts: a list, tuple, array or pandas Series of str."""
    if isinstance(value, str) or not isinstance(value, (Sequence, np.ndarray)) and not hasattr(value, "tolist"):
        raise DataError(f"{role}: expected a sequence of texts (str), got {type(value).__name__}")
    texts = value.tolist() if hasattr(value, "tolist") else list(cast(Sequence, value))
    odd = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
    if odd is not None:
        raise DataError(f"{role}: item {odd} is a {type(texts[odd]).__name__}, not a text")
    return texts


def _as_causal_lm(target: object, tokenizer: Tokenizer | None) -> tuple[CausalLM, str] | None:
    """(the target as a CausalLM, its name) when it is a causal LM: a directory (``hf:PATH`` or a path), a
    loaded transformers ``...ForCausalLM``/``...LMHeadModel`` or a CausalLM; else None (a classifier)."""
    if isinstance(target, CausalLM):
        return target, type(target.model).__name__
    if isinstance(target, (str, Path)):
        spec = str(target) if str(target).startswith("hf:") else f"hf:{target}"
        if not names.is_causal_lm(spec):
            raise ModelError(f"target: {target} is not a local causal LM directory (config.json naming a causal LM)")
        return build(spec, tokenizer or hf_tokenizer(spec)), spec
    if not type(target).__name__.endswith(names.CAUSAL_SUFFIXES):
        return None
    if tokenizer is None:
        where = Path(str(getattr(target, "name_or_path", "") or "."))
        if not (where / "config.json").is_file():
            raise ModelError(f"tokenizer: give the tokenizer of the loaded {type(target).__name__} (tokenizer=...)")
        tokenizer = hf_tokenizer(f"hf:{where}")
    # a transformers causal LM, by its class name
    return CausalLM(cast(TransformersLM, target), tokenizer), type(target).__name__


@dataclass
class TextSets:
    """A user's causal LM given to ``miaudit.audit`` and the texts of each set, read as token records."""

    model: CausalLM
    name: str
    max_length: int
    texts: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, target: object, tokenizer: Tokenizer | None = None, max_length: int | None = None) -> TextSets | None:
        """The reader for ``target`` when it is a causal LM, else None."""
        found = _as_causal_lm(target, tokenizer)
        if found is None:
            return None
        model, name = found
        if max_length is not None and max_length < 2:
            raise DataError(f"max_length: {max_length} tokens leave nothing to predict; give at least 2")
        return cls(model, name, max_length or max_length_for(name, model.tokenizer))

    def read(self, value: object, role: str) -> tuple[np.ndarray, np.ndarray]:
        """A set's texts as (packed token records, labels 0); short texts refused in an audited set, left out
        of the population and validation."""
        texts = _texts(value, role)
        x = encode(self.model.tokenizer, texts, self.max_length)
        short = x[:, 1].sum(axis=1) < 2
        if role in AUDITED:
            _refuse_short(np.flatnonzero(short), role)
        self.texts[role] = [t for t, s in zip(texts, short, strict=True) if not s]
        return x[~short], np.zeros(int((~short).sum()), dtype=np.int64)

    def dataset(self, ds: Dataset, origin: np.ndarray, position: np.ndarray) -> TextDataset:
        """The assembled records (``origin``: each one's set, ``position``: its row there) with their texts."""
        texts = tuple(self.texts[s][p] for s, p in zip(origin, position, strict=True))
        return TextDataset(name=ds.name, x=ds.x, y=ds.y, n_classes=2, texts=texts, tokenizer=self.model.tokenizer)

    def recipe(
        self, cfg: RunConfig, model_factory: Callable[[], nn.Module] | None, train_fn: UserTrainFn | None
    ) -> ModelRecipe:
        """The references: ``model_factory``'s models, else ``train.base`` fine-tuned, else the target's
        architecture from scratch; trained by ``train_fn``, else miaudit's loop. Never cached (user objects)."""
        from ..training.loop import train

        tokenizer, name = self.model.tokenizer, cfg.train.base or "model_factory"
        if model_factory is not None:
            make = lambda: _wrapped(model_factory(), tokenizer)
        elif cfg.train.base is not None:
            names.check_vocabulary(cfg.train.base, len(tokenizer), "train.base")
            make = partial(build, cfg.train.base, tokenizer)
        else:
            log.warning("references: trained from scratch with the target's architecture (no train.base given)")
            inner = self.model.model  # its class built anew from its config: the architecture, new weights
            rebuild = cast("Callable[[object], nn.Module]", type(inner))
            make = lambda: _wrapped(rebuild(getattr(inner, "config")), tokenizer)  # noqa: B009
            name = f"{self.name}, {NEW_WEIGHTS}"
        fit = (
            user_fit(train_fn)
            if train_fn
            else (lambda m, x, y, seed, p: train(m, x, y, cfg.train, seed, cfg.device, p))
        )
        return ModelRecipe(architecture=name, build=make, fit=fit, epochs=None if train_fn else cfg.train.epochs)


def _wrapped(model: nn.Module, tokenizer: Tokenizer) -> CausalLM:
    return model if isinstance(model, CausalLM) else CausalLM(cast(TransformersLM, model), tokenizer)
