"""``references: {budget: B}`` (issue 56): the config and its one-line refusals, the design chooser, the cost
accounting on a split (hand-computed), and one small budgeted run end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import yaml
from _cli import invoke, refused

from miaudit.config import run as config
from miaudit.config.budget import AUTO_BY_ARCHITECTURE, ReferenceBudget, auto_design, choose
from miaudit.data import Split
from miaudit.errors import ConfigError
from miaudit.experiment import budget

LOCATION = {"dataset": "location", "model": "mlp", "seed": 3}


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the CLI's config and output folder


@pytest.mark.parametrize("given", [0, -1, "lots", True, float("nan"), None])
def test_a_budget_that_is_not_a_positive_number_is_one_line_naming_references_budget(given: object) -> None:
    with pytest.raises(ConfigError) as e:
        config.from_dict({**LOCATION, "references": {"budget": given}})
    assert str(e.value).startswith("references.budget: expected a positive number") and "\n" not in str(e.value)
    assert repr(given) in str(e.value)


@pytest.mark.parametrize("given", [0, -1, "lots"])
def test_the_cli_refuses_a_bad_budget_with_exit_2_and_writes_nothing(given: object) -> None:
    Path("b.yaml").write_text(yaml.safe_dump({**LOCATION, "references": {"budget": given}}))
    refused(invoke("run", "b.yaml", "--out", "d"), "references.budget")
    assert not Path("d").exists()


def test_other_bad_budget_keys_name_their_key() -> None:
    with pytest.raises(ConfigError, match=r"^references\.design: "):
        config.from_dict({**LOCATION, "references": {"budget": 1, "design": "wider"}})
    with pytest.raises(ConfigError, match=r"^references\.budget: expected references: K"):
        config.from_dict({**LOCATION, "references": {"design": "steps"}})
    with pytest.raises(ConfigError, match=r"^references\.budget: design full buys whole references"):
        config.from_dict({**LOCATION, "references": {"budget": 0.5, "design": "full"}})
    with pytest.raises(ConfigError, match=r"^references\.budget: not with mode"):
        config.from_dict({**LOCATION, "mode": "online", "references": {"budget": 1}})


def test_a_budget_sets_the_designs_count_and_reads_back_from_results_json() -> None:
    cfg = config.from_dict({**LOCATION, "references": {"budget": 1}})
    assert cfg.references == 2 and cfg.reference_budget == ReferenceBudget(budget=1.0)
    again = config.from_dict(json.loads(cfg.model_dump_json()))  # results.json's config runs the same audit
    assert again == cfg
    with pytest.raises(ConfigError, match=r"trains 2 reference models, not 4"):
        config.from_dict({**json.loads(cfg.model_dump_json()), "references": 4})
    assert config.from_dict({**LOCATION, "references": 4}).reference_budget is None  # references: K as before


@pytest.mark.parametrize(
    ("b", "design", "count", "shares"),
    [
        (1.0, "auto", 2, (1.0, 0.5, 0.5)),  # steps: half the epochs in half-size batches, two references
        (0.25, "steps", 1, (1.0, 0.25, 0.25)),  # below the share: one reference at the budget
        (4.0, "steps", 8, (1.0, 0.5, 0.5)),
        (1.0, "records", 2, (0.5, 1.0, 1.0)),
        (1.0, "epochs", 2, (1.0, 0.5, 1.0)),
        (2.5, "full", 2, (1.0, 1.0, 1.0)),
        (1.0, "records", 4, (0.25, 1.0, 1.0)),  # per_reference: 0.25
    ],
)
def test_the_design_chooser(b: float, design: str, count: int, shares: tuple[float, float, float]) -> None:
    per = 0.25 if count == 4 else None
    d = choose(ReferenceBudget(budget=b, design=design, per_reference=per), "mlp")  # type: ignore[arg-type]
    assert (d.count, (d.records_share, d.epochs_share, d.batch_share)) == (count, shares)
    assert d.count * min(d.records_share, d.epochs_share) <= b + 1e-12


@pytest.mark.parametrize(
    ("architecture", "b", "design", "count"),
    [
        ("mlp", 1.0, "steps", 2),  # the MLP: steps (location, digits; AG News)
        ("mlp", 0.25, "steps", 1),
        ("cnn", 1.0, "full", 1),  # any other: one reference trained as the target is (the CIFAR-10 CNN)
        ("cnn", 2.5, "full", 2),
        ("torchvision:resnet18", 1.0, "full", 1),
        ("cnn", 0.5, "steps", 1),  # below one whole reference: full buys nothing, steps at the budget
    ],
)
def test_design_auto_per_reference_architecture(architecture: str, b: float, design: str, count: int) -> None:
    assert auto_design(architecture, b) == design
    d = choose(ReferenceBudget(budget=b), architecture)
    assert (d.name, d.count) == (design, count)
    assert d.rule.startswith(f"design auto for {architecture} references: {design}: ")  # results.json says why
    assert not choose(ReferenceBudget(budget=b, design=design), architecture).rule.startswith("design auto")


def test_a_budget_counts_the_references_of_the_reference_architecture() -> None:
    assert set(AUTO_BY_ARCHITECTURE) == {"mlp"}  # the architectures the rule was measured on (budget_protocol.md)
    cnn = config.from_dict({**LOCATION, "model": "cnn", "references": {"budget": 1}})
    assert (cnn.references, cnn.reference_budget is not None) == (1, True)
    mixed = config.from_dict({**LOCATION, "model": "cnn", "reference_model": "mlp", "references": {"budget": 1}})
    assert mixed.references == 2  # priced by the references' architecture, not the target's
    default = config.from_dict({k: v for k, v in LOCATION.items() if k != "model"} | {"references": {"budget": 1}})
    assert default.references == 2  # no model key: the run config's default, the MLP
    again = config.from_dict(json.loads(cnn.model_dump_json()))
    assert again == cnn


def _priced(b: float, design: str, members: int = 100, population: int = 300, epochs: int = 30) -> budget.Priced:
    cfg = config.from_dict({**LOCATION, "train": {"epochs": epochs}, "references": {"budget": b, "design": design}})
    ds = SimpleNamespace(input_shape=(8,), n_classes=3)
    idx = np.arange(members + 10 + population)
    split = Split(members=idx[:members], nonmembers=idx[members : members + 10], population=idx[members + 10 :],
                  validation=idx[:0])  # fmt: skip
    return budget.price(cfg, ds, split)  # type: ignore[arg-type]


def test_cost_accounting_by_hand() -> None:
    # mlp on 8 features, 3 classes: 8*1024+1024 + 1024*512+512 + 512*256+256 + 256*128+128 + 128*3+3 parameters
    params = 9216 + 524800 + 131328 + 32896 + 387
    # the target: 100 records x 30 epochs; each reference's half of the 300 population records: 150
    steps = _priced(1.0, "steps")  # 2 references at half the target's 3000 examples: 150 records x 10 epochs
    assert (steps.bought.count, steps.bought.records, steps.bought.epochs, steps.bought.batch_size) == (2, 150, 10, 32)
    assert steps.bought.parameters == steps.bought.target_parameters == params
    assert steps.cost_ratio == pytest.approx(2 * 150 * 10 / (100 * 30))  # 1.0
    records = _priced(1.0, "records")  # half of 150 records = 75, for 1500 / 75 = 20 epochs (not the 30: budget)
    assert (records.bought.records, records.bought.epochs, records.cost_ratio) == (
        75,
        20,
        pytest.approx(2 * 75 * 20 / 3000),
    )
    odd = _priced(0.3, "epochs", members=97)  # one reference: 0.3 x 97 x 30 = 873 examples; 873 // 150 = 5 epochs
    assert (odd.bought.count, odd.bought.records, odd.bought.epochs) == (1, 150, 5)
    assert odd.cost_ratio == pytest.approx(150 * 5 / (97 * 30)) and odd.cost_ratio <= 0.3


@pytest.mark.parametrize("design", ["steps", "records", "epochs"])
def test_the_priced_cost_never_exceeds_the_budget(design: str) -> None:
    for b in (0.05, 0.25, 0.33, 0.5, 0.9, 1.0, 1.7, 2.0, 4.0):
        for members, population in ((100, 300), (37, 61), (250, 120)):
            p = _priced(b, design, members, population, epochs=7)
            assert 0 < p.cost_ratio <= b + 1e-12 or (p.bought.epochs == 1 and p.bought.records == 1), (
                b,
                members,
                population,
            )


def test_thinned_keeps_a_seeded_subset_of_each_reference_half() -> None:
    masks = np.zeros((3, 40), dtype=bool)
    masks[:, :20] = True
    masks[2, 20:] = True
    out = budget.thinned(masks, 7, seed=1)
    assert out.sum(axis=1).tolist() == [7, 7, 7] and not (out & ~masks).any()
    assert np.array_equal(out, budget.thinned(masks, 7, seed=1)) and not np.array_equal(out[0], out[1])


@pytest.mark.slow
def test_a_budgeted_run_writes_its_design_cost_and_seconds(tiny_raw: dict[str, Any]) -> None:
    raw = {**tiny_raw, "references": {"budget": 1}, "attacks": "auto"}
    Path("b.yaml").write_text(yaml.safe_dump(raw))
    res = invoke("run", "b.yaml", "--out", "d")
    assert res.exit_code == 0, res.output
    out = json.loads(Path("d/results.json").read_text())
    rb = out["reference_budget"]
    assert rb["budget"] == 1 and rb["design"]["count"] == 2 == out["references"]
    # 3 epochs of 60 members: each reference 1 epoch (floor 1.5) on its 60 population records, batches of 8
    assert (rb["design"]["epochs"], rb["design"]["records"], rb["design"]["batch_size"]) == (1, 60, 8)
    assert rb["cost_ratio"] == pytest.approx(2 * 60 * 1 / (60 * 3)) and math.isfinite(rb["reference_seconds"])
    assert out["attack_choice"]["chosen"]  # attacks: auto chose on the two references as pseudo-targets
    assert "references: {budget: 1} buys 2 mlp reference model(s)" in Path("d/report.md").read_text()
