"""A user's DP training function audited (``dp.user_code``): the canaries go into the data it is given and nothing
else changes; the references never see a canary; every call is counted; results.json says whose code it was."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn as nn
from conftest import TINY_RUN

from miaudit import data
from miaudit.config import run as config
from miaudit.dp import canaries, output, user_code
from miaudit.errors import ConfigError, ModelError
from miaudit.experiment import datasets
from miaudit.membership import decide
from miaudit.models import library

pytestmark = pytest.mark.slow  # every test here trains a model (or steps an optimizer)

FACTS = {"noise_multiplier": 2.0, "sample_rate": 0.05, "steps": 50}


class Recorder:
    """A training function that records what it is given, takes a few plain SGD steps and returns ``out``."""

    def __init__(self, out: Any = None) -> None:
        self.seen: list[tuple[np.ndarray, np.ndarray]] = []
        self.out = out

    def __call__(self, model: nn.Module, x: np.ndarray, y: np.ndarray) -> Any:
        self.seen.append((np.array(x), np.array(y)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            nn.functional.cross_entropy(model(torch.as_tensor(x)), torch.as_tensor(y)).backward()
            opt.step()
        return self.out


def cfg_for(**over: Any) -> config.RunConfig:
    raw = copy.deepcopy(TINY_RUN)
    raw.update(
        attacks=[{"name": "attack-p"}, {"name": "attack-r"}],
        canaries={"count": 30, "kind": "crafted", "guesses": 5},
        dp_training={"function": "tests:recorder", "epsilon": 1.0, "delta": 1e-5},
        calibration="none",
    )
    raw.update(over)
    return config.from_dict(raw, context={"function_given": True})


def rows(x: np.ndarray) -> set[bytes]:
    return {r.tobytes() for r in np.ascontiguousarray(x, dtype=np.float32)}


def test_the_canaries_go_into_the_users_data_by_their_coins_and_nothing_is_removed() -> None:
    cfg, fn = cfg_for(), Recorder()
    res = user_code.run(cfg, fn)
    ds = datasets.load(cfg)  # the same draw, made again from the config alone
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    ds_c, c = canaries.draw(cfg, ds, split.nonmembers)
    inside, outside = c.idx[c.included], c.idx[~c.included]
    assert 0 < len(inside) < 30  # both coins fell
    x, y = fn.seen[0]  # the target's call
    want = np.sort(np.concatenate([split.members, inside]))
    np.testing.assert_array_equal(x, ds_c.x[want])
    np.testing.assert_array_equal(y, ds_c.y[want])
    assert rows(ds.x[split.members]) <= rows(x)  # every training record, unchanged: none removed
    assert len(x) == len(split.members) + len(inside)
    assert not rows(ds_c.x[outside]) & rows(x)  # a canary whose coin said out is not trained on
    for xr, _ in fn.seen[1:]:  # the references: population records, never a canary
        assert not rows(ds_c.x[c.idx]) & rows(xr) and not rows(ds.x[split.members]) & rows(xr)
    section = res.dp_audit.training
    assert (section.calls, len(fn.seen)) == (3, 3)  # the target and two references
    assert (section.target_records, section.canaries_inserted) == (len(want), len(inside))


def test_results_json_names_the_function_and_what_the_audit_could_not_see() -> None:
    fn = Recorder(FACTS)
    report = output.audit(cfg_for(), None, None, lambda line: None, fn, written=decide.written)
    a = report.dp_audit
    assert a is not None and a.training is not None and a.kind == "one-run"
    assert a.training.function == "tests:recorder" and "black-box" in a.training.observed
    assert "noisy updates" in a.training.not_observed and a.violated is not None
    assert a.training.accountant is not None and a.training.accountant["steps"] == 50
    # the accountant's figures for the facts returned are claims too: the audit tests the smallest
    assert a.compared_with is not None and a.compared_with.epsilon <= 1.0
    assert (
        report.target is not None
        and report.target.dp is not None
        and report.target.dp["trained_by"] == "tests:recorder"
    )


def test_a_function_that_returns_another_model_or_impossible_facts_is_refused() -> None:
    with pytest.raises(ModelError, match="returned another model"):
        user_code.run(cfg_for(), Recorder(nn.Linear(64, 10)))
    with pytest.raises(ModelError, match="accountant facts"):
        user_code.run(cfg_for(), Recorder({"noise_multiplier": -1.0, "sample_rate": 0.1, "steps": 3}))


def test_references_by_miaudits_loop_when_asked() -> None:
    fn = Recorder()
    cfg = cfg_for(dp_training={"function": "tests:recorder", "epsilon": 1.0, "delta": 1e-5, "references": "recipe"})
    res = user_code.run(cfg, fn)
    assert len(fn.seen) == 1 and "miaudit's loop" in res.dp_audit.training.references_by


def test_many_runs_of_a_function_are_refused_before_any_training() -> None:
    fn = Recorder()
    with pytest.raises(ConfigError, match="--runs"):
        output.audit(cfg_for(), None, 4, lambda line: None, fn, written=decide.written)
    assert fn.seen == []


def test_a_model_without_features_is_split_at_its_last_linear_only_when_that_is_the_same_model() -> None:
    plain = nn.Sequential(nn.Flatten(), nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))
    x = torch.randn(5, 8)
    before, params = plain(x).detach(), set(map(id, plain.parameters()))
    split = library.with_features(plain, (8,), 3)
    assert callable(split.features) and split.features(x).shape == (5, 16)
    torch.testing.assert_close(split(x), before)
    assert set(map(id, split.parameters())) == params  # the function trains the same parameters
    after = nn.Sequential(nn.Linear(8, 3), nn.LogSoftmax(dim=1))  # something after the classifier: left as it is
    assert library.with_features(after, (8,), 3) is after


def test_the_python_api_builds_the_config_of_a_function() -> None:
    fn = Recorder()
    cfg, factory = user_code.function_config(fn, epsilon=2.0, delta=1e-6, canaries=40, model="mlp")
    assert cfg.dp_training is not None and cfg.dp_training.function.endswith(":Recorder") and factory is None
    assert (cfg.canaries.count, cfg.canaries.kind, cfg.references) == (40, "crafted", 2)  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="delta"):
        user_code.function_config(fn, epsilon=1.0)


def opacus_training(observed: list[bool]) -> Any:
    """A user's Opacus training with the one-line hook, recording whether it observed and the accountant's steps."""

    def train(model: nn.Module, x: np.ndarray, y: np.ndarray) -> None:
        from opacus import PrivacyEngine
        from torch.utils.data import DataLoader, TensorDataset

        import miaudit

        loader = DataLoader(TensorDataset(torch.as_tensor(x), torch.as_tensor(y)), batch_size=16)
        engine = PrivacyEngine(accountant="rdp")
        private, opt, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.05), data_loader=loader,
            noise_multiplier=1.0, max_grad_norm=1.0,
        )  # fmt: skip
        observed.append(miaudit.dp_observe(opt))
        for xb, yb in loader:
            if len(yb):
                opt.zero_grad()
                nn.functional.cross_entropy(private(xb), yb).backward()
                opt.step()
        observed.append(len(engine.accountant.history) > 0)  # the user's own step hook still ran
        private.remove_hooks()

    return train


@pytest.mark.filterwarnings("ignore")  # Opacus' notes (secure RNG off)
def test_the_white_box_hook_joins_gradient_canaries_to_an_opacus_optimizer_of_the_target_only() -> None:
    pytest.importorskip("opacus")
    seen: list[bool] = []
    cfg = cfg_for(canaries={"count": 30, "kind": "crafted", "guesses": 5, "gradient": 40})
    res = user_code.run(cfg, opacus_training(seen))
    assert seen == [True] * 6  # observed for the target and the references (defects); canaries joined the target's
    section = res.dp_audit.training
    assert section.white_box_steps > 0 and "white-box" in section.observed and "clipping" in section.not_observed
    assert section.defects == [] and section.observed_sample_rate is not None
    white = [b for b in res.dp_audit.bounds if b.threat_model == "white-box"]
    assert white and white[0].canaries == 40 and white[0].guesses == 8  # 40 // 10 each way
    assert user_code.dp_observe(object()) is False  # outside an audit: nothing, whatever it is given


def test_gradient_canaries_the_function_never_joins_give_no_bound_and_say_so() -> None:
    cfg = cfg_for(canaries={"count": 30, "kind": "crafted", "guesses": 5, "gradient": 40})
    res = user_code.run(cfg, Recorder())
    assert not [b for b in res.dp_audit.bounds if b.threat_model == "white-box"]
    section = res.dp_audit.training
    assert section.white_box_steps == 0 and "never called miaudit.dp_observe" in section.not_observed


@pytest.mark.filterwarnings("ignore")  # Opacus' notes (secure RNG off)
def test_an_observed_optimizer_that_never_steps_is_said_to_and_is_a_defect() -> None:
    pytest.importorskip("opacus")

    def train(model: nn.Module, x: np.ndarray, y: np.ndarray) -> None:
        from opacus import PrivacyEngine
        from torch.utils.data import DataLoader, TensorDataset

        import miaudit

        loader = DataLoader(TensorDataset(torch.as_tensor(x), torch.as_tensor(y)), batch_size=16)
        base = torch.optim.SGD(model.parameters(), lr=0.05)
        private, opt, loader = PrivacyEngine().make_private(
            module=model, optimizer=base, data_loader=loader, noise_multiplier=1.0, max_grad_norm=1.0
        )
        miaudit.dp_observe(opt)
        for xb, yb in loader:
            if len(yb):
                opt.zero_grad()
                nn.functional.cross_entropy(private(xb), yb).backward()
                base.step()  # the bug: the optimizer given to make_private
        private.remove_hooks()

    cfg = cfg_for(canaries={"count": 30, "kind": "crafted", "guesses": 5, "gradient": 40})
    res = user_code.run(cfg, train)
    section = res.dp_audit.training
    assert "never called" not in section.not_observed and "never took a noisy step" in section.not_observed
    kinds = [d.kind for d in section.defects]
    assert "optimizer_never_stepped" in kinds and "steps_outside_dp" in kinds and res.dp_audit.violated is True
    assert res.dp_audit.verdict.startswith("violation") and "optimizer never stepped" in res.dp_audit.verdict


def test_the_hook_refuses_an_optimizer_that_is_no_dp_optimizer() -> None:
    def train(model: nn.Module, x: np.ndarray, y: np.ndarray) -> None:
        import miaudit

        miaudit.dp_observe(torch.optim.SGD(model.parameters(), lr=0.1))

    cfg = cfg_for(canaries={"count": 30, "kind": "crafted", "guesses": 5, "gradient": 40})
    with pytest.raises(ModelError, match="not an Opacus DPOptimizer"):
        user_code.run(cfg, train)


def test_plan_times_the_users_function_by_one_call_and_counts_its_models(monkeypatch: pytest.MonkeyPatch) -> None:
    from miaudit import forecast
    from miaudit.attack_plan import build

    fn = Recorder()
    monkeypatch.setattr("miaudit.models.io.import_factory", lambda spec: fn)  # the config names it: tests:recorder
    cfg = cfg_for()
    found = forecast.training_time(cfg, build(cfg))
    assert len(fn.seen) == 1 and "your function tests:recorder" in found.command  # one call, on the target's
    assert [m.role for m in found.models][0] == "target (with canaries)" and len(found.models) == 3
    assert found.estimated_training_seconds > 0


def test_the_command_refuses_a_function_that_does_not_import_in_one_line_writing_nothing(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from miaudit.cli import app

    config_file = tmp_path / "audit.yaml"
    config_file.write_text(
        "dataset: digits\nreferences: 2\ncanaries: {count: 30, kind: crafted}\n"
        "dp_training: {function: miaudit_bench.dp_gallery:does_not_exist, epsilon: 1.0, delta: 1.0e-5}\n"
    )
    result = CliRunner().invoke(app, ["dp-audit", str(config_file), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "does_not_exist" in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1 and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def test_a_function_that_raises_is_wrongly_signed_or_does_not_parse_is_one_line_writing_nothing(tmp_path: Any) -> None:
    import sys

    from typer.testing import CliRunner

    from miaudit.cli import app

    (tmp_path / "udp_fns.py").write_text(
        "def raises(model, x, y):\n    raise ValueError('my DP training blew up')\n"
        "def wrong_signature(model, loader):\n    return model\n"
    )
    (tmp_path / "udp_broken.py").write_text("def broken(model, x, y)\n    return model\n")
    sys.path.insert(0, str(tmp_path))
    try:
        for fn, says in [("udp_fns:raises", "blew up"), ("udp_fns:wrong_signature", "(model, loader)"),
                         ("udp_broken:broken", "syntax error")]:  # fmt: skip
            config_file = tmp_path / "audit.yaml"
            config_file.write_text(
                "dataset: {name: digits, subset: 300}\nreferences: 2\ncanaries: {count: 30, kind: crafted}\n"
                f"dp_training: {{function: {fn}, epsilon: 1.0, delta: 1.0e-5}}\n"
            )
            result = CliRunner().invoke(app, ["dp-audit", str(config_file), "--out", str(tmp_path / "out")])
            lines = [line for line in result.output.splitlines() if line.strip()]
            assert result.exit_code == 2 and fn.partition(":")[2] in result.output and says in result.output, fn
            assert len(lines) <= 3 and "Traceback" not in result.output and not (tmp_path / "out").exists()
    finally:
        sys.path.remove(str(tmp_path))
