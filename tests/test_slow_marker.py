"""The rule of the ``slow`` marker (tests/conftest.py): a test not marked slow that trains a model (steps an
optimizer) fails, so ``make test-fast`` (``-m "not slow"``) trains nothing; marked slow, the same test passes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TRAINS = """
import pytest
import torch

{mark}
def test_trains():
    w = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([w], lr=0.1)
    w.sum().backward()
    opt.step()


def test_trains_nothing():
    assert torch.ones(2).sum() == 2
"""


@pytest.mark.slow  # a fresh interpreter that imports torch
@pytest.mark.parametrize(("mark", "outcomes"), [("", {"passed": 2, "errors": 1}), ("@pytest.mark.slow", {"passed": 2})])
def test_a_test_that_trains_fails_unless_marked_slow(pytester: pytest.Pytester, mark: str, outcomes: dict) -> None:
    pytester.makeconftest((Path(__file__).parent / "conftest.py").read_text())
    pytester.makepyfile(TRAINS.format(mark=mark))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestUnknownMarkWarning")
    result.assert_outcomes(**outcomes)
    if "errors" in outcomes:
        result.stdout.fnmatch_lines(["*test_trains trains a model (an optimizer stepped) but is not marked slow*"])
