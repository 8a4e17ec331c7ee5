"""What report.html shows of a flagged record: a thumbnail for images, the truncated text for texts, nothing else."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from miaudit.report import at_risk


def test_images_get_a_thumbnail_texts_their_start_and_tables_nothing() -> None:
    rng = np.random.default_rng(0)
    for x in (rng.random((3, 3, 8, 8)), rng.random((3, 8, 8, 3)), rng.random((3, 8, 8))):  # CHW, HWC, grey
        kind, shown = at_risk.preview(SimpleNamespace(x=x.astype(np.float32)), 1)  # type: ignore[misc]
        assert kind == "image" and shown.startswith("data:image/png;base64,")
    long = "word " * 100
    kind, shown = at_risk.preview(SimpleNamespace(texts=("short", long), x=np.zeros((2, 2, 5))), 1)  # type: ignore[misc]
    assert kind == "text" and len(shown) == at_risk.TEXT_CHARACTERS and shown.endswith("…")
    assert at_risk.preview(SimpleNamespace(x=np.zeros((3, 64))), 0) is None  # tabular
