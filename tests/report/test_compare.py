"""compare's one line per attack: each of TPR@1% and AUC read with its own interval, the measure that shows a
change named."""

from __future__ import annotations

from pathlib import Path

import pytest

from miaudit.report.compare import _sentence
from miaudit.results import ComparedData, Comparison
from miaudit.stats.difference import Difference

SAME_TPR = Difference(a=0.05, b=0.05, difference=0.0, ci=(-0.02, 0.02))
SAME_AUC = Difference(a=0.60, b=0.61, difference=0.01, ci=(-0.03, 0.05))
LOWER_TPR = Difference(a=0.08, b=0.03, difference=-0.05, ci=(-0.08, -0.01))
HIGHER_AUC = Difference(a=0.60, b=0.65, difference=0.05, ci=(0.007, 0.092))
LOWER_AUC = Difference(a=0.65, b=0.60, difference=-0.05, ci=(-0.092, -0.007))


def test_no_change_in_either_measure() -> None:
    line = _sentence("lira", SAME_TPR, SAME_AUC)
    assert line.startswith("lira: no detectable difference in TPR@1% or AUC: TPR@1% A 5.0 -> B 5.0, B - A +0.0")
    assert "AUC A 0.600 -> B 0.610, B - A +0.010 [-0.030, +0.050]" in line


def test_a_change_in_auc_alone_is_named_with_its_measure() -> None:
    line = _sentence("lira", SAME_TPR, HIGHER_AUC)
    assert line.startswith("lira: B leaks more than A by AUC (no detectable difference in TPR@1%):"), line


def test_both_measures_agree() -> None:
    line = _sentence("rmia", LOWER_TPR, LOWER_AUC)
    assert line.startswith("rmia: B leaks less than A by TPR@1% and AUC:"), line


def test_measures_that_disagree_are_called_mixed() -> None:
    line = _sentence("rmia", LOWER_TPR, HIGHER_AUC)
    assert line.startswith("rmia: mixed: B leaks less than A by TPR@1%, more by AUC:"), line


def test_an_interrupted_compare_leaves_the_previous_files_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from miaudit.report import compare_files

    (tmp_path / "compare.json").write_text("previous")

    def interrupt(*args: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(compare_files, "markdown", lambda c: "md")
    monkeypatch.setattr(compare_files, "lines", lambda c: [])
    monkeypatch.setattr(compare_files, "_roc_figure", interrupt)
    c = Comparison(a="A", b="B", warnings=[], paired=True, pairing="paired",
                   data=ComparedData(a="digits", b="digits", same=True), confidence=0.95, resamples=100, attacks=[],
                   only_in_a=[], only_in_b=[])  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        compare_files.write(None, None, c, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["compare.json"]  # no staging folder, no new file
    assert (tmp_path / "compare.json").read_text() == "previous"
