"""Built-in data set loaders: the real files in ../shared/data where present, and
small synthetic files in the same formats so every parser runs everywhere."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import miaudit.data as data
from miaudit.data import DataError, cifar, location, tabular, text
from tests.conftest import SHARED_DATA

SHARED = SHARED_DATA


def shared_file(relpath: str) -> Path:
    path = SHARED / relpath
    if not path.is_file():
        pytest.skip("needs ../shared/data (real data sets); not present")
    return path


def refuse(*args: object) -> None:
    raise AssertionError("decoded again although the cache holds the arrays")


def cache_files(cache: Path, prefix: str) -> list[Path]:
    """The decoded arrays the store keeps for data sets named ``prefix-...``."""
    entries = (cache / "data").glob("*/meta.json")
    named = [p.parent for p in entries if json.loads(p.read_text())["name"].startswith(f"{prefix}-")]
    return sorted(folder / "arrays.npz" for folder in named)


def add_member(tar: tarfile.TarFile, name: str, payload: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(payload)
    tar.addfile(info, io.BytesIO(payload))


def test_every_loader_is_registered() -> None:
    assert {"location", "cifar10", "cifar100", "ag_news", "purchase100", "texas100"} <= set(data.LOADERS)


# --- the real files ---------------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_location_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared_file(location.LOCATION_FILE)
    ds = data.load("location", data_dir=SHARED, cache_dir=tmp_path)
    assert ds.x.shape == (5010, 446) and ds.x.dtype == np.float32 and ds.y.dtype == np.int64
    assert set(np.unique(ds.x)) == {0.0, 1.0}
    counts = np.bincount(ds.y, minlength=30)
    assert ds.n_classes == 30 and len(counts) == 30 and counts.min() > 0 and counts.sum() == 5010
    assert counts[:4].tolist() == [169, 178, 147, 155]  # labels "1".."4" in the file
    assert len(cache_files(tmp_path, "location")) == 1
    monkeypatch.setattr(location, "_parse", refuse)
    again = data.load("location", data_dir=SHARED, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.x, ds.x)
    np.testing.assert_array_equal(again.y, ds.y)


@pytest.mark.slow
@pytest.mark.shared_data
def test_ag_news_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared_file(text.AG_NEWS_FILE)
    ds = data.load("ag_news", data_dir=SHARED, cache_dir=tmp_path)
    assert ds.x.shape == (7600, text.TFIDF_MAX_FEATURES) and ds.x.dtype == np.float32
    assert np.bincount(ds.y).tolist() == [1900, 1900, 1900, 1900]
    norms = np.linalg.norm(ds.x, axis=1)
    assert ds.x.min() >= 0 and np.all((np.abs(norms - 1) < 1e-5) | (norms == 0))
    assert (norms > 0).mean() > 0.99  # nearly every item has a word of the 2,000 kept
    monkeypatch.setattr(text, "_tfidf_arrays", refuse)
    np.testing.assert_array_equal(data.load("ag_news", data_dir=SHARED, cache_dir=tmp_path).x, ds.x)


@pytest.mark.slow
@pytest.mark.shared_data
def test_cifar10_real_decodes_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one full decode of 60,000 JPEGs in the suite (about 20-45 s); the second load reads the cache."""
    shared_file(cifar.CIFAR10_FILE)
    ds = data.load("cifar10", data_dir=SHARED, cache_dir=tmp_path)
    assert ds.x.shape == (60000, 3, 32, 32) and ds.x.dtype == np.float32 and ds.n_classes == 10
    assert np.bincount(ds.y).tolist() == [6000] * 10
    assert ds.y[:5000].tolist() == [0] * 5000 and ds.y[50000] == 0  # train/airplane first, then test/airplane
    np.testing.assert_allclose(ds.x.mean(axis=(0, 2, 3), dtype=np.float64), 0, atol=1e-5)
    np.testing.assert_allclose(ds.x.std(axis=(0, 2, 3), dtype=np.float64), 1, atol=1e-5)
    first_pixels = ds.x[:2].copy()
    del ds
    [cached] = cache_files(tmp_path, "cifar10-jpeg")
    with np.load(cached) as z:
        assert z["x"].shape == (60000, 32, 32, 3) and z["x"].dtype == np.uint8
    monkeypatch.setattr(cifar, "_decode_jpeg_tar", refuse)
    np.testing.assert_array_equal(data.load("cifar10", data_dir=SHARED, cache_dir=tmp_path).x[:2], first_pixels)


# --- errors ---------------------------------------------------------------------------------------------


def test_checksum_mismatch_names_the_file(tmp_path: Path) -> None:
    fake = tmp_path / "data" / location.LOCATION_FILE
    fake.parent.mkdir(parents=True)
    fake.write_bytes(b"not the location archive")
    with pytest.raises(DataError, match=r"checksum mismatch for .*dataset_location\.tgz"):
        data.load("location", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")


def test_missing_file_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        data.load("ag_news", data_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert str(tmp_path / "ag_news" / "test.csv") in str(err.value)


def test_no_data_dir_says_to_set_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MIAUDIT_DATA_DIR", raising=False)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")  # no ../shared/data next to it
    with pytest.raises(DataError, match="set MIAUDIT_DATA_DIR"):
        data.load("cifar10", cache_dir=tmp_path / "cache")


# --- synthetic files in the real formats -------------------------------------------------------------------


def bits(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    return rng.integers(0, 2, size=(n, d), dtype=np.uint8)


def csv_rows(labels: list[str], features: np.ndarray) -> bytes:
    return "".join(f"{lab}," + ",".join(map(str, row)) + "\n" for lab, row in zip(labels, features)).encode()


def test_location_fake_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    features = bits(np.random.default_rng(0), 3, 446)
    archive = tmp_path / "data" / location.LOCATION_FILE
    archive.parent.mkdir(parents=True)
    with tarfile.open(archive, "w:gz") as tar:
        add_member(tar, "bangkok", csv_rows(['"1"', '"30"', '"2"'], features))
    monkeypatch.setattr(location, "LOCATION_SHA256", None)  # its real checksum would refuse this file
    ds = data.load("location", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(ds.x, features.astype(np.float32))
    assert ds.y.tolist() == [0, 29, 1] and ds.n_classes == 30
    monkeypatch.setattr(location, "_parse", refuse)
    np.testing.assert_array_equal(
        data.load("location", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache").x, ds.x
    )


def write_jpeg(tar: tarfile.TarFile, name: str, rgb: tuple[int, int, int], side: int = 32) -> None:
    out = io.BytesIO()
    Image.new("RGB", (side, side), rgb).save(out, format="JPEG", quality=95)
    add_member(tar, name, out.getvalue())


# added out of order on purpose: the loader sorts (train first, then paths); classes sorted by name
FAKE_CIFAR = {
    "test/cat/0000.jpg": (250, 10, 10),
    "train/cat/0001.jpg": (200, 50, 100),
    "train/airplane/0001.jpg": (10, 200, 30),
    "train/cat/0000.jpg": (180, 60, 90),
    "test/airplane/0000.jpg": (20, 20, 240),
    "train/airplane/0000.jpg": (60, 120, 200),
}


def make_fake_cifar(root: Path, extra: dict[str, int | bytes] | None = None) -> Path:
    """The six FAKE_CIFAR images, plus ``extra``: name -> side of a black square, or raw bytes."""
    archive = root / cifar.CIFAR10_FILE
    archive.parent.mkdir(parents=True)
    with tarfile.open(archive, "w:gz") as tar:
        add_member(tar, "README.md", b"not an image")
        for name, rgb in FAKE_CIFAR.items():
            write_jpeg(tar, name, rgb)
        for name, bad in (extra or {}).items():
            if isinstance(bad, bytes):
                add_member(tar, name, bad)
            else:
                write_jpeg(tar, name, (0, 0, 0), bad)
    return archive


def test_cifar10_fake_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_fake_cifar(tmp_path / "data")
    monkeypatch.setattr(cifar, "CIFAR10_SHA256", None)
    ds = data.load("cifar10", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    order = sorted(FAKE_CIFAR, key=lambda name: (name.startswith("test"), name))
    assert ds.y.tolist() == [0, 0, 1, 1, 0, 1] and ds.x.shape == (6, 3, 32, 32)
    [cached] = cache_files(tmp_path / "cache", "cifar10-jpeg")
    with np.load(cached) as z:
        colours = z["x"].reshape(6, -1, 3).astype(int)
    assert np.abs(colours - np.array([FAKE_CIFAR[n] for n in order])[:, None, :]).max() <= 3  # JPEG rounding
    np.testing.assert_allclose(ds.x.mean(axis=(0, 2, 3)), 0, atol=1e-5)
    np.testing.assert_allclose(ds.x.std(axis=(0, 2, 3)), 1, atol=1e-5)
    monkeypatch.setattr(cifar, "_decode_jpeg_tar", refuse)
    np.testing.assert_array_equal(
        data.load("cifar10", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache").x, ds.x
    )


@pytest.mark.parametrize(
    "bad, message", [(16, r"train/cat/0002\.jpg is 16x16"), (b"not a jpeg", r"cannot decode .*train/cat/0002\.jpg")]
)
def test_cifar10_bad_image_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: int | bytes, message: str
) -> None:
    make_fake_cifar(tmp_path / "data", extra={"train/cat/0002.jpg": bad})
    monkeypatch.setattr(cifar, "CIFAR10_SHA256", None)
    with pytest.raises(DataError, match=message):
        data.load("cifar10", data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")


def write_cifar100(root: Path, fine: list[int], pixels: np.ndarray, first_train: int) -> None:
    records = np.concatenate(
        [np.full((len(fine), 1), 7, np.uint8), np.array(fine, np.uint8)[:, None], pixels.reshape(len(fine), -1)], axis=1
    )
    folder = root / "cifar-100-binary"
    folder.mkdir(parents=True)
    records[:first_train].tofile(folder / "train.bin")
    records[first_train:].tofile(folder / "test.bin")


def test_cifar100_binary_format(tmp_path: Path) -> None:
    pixels = np.random.default_rng(1).integers(0, 256, size=(5, 3, 32, 32), dtype=np.uint8)
    write_cifar100(tmp_path, [5, 99, 0, 42, 7], pixels, first_train=3)
    ds = data.load("cifar100", data_dir=tmp_path, cache_dir=tmp_path / "cache")
    assert ds.y.tolist() == [5, 99, 0, 42, 7] and ds.n_classes == 100  # fine labels; the coarse byte (7) unused
    scaled = pixels / 255.0
    expected = (scaled - scaled.mean(axis=(0, 2, 3), keepdims=True)) / scaled.std(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(ds.x, expected, atol=1e-5)


def test_cifar100_truncated_file(tmp_path: Path) -> None:
    write_cifar100(tmp_path, [1, 2], np.zeros((2, 3, 32, 32), np.uint8), first_train=1)
    with open(tmp_path / "cifar-100-binary" / "test.bin", "ab") as f:
        f.write(b"\0")
    with pytest.raises(DataError, match=r"test\.bin is 3075 bytes"):
        data.load("cifar100", data_dir=tmp_path, cache_dir=tmp_path / "cache")


def write_purchase(root: Path, content: bytes) -> None:
    path = root / tabular.PURCHASE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


def test_purchase100_format_and_fresh_cache_key(tmp_path: Path) -> None:
    features = bits(np.random.default_rng(2), 4, 600)
    write_purchase(tmp_path, csv_rows(["1", "100", "37", "1"], features))
    ds = data.load("purchase100", data_dir=tmp_path, cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(ds.x, features.astype(np.float32))
    assert ds.y.tolist() == [0, 99, 36, 0] and ds.n_classes == 100
    write_purchase(tmp_path, csv_rows(["2"], features[:1]))  # no pinned checksum: the key follows the content
    assert data.load("purchase100", data_dir=tmp_path, cache_dir=tmp_path / "cache").y.tolist() == [1]
    assert len(cache_files(tmp_path / "cache", "purchase100")) == 2


@pytest.mark.parametrize(
    "labels, width, value, message",
    [
        (["1"], 599, 1, "has 600 columns, expected 601"),
        (["1"], 600, 2, "feature values up to 2, expected 0/1"),
        (["101"], 600, 1, r"labels 101..101, expected 1..100"),
    ],
)
def test_purchase100_bad_rows(tmp_path: Path, labels: list[str], width: int, value: int, message: str) -> None:
    write_purchase(tmp_path, csv_rows(labels, np.full((1, width), value)))
    with pytest.raises(DataError, match=message):
        data.load("purchase100", data_dir=tmp_path, cache_dir=tmp_path / "cache")


def write_texas(root: Path, features: np.ndarray, labels: list[int]) -> None:
    folder = root / "texas" / "100"
    folder.mkdir(parents=True)
    (folder / "feats").write_bytes(b"".join(b",".join(b"%d" % v for v in row) + b"\n" for row in features))
    (folder / "labels").write_text("".join(f"{lab}\n" for lab in labels))


@pytest.mark.slow
def test_texas100_format(tmp_path: Path) -> None:
    features = bits(np.random.default_rng(3), 3, 6169)
    write_texas(tmp_path, features, [100, 1, 50])
    ds = data.load("texas100", data_dir=tmp_path, cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(ds.x, features.astype(np.float32))
    assert ds.y.tolist() == [99, 0, 49] and ds.n_classes == 100


@pytest.mark.slow
def test_texas100_row_count_mismatch(tmp_path: Path) -> None:
    write_texas(tmp_path, bits(np.random.default_rng(4), 2, 6169), [1, 2, 3])
    with pytest.raises(DataError, match="has 2 rows but .*labels has 3 labels"):
        data.load("texas100", data_dir=tmp_path, cache_dir=tmp_path / "cache")
