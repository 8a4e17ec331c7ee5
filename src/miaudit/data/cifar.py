"""CIFAR-10 (as JPEG files) and CIFAR-100 (the standard binary version).

Images come back float32 (n, 3, 32, 32), standardised per channel with the mean and
std of all images of the set, train and test pooled: the membership split is our
own, so the original train/test boundary carries no meaning here.
"""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

from ..errors import DataError
from .base import Dataset, LoadContext, cached_arrays, file_key, loader, require_file, validate_arrays

CIFAR10_FILE = "cifar10/cifar10-jpeg.tar.gz"
CIFAR10_SHA256 = "d34c68f61cca57aa9144c8f25bda427abb9921bd642d5857a2fc1a6b4416f965"
CIFAR100_FILES = ("cifar-100-binary/train.bin", "cifar-100-binary/test.bin")
IMAGE_SIDE = 32
_JPEG_MEMBER = re.compile(r"(?:.*/)?(train|test)/([^/]+)/[^/]+\.jpg")
_SPLIT_ORDER = {"train": 0, "test": 1}
_CIFAR100_RECORD = 2 + 3 * IMAGE_SIDE * IMAGE_SIDE  # coarse label, fine label, R, G, B planes


def _jpeg_members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive, "r:*") as tar:
        members = [m for m in tar if m.isfile() and _JPEG_MEMBER.fullmatch(m.name)]
        return {m.name: _read_member(tar, m) for m in members}


def _read_member(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    if handle is None:  # not reached for a regular file (tarfile returns None only for links and folders)
        raise DataError(f"dataset cifar10: cannot read {member.name} from the archive")
    return handle.read()


def _decode_rgb(data: bytes, where: str) -> np.ndarray:
    try:
        with Image.open(io.BytesIO(data)) as img:
            if img.size != (IMAGE_SIDE, IMAGE_SIDE):
                raise DataError(f"dataset cifar10: {where} is {img.size[0]}x{img.size[1]}, expected 32x32")
            return np.asarray(img.convert("RGB"), dtype=np.uint8)
    except OSError as e:  # PIL's UnidentifiedImageError and truncated-file errors
        raise DataError(f"dataset cifar10: cannot decode {where} as a JPEG image ({e})") from None


def _split_and_class(name: str) -> tuple[str, str]:
    """``(split, class)`` of a member ``_jpeg_members`` kept (so its name matches)."""
    found = _JPEG_MEMBER.fullmatch(name)
    assert found is not None
    return found[1], found[2]


def _decode_jpeg_tar(archive: Path) -> dict[str, np.ndarray]:
    """``train/<class>/*.jpg`` then ``test/<class>/*.jpg``, each in sorted path order -> uint8 (n, 32, 32, 3).

    Class index = position of the folder name among the sorted class names.
    """
    files = _jpeg_members(archive)
    if not files:
        raise DataError(f"dataset cifar10: {archive} holds no train/<class>/*.jpg or test/<class>/*.jpg files")
    parts = {name: _split_and_class(name) for name in files}
    classes = sorted({cls for _, cls in parts.values()})
    order = sorted(files, key=lambda name: (_SPLIT_ORDER[parts[name][0]], name))
    x = np.stack([_decode_rgb(files[name], f"{archive}:{name}") for name in order])
    y = np.array([classes.index(parts[name][1]) for name in order], dtype=np.int64)
    return {"x": x, "y": y}


def standardised_images(images: np.ndarray) -> np.ndarray:
    """uint8 (n, 3, H, W) -> float32 (x / 255 - mean_c) / std_c with the pooled per-channel statistics.

    The statistics accumulate in float64 (var = E[x^2] - mean^2 is safe for x in [0, 1]).
    """
    x = images.astype(np.float32)
    x /= 255.0
    flat = x.reshape(x.shape[0], x.shape[1], -1)  # a view: (n, channels, pixels)
    count = flat.shape[0] * flat.shape[2]
    mean = flat.mean(axis=(0, 2), dtype=np.float64)
    var = np.einsum("ncp,ncp->c", flat, flat, dtype=np.float64) / count - mean**2
    std = np.sqrt(np.where(var > 0, var, 1.0))
    x -= mean.astype(np.float32)[None, :, None, None]
    x /= std.astype(np.float32)[None, :, None, None]
    return x


@loader("cifar10")
def cifar10(ctx: LoadContext) -> Dataset:
    """60,000 images (50,000 train then 10,000 test), 10 classes, from the JPEG copy of CIFAR-10.

    The JPEGs are lossy (quality about 75): close to, not bit-exact with, the original
    CIFAR-10; say so wherever a number from this set is reported. Decoded once (about
    20 s) into the cache as uint8 (n, 32, 32, 3); standardised on every load.
    """
    path = require_file(ctx, CIFAR10_FILE, CIFAR10_SHA256, "cifar10")
    arrays = cached_arrays(ctx, f"cifar10-jpeg-{file_key(path, CIFAR10_SHA256)}", lambda: _decode_jpeg_tar(path))
    images = np.ascontiguousarray(arrays["x"].transpose(0, 3, 1, 2))
    return validate_arrays("cifar10", standardised_images(images), arrays["y"], 10)


def _read_cifar100_bin(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Records of 1 coarse-label byte, 1 fine-label byte, 3072 pixel bytes (R, G, B planes, row-major)."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % _CIFAR100_RECORD:
        raise DataError(
            f"dataset cifar100: {path} is {raw.size} bytes, not a whole number of {_CIFAR100_RECORD}-byte records"
        )
    records = raw.reshape(-1, _CIFAR100_RECORD)
    return records[:, 2:].reshape(-1, 3, IMAGE_SIDE, IMAGE_SIDE), records[:, 1].astype(np.int64)


@loader("cifar100")
def cifar100(ctx: LoadContext) -> Dataset:
    """60,000 images (train.bin then test.bin), the 100 fine classes, from the *binary* version of CIFAR-100.

    The binary files (``cifar-100-binary.tar.gz`` unpacked into the data directory)
    are read, never the python version: those are pickles, and unpickling a
    downloaded file can run arbitrary code. No checksum is pinned (the files are not
    available offline here, so their hashes are unknown). Reading needs no decoding,
    so nothing is cached.
    """
    parts = [_read_cifar100_bin(require_file(ctx, rel, None, "cifar100")) for rel in CIFAR100_FILES]
    images = np.concatenate([images for images, _ in parts])
    labels = np.concatenate([labels for _, labels in parts])
    return validate_arrays("cifar100", standardised_images(images), labels, 100)
