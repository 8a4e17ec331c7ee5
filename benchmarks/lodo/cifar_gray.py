"""The CIFAR-10 grayscale subset (issue 38): a 6,000-record image set the attack table was not developed on.

Writes ``cifar10-gray-6000.npz`` (x float32 (6000, 1, 32, 32), y int64) into the directory given: a seeded
6,000-record subset of miaudit's CIFAR-10 (the JPEG copy in the shared data; the same seeded subset rule as
``dataset.subset``, seed 0), each image the mean of its three standardised channels, restandardised.
Usage: ``python benchmarks/lodo/cifar_gray.py OUT_DIR``; then ``dataset: {path: OUT_DIR/cifar10-gray-6000.npz}``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from miaudit.data import load

RECORDS = 6000


def write(out_dir: Path) -> Path:
    ds = load("cifar10", subset=RECORDS, seed=0)
    gray = np.asarray(ds.x, dtype=np.float64).mean(axis=1, keepdims=True)
    gray = (gray - gray.mean()) / gray.std()
    path = out_dir / f"cifar10-gray-{RECORDS}.npz"
    np.savez(path, x=gray.astype(np.float32), y=np.asarray(ds.y, dtype=np.int64))
    return path


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
