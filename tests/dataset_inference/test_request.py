"""The infer-dataset config: record sets from lists and files, every bad input refused in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from miaudit.config.files import load_config
from miaudit.config.run import RunConfig
from miaudit.dataset_inference import request
from miaudit.errors import ConfigError


def test_record_sets_from_a_list_a_npy_and_a_text_file(tmp_path: Path) -> None:
    np.save(tmp_path / "s.npy", np.array([3, 1, 2]))
    (tmp_path / "v.txt").write_text("4, 5\n6 7\n")
    assert request.record_set([3, 1], "suspect", None).tolist() == [3, 1]
    assert request.record_set("s.npy", "suspect", tmp_path).tolist() == [3, 1, 2]
    assert request.record_set(str(tmp_path / "v.txt"), "validation", None).tolist() == [4, 5, 6, 7]


@pytest.mark.parametrize(
    ("spec", "message"),
    [("missing.npy", "not found"), ([1.5, 2], "expected a list"), ({"a": 1}, "expected a list")],
)
def test_bad_record_sets_are_refused(tmp_path: Path, spec: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        request.record_set(spec, "suspect", tmp_path)


def test_a_file_of_fractions_or_objects_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("1 2.5")
    with pytest.raises(ConfigError, match="whole numbers"):
        request.record_set("f.txt", "suspect", tmp_path)
    np.save(tmp_path / "o.npy", np.array(["a", "b"]))
    with pytest.raises(ConfigError, match="integers"):
        request.record_set("o.npy", "suspect", tmp_path)


def _req(suspect: list[int], validation: list[int]) -> request.Request:
    return request.from_mapping({"dataset": "digits", "suspect": suspect, "validation": validation})


def test_checked_against_the_data() -> None:
    ok = _req([0, 1, 2, 3], [4, 5, 6, 7])
    assert request.checked(ok, 10, "d") is ok
    for bad, message in [
        (_req([0, 1, 2, 10], [4, 5, 6, 7]), r"suspect: record 10 is outside the data \(d has 10 records"),
        (_req([0, 1, 2, 3], [-1, 5, 6, 7]), "validation: record -1 is outside"),
        (_req([0, 1, 1, 3], [4, 5, 6, 7]), "suspect: record 1 is listed more than once"),
        (_req([0, 1, 2], [4, 5, 6, 7]), "at least 4"),
        (_req([0, 1, 2, 4], [4, 5, 6, 7]), "validation: record 4 is also a suspect"),
    ]:
        with pytest.raises(ConfigError, match=message):
            request.checked(bad, 10, "d")


def test_a_record_listed_twice_is_named_itself() -> None:
    """Issue 54 item 3: the message named ``idx[record]`` (an IndexError past the array's end, else another record):
    [3, 3, 5, ...] named record 7; [50, 50, 1, 2] crashed. Both now name the repeated record, in one line."""
    for suspect, named in (([3, 3, 5, 7, 11, 13, 17], 3), ([50, 50, 1, 2], 50), ([9, 4, 9, 9, 2], 9)):
        with pytest.raises(ConfigError, match=rf"^suspect: record {named} is listed more than once$"):
            request.checked(_req(suspect, [20, 21, 22, 23]), 100, "d")


def test_keys_and_options() -> None:
    with pytest.raises(ConfigError, match="suspect: required"):
        request.from_mapping({"dataset": "digits", "validation": [1]})
    with pytest.raises(ConfigError, match="inference.level"):
        request.from_mapping({"dataset": "digits", "suspect": [1], "validation": [2], "inference": {"level": 2}})
    r = request.from_mapping({"dataset": "digits", "suspect": [1], "validation": [2], "inference": {"level": 0.01}})
    assert r.options.level == 0.01 and r.options.permutations == 999 and r.cfg.dataset.name == "digits"


def test_load_reads_files_next_to_the_config(tmp_path: Path) -> None:
    np.save(tmp_path / "s.npy", np.arange(4))
    (tmp_path / "c.yaml").write_text("dataset: digits\nsuspect: s.npy\nvalidation: [10, 11, 12, 13]\n")
    r = load_config(tmp_path / "c.yaml", ["seed=5"], RunConfig, request.from_mapping)
    assert r.suspect.tolist() == [0, 1, 2, 3] and r.cfg.seed == 5
