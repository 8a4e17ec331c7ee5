"""An unlearning audit end to end on digits (small models), its config checks and its forget set; the outputs and
the results.json section (``output.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _results import version_1_results

from miaudit.errors import ConfigError, DataError
from miaudit.report import unlearning as unlearning_report
from miaudit.results import AuditReport
from miaudit.results.unlearning import Utility
from miaudit.unlearning import audit, config, output, records


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
    drawn = records.forget_set(5, members, 100, seed=0)
    assert len(drawn) == 5 and set(drawn) <= set(members)
    assert np.array_equal(drawn, records.forget_set(5, members, 100, seed=0))  # seeded
    with pytest.raises(ConfigError, match="unlearning.forget: 19 records asked"):
        records.forget_set(19, members, 100, seed=0)
    np.save(tmp_path / "f.npy", np.array([10, 11, 5]))
    with pytest.raises(DataError, match=r"unlearning.forget: record 5 is not among"):
        records.forget_set(tmp_path / "f.npy", members, 100, seed=0)
    np.save(tmp_path / "g.npy", np.array([10, 10**9]))
    with pytest.raises(DataError, match="unlearning.forget: index 1000000000 is outside"):
        records.forget_set(tmp_path / "g.npy", members, 100, seed=0)
    np.save(tmp_path / "h.npy", np.array([12, 10]))
    assert records.forget_set(tmp_path / "h.npy", members, 100, seed=0).tolist() == [10, 12]


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


def test_forget_given_as_a_list(tmp_path: Path) -> None:
    u = config.from_mapping(cfg(tmp_path, forget=[12, 10], method="noop"))
    assert u.unlearning.forget == (12, 10)
    assert records.forget_set(u.unlearning.forget, np.arange(10, 30), 100, seed=0).tolist() == [10, 12]
    with pytest.raises(DataError, match="record 5 is not among"):
        records.forget_set((10, 5), np.arange(10, 30), 100, seed=0)


def synthetic(k: int, seed: int = 0) -> tuple[config.UnlearnConfig, records.Records, audit.Models]:
    """An unlearning audit's records and models without training: 200 records of 4 labels, 60 members (20
    forgotten), logits of an exact retrain and ``k`` retrained models (noise around a shared per-record signal)."""
    from miaudit.data import Dataset
    from miaudit.results.unlearning import Method

    rng = np.random.default_rng(seed)
    n, c = 200, 4
    y = rng.integers(0, c, n)
    ds = Dataset(name="synthetic", x=rng.normal(size=(n, 3)).astype(np.float32), y=y, n_classes=c)
    members = np.arange(60)
    forget, retain, unseen = members[:20], members[20:], np.arange(60, n)
    base = rng.normal(size=(n, c))
    logits = base + rng.normal(scale=0.3, size=(k + 1, n, c))
    u = config.from_mapping({"dataset": "digits", "references": k, "unlearning": {"forget": 20, "method": "retrain"}})
    rec = records.Records(ds, members, forget, retain, unseen, unseen)
    models = audit.Models(None, logits[0], None, logits[1:], Method(name="retrain", label="retrain"), 0)  # type: ignore[arg-type]
    return u, rec, models


def test_two_retrained_models_are_enough() -> None:
    """``references: 2``, the stated minimum: the verdict and every figure but the leave-one-out ones (which need
    3: one left out leaves one model, no variance), said as n/a."""
    u, rec, models = synthetic(2)
    s = audit.verify_models(u, rec, models, 0.0).section
    assert s.verdict in ("verified", "no_claim", "not_forgotten", "over_forgotten") and s.retrained_models == 2
    assert s.per_example_auc.value is None and s.tpr_at_1pct_retrained.value is None
    assert s.population_auc.value is not None and s.p_selection is not None and s.compared == 20
    assert "n/a" in dict((r[0], r[1]) for r in unlearning_report.rows(s))["per-example AUC, unlearned vs retrained"]


def test_damaged_by_hand() -> None:
    """Damaged: less than half the retrained models' gain over a constant answer kept (Location's gradient ascent:
    0.03 against 0.50, chance 0.07); a SISA-like loss (0.85 against 0.93, chance 0.1) is a utility note only."""
    from miaudit.results.unlearning import Accuracies

    def acc(unlearned: float, retrained: float) -> Accuracies:
        return Accuracies(unlearned=unlearned, original=None, retrained_mean=retrained, retrained_sd=0.01)

    assert audit._damaged(acc(0.03, 0.50), 0.07)
    assert not audit._damaged(acc(0.85, 0.93), 0.1)
    assert audit._utility_note(Utility(retained=acc(0.85, 0.93), test=acc(0.9, 0.9))) is not None
    assert audit._utility_note(Utility(retained=acc(0.92, 0.93), test=acc(0.9, 0.9))) is None


def sisa(shards: int, epochs: int) -> object:
    """A user's SISA-style unlearning (Bourtoule et al. 2021): ``shards`` fresh copies of the model, each trained
    on its own part of the retained records; the unlearned model averages their softmax. None saw a forgotten
    record: exact unlearning, at a cost in accuracy."""
    import copy

    import torch

    class Ensemble(torch.nn.Module):
        def __init__(self, parts: list[torch.nn.Module]) -> None:
            super().__init__()
            self.parts = torch.nn.ModuleList(parts)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            probs = torch.stack([torch.softmax(p(x), dim=1) for p in self.parts]).mean(dim=0)
            return torch.log(probs.clamp_min(1e-12))

    def unlearn(model: torch.nn.Module, forget: tuple, retain: tuple) -> torch.nn.Module:
        x, y = torch.as_tensor(retain[0], dtype=torch.float32), torch.as_tensor(retain[1], dtype=torch.long)
        parts = []
        for idx in torch.arange(len(y)).tensor_split(shards):
            part = copy.deepcopy(model)
            for layer in part.modules():
                if hasattr(layer, "reset_parameters"):
                    layer.reset_parameters()
            opt = torch.optim.SGD(part.parameters(), lr=0.1, momentum=0.9)
            for _ in range(epochs):
                for b in idx[torch.randperm(len(idx))].split(64):
                    opt.zero_grad()
                    torch.nn.functional.cross_entropy(part(x[b]), y[b]).backward()
                    opt.step()
            parts.append(part.eval())
        return Ensemble(parts)

    return unlearn


@pytest.mark.slow
def test_sisa_ensemble_is_not_over_forgotten(tmp_path: Path) -> None:
    """An honest SISA-style removal is less confident everywhere than models retrained on all retained records:
    a utility finding said as such, not over-forgotten (before: over_forgotten from the model-level test)."""
    u = config.from_mapping({**cfg(tmp_path), "references": 4, "unlearning": {"forget": 40}})
    s = audit.run(u, unlearn_fn=sisa(4, epochs=8)).section  # type: ignore[arg-type]
    # the case of the issue: less accurate than the retrained models (each shard saw a quarter of the records)
    assert s.utility.retained.unlearned < s.utility.retained.retrained_mean - 0.02
    assert s.verdict != "over_forgotten", s.sentence
    assert s.utility_note is not None and s.utility_note in s.sentence


@pytest.mark.slow
def test_one_class_forget_set_exact_retraining_is_not_not_forgotten(tmp_path: Path) -> None:
    """Every training record of digits class 3 forgotten, the unlearned model retrained without them: compared
    with the unseen records of class 3 (before: against every label, not_forgotten or over_forgotten)."""
    from miaudit import data
    from miaudit.config.run import from_dict
    from miaudit.experiment import datasets

    run_cfg = from_dict({"dataset": "digits", "seed": 1})
    ds = datasets.load(run_cfg)
    members = data.split_indices(len(ds), 1, run_cfg.split.as_tuple()).members
    threes = sorted(int(i) for i in members if ds.y[i] == 3)
    u = config.from_mapping(cfg(tmp_path, forget=threes, method="retrain"))
    s = audit.run(u).section
    assert s.verdict not in ("not_forgotten", "over_forgotten"), s.sentence
    assert s.compared == len(threes) and not s.remembered


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
    assert not retrain.section.remembered  # every name would be a false one
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


def test_the_answer_reads_the_verdict_in_plain_words() -> None:
    """results.json's ``unlearning.answer``: the section's verdict word, one sentence naming no procedure, the
    procedure in its detail; the p-value it rests on."""
    from miaudit.results.answer import PROCEDURE_NAMES

    u, rec, models = synthetic(3)
    s = audit.verify_models(u, rec, models, 0.0).section
    a = s.answer
    assert a is not None and a.question == "unlearning" and a.verdict == s.verdict
    assert not any(name.lower() in a.summary.lower() for name in PROCEDURE_NAMES)
    assert s.sentence in a.detail and "permutation" in a.detail
    assert a.p_value == (s.p_selection if s.verdict == "no_claim" else s.p_value) or s.damaged


def test_miaudit_report_renders_an_unlearning_run_again_from_its_files(tmp_path: Path) -> None:
    """``miaudit report DIR``: report.md and report.html of an unlearning audit rebuilt from results.json alone,
    the same text as written (``report.unlearning`` renders both)."""
    from miaudit.report import rebuild

    u, rec, models = synthetic(3)
    results = output.results(u, audit.verify_models(u, rec, models, 0.0))
    results.write(tmp_path / "results.json")
    assert rebuild(tmp_path) == ["report.md", "report.html"]
    assert (tmp_path / "report.md").read_text() == unlearning_report.markdown(results)
    assert (tmp_path / "report.html").read_text() == unlearning_report.html(results)
    assert results.unlearning is not None and results.unlearning.sentence in (tmp_path / "report.md").read_text()
