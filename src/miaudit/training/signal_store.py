"""Per-model signals kept in the store beside the logits: computed once per model, read by every later
attack and run.

A model's logits never change, and every attack reads them only through a per-record signal, so the
signals (``signals.bundle``: hinge, rescaled logit, loss, confidence, whether the top class is the
label and whether the record's logits are all finite) are computed in one pass over each model's logits
on every record and written under ``<root>/signals/<key>/`` as one ``.npy`` per signal, with their
sha256 in ``meta.json`` (written last, verified on read; a damaged entry is reported in one line and computed again).

Content-addressed: ``key`` hashes the BLAKE3 digest of the logits' bytes (a cryptographic hash, 3x faster
than sha256 here: digesting the logits was a third of a first scores-only audit), the labels and the format
version, so logits that change get new signals. Hashing a model's logits costs a tenth of computing its
signals; for a memory-mapped file the digest is remembered under ``<root>/signals/digests/`` by the
file's identity (path, device, inode, size, modification time) and the array's place in it, so a later
run hashes a file again only once it changed, as git's index does.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import blake3
import numpy as np

from ..data.base import sha256_file
from ..stats.signals import CORRECT, FINITE, Signal, bundle
from .store import atomic_write, save_npy

log = logging.getLogger(__name__)
FORMAT = 3  # bump when signals.bundle's output changes: old entries are then never read
NAMES = (*(s.value for s in Signal), CORRECT, FINITE)
WORKERS = 2  # models at a time: hashing and numpy's loops release the GIL


def _content_digest(logits: np.ndarray) -> str:
    """BLAKE3 of an array's bytes (the GIL released while it hashes)."""
    return blake3.blake3(np.ascontiguousarray(logits).data.cast("B") if logits.size else b"").hexdigest()


def _sha256(data: np.ndarray | bytes) -> str:
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(data).data.cast("B") if isinstance(data, np.ndarray) else data)
    return h.hexdigest()


def file_span(array: np.ndarray) -> tuple[Path, int] | None:
    """(file, byte offset) of a C-contiguous view into a memory-mapped file, else None."""
    root = array
    while isinstance(root.base, np.memmap):
        root = root.base
    if not isinstance(root, np.memmap) or root.filename is None or not array.flags.c_contiguous:
        return None
    return Path(root.filename), int(root.offset) + (array.ctypes.data - root.ctypes.data)


class SignalEntry:
    """One model's stored signals: ``<root>/signals/<key>/{name}.npy`` and ``meta.json``."""

    def __init__(self, folder: Path, logits: np.ndarray, labels: np.ndarray, digest: str):
        self.dir, self.logits, self.labels, self.digest = folder, logits, labels, digest
        self._verified: dict[str, np.ndarray] = {}

    @property
    def meta_path(self) -> Path:
        return self.dir / "meta.json"

    def fill(self) -> None:
        """Compute and write the signals unless a finished entry is there."""
        if self.meta_path.is_file():
            return
        values = bundle(self.logits, self.labels)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            for name in NAMES:
                self._write(name, values[name])
            sums = {name: sha256_file(self.dir / f"{name}.npy") for name in NAMES}
            meta = json.dumps({"format": FORMAT, "shape": list(self.logits.shape), "sha256": sums}, indent=1)
            atomic_write(self.meta_path, lambda p: p.write_text(meta))  # last: marks the entry complete
        except OSError as e:  # a read-only or full store: the signals still serve this run
            log.warning("signals not stored in %s (%s)", self.dir, e)
        self._verified = dict(values)

    def _write(self, name: str, values: np.ndarray) -> None:
        atomic_write(self.dir / f"{name}.npy", lambda path: save_npy(path, values))

    def read(self, name: str) -> np.ndarray:
        """Signal ``name`` of every record, checked against its recorded sha256 on first read."""
        if name not in self._verified:
            try:
                sums = json.loads(self.meta_path.read_text())["sha256"]
                path = self.dir / f"{name}.npy"
                if sha256_file(path) != sums[name]:
                    raise ValueError(f"{name}.npy does not match its sha256")
                self._verified[name] = np.load(path, allow_pickle=False)
            except (OSError, ValueError, KeyError, TypeError) as e:
                log.warning("stored signals %s are damaged (%s); computing them again", self.dir, e)
                shutil.rmtree(self.dir, ignore_errors=True)
                self.fill()
        return self._verified[name]


class SignalCache:
    """Signals of whole models (each (N_all, C) logits on every record, with ``labels`` (N_all,)), each
    model's computed once and kept under ``root``; a ``LogitStack``'s signal source."""

    def __init__(self, root: Path, labels: np.ndarray, workers: int = WORKERS):
        self.dir = Path(root) / "signals"
        self.labels = np.ascontiguousarray(labels, dtype=np.int64)
        self.labels_digest = _sha256(self.labels)
        self.workers = workers
        self._entries: dict[int, tuple[np.ndarray, SignalEntry]] = {}  # by id(logits), the array kept alive

    def __getstate__(self) -> dict:
        """Pickled (to a worker) without the models it has seen: their entries are found again by digest."""
        return {**self.__dict__, "_entries": {}}

    def entries(self, per_model: Sequence[np.ndarray]) -> list[SignalEntry]:
        """The models' entries, the missing ones computed (``workers`` models at a time)."""
        todo = list({id(m): m for m in per_model if id(m) not in self._entries}.values())
        if todo:
            with ThreadPoolExecutor(max(1, min(self.workers, len(todo)))) as pool:
                for logits, entry in zip(todo, pool.map(self._filled, todo)):
                    self._entries[id(logits)] = (logits, entry)
        return [self._entries[id(m)][1] for m in per_model]

    def stacked(
        self, per_model: Sequence[np.ndarray], rows: np.ndarray, name: str, labels: np.ndarray
    ) -> np.ndarray | None:
        """(K, n) signal ``name`` of the models on ``rows``; None when ``labels`` are not the cache's there."""
        if not np.array_equal(self.labels[rows], labels):
            return None
        out = np.empty((len(per_model), len(rows)))
        for k, entry in enumerate(self.entries(per_model)):
            out[k] = entry.read(name)[rows]
        return out

    def accuracy(self, logits: np.ndarray, rows: np.ndarray) -> float:
        """Share of ``rows`` whose top class (argmax) is the label, from the stored ``correct``."""
        return float(self.entries([logits])[0].read(CORRECT)[rows].mean()) if len(rows) else float("nan")

    def nonfinite_record(self, logits: np.ndarray) -> int | None:
        """The first record where some logit of the model is NaN or infinite (None: all finite), from the store."""
        finite = self.entries([logits])[0].read(FINITE)
        return None if finite.all() else int(np.flatnonzero(~finite)[0])

    def _filled(self, logits: np.ndarray) -> SignalEntry:
        if logits.ndim != 2 or logits.shape[0] != len(self.labels):
            raise ValueError(
                f"logits of shape {logits.shape}: the signal cache holds models on {len(self.labels)} records"
            )
        digest = self.digest(logits)
        key = _sha256(f"{FORMAT}:{digest}:{self.labels_digest}".encode())[:24]
        entry = SignalEntry(self.dir / key, logits, self.labels, digest)
        entry.fill()
        return entry

    def digest(self, logits: np.ndarray) -> str:
        """BLAKE3 digest of the logits' bytes with their dtype and shape; remembered per file state for memmaps."""
        if id(logits) in self._entries:  # known (and kept alive) already
            return self._entries[id(logits)][1].digest
        tag = f"{logits.dtype.str}{logits.shape}".encode()
        span = file_span(logits)
        if span is None:
            return _sha256(tag + bytes.fromhex(_content_digest(logits)))
        path, offset = span
        st = path.stat()
        identity = f"{path.resolve()}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{offset}:{tag!r}"
        memo = self.dir / "digests" / _sha256(identity.encode())[:32]
        try:
            return memo.read_text().strip()
        except OSError:
            pass
        value = _sha256(tag + bytes.fromhex(_content_digest(logits)))
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(memo, lambda p: p.write_text(value))
        except OSError as e:
            log.warning("logits digest not remembered in %s (%s)", memo.parent, e)
        return value
