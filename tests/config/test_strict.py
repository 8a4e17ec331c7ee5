"""``Strict``, the config models' base: ``revised`` changes a config only through validation, and otherwise gives
exactly what an unvalidated copy would (the same dump, so the same cache keys and results.json)."""

from __future__ import annotations

import pytest

from miaudit.config import from_dict
from miaudit.config.scores import ScoreConfig
from miaudit.errors import ConfigError
from miaudit.strict import Strict


def test_revised_equals_the_copy_where_the_change_is_valid() -> None:
    cfg = from_dict({"dataset": "digits", "references": 4, "train": {"epochs": 7, "lr": 0.05}})
    for revised, copied in [
        (cfg.revised(calibration=None), cfg.model_copy(update={"calibration": None})),
        (
            cfg.revised(train=cfg.train.revised(epochs=1)),
            cfg.model_copy(update={"train": cfg.train.model_copy(update={"epochs": 1})}),
        ),
    ]:
        assert revised == copied and revised.model_dump() == copied.model_dump()
        assert type(revised) is type(cfg) and type(revised.train) is type(cfg.train)
    assert cfg.revised(calibration=None).model_fields_set == cfg.model_fields_set | {"calibration"}
    assert cfg.train.epochs == 7  # the original untouched (frozen)


def test_revised_runs_every_check() -> None:
    cfg = from_dict({"dataset": "digits", "references": 4, "mode": "online"})
    with pytest.raises(ValueError, match="online mode needs an even number"):  # a cross-field rule
        cfg.revised(references=3)
    with pytest.raises(ValueError, match="expected a number, got true"):  # Strict's own field check
        cfg.train.revised(epochs=True)
    with pytest.raises(ValueError, match="extra"):  # an unknown key, as in a file
        cfg.revised(epochz=1)


def test_one_base_for_the_config_models() -> None:
    assert issubclass(type(from_dict({})), Strict) and issubclass(ScoreConfig, Strict)
    with pytest.raises(ConfigError, match="train.epochs"):
        from_dict({"train": {"epochs": True}})
