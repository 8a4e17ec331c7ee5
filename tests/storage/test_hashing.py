"""The one hash function: stable across versions (committed digests), canonical for JSON-like keys, framed so
that no two part sequences collide, and files hashed in chunks equal to the hash of their bytes."""

from __future__ import annotations

import ast
from pathlib import Path

import blake3
import numpy as np
import pytest

import miaudit
from miaudit import storage
from miaudit.storage import hashing

# BLAKE3's published test vector for the empty input, and digests this code computed once: a change to the
# framing or the canonical form changes them (and would silently make every cache cold).
EMPTY = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
FIXED_PARTS = "5f6e925a1bc987bfb3e02e7b8e1e3ef527c5b737f527314c28f5138e484853b3"
FIXED_KEY = "303e1c636bcdb6ad02655645dbf3676d"


def test_digests_of_fixed_inputs_are_stable() -> None:
    assert storage.hash_bytes(b"") == EMPTY
    parts = (np.arange(6, dtype=np.int64).reshape(2, 3), {"b": 1, "a": [1.5, "x", None]}, b"raw")
    assert storage.digest(*parts) == FIXED_PARTS
    assert storage.key({"arch": "mlp", "seed": 3}) == FIXED_KEY
    assert len(FIXED_KEY) == hashing.KEY_LENGTH


def test_a_file_is_hashed_in_chunks_as_its_bytes(tmp_path: Path) -> None:
    blob = np.random.default_rng(0).bytes(hashing.CHUNK * 2 + 12345)  # three chunks, the last partial
    (tmp_path / "f").write_bytes(blob)
    assert storage.hash_file(tmp_path / "f") == blake3.blake3(blob).hexdigest() == storage.hash_bytes(blob)
    (tmp_path / "empty").write_bytes(b"")
    assert storage.hash_file(tmp_path / "empty") == EMPTY


def test_json_keys_do_not_depend_on_dict_order() -> None:
    one = {"arch": "mlp", "train": {"lr": 0.1, "epochs": 30, "augment": ["flip", "crop"]}, "seed": 3}
    other = {"seed": 3, "train": {"augment": ["flip", "crop"], "epochs": 30, "lr": 0.1}, "arch": "mlp"}
    assert storage.key(one) == storage.key(other)
    assert storage.canonical(one) == storage.canonical(other)
    assert storage.key({**one, "seed": 4}) != storage.key(one)
    assert storage.key({"t": (1, 2)}) == storage.key({"t": [1, 2]})  # a tuple is JSON's list
    assert storage.key({"v": 1}) != storage.key({"v": 1.0}) != storage.key({"v": "1"})
    assert storage.key({"v": np.int64(3), "p": Path("/a/b")}) == storage.key({"v": 3, "p": "/a/b"})


def test_parts_are_framed_so_sequences_never_collide() -> None:
    assert storage.key("ab", "c") != storage.key("a", "bc")
    assert storage.key(b"ab", b"c") != storage.key(b"a", b"bc")
    assert storage.key(b"x") != storage.key("x")  # bytes and a JSON string differ
    a = np.arange(6, dtype=np.float64)
    assert storage.key(a) == storage.key(a.copy()) == storage.key(a[::1])
    assert storage.key(a) != storage.key(a.astype(np.float32))  # dtype
    assert storage.key(a) != storage.key(a.reshape(2, 3))  # shape
    assert storage.key(np.zeros((0, 3))) != storage.key(np.zeros((3, 0)))  # empty arrays by shape alone
    assert storage.key(np.arange(6).reshape(2, 3).T) == storage.key(np.ascontiguousarray(np.arange(6).reshape(2, 3).T))


def test_a_key_never_depends_on_a_repr() -> None:
    with pytest.raises(TypeError, match="cache key cannot hold a object"):
        storage.key({"thing": object()})


def test_storage_imports_nothing_else_of_miaudit() -> None:
    """A foundation layer: the standard library, numpy, blake3 and filelock, and its own modules."""
    folder = Path(miaudit.__file__).parent / "storage"
    allowed = {"numpy", "blake3", "filelock", "__future__"}
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1, f"{path.name} imports {node.module} from outside storage/"
            elif isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                for name in names:
                    top = str(name).split(".")[0]
                    assert top in allowed or top in __import__("sys").stdlib_module_names, (path.name, name)


def test_row_digests_are_blake3_of_each_rows_bytes_after_the_prefix() -> None:
    rows = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = storage.row_digests(rows, prefix=b"p", size=16)
    assert got == [blake3.blake3(b"p" + r.tobytes()).digest(length=16) for r in rows]
    assert storage.row_digests(rows[[0, 0]], prefix=b"p") == [got[0]] * 2
    assert storage.row_digests(rows[:1]) != got[:1]  # the prefix is hashed
    assert storage.row_digests(rows[:0]) == []
