"""Where miaudit keeps what it computed once: one content-addressed store (``store.py``) keyed by one hash
function (``hashing.py``, BLAKE3). A foundation package: it imports no other part of miaudit."""

from .hashing import Hasher, canonical, digest, hash_bytes, hash_file, key, row_digests
from .store import DamagedEntry, Entry, Store, atomic_write, default_cache_dir, save_npy, unwritable

__all__ = [
    "DamagedEntry",
    "Entry",
    "Hasher",
    "Store",
    "atomic_write",
    "canonical",
    "default_cache_dir",
    "digest",
    "hash_bytes",
    "hash_file",
    "key",
    "row_digests",
    "save_npy",
    "unwritable",
]
