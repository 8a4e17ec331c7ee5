"""DP-SGD training (Opacus), the config keys of the DP audits and both audits end to end on a tiny run.
Tests that train with DP-SGD need opacus (the ``dp`` extra) and skip without it."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch
from conftest import TINY_RUN

from miaudit import audits
from miaudit.config import run as config
from miaudit.errors import ConfigError
from miaudit.experiment import datasets, recipes
from miaudit.membership import decide

DP = {"epsilon": 2.0, "delta": 1e-5, "max_grad_norm": 1.0}


def raw(**overrides: Any) -> dict[str, Any]:
    out = copy.deepcopy(TINY_RUN)
    out["train"] = {**out["train"], "dp": DP}
    return {**out, **overrides}


def test_config_keys_and_their_refusals() -> None:
    cfg = config.from_dict(raw(dp_audit={"attack": "attack-r"}, canaries={"count": 40}))
    assert cfg.train.dp.epsilon == 2.0 and cfg.dp_audit.confidence == 0.95 and cfg.canaries.kind == "random-label"
    bad = [
        raw(train={"dp": {"epsilon": 1.0, "noise_multiplier": 1.0}}),  # both ways of setting the noise
        raw(dp_audit={"attack": "lira"}),  # not among the attacks
        raw(dp_audit={"attack": "attack-r", "selection": "fixed"}),  # fixed needs its threshold
        raw(canaries={"count": 10, "guesses": 6}),  # 2k > m
    ]
    for r in bad:
        with pytest.raises(ConfigError):
            config.from_dict(r)


def test_dp_settings_enter_the_cache_key_and_leave_plain_keys_unchanged() -> None:
    cfg = config.from_dict(raw())
    ds = datasets.load(cfg)
    plain = recipes.builtin_recipe(cfg, ds, "mlp").cache_spec
    assert "dp" not in plain and "dp" not in plain["train"]  # the keys every earlier cache entry has
    private = recipes.builtin_recipe(cfg, ds, "mlp", dp=cfg.train.dp).cache_spec
    assert private["dp"]["epsilon"] == 2.0 and {k: v for k, v in private.items() if k != "dp"} == plain


@pytest.fixture
def opacus() -> Any:
    return pytest.importorskip("opacus", reason="DP-SGD needs opacus: pip install -e '.[dp]'")


@pytest.mark.slow
def test_dp_sgd_accounts_its_epsilon_is_seeded_and_fixes_batchnorm(opacus: Any) -> None:
    from miaudit.models import build_model
    from miaudit.training import dp_sgd as dp_training

    cfg = config.from_dict(raw())
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 6)).astype(np.float32), rng.integers(0, 3, 64)
    weights, reports = [], []
    for _ in range(2):
        torch.manual_seed(0)
        model = build_model("mlp", (6,), 3, hidden=(16,))
        reports.append(dp_training.train_dp(model, x, y, cfg.train, cfg.train.dp, seed=5))
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    assert torch.equal(weights[0], weights[1])  # same seed, same weights
    privacy = reports[0].privacy
    assert 1.9 <= privacy["accounted_epsilon"] <= 2.0 and privacy["noise_multiplier"] > 0
    assert privacy["steps"] == 3 * 4 and privacy["sample_rate"] == pytest.approx(1 / 4)
    cnn = dp_training.compatible(build_model("cnn", (1, 8, 8), 3))
    kinds = {type(m).__name__ for m in cnn.modules()}
    assert "GroupNorm" in kinds and not any(k.startswith("BatchNorm") for k in kinds)


@pytest.mark.slow
def test_two_run_and_one_run_audits_end_to_end(opacus: Any, tmp_path: Any) -> None:
    from miaudit.dp import one_run

    cfg = config.from_dict(raw(dp_audit={"attack": "attack-r"}))
    res = audits.run_config(cfg)
    results = decide.results_json(res)
    assert results["target"]["dp"]["accounted_epsilon"] <= 2.0
    a = results["dp_audit"]
    assert a["attack"] == "attack-r (n=2)" and a["kind"] == "two-run" and np.isfinite(a["threshold"])
    assert a["epsilon_lb"] >= 0 and 0 <= a["realized_fpr"] <= 1 and a["accounted_epsilon"] <= 2.0
    assert a["verdict"] in ("no violation detected", "the declared epsilon is violated at confidence 0.95")
    assert "not a certified lower bound" in a["assumes"]  # the single-model bound says what it assumes
    one_cfg = config.from_dict(raw(canaries={"count": 40, "guesses": 5}))
    one = decide.write(one_run.run(one_cfg), tmp_path / "one").dump()
    b = one["dp_audit"]
    assert b["kind"] == "one-run" and len(b["bounds"]) == 2 * 2  # 2 attacks x (binomial, fdp)
    for e in b["bounds"]:
        assert e["canaries"] == 40 and e["guesses"] == 10 and 0 <= e["correct"] <= 10
        assert e["threat_model"] == "black-box" and e["canary_kind"] == "random-label"
        assert 0 <= e["epsilon_lower_bound"] <= e["max_attainable"]
    assert b["accounted"]["prv"] <= b["accounted"]["rdp"] and "power" in b["verdict"]
    assert all(a["p_values"] in ("raw", None) for a in one["attacks"]) and b["p_values"].startswith("raw")
    assert results["n_records"] == one["n_records"] and one["n_queries"] == 40
    assert "Differential privacy audit (one-run)" in (tmp_path / "one" / "report.md").read_text()
    with pytest.raises(ConfigError, match="online"):
        one_run.check(config.from_dict(raw(canaries={"count": 40}, mode="online")))


@pytest.mark.slow
def test_white_box_audit_flags_a_planted_fault_and_not_the_honest_run(opacus: Any, tmp_path: Any) -> None:
    """Gradient canaries in one DP-SGD run at epsilon 2: the honest run stays below its PRV epsilon, the run
    drawing a tenth of the noise is flagged (its included canaries stand out of the noise in every step)."""
    from miaudit.dp import output

    canaries = {"count": 100, "kind": "dirac", "guesses": 20}
    honest = output.audit(config.from_dict(raw(canaries=canaries)), tmp_path / "honest", written=decide.written).dump()
    faulty = {**DP, "planted_fault": {"noise_scale": 0.1}}
    cfg = config.from_dict(raw(canaries=canaries, train={**TINY_RUN["train"], "dp": faulty}))
    flagged = output.audit(cfg, tmp_path / "fault", written=decide.written).dump()
    prv = honest["target"]["dp"]["accounted"]["prv"]
    assert all(e["epsilon_lower_bound"] <= prv for e in honest["dp_audit"]["bounds"])
    assert honest["dp_audit"]["verdict"].startswith("no violation detected")
    assert flagged["dp_audit"]["verdict"].startswith("violation") and flagged["dp_audit"]["epsilon_lb"] > 2.0
    assert flagged["target"]["dp"]["planted_fault"]["noise_scale"] == 0.1
    assert (tmp_path / "fault" / "scores.csv").read_text().startswith("canary,member,score,guess")
    with pytest.raises(ConfigError, match="train.dp"):
        output.audit(config.from_dict({**TINY_RUN, "canaries": canaries}), tmp_path / "no-dp", written=decide.written)
    with pytest.raises(ConfigError, match="threat_model"):
        config.from_dict(raw(canaries={"count": 10, "kind": "crafted", "threat_model": "white-box"}))
    with pytest.raises(ConfigError, match="noise_scale"):
        config.from_dict(raw(train={"dp": {**DP, "planted_fault": {"noise_scale": 2.0}}}))


@pytest.mark.slow
def test_multi_run_audit_trains_pairs_and_bounds_their_decisions(opacus: Any, tmp_path: Any) -> None:
    from miaudit.dp import output

    cfg = config.from_dict(raw(canaries={"count": 4, "kind": "crafted"}))
    res = output.audit(cfg, tmp_path / "multi", runs=2, written=decide.written).dump()
    head, two_run = res["dp_audit"]["bounds"]
    assert head["analysis"] == "binomial" and two_run["analysis"] == "multi-run"
    assert head["canaries"] == 16 and two_run["canaries"] == 4  # 4 per run (canaries.count); the first of each
    for b in (head, two_run):
        assert b["runs"] == 4 and b["canary_kind"] == "worst-case" and "training algorithm" in b["audits"]
        assert 0 <= b["epsilon_lower_bound"] <= b["max_attainable"] and 0 <= b["correct"] <= b["guesses"]
    assert res["dp_audit"]["epsilon_lb"] == head["epsilon_lower_bound"]
    assert "not one deployed model" in res["dp_audit"]["threat_model"] and "not one deployed" in res["dp_audit"]["how"]
    assert "not one deployed model" in (tmp_path / "multi" / "report.md").read_text()
    assert "smallest model that realises the worst-case start" in res["dp_audit"]["threat_model"]
    assert res["dp_audit"]["kind"] == "multi-run" and "power" in res["dp_audit"]["verdict"]
    rows = (tmp_path / "multi" / "scores.csv").read_text().splitlines()
    assert rows[0] == "run,canary,member,score" and len(rows) == 17
    with pytest.raises(ConfigError, match="runs"):
        output.audit(cfg, tmp_path / "one", runs=1, written=decide.written)
