"""The model store: trained models (safetensors) and their logits, in the ``models`` namespace of the one
content-addressed store (``miaudit.storage``), keyed by the BLAKE3 of everything that determines them (data
content, training indices, architecture, training config, seed). A finished model is never retrained; an
interrupted run resumes at the first model not yet saved. An entry is published whole (the store's staging
folder and one rename).

Integrity: meta.json records the BLAKE3 of the weights and logits; an entry is verified on load, and a
damaged one is reported in one line and removed so it is trained again. Concurrency: the store's file lock
per entry, held while the entry is read or trained, so runs sharing a cache train each model once. A cache
this process cannot write (``Store.check_access``) is used read-only: its finished entries are served
without locks (an entry never changes once published), and a model it lacks is a one-line error.

Keys were sha256 before miaudit's one store: a cache of an older version is cold (its models are trained
again, its old entries ignored).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import storage
from ..errors import ConfigError
from ..storage import unwritable

if TYPE_CHECKING:  # torch and safetensors load with the first model: a scores-only audit never needs them
    import torch

log = logging.getLogger(__name__)
NAMESPACE = "models"
CHECKSUMMED = ("model.safetensors", "logits.npy")


def spec_key(spec: dict[str, Any]) -> str:
    """The entry key of a model: the hash of its spec's canonical JSON."""
    return storage.key(spec)


def indices_digest(idx: np.ndarray) -> str:
    return storage.digest(np.ascontiguousarray(idx, dtype=np.int64))[:16]


@dataclass(frozen=True)
class ModelEntry(storage.Entry):
    @property
    def weights(self) -> Path:
        return self.dir / "model.safetensors"

    @property
    def logits_path(self) -> Path:
        return self.dir / "logits.npy"


@dataclass
class CachedModel:
    module: torch.nn.Module
    logits: np.ndarray
    meta: dict[str, Any]


class Store(storage.Store):
    """The store's ``models/<key>/{model.safetensors, meta.json, logits.npy}`` and ``models/<key>.lock``."""

    def check_access(self) -> Store:
        """Before any work: a cache this process cannot write is refused when it holds no finished model,
        else used read-only (``read_only``); ``ConfigError`` names it in one line. Returns the store."""
        log.debug("cache: %s", self.root)
        why = unwritable(self.root, NAMESPACE)
        if why is None:
            return self
        if not any((self.root / NAMESPACE).glob("*/meta.json")):
            raise ConfigError(
                f"cache_dir: {self.root} is not writable ({why}) and holds no trained model; make it writable, "
                "or set MIAUDIT_CACHE_DIR (or cache_dir) to a folder you can write"
            )
        self.read_only = True
        log.info("cache %s is read-only (%s): the models it holds are used, no other can be trained", self.root, why)
        return self

    def missing(self, entry: ModelEntry, role: str) -> ConfigError:
        """The error for a model a read-only cache does not hold."""
        return ConfigError(
            f"cache_dir: {self.root} is read-only and holds no {role} model for this config ({entry.key}); "
            "make it writable, or set MIAUDIT_CACHE_DIR (or cache_dir) to a folder you can write"
        )

    def entry(self, spec: dict[str, Any]) -> ModelEntry:
        key = spec_key(spec)
        return ModelEntry(key=key, dir=self.root / NAMESPACE / key)

    def save(self, entry: ModelEntry, model: torch.nn.Module, meta: dict[str, Any], logits: np.ndarray) -> None:
        from safetensors.torch import save_file

        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        files = {
            entry.weights.name: lambda p: save_file(state, str(p)),
            entry.logits_path.name: lambda p: storage.save_npy(p, logits),
        }
        self.write(entry, files, meta)

    def load(self, entry: ModelEntry, build: Callable[[], torch.nn.Module], role: str = "model") -> CachedModel | None:
        """The verified entry, or None when it is absent or damaged (then reported and removed) and can be
        trained; a read-only cache without it raises ``ConfigError`` naming ``role``."""
        if not entry.published:
            if self.read_only:
                raise self.missing(entry, role)
            return None  # never finished (or not started): trained afresh, nothing to report
        try:
            meta = self.verify(entry, CHECKSUMMED)
            module = self.load_weights(entry, build())
            logits = self.load_logits(entry)
        except storage.DamagedEntry as e:
            self._discard(entry, str(e))
            return None
        except Exception as e:  # checksums match but the content does not fit: still not usable
            self._discard(entry, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            return None
        return CachedModel(module, logits, meta)

    def _discard(self, entry: ModelEntry, why: str) -> None:
        """Report a damaged entry in one line and delete its files, so it is trained again."""
        if self.read_only:
            raise ConfigError(f"cache_dir: entry {entry.dir} is damaged ({why}) and the cache is read-only")
        log.warning("cache entry %s is damaged (%s); retraining", entry.dir, why)
        self.discard(entry)

    def load_weights(self, entry: ModelEntry, model: torch.nn.Module) -> torch.nn.Module:
        from safetensors.torch import load_file

        model.load_state_dict(load_file(str(entry.weights)))
        return model.eval()

    def load_logits(self, entry: ModelEntry) -> np.ndarray:
        return np.load(entry.logits_path, allow_pickle=False, mmap_mode="r")  # K x N logits never all in memory
