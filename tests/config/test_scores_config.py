"""RunConfig and ScoreConfig share their common settings (config/settings.py): the same bounds and shorthands in
both, and where they differ on purpose, a one-line answer."""

from __future__ import annotations

import pytest

from miaudit.config import run, scores
from miaudit.errors import ConfigError

SHARED = ("seed", "mode", "fdr", "min_fpr")


def test_the_shared_settings_are_one_definition_in_both_configs() -> None:
    for key in SHARED:
        a, b = run.RunConfig.model_fields[key], scores.ScoreConfig.model_fields[key]
        assert (a.annotation, a.metadata, a.description, a.default) == (
            b.annotation,
            b.metadata,
            b.description,
            b.default,
        )


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("seed", -1, "seed"),
        ("mode", "both", "mode"),
        ("fdr", 1.5, "fdr"),
        ("min_fpr", 0, "min_fpr"),
        ("seed", True, "number"),
    ],
)
def test_a_bad_shared_setting_is_refused_alike(key: str, value: object, says: str) -> None:
    errors = []
    for load, extra in ((run.from_dict, {}), (scores.from_dict, {"outputs": "x.npz"})):
        with pytest.raises(ConfigError) as e:
            load({**extra, key: value})
        errors.append(str(e.value))
    assert errors[0] == errors[1] and says in errors[0] and "\n" not in errors[0]


def test_calibration_none_and_attack_rows_read_alike() -> None:
    r = run.from_dict({"calibration": "none", "attacks": ["lira"]})
    s = scores.from_dict({"outputs": "x.npz", "calibration": "none", "attacks": ["lira"]})
    assert r.calibration is None and s.calibration is None and r.attacks == s.attacks == [{"name": "lira"}]


def test_score_refuses_auto_in_one_line_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^attacks: auto is for audits miaudit trains") as e:
        scores.from_dict({"outputs": "x.npz", "attacks": "auto"})
    assert "\n" not in str(e.value)
