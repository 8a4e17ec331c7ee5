"""The one store: entries published whole (a writer that dies leaves none), one valid entry when processes
write the same key at once, the file lock's wait=False, checksums verified, no pickle, and an older
miaudit's cache read as cold without a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import miaudit
from miaudit import storage
from miaudit.data.base import LoadContext, cached_arrays
from miaudit.experiment import cached
from miaudit.stats import memo
from miaudit.storage.store import STAGING, STALE_STAGING_S

ENV = {**os.environ, "PYTHONPATH": str(Path(miaudit.__file__).parents[1])}


def run_python(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.005)


def test_an_entry_is_written_verified_and_read(tmp_path: Path) -> None:
    store = storage.Store(tmp_path)
    entry = store.at("things", storage.key("one"))
    assert not entry.published
    files = {"a.bin": lambda p: p.write_bytes(b"alpha"), "b.npy": lambda p: storage.save_npy(p, np.arange(3))}
    assert store.write(entry, files, {"note": "hi"})
    meta = store.verify(entry, ("a.bin", "b.npy"))
    assert meta["note"] == "hi" and meta["blake3"]["a.bin"] == storage.hash_bytes(b"alpha")
    np.testing.assert_array_equal(np.load(store.verified(entry, "b.npy"), allow_pickle=False), np.arange(3))
    assert not any((tmp_path / STAGING).iterdir())  # the staging folder is gone once published
    (entry.dir / "a.bin").write_bytes(b"alphA")
    with pytest.raises(storage.DamagedEntry, match="a.bin does not match its checksum"):
        store.verified(entry, "a.bin")


# The writer publishes nothing until every file is written: killed in the middle of its second file, it
# leaves no entry at all (only a staging folder, never read, swept once stale).
DYING_WRITER = """
import os, sys
from miaudit import storage
store = storage.Store(sys.argv[1])
def half(path):
    with open(path, "wb") as f:
        f.write(b"x" * 1000)
        f.flush()
        os._exit(9)  # the process dies mid-write: no exception handler, no cleanup
store.write(store.at("things", "k"), {"first.bin": lambda p: p.write_bytes(b"whole"), "second.bin": half})
"""


def test_a_writer_that_dies_mid_write_leaves_no_entry(tmp_path: Path) -> None:
    proc = run_python(DYING_WRITER, str(tmp_path))
    assert proc.wait(timeout=60) == 9, proc.communicate()
    store = storage.Store(tmp_path)
    entry = store.at("things", "k")
    assert not entry.dir.exists() and not entry.published
    [left] = (tmp_path / STAGING).iterdir()  # the dead writer's half-written files, outside every namespace
    assert (left / "second.bin").stat().st_size == 1000
    old = time.time() - STALE_STAGING_S - 60
    os.utime(left, (old, old))
    assert store.write(entry, {"first.bin": lambda p: p.write_bytes(b"whole")})
    assert store.verify(entry, ("first.bin",)) and not left.exists()  # a later writer swept it


def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    storage.atomic_write(target, lambda p: p.write_text("old"))

    def failing(path: Path) -> None:
        path.write_text("half")
        raise RuntimeError("died")

    with pytest.raises(RuntimeError):
        storage.atomic_write(target, failing)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f.txt"]


# Each writer waits for the go file, then writes the same 20 keys with the same content; prints how many of
# its writes published the entry.
RACING_WRITER = """
import sys, time
from pathlib import Path
from miaudit import storage
store = storage.Store(sys.argv[1])
Path(sys.argv[2]).touch()
while not Path(sys.argv[1], "go").exists():
    time.sleep(0.001)
won = []
for i in range(20):
    payload = (str(i) * 100000).encode()
    won.append(store.write(store.at("race", f"k{i}"), {"p.bin": lambda p: p.write_bytes(payload)}, {"i": i}))
print(sum(won))
"""


@pytest.mark.slow
def test_processes_writing_the_same_keys_end_with_one_valid_entry_each(tmp_path: Path) -> None:
    procs = [run_python(RACING_WRITER, str(tmp_path), str(tmp_path / f"ready{n}")) for n in range(3)]
    for n, proc in enumerate(procs):
        wait_for(tmp_path / f"ready{n}", proc)
    (tmp_path / "go").touch()
    outs = [proc.communicate(timeout=120) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), outs
    assert sum(int(out.strip()) for out, _ in outs) == 20  # each key published by exactly one of them
    store = storage.Store(tmp_path)
    for i in range(20):
        entry = store.at("race", f"k{i}")
        assert store.verify(entry, ("p.bin",))["i"] == i
        assert (entry.dir / "p.bin").read_bytes() == (str(i) * 100000).encode()
    assert sorted(p.name for p in (tmp_path / "race").iterdir()) == sorted(f"k{i}" for i in range(20))
    assert not any((tmp_path / STAGING).iterdir())


HOLDER = """
import sys, time
from pathlib import Path
from miaudit import storage
store = storage.Store(sys.argv[1])
with store.lock(store.at("models", "k")) as held:
    assert held
    Path(sys.argv[1], "held").touch()
    while not Path(sys.argv[1], "release").exists():
        time.sleep(0.005)
"""


def test_lock_without_waiting_yields_false_while_another_process_holds_it(tmp_path: Path) -> None:
    store = storage.Store(tmp_path)
    entry = store.at("models", "k")
    holder = run_python(HOLDER, str(tmp_path))
    wait_for(tmp_path / "held", holder)
    with store.lock(entry, wait=False) as held:
        assert held is False
    waited: list[int] = []

    def waiting() -> None:  # told once that another process holds it; then that one lets go
        waited.append(1)
        (tmp_path / "release").touch()

    with store.lock(entry, waiting=waiting) as held:
        assert held is True and waited == [1]
    with store.lock(entry, wait=False) as held:  # free now: taken at once
        assert held is True
    assert holder.wait(timeout=60) == 0, holder.communicate()


def test_a_read_only_store_takes_no_lock(tmp_path: Path) -> None:
    store = storage.Store(tmp_path / "never")
    store.read_only = True
    with store.lock(store.at("models", "k"), wait=False) as held:
        assert held is True
    assert not (tmp_path / "never").exists()


class Boom:
    """Unpickling this would run code: it must never happen."""

    def __reduce__(self) -> tuple:
        return (Path.touch, (Path(os.environ["MIAUDIT_TEST_MARKER"]),))


def test_nothing_read_from_the_store_is_unpickled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "unpickled"
    monkeypatch.setenv("MIAUDIT_TEST_MARKER", str(marker))
    monkeypatch.setenv("MIAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    store = storage.Store(tmp_path / "cache")
    evil = np.empty(1, dtype=object)
    evil[0] = Boom()

    def npz(path: Path) -> None:
        with open(path, "wb") as f:
            np.savez(f, x=evil)  # an object array: numpy pickles it

    # decoded data: the pickled array (with a valid checksum) is refused and the data decoded again
    store.write(store.at("data", storage.key("evil")), {"arrays.npz": npz}, {"name": "evil"})
    ctx = LoadContext(data_dir=None, cache_dir=tmp_path / "cache")
    got = cached_arrays(ctx, "evil", lambda: {"x": np.arange(3)})
    np.testing.assert_array_equal(got["x"], np.arange(3))
    # a memoized attack result: the same payload is refused by np.load, never unpickled
    with pytest.raises(ValueError, match="allow_pickle"):
        cached._from_bytes(_npz_bytes(evil))
    assert not marker.exists()


def _npz_bytes(array: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, scores=array)
    return buf.getvalue()


def test_an_older_miaudits_cache_is_cold_and_nothing_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The layout before the one store: memo/<kind>/<sha256>.bin, data/<name>.npz, signals/digests/<hash>,
    models/<sha256 key>/ with sha256 checksums; all are ignored, and the new entries are written beside them."""
    from miaudit.training.signal_store import SignalCache
    from miaudit.training.store import Store

    cache = tmp_path / "cache"
    monkeypatch.setenv("MIAUDIT_CACHE_DIR", str(cache))
    (cache / "memo" / "k").mkdir(parents=True)
    (cache / "memo" / "k" / f"{'0' * 64}.bin").write_bytes(b"old")
    (cache / "data").mkdir()
    np.savez(cache / "data" / "digits-0123456789abcdef.npz", x=np.zeros(2))
    (cache / "signals" / "digests").mkdir(parents=True)
    (cache / "signals" / "digests" / ("a" * 32)).write_text("b" * 64)
    (cache / "signals" / ("c" * 24)).mkdir()
    (cache / "signals" / ("c" * 24) / "meta.json").write_text('{"format": 3, "sha256": {}}')
    old_model = cache / "models" / ("d" * 24)
    old_model.mkdir(parents=True)
    (old_model / "meta.json").write_text(json.dumps({"role": "target", "sha256": {"model.safetensors": "e" * 64}}))
    (cache / "stray-file").write_text("?")

    assert memo.memoized("k", ["x"], lambda: b"new") == b"new"
    assert memo.memoized("k", ["x"], lambda: b"again") == b"new"
    ctx = LoadContext(data_dir=None, cache_dir=cache)
    assert cached_arrays(ctx, "digits-0123456789abcdef", lambda: {"x": np.ones(2)})["x"].tolist() == [1.0, 1.0]
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 10)
    np.save(tmp_path / "refs.npy", rng.normal(size=(10, 3)).astype(np.float32))
    refs = np.load(tmp_path / "refs.npy", mmap_mode="r")
    signals = SignalCache(cache, labels)
    assert signals.stacked([refs], np.arange(10), "loss", labels) is not None
    models = Store(cache).check_access()
    assert models.load(models.entry({"a": "new model"}), lambda: None) is None  # absent: trained afresh
    assert old_model.is_dir() and not caplog.records  # old entries left alone, nothing reported
