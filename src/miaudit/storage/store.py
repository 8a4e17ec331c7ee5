"""The one content-addressed store: trained models, per-model signals, memoized results and decoded data
sets, each an entry ``<root>/<namespace>/<key>/`` whose key is the BLAKE3 digest of what determines its
content (``storage.hashing.key``).

An entry is a folder of files and ``meta.json``, which records the BLAKE3 of every file (checked on read:
a damaged entry is named and computed again). It is written in a staging folder (``<root>/.staging/``)
and published by one rename, so a reader sees a whole entry or none, a writer that dies leaves no partial
entry, and when two processes write the same key the first rename wins and the other's copy is dropped
(both hold the same content). ``Store.lock`` is a file lock per entry (``<namespace>/<key>.lock``) for
work worth doing once across processes, such as training a model. Nothing is ever unpickled: entries hold
safetensors, ``.npy``/``.npz`` read with ``allow_pickle=False``, JSON and raw bytes.

Keys changed with this layout (sha256 before, BLAKE3 now): a cache written by an older miaudit is cold,
and its files (``memo/<kind>/<key>.bin``, ``data/<name>.npz``, ``signals/digests/``, entries under old keys)
are never read; delete them at will.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock, Timeout

from .hashing import hash_bytes, hash_file

META = "meta.json"
CHECKSUMS = "blake3"  # meta.json's field: file name -> BLAKE3 of its bytes
PAYLOAD = "payload.bin"  # the one file of a bytes entry (``put_bytes``)
STAGING = ".staging"
STALE_STAGING_S = 24 * 3600  # a staging folder this old was left by a writer that died


def default_cache_dir() -> Path:
    """$MIAUDIT_CACHE_DIR, else ~/.cache/miaudit."""
    env = os.environ.get("MIAUDIT_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "miaudit"


def atomic_write(path: Path, write: Callable[[Path], Any]) -> None:
    """``write(tmp)`` then rename ``tmp`` to ``path``: readers see the old file or the whole new one."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}-{secrets.token_hex(4)}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def save_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as f:  # a file object: np.save would append ".npy" to another name
        np.save(f, array)


def unwritable(root: Path, namespace: str = "") -> str | None:
    """Why this process cannot create files in the store (in ``namespace`` where it exists), or None.

    A probe file, not permission bits, which lie (root, read-only mounts, ACLs)."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        where = root / namespace if namespace and (root / namespace).is_dir() else root
        fd, name = tempfile.mkstemp(prefix=".miaudit-probe-", dir=where)
    except OSError as e:
        return e.strerror or type(e).__name__
    os.close(fd)
    os.unlink(name)
    return None


class DamagedEntry(Exception):
    """An entry whose files do not match the checksums in its meta.json (or cannot be read)."""


@dataclass(frozen=True)
class Entry:
    """One entry's place: ``dir`` holds its files and meta.json once it is published."""

    key: str
    dir: Path

    @property
    def meta_path(self) -> Path:
        return self.dir / META

    @property
    def lock_path(self) -> Path:
        # Beside the entry, not inside: removing a damaged entry's folder must not remove its lock.
        return self.dir.with_name(self.dir.name + ".lock")

    @property
    def published(self) -> bool:
        """Whether the entry is there (published entries are whole: meta.json is in it from the start)."""
        return self.meta_path.is_file()


class Store:
    """A root folder of namespaces of content-addressed entries (see the module's docstring)."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.read_only = False  # set by a user that found the root unwritable: no locks, no writes
        self._swept = False

    def at(self, namespace: str, key: str) -> Entry:
        return Entry(key=key, dir=self.root / namespace / key)

    @contextmanager
    def lock(self, entry: Entry, waiting: Callable[[], None] | None = None, wait: bool = True) -> Iterator[bool]:
        """Hold the entry's lock; ``waiting()`` is called once if another process holds it. Yields whether
        the lock is held: with ``wait=False`` a lock another process holds is not waited for (False).

        An OS-level lock (flock): a crashed holder releases it, so no stale lock survives a run. A
        read-only store takes none: nothing in it can change, and no lock file can be made there."""
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

    def write(
        self, entry: Entry, files: Mapping[str, Callable[[Path], Any]], meta: Mapping[str, Any] | None = None
    ) -> bool:
        """Write the entry: ``files[name](path)`` writes each file, then meta.json (``meta`` and the files'
        checksums) is added and the whole folder published at once. False when another process published
        the entry first (its copy is kept). ``OSError`` when the store cannot be written."""
        staging = self._staging(entry)
        try:
            staging.mkdir(parents=True)
            for name, write in files.items():
                write(staging / name)
            sums = {name: hash_file(staging / name) for name in files}
            (staging / META).write_text(json.dumps({**(meta or {}), CHECKSUMS: sums}, indent=1, default=str))
            return self._publish(staging, entry)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def meta(self, entry: Entry) -> dict[str, Any]:
        """The entry's meta.json (with its checksums); ``DamagedEntry`` when unreadable or without them."""
        try:
            meta = json.loads(entry.meta_path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise DamagedEntry(f"meta.json unreadable: {type(e).__name__}") from None
        if not isinstance(meta, dict) or not isinstance(meta.get(CHECKSUMS), dict):
            raise DamagedEntry("meta.json records no checksums")
        return meta

    def verified(self, entry: Entry, name: str, meta: Mapping[str, Any] | None = None) -> Path:
        """The path of the entry's file ``name``, once it matches its recorded checksum; else ``DamagedEntry``."""
        sums = (meta if meta is not None else self.meta(entry))[CHECKSUMS]
        path = entry.dir / name
        if name not in sums:
            raise DamagedEntry(f"meta.json records no checksum of {name}")
        if not path.is_file():
            raise DamagedEntry(f"{name} missing")
        if hash_file(path) != sums[name]:
            raise DamagedEntry(f"{name} does not match its checksum, {path.stat().st_size} bytes")
        return path

    def verify(self, entry: Entry, names: tuple[str, ...]) -> dict[str, Any]:
        """The entry's meta, once each of ``names`` (exactly the files it records) matches its checksum."""
        meta = self.meta(entry)
        if set(meta[CHECKSUMS]) != set(names):
            raise DamagedEntry("meta.json records other files")
        for name in names:
            self.verified(entry, name, meta)
        return meta

    def discard(self, entry: Entry) -> None:
        """Remove a damaged entry's files (so it is computed again); its lock file stays."""
        shutil.rmtree(entry.dir, ignore_errors=True)

    def get_bytes(self, namespace: str, key: str) -> bytes | None:
        """The payload kept under ``key``, or None when absent or damaged (a damaged entry is removed)."""
        entry = self.at(namespace, key)
        if not entry.published:
            return None
        try:
            meta = self.meta(entry)
            blob = (entry.dir / PAYLOAD).read_bytes()
            if hash_bytes(blob) == meta[CHECKSUMS].get(PAYLOAD):
                return blob
        except (DamagedEntry, OSError):
            pass
        if not self.read_only:
            self.discard(entry)
        return None

    def put_bytes(self, namespace: str, key: str, payload: bytes) -> None:
        """Keep ``payload`` under ``key`` (``OSError`` when the store cannot be written)."""
        self.write(self.at(namespace, key), {PAYLOAD: lambda path: path.write_bytes(payload)})

    def _staging(self, entry: Entry) -> Path:
        folder = self.root / STAGING
        if not self._swept:  # once per store: folders left by writers that died long ago
            self._swept = True
            with contextlib.suppress(OSError):
                for old in folder.iterdir():
                    if time.time() - old.stat().st_mtime > STALE_STAGING_S:
                        shutil.rmtree(old, ignore_errors=True)
        return folder / f"{entry.dir.parent.name}-{entry.key}-{os.getpid()}-{secrets.token_hex(4)}"

    def _publish(self, staging: Path, entry: Entry) -> bool:
        entry.dir.parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(2):
            try:
                os.rename(staging, entry.dir)  # atomic; fails when a non-empty folder is there
                return True
            except OSError:
                if entry.published:
                    return False  # another process published it first: the same content
                if attempt:
                    raise
                shutil.rmtree(entry.dir, ignore_errors=True)  # a folder without meta.json is no entry
        raise AssertionError("unreachable")
