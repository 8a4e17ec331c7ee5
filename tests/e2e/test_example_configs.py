"""The example configs stay valid as the config model evolves."""

from __future__ import annotations

from pathlib import Path

import pytest

from miaudit import attack_plan
from miaudit.config import run as config

CONFIGS = sorted((Path(__file__).parents[2] / "examples" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_example_config_validates(path: Path) -> None:
    cfg = config.load(path)
    assert path.stem.split("-")[0] == cfg.dataset.label  # ag_news-lm: a second config on ag_news
    assert attack_plan.build(cfg).references == cfg.references  # every reference model trained is used


def test_there_are_example_configs() -> None:
    assert {p.stem for p in CONFIGS} >= {"location", "cifar10", "ag_news"}
