"""``dp_training:``: a user's DP training function is imported when the config is read; what it cannot go with."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from conftest import TINY_RUN

from miaudit.config import run as config
from miaudit.config.dp_training import DPTrainingConfig
from miaudit.errors import ConfigError

FN = "miaudit_bench.dp_gallery:correct"


def raw(**overrides: Any) -> dict[str, Any]:
    out = copy.deepcopy(TINY_RUN)
    out.update(canaries={"count": 20, "kind": "crafted"}, dp_training={"function": FN, "epsilon": 1.0, "delta": 1e-5})
    return {**out, **overrides}


def test_the_claim_and_its_defaults() -> None:
    spec = config.from_dict(raw()).dp_training
    assert spec is not None and (spec.function, spec.epsilon, spec.delta) == (FN, 1.0, 1e-5)
    assert spec.references == "function" and spec.accountant is None
    facts = {"noise_multiplier": 1.1, "sample_rate": 0.01, "steps": 100}
    spec = config.from_dict(
        raw(dp_training={"function": FN, "epsilon": 8, "delta": 0, "accountant": facts})
    ).dp_training
    assert spec is not None and spec.accountant is not None and spec.accountant.steps == 100
    # white-box canaries beside the input-space ones: joined by the function's optimizer (miaudit.dp_observe)
    cfg = config.from_dict(raw(canaries={"count": 20, "kind": "crafted", "gradient": 10}))
    assert cfg.canaries is not None and cfg.canaries.gradient == 10


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"dp_training": {"function": "miaudit_bench.dp_gallery:nope", "epsilon": 1, "delta": 0}}, "dp_gallery:nope"),
        ({"dp_training": {"function": "no_such_module_48:train", "epsilon": 1, "delta": 0}}, "no_such_module_48"),
        ({"dp_training": {"function": FN, "epsilon": 0, "delta": 0}}, "dp_training.epsilon"),
        ({"dp_training": {"function": FN, "epsilon": 1, "delta": 1}}, "dp_training.delta"),
        ({"dp_training": {"function": FN, "epsilon": 1}}, "dp_training.delta"),
        ({"train": {"dp": {"epsilon": 1.0, "delta": 1e-5}}}, "train.dp"),
        ({"canaries": {"count": 20, "kind": "gradient"}}, "canaries.kind"),
        (
            {"dp_training": {"function": FN, "epsilon": 1, "delta": 0, "accountant": {"noise_multiplier": 1}}},
            "dp_training.accountant",
        ),
    ],
)
def test_refused_in_one_line_naming_the_key(change: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError) as e:
        config.from_dict(raw(**change))
    assert named in str(e.value) and "\n" not in str(e.value)


def test_the_python_api_holds_the_function_so_its_name_is_not_imported() -> None:
    given = {"function": "__main__:my_train", "epsilon": 1.0, "delta": 1e-5}
    with pytest.raises(ValueError, match="my_train"):
        DPTrainingConfig.model_validate(given)
    assert DPTrainingConfig.model_validate(given, context={"function_given": True}).function == "__main__:my_train"
    cfg = config.from_dict(raw(dp_training=given), context={"function_given": True})
    assert cfg.dp_training is not None and cfg.dp_training.function == "__main__:my_train"
