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


# seed 0's verdicts at claimed epsilon 1 (benchmarks/dp_gallery/README.md): (violated, caught by the canaries'
# statistics). noise_not_scaled is flagged at the margin there (84 of 100 right), so only its count is held, well
# above what the correct functions get. plain_finish_1 and opacus_more_epochs are violated by a defect their run
# shows directly (``dp.structural``: a noiseless step of the last layer; more steps than accounted), not by the
# canaries (66 and 63 of 100 right)
VERDICTS: dict[str, tuple[bool, bool] | None] = {
    "correct": (False, False),
    "opacus": (False, False),
    "plain_finish": (True, True),
    "plain_finish_1": (True, False),
    "no_clipping": (True, True),
    "noise_not_scaled": None,
    "half_noise": (False, False),
    "more_epochs": (False, False),
    "opacus_more_epochs": (True, False),
    "shuffled": (False, False),
}
SEEN_DIRECTLY = {"plain_finish", "plain_finish_1", "opacus_more_epochs"}  # round one's with a structural defect
# round two (issue 53): the defects each run shows directly (benchmarks/dp_gallery/README.md, part structural)
DEFECTS = {
    "head_plain": ["noiseless_updates"],
    "opacus_head_outside": ["unprotected_parameters", "steps_outside_dp", "noiseless_updates"],
    "bn_recalibrated": ["private_buffers"],
    "opacus_bn": ["private_buffers"],
    "same_noise": ["repeated_noise"],
    "opacus_same_noise": ["repeated_noise"],
    "fixed_seed": ["repeated_noise"],
    "opacus_fixed_seed": ["repeated_noise"],
    "opacus_stale": ["optimizer_never_stepped", "steps_outside_dp", "noiseless_updates"],
    "wrong_rate": [],  # plain torch: no optimizer to observe the rate of (the canaries' statistics only)
    "opacus_wrong_rate": ["accountant_mismatch"],
    "public_init": [],
    "opacus_public_init": [],
}


@pytest.mark.filterwarnings("ignore")  # Opacus' notes
@pytest.mark.parametrize("name", list(DEFECTS))
def test_each_round_two_function_shows_its_defect_directly(name: str) -> None:
    from miaudit.config.dp_training import AccountantFacts
    from miaudit.dp import structural

    fn, factory = dp_gallery.at(name, 4.0), dp_gallery.small_bn if dp_gallery.GALLERY[name].bn else dp_gallery.small
    traces, facts = [], []
    for seed in (0, 1):  # the target and a reference, as dp-audit seeds torch per model
        torch.manual_seed(seed)
        x, y = data(seed=seed)
        model = factory(x.shape[1:], 3)
        with structural.watch(model, 3, len(y)) as trace:
            facts.append(fn(model, x, y))
        traces.append(trace)
    found = structural.defects(traces[0], traces[1:], AccountantFacts.model_validate(facts[0]), name)[0]
    assert [d.kind for d in found] == DEFECTS[name]


def test_the_table_covers_the_gallery() -> None:
    assert set(VERDICTS) | set(DEFECTS) == set(dp_gallery.GALLERY)


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
    expected = VERDICTS[name]
    if expected is None:
        assert best >= 75
    else:
        violated, statistically = expected
        assert a.violated is violated, (name, a.verdict)
        assert best >= 90 if statistically else best <= 75
        assert bool(a.training.defects) is (name in SEEN_DIRECTLY)
