"""The DP gallery (``miaudit_bench.dp_gallery``): each function's bug as written, what it tells the accountant, and
its verdict under ``miaudit.dp_audit`` at claimed epsilon 1 (docs/dp-pipeline.md's table, seed 0)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("opacus")

from miaudit_bench import dp_gallery

pytestmark = pytest.mark.slow  # every test here trains a model (or steps an optimizer)


@pytest.fixture(autouse=True)
def short(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four epochs instead of 30 and the RDP accountant (PRV's calibration takes half a minute at a sampling rate of
    1/2) for the tests of the functions' mechanics; not for the verdicts."""
    monkeypatch.setattr(dp_gallery, "EPOCHS", 4)
    monkeypatch.setattr(dp_gallery, "ACCOUNTANT", "rdp")


def data(n: int = 128, d: int = 8, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)).astype(np.float32), rng.integers(0, 3, n)


def trained(recipe: dp_gallery.Recipe, x: np.ndarray, y: np.ndarray) -> tuple[torch.nn.Module, dict[str, Any]]:
    torch.manual_seed(0)
    model = dp_gallery.small(x.shape[1:], 3)
    train = dp_gallery.train_opacus if recipe.opacus else dp_gallery.train_plain
    return model, train(model, x, y, recipe, seed=0)


def test_every_function_tells_the_accountant_what_its_claim_was_calibrated_for() -> None:
    x, y = data()
    n, q = len(y), dp_gallery.BATCH / len(y)
    steps = int(dp_gallery.EPOCHS * n / dp_gallery.BATCH)
    facts = trained(dp_gallery.GALLERY["correct"], x, y)[1]
    assert facts == {"noise_multiplier": dp_gallery.sigma_for(1.0, q, steps, "rdp"), "sample_rate": q, "steps": steps}
    more = trained(dp_gallery.GALLERY["more_epochs"], x, y)[1]  # the bug: told a third of the steps it takes
    told = int(10 * n / dp_gallery.BATCH)
    assert more == {**facts, "steps": told, "noise_multiplier": dp_gallery.sigma_for(1.0, q, told, "rdp")}
    assert dp_gallery.sigma_for(8.0, q, steps, "rdp") < facts["noise_multiplier"]  # a larger claim, less noise


def test_the_bugs_change_the_training_and_the_correct_function_is_seeded() -> None:
    x, y = data()
    x[0] *= 1e3  # one record whose gradient clipping must bound
    weights = {name: trained(r, x, y)[0].state_dict() for name, r in dp_gallery.GALLERY.items() if not r.opacus}
    again = trained(dp_gallery.GALLERY["correct"], x, y)[0].state_dict()
    assert all(torch.equal(again[k], v) for k, v in weights["correct"].items())  # same seed, same model
    for name in ("no_clipping", "noise_not_scaled", "half_noise", "plain_finish", "shuffled"):
        assert any(not torch.equal(weights[name][k], v) for k, v in weights["correct"].items()), name


def test_named_functions_and_the_opacus_one_train_in_place() -> None:
    assert dp_gallery.correct.__qualname__ == "correct" and dp_gallery.at("correct", 8).__qualname__ != "correct"
    x, y = data()
    model = dp_gallery.small((8,), 3)
    before = [p.detach().clone() for p in model.parameters()]
    facts = dp_gallery.opacus(model, x, y)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert facts["sample_rate"] == 1 / 2 and facts["steps"] > 0  # batches of 64 of 128 records


# seed 0's verdicts at claimed epsilon 1 (benchmarks/dp_gallery/README.md). noise_not_scaled is flagged at the
# margin there (84 of 100 right), so only its count is held, well above what the correct functions get
VERDICTS = {
    "correct": False,
    "opacus": False,
    "plain_finish": True,
    "plain_finish_1": False,
    "no_clipping": True,
    "noise_not_scaled": None,
    "half_noise": False,
    "more_epochs": False,
    "opacus_more_epochs": False,
    "shuffled": False,
}


def test_the_table_covers_the_gallery() -> None:
    assert set(VERDICTS) == set(dp_gallery.GALLERY)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(VERDICTS))
def test_each_gallery_functions_verdict_at_claimed_epsilon_1(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import miaudit

    monkeypatch.setattr(dp_gallery, "EPOCHS", 30)  # as documented
    monkeypatch.setattr(dp_gallery, "ACCOUNTANT", "prv")

    report = miaudit.dp_audit(
        dp_gallery.at(name, 1.0), data="digits", epsilon=1.0, delta=dp_gallery.DELTA, seed=0, references=2,
        model="miaudit_bench.dp_gallery:small", canaries={"count": 300, "kind": "crafted", "guesses": 50},
        say=lambda line: None,
    )  # fmt: skip
    a = report.dp_audit
    assert a is not None and a.tests is not None and a.training is not None
    assert a.training.function == f"miaudit_bench.dp_gallery:{name}" and a.training.calls == 3
    best = max(t.correct for t in a.tests)
    if VERDICTS[name] is None:
        assert best >= 75
    else:
        assert a.violated is VERDICTS[name], (name, a.verdict)
        assert best >= 90 if VERDICTS[name] else best <= 75
