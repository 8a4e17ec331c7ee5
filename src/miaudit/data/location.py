"""Location (Foursquare check-ins in Bangkok), the membership-inference benchmark of
Shokri et al. 2017, as ``dataset_location.tgz`` from ``privacytrustlab/datasets``."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np

from ..errors import DataError
from .base import Dataset, LoadContext, cached_arrays, file_key, loader, require_file, validate_arrays
from .tabular import read_label_first_csv

LOCATION_FILE = "location/dataset_location.tgz"
LOCATION_SHA256 = "927203f85a868f8ee17a0ded1dc61699efe602167beabe34fbf45b4b1de94b33"
LOCATION_MEMBER = "bangkok"
LOCATION_FEATURES = 446
LOCATION_CLASSES = 30


def _parse(archive: Path) -> dict[str, np.ndarray]:
    """The one CSV inside the archive: a quoted label "1".."30", then 446 binary features."""
    with tarfile.open(archive, "r:*") as tar:
        try:
            member = tar.extractfile(LOCATION_MEMBER)
        except KeyError:
            member = None
        if member is None:
            raise DataError(f"dataset location: {archive} has no file {LOCATION_MEMBER!r} inside")
        return read_label_first_csv(
            member, "location", f"{archive}:{LOCATION_MEMBER}", LOCATION_FEATURES, LOCATION_CLASSES
        )


@loader("location")
def location(ctx: LoadContext) -> Dataset:
    """5,010 check-in records, x float32 (n, 446) in {0, 1}, y int64 in 0..29 (the file's label minus 1)."""
    path = require_file(ctx, LOCATION_FILE, LOCATION_SHA256, "location")
    arrays = cached_arrays(ctx, f"location-{file_key(path, LOCATION_SHA256)}", lambda: _parse(path))
    return validate_arrays("location", arrays["x"], arrays["y"], LOCATION_CLASSES)
