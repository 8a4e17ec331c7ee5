"""The robustness scenarios of the BMIA paper (section 4.4, Figure 2) as data rearrangements.

- ``reference_data``: the reference models train on another population with the same features and
  labels (e.g. ``cifar10-noise``). The references' pool is a seeded sample of that data set, as many
  records as the target's population; they are scored on the target's records as usual. The target,
  its queries and the population and validation records given to attacks are unchanged.
- ``nonmember_data``: the non-member queries come from another source: as many records as the split's
  non-members, drawn (seeded) from that data set, replace them. Members, population and validation
  records are the target's.

Both work by appending the other data set's records to the target's (one ``Dataset``; the split's
indices into the target's records are unchanged), so the rest of the pipeline needs no second code path.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import data, lm
from ..config.run import DataConfig, RunConfig
from ..data import Dataset, Split
from ..errors import DataError


def load(cfg: RunConfig, spec: DataConfig | None = None) -> Dataset:
    """The data set ``spec`` names (default: the audited one, ``cfg.dataset``): the one translation of a
    data config into ``data.load``, so every data set of a run is read the same way (a file's
    ``num_classes``, a seeded ``subset``, token ids for an ``hf:`` model's tokenizer)."""
    from ..models import adapters  # torch: only when a run loads data

    if spec is None and lm.is_causal_lm(cfg.target_architecture):  # texts, tokenised by the LM's tokenizer
        from ..lm.data import TextSource

        d = cfg.dataset
        source = TextSource(d.name, d.path, d.text_column, d.subset, d.label, d.data_dir, cfg.cache_dir, cfg.seed)
        return lm.load_texts(
            source, cfg.target_architecture, drop_short=cfg.target is None, canaries=cfg.canary_exposure
        )
    spec = spec or cfg.dataset
    return data.load(
        spec.name,
        spec.path,
        data_dir=spec.data_dir or cfg.dataset.data_dir,
        cache_dir=cfg.cache_dir,
        label_column=spec.label_column,
        num_classes=spec.num_classes,
        subset=spec.subset,
        seed=cfg.seed,
        tokenize=adapters.tokenizer_for(cfg.target_architecture),  # text for hf: models: their tokenizer's ids
    )


def load_other(cfg: RunConfig, spec: DataConfig, key: str, like: Dataset) -> Dataset:
    """The data set ``spec`` names, checked to have ``like``'s feature shape and classes."""
    other = load(cfg, spec)
    if other.input_shape != like.input_shape or other.n_classes != like.n_classes:
        raise DataError(
            f"{key}: {other.name} has records of shape {other.input_shape} with {other.n_classes} classes; the "
            f"target's data {like.name} has {like.input_shape} with {like.n_classes}: they must match"
        )
    return other


def appended(ds: Dataset, other: Dataset, n: int, seed: int, tag: int) -> tuple[Dataset, np.ndarray]:
    """(ds with n records of ``other`` appended, their indices in it): the target's indices are unchanged."""
    if n > len(other):
        raise DataError(f"{other.name}: {len(other)} records, the scenario needs {n}")
    pick = np.sort(np.random.default_rng(np.random.SeedSequence([seed, tag])).permutation(len(other))[:n])
    joined = Dataset(
        name=f"{ds.name}+{other.name}",
        x=np.concatenate([ds.x, other.x[pick].astype(ds.x.dtype)]),
        y=np.concatenate([ds.y, other.y[pick]]),
        n_classes=ds.n_classes,
    )
    return joined, np.arange(len(ds), len(ds) + n)


def with_ood_nonmembers(cfg: RunConfig, ds: Dataset, split: Split) -> tuple[Dataset, Split]:
    """The data set and split with the non-members drawn from ``cfg.nonmember_data``."""
    assert cfg.nonmember_data is not None
    other = load_other(cfg, cfg.nonmember_data, "nonmember_data", ds)
    joined, idx = appended(ds, other, len(split.nonmembers), cfg.seed, 0x00D)
    return joined, replace(split, nonmembers=idx)


def reference_pool(cfg: RunConfig, ds: Dataset, split: Split) -> tuple[Dataset, np.ndarray] | None:
    """(the data set with the references' population appended, that population's indices), or None
    when the references train on the target's population."""
    if cfg.reference_data is None:
        return None
    other = load_other(cfg, cfg.reference_data, "reference_data", ds)
    return appended(ds, other, min(len(split.population), len(other)), cfg.seed, 0x2EF)
