"""Per-model signals kept in the store beside the logits: computed once per model, read by every later
attack and run.

A model's logits never change, and every attack reads them only through a per-record signal, so the
signals (``signals.bundle``: hinge, rescaled logit, loss, confidence, whether the top class is the
label and whether the record's logits are all finite) are computed in one pass over each model's logits
on every record and kept in the ``signals`` namespace of the one store (``miaudit.storage``) as one
``.npy`` per signal, each checked against its BLAKE3 in the entry's meta.json on first read (a damaged
entry is reported in one line and computed again).

Content-addressed: the key hashes the logits' content (dtype, shape, bytes), the labels and the format
version, so logits that change get new signals. Hashing a model's logits costs a tenth of computing its
signals; for a memory-mapped file the digest is remembered in the store's ``digests`` namespace by the
file's identity (path, device, inode, size, modification time) and the array's place in it, so a later
run hashes a file again only once it changed, as git's index does. Entries of an older miaudit (sha256
keys) are never read: such a cache is cold.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .. import storage
from ..stats.signals import CORRECT, FINITE, Signal, bundle

log = logging.getLogger(__name__)
FORMAT = 3  # bump when signals.bundle's output changes: old entries are then never read
NAMES = (*(s.value for s in Signal), CORRECT, FINITE)
WORKERS = 2  # models at a time: hashing and numpy's loops release the GIL
NAMESPACE = "signals"
DIGESTS = "digests"  # a memory-mapped file's state -> the digest of the logits in it


def file_span(array: np.ndarray) -> tuple[Path, int] | None:
    """(file, byte offset) of a C-contiguous view into a memory-mapped file, else None."""
    root = array
    while isinstance(root.base, np.memmap):
        root = root.base
    if not isinstance(root, np.memmap) or root.filename is None or not array.flags.c_contiguous:
        return None
    return Path(root.filename), int(root.offset) + (array.ctypes.data - root.ctypes.data)


class SignalEntry:
    """One model's stored signals: ``{name}.npy`` per signal in its store entry."""

    def __init__(self, store: storage.Store, entry: storage.Entry, logits: np.ndarray, labels: np.ndarray, digest: str):
        self.store, self.entry, self.logits, self.labels, self.digest = store, entry, logits, labels, digest
        self._verified: dict[str, np.ndarray] = {}

    @property
    def dir(self) -> Path:
        return self.entry.dir

    def fill(self) -> None:
        """Compute and write the signals unless a finished entry is there."""
        if self.entry.published:
            return
        values = bundle(self.logits, self.labels)
        files = {f"{name}.npy": _npy_writer(values[name]) for name in NAMES}
        try:
            self.store.write(self.entry, files, {"format": FORMAT, "shape": list(self.logits.shape)})
        except OSError as e:  # a read-only or full store: the signals still serve this run
            log.warning("signals not stored in %s (%s)", self.dir, e)
        self._verified = dict(values)

    def read(self, name: str) -> np.ndarray:
        """Signal ``name`` of every record, checked against its recorded checksum on first read."""
        if name not in self._verified:
            try:
                path = self.store.verified(self.entry, f"{name}.npy")
                self._verified[name] = np.load(path, allow_pickle=False)
            except (storage.DamagedEntry, OSError, ValueError) as e:
                log.warning("stored signals %s are damaged (%s); computing them again", self.dir, e)
                self.store.discard(self.entry)
                self.fill()
        return self._verified[name]


def _npy_writer(values: np.ndarray) -> Callable[[Path], None]:
    return lambda path: storage.save_npy(path, values)


class SignalCache:
    """Signals of whole models (each (N_all, C) logits on every record, with ``labels`` (N_all,)), each
    model's computed once and kept under ``root``; a ``LogitStack``'s signal source."""

    def __init__(self, root: Path, labels: np.ndarray, workers: int = WORKERS):
        self.store = storage.Store(root)
        self.labels = np.ascontiguousarray(labels, dtype=np.int64)
        self.labels_digest = storage.digest(self.labels)
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
        entry = self.store.at(NAMESPACE, storage.key(FORMAT, digest, self.labels_digest))
        signals = SignalEntry(self.store, entry, logits, self.labels, digest)
        signals.fill()
        return signals

    def digest(self, logits: np.ndarray) -> str:
        """Digest of the logits' content (dtype, shape, bytes); remembered per file state for memmaps."""
        if id(logits) in self._entries:  # known (and kept alive) already
            return self._entries[id(logits)][1].digest
        span = file_span(logits)
        if span is None:
            return storage.digest(logits)
        path, offset = span
        st = path.stat()
        identity = [str(path.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, offset]
        key = storage.key(identity, logits.dtype.str, logits.shape)
        remembered = self.store.get_bytes(DIGESTS, key)
        if remembered is not None:
            return remembered.decode()
        value = storage.digest(logits)
        try:
            self.store.put_bytes(DIGESTS, key, value.encode())
        except OSError as e:
            log.warning("logits digest not remembered in %s (%s)", self.store.root / DIGESTS, e)
        return value
