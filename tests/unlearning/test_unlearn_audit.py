"""An unlearning audit end to end on digits (small models), its config checks and its forget set; the outputs and
the results.json section (``output.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _results import version_1_results

from miaudit.errors import ConfigError, DataError
from miaudit.results import AuditReport
from miaudit.unlearning import audit, config, output


def cfg(tmp_path: Path, **unlearning: object) -> dict:
    return {
        "dataset": "digits",
        "seed": 1,
        "references": 3,
        "train": {"epochs": 8},
        "cache_dir": str(tmp_path / "cache"),
        "unlearning": {"forget": 40, **unlearning},
    }


def test_forget_set_drawn_from_members_and_files_checked(tmp_path: Path) -> None:
    members = np.arange(10, 30)
    drawn = audit.forget_set(5, members, 100, seed=0)
    assert len(drawn) == 5 and set(drawn) <= set(members)
    assert np.array_equal(drawn, audit.forget_set(5, members, 100, seed=0))  # seeded
    with pytest.raises(ConfigError, match="unlearning.forget: 19 records asked"):
        audit.forget_set(19, members, 100, seed=0)
    np.save(tmp_path / "f.npy", np.array([10, 11, 5]))
    with pytest.raises(DataError, match=r"unlearning.forget: record 5 is not among"):
        audit.forget_set(tmp_path / "f.npy", members, 100, seed=0)
    np.save(tmp_path / "g.npy", np.array([10, 10**9]))
    with pytest.raises(DataError, match="unlearning.forget: index 1000000000 is outside"):
        audit.forget_set(tmp_path / "g.npy", members, 100, seed=0)
    np.save(tmp_path / "h.npy", np.array([12, 10]))
    assert audit.forget_set(tmp_path / "h.npy", members, 100, seed=0).tolist() == [10, 12]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"unlearning": None}, "unlearning: required"),
        ({"unlearning": {"forget": 0, "method": "noop"}}, "unlearning.forget"),
        ({"unlearning": {"forget": 5, "method": "forget-it"}}, "unlearning.method.name"),
        ({"unlearning": {"forget": 5, "method": {"name": "retrain", "epochs": 2}}}, "takes no epochs"),
        ({"unlearning": {"forget": 5, "method": "noop", "forgett": 1}}, "unlearning.forgett"),
        ({"references": 1}, "references: an unlearning audit retrains at least 2"),
        ({"target": {"architecture": "mlp", "checkpoint": "m.safetensors"}}, "members: the records"),
    ],
)
def test_config_refused_in_one_line(tmp_path: Path, change: dict, message: str) -> None:
    raw = {**cfg(tmp_path, method="noop"), **change}
    if raw["unlearning"] is None:
        del raw["unlearning"]
    with pytest.raises(ConfigError, match=message) as e:
        config.from_mapping(raw)
    assert "\n" not in str(e.value)


@pytest.mark.slow
def test_noop_not_forgotten_retrain_verified_and_given_back(tmp_path: Path) -> None:
    """digits, 8 epochs, 3 retrained models: the original model unchanged still remembers; exact retraining is
    verified; the retrain's model given back as a checkpoint gets the same verdict (the same retrained models)."""
    noop = audit.run(config.from_mapping(cfg(tmp_path, method="noop")))
    assert noop.section.verdict == "not_forgotten" and set(noop.section.remembered) <= set(noop.section.forget)
    assert noop.section.per_example_auc.value is not None and noop.section.per_example_auc.value > 0.6
    u = config.from_mapping(cfg(tmp_path, method="retrain"))
    retrain = audit.run(u)
    assert retrain.section.verdict == "verified" and retrain.section.models_trained == 1  # the original and
    # the retrained models came from the noop run's cache
    out = tmp_path / "out"
    report = output.write(u, retrain, out)
    assert sorted(p.name for p in out.iterdir()) == sorted(output.FILES)
    back = AuditReport.load(out / "results.json")
    assert back.unlearning is not None and back.unlearning.verdict == "verified"
    assert json.loads((out / "results.json").read_text())["unlearning"]["forget"] == report.unlearning.forget  # type: ignore[union-attr]
    assert (out / "report.md").read_text().startswith("**Forgetting verified")
    given = {
        **cfg(tmp_path),
        "target": {"architecture": "mlp", "checkpoint": str(out / "unlearned.safetensors")},
        "members": str(out / "members.npy"),
        "unlearning": {"forget": str(out / "forget.npy")},
    }
    again = audit.run(config.from_mapping(given))
    assert again.section.verdict == "verified" and again.section.method.name == "given"
    assert again.section.forget == retrain.section.forget and again.section.models_trained == 0


@pytest.mark.slow
def test_docs_page_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python example of docs/unlearning.md runs as written and writes its folder."""
    import re

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MIAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    text = (Path(__file__).parents[2] / "docs" / "unlearning.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", text, re.S).group(1)  # type: ignore[union-attr]
    namespace: dict = {}
    exec(compile(snippet, "docs/unlearning.md", "exec"), namespace)
    assert namespace["u"].verdict in ("verified", "not_forgotten", "over_forgotten")
    assert (tmp_path / "unlearn-digits" / "results.json").exists()


def test_a_version_1_results_json_still_loads(tmp_path: Path) -> None:
    """Version 2 only added the optional unlearning section: a version 1 file reads as it is."""
    from miaudit.results import SCHEMA_VERSION

    doc = version_1_results()
    (tmp_path / "results.json").write_text(json.dumps(doc))
    r = AuditReport.load(tmp_path / "results.json")
    assert r.unlearning is None and r.schema_version == SCHEMA_VERSION
    assert "unlearning" in AuditReport.json_schema()["properties"]
