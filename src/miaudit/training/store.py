"""Artifact cache: trained models (safetensors) and their logits, keyed by a hash of
everything that determines them (data content, training indices, architecture,
training config, seed). A finished model is never retrained; an interrupted run
resumes at the first model not yet saved. Writes are atomic (temp file + rename).

Integrity: meta.json, written last, records the sha256 of the weights and logits; an
entry is verified on load, and a damaged one is reported in one line and removed so
it is trained again. Concurrency: a file lock per entry, held while the entry is read
or trained, so runs sharing a cache train each model once. A cache this process cannot write
(``Store.check_access``) is used read-only: its finished entries are served without locks (an
entry is never changed once its meta.json is written), and a model it lacks is a one-line error.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from filelock import FileLock, Timeout

from ..data.base import sha256_file
from ..errors import ConfigError

if TYPE_CHECKING:  # torch and safetensors load with the first model: a scores-only audit never needs them
    import torch

log = logging.getLogger(__name__)
CHECKSUMMED = ("model.safetensors", "logits.npy")


def spec_key(spec: dict[str, Any]) -> str:
    blob = json.dumps(spec, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:24]


def indices_digest(idx: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(idx, dtype=np.int64).tobytes()).hexdigest()[:16]


def atomic_write(path: Path, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` then rename ``tmp`` to ``path``: readers see the old file or the whole new one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(tmp)
    os.replace(tmp, path)


def save_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as f:  # a file object: np.save would append ".npy" to a temp name
        np.save(f, array)


@dataclass(frozen=True)
class ModelEntry:
    key: str
    dir: Path

    @property
    def weights(self) -> Path:
        return self.dir / "model.safetensors"

    @property
    def meta_path(self) -> Path:
        return self.dir / "meta.json"

    @property
    def logits_path(self) -> Path:
        return self.dir / "logits.npy"

    @property
    def lock_path(self) -> Path:
        # Beside the entry, not inside: removing a damaged entry's folder must not remove its lock.
        return self.dir.with_name(self.dir.name + ".lock")


@dataclass
class CachedModel:
    module: torch.nn.Module
    logits: np.ndarray
    meta: dict[str, Any]


class DamagedEntry(Exception):
    """A cache entry whose files do not match the checksums in its meta.json (or cannot be read)."""


class Store:
    """A directory of ``models/<key>/{model.safetensors, meta.json, logits.npy}`` and ``models/<key>.lock``."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.read_only = False

    def check_access(self) -> Store:
        """Before any work: a cache this process cannot write is refused when it holds no finished model,
        else used read-only (``read_only``); ``ConfigError`` names it in one line. Returns the store."""
        log.debug("cache: %s", self.root)
        why = _unwritable(self.root)
        if why is None:
            return self
        if not any((self.root / "models").glob("*/meta.json")):
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
        return ModelEntry(key=spec_key(spec), dir=self.root / "models" / spec_key(spec))

    @contextmanager
    def lock(self, entry: ModelEntry, waiting: Callable[[], None] | None = None, wait: bool = True) -> Iterator[bool]:
        """Hold the entry's lock; ``waiting()`` is called once if another process holds it. Yields whether
        the lock is held: with ``wait=False`` a lock another process holds is not waited for (False).

        An OS-level lock (flock): a crashed holder releases it, so no stale lock survives a run. A
        read-only cache takes none: nothing in it can change, and no lock file can be made there."""
        if self.read_only:
            yield True
            return
        entry.lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(entry.lock_path))
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if not wait:
                yield False
                return
            if waiting is not None:
                waiting()
            lock.acquire()
        try:
            yield True
        finally:
            lock.release()

    def save(self, entry: ModelEntry, model: torch.nn.Module, meta: dict[str, Any], logits: np.ndarray) -> None:
        from safetensors.torch import save_file

        entry.dir.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        atomic_write(entry.weights, lambda p: save_file(state, str(p)))
        atomic_write(entry.logits_path, lambda p: save_npy(p, logits))
        meta = {**meta, "sha256": {name: sha256_file(entry.dir / name) for name in CHECKSUMMED}}
        atomic_write(
            entry.meta_path, lambda p: p.write_text(json.dumps(meta, indent=1, default=str))
        )  # last: marks complete

    def verify(self, entry: ModelEntry) -> dict[str, Any]:
        """The entry's meta, once every file matches its recorded sha256; else ``DamagedEntry``."""
        try:
            meta = json.loads(entry.meta_path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DamagedEntry(f"meta.json unreadable: {type(e).__name__}") from None
        sums = meta.get("sha256") if isinstance(meta, dict) else None
        if not isinstance(sums, dict) or set(sums) != set(CHECKSUMMED):
            raise DamagedEntry("meta.json records no checksums")
        for name in CHECKSUMMED:
            path = entry.dir / name
            if not path.is_file():
                raise DamagedEntry(f"{name} missing")
            if sha256_file(path) != sums[name]:
                raise DamagedEntry(f"{name} does not match its sha256, {path.stat().st_size} bytes")
        return meta

    def load(self, entry: ModelEntry, build: Callable[[], torch.nn.Module], role: str = "model") -> CachedModel | None:
        """The verified entry, or None when it is absent or damaged (then reported and removed) and can be
        trained; a read-only cache without it raises ``ConfigError`` naming ``role``."""
        if not entry.meta_path.is_file():
            if self.read_only:
                raise self.missing(entry, role)
            return None  # never finished (or not started): trained afresh, nothing to report
        try:
            meta = self.verify(entry)
            module = self.load_weights(entry, build())
            logits = self.load_logits(entry)
        except DamagedEntry as e:
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
        shutil.rmtree(entry.dir, ignore_errors=True)
        return None

    def load_weights(self, entry: ModelEntry, model: torch.nn.Module) -> torch.nn.Module:
        from safetensors.torch import load_file

        model.load_state_dict(load_file(str(entry.weights)))
        return model.eval()

    def load_logits(self, entry: ModelEntry) -> np.ndarray:
        return np.load(entry.logits_path, allow_pickle=False, mmap_mode="r")  # K x N logits never all in memory


def _unwritable(root: Path) -> str | None:
    """Why this process cannot create files in the cache (the models folder where it exists), or None.

    A probe file, not permission bits, which lie (root, read-only mounts, ACLs)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        where = root / "models" if (root / "models").is_dir() else root
        fd, name = tempfile.mkstemp(prefix=".miaudit-probe-", dir=where)
    except OSError as e:
        return e.strerror or type(e).__name__
    os.close(fd)
    os.unlink(name)
    return None
