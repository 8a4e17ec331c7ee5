"""The stacked DP-SGD trainer of the multi-run audit (``miaudit.training.dp_stacked``), its worst-case start
(``miaudit.dp.worst_case``) and the multi-run bound on simulated mechanisms of known epsilon. Small models,
fixed seeds: every assertion is deterministic."""

from __future__ import annotations

import copy
import math
import typing
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from miaudit.config import run as config
from miaudit.dp import bounds, worst_case
from miaudit.dp.multi_run import coins, ideal_shift, multi_run_bound, plan, pooled_canaries
from miaudit.models import build_model
from miaudit.training import dp_stacked as stacked
from miaudit.training.dp_faults import Faults
from miaudit.training.options import TrainConfig

pytestmark = pytest.mark.slow  # every test here trains stacked DP-SGD models

CONFIDENCE, DELTA = 0.95, 1e-5


def small() -> torch.nn.Module:
    return build_model("mlp", (1, 8, 8), 10, hidden=(16, 8))


def spec(**kw: Any) -> stacked.StackSpec:
    """The stack's DP-SGD: training keys (``cosine``: the schedule, else constant), the noise and clip, and planted
    fault keys (``dp_faults.Faults``'). Built unvalidated: ``epochs=0`` is the public pass alone."""
    train = dict(epochs=1, batch_size=4, lr=0.1, momentum=0.9, weight_decay=5e-4)
    train |= {k: kw.pop(k) for k in list(kw) if k in train}
    train["schedule"] = "cosine" if kw.pop("cosine", True) else "constant"
    faults = {k: kw.pop(k) for k in list(kw) if k in Faults.__dataclass_fields__}
    base = dict(noise_multiplier=1.0, max_grad_norm=0.5)
    return stacked.StackSpec(train=TrainConfig.model_construct(**train), faults=Faults(**faults), **{**base, **kw})


def two_models() -> tuple[torch.nn.Module, dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    """A small MLP, a stack of two different parameter sets, and different records for each."""
    torch.manual_seed(0)
    model = small()
    params = stacked.stack_params(model, 2)
    params = {k: v + 0.1 * torch.randn_like(v) * torch.tensor([0.0, 1.0]).view(2, *([1] * (v.dim() - 1)))
              for k, v in params.items()}  # fmt: skip
    return model, params, torch.randn(2, 5, 1, 8, 8), torch.randint(0, 10, (2, 5))


def opacus_grad_samples(model: torch.nn.Module, params: dict, x: torch.Tensor, y: torch.Tensor) -> dict:
    """Opacus' per-sample gradients (GradSampleModule) of one model with these parameters."""
    from opacus import GradSampleModule

    copy_ = copy.deepcopy(model)
    copy_.load_state_dict(params)
    gsm = GradSampleModule(copy_, loss_reduction="sum")
    F.cross_entropy(gsm(x), y, reduction="sum").backward()
    return {k.removeprefix("_module."): p.grad_sample for k, p in gsm.named_parameters()}


def test_per_sample_gradients_of_a_stack_equal_opacus() -> None:
    pytest.importorskip("opacus", reason="the reference is Opacus' GradSampleModule: pip install -e '.[dp]'")
    model, params, x, y = two_models()
    mine = stacked.per_sample_grads(model, params, x, y)
    for i in range(2):
        theirs = opacus_grad_samples(model, {k: v[i] for k, v in params.items()}, x[i], y[i])
        assert set(theirs) == set(mine)
        for k, g in theirs.items():
            torch.testing.assert_close(mine[k][i], g, rtol=1e-5, atol=1e-6)
        # the clipped sum, by hand from Opacus' gradients, equals both of the stack's ways
        norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in theirs.values()]).sum(0).sqrt()
        factor = (0.5 / (norms + stacked.NORM_EPS)).clamp(max=1.0)
        assert (norms > 0.5).any()  # clipping active for some records at least
        by_hand = {k: torch.einsum("b,b...->...", factor, g) for k, g in theirs.items()}
        w = torch.ones(2, 5)
        ghost = stacked.StackedDPSGD(small, spec()).clipped_sum(params, x, y, w)
        vmapped = stacked.clipped_sum_vmap(model, params, x, y, w, 0.5)
        for k in by_hand:
            torch.testing.assert_close(ghost[k][i], by_hand[k], rtol=1e-5, atol=1e-6)
            torch.testing.assert_close(vmapped[k][i], by_hand[k], rtol=1e-5, atol=1e-6)


def test_padding_records_count_for_nothing() -> None:
    model, params, x, y = two_models()
    w = torch.tensor([[1.0, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    full = stacked.StackedDPSGD(small, spec()).clipped_sum(params, x, y, w)
    first3 = stacked.StackedDPSGD(small, spec()).clipped_sum(
        {k: v[:1] for k, v in params.items()}, x[:1, :3], y[:1, :3], torch.ones(1, 3)
    )
    for k in full:
        torch.testing.assert_close(full[k][0], first3[k][0], rtol=1e-5, atol=1e-6)


def test_one_step_is_dp_sgd_by_hand_and_its_noise_has_the_declared_scale() -> None:
    """Batch size n (sample rate 1: every record in the one step): the update is -lr (clipped sum + noise) /
    expected batch - lr wd theta; the residual after the clipped sum is Gaussian of sd lr sigma C / n."""
    torch.manual_seed(1)
    model = small()
    x, y = torch.rand(6, 1, 8, 8), torch.randint(0, 10, (6,))
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    s = spec(batch_size=6, noise_multiplier=2.0)
    (final,) = stacked.StackedDPSGD(small, s).train(x.numpy(), y.numpy(), [np.arange(6)], [7], 6, start=start)
    summed = stacked.clipped_sum_vmap(model, {k: v[None] for k, v in start.items()}, x[None], y[None],
                                      torch.ones(1, 6), s.max_grad_norm)  # fmt: skip
    residual = torch.cat(
        [
            ((start[k] - final[k]) / s.train.lr - s.train.weight_decay * start[k] - summed[k][0] / 6).flatten()
            for k in start
        ]
    ) / (s.noise_multiplier * s.max_grad_norm / 6)
    assert residual.numel() > 1000
    assert abs(float(residual.mean())) < 0.1 and abs(float(residual.std()) - 1) < 0.05


def one_noiseless_step(**fault: Any) -> tuple[dict, dict, dict]:
    """One full-batch step (sample rate 1) without noise, momentum or weight decay: start, final, and the
    unclipped per-sample gradients' sum, to check a planted fault's step by hand."""
    torch.manual_seed(2)
    model = small()
    x, y = torch.rand(6, 1, 8, 8) * 4, torch.randint(0, 10, (6,))
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    s = spec(batch_size=6, noise_multiplier=0.0, momentum=0.0, weight_decay=0.0, cosine=False, **fault)
    (final,) = stacked.StackedDPSGD(small, s).train(x.numpy(), y.numpy(), [np.arange(6)], [7], 6, start=start)
    grads = stacked.per_sample_grads(model, {k: v[None] for k, v in start.items()}, x[None], y[None])
    return start, final, {k: g[0] for k, g in grads.items()}


def test_each_planted_fault_changes_exactly_its_step() -> None:
    """By hand, one step of 6 records (clip C = 0.5, every record's gradient above it): correct DP-SGD moves by
    lr x the mean of the clipped gradients; ``clip: none`` by the mean of the raw ones; ``clip: after_mean`` by
    the raw mean clipped to C as a whole."""
    lr, c = spec().train.lr, spec().max_grad_norm

    def moved(start: dict, final: dict) -> dict:
        return {k: (start[k] - final[k]) / lr for k in start}

    def norms(per: dict) -> torch.Tensor:
        return torch.stack([g.flatten(1).pow(2).sum(1) for g in per.values()]).sum(0).sqrt()

    start, final, per = one_noiseless_step()
    n = norms(per)
    assert bool((n > c).all())
    factor = (c / (n + stacked.NORM_EPS)).clamp(max=1.0)
    for k, v in moved(start, final).items():
        torch.testing.assert_close(v, torch.einsum("b,b...->...", factor, per[k]) / 6, rtol=1e-4, atol=1e-6)
    start, final, per = one_noiseless_step(clip="none")
    for k, v in moved(start, final).items():
        torch.testing.assert_close(v, per[k].mean(0), rtol=1e-4, atol=1e-6)
    start, final, per = one_noiseless_step(clip="after_mean")
    mean = {k: g.mean(0) for k, g in per.items()}
    size = float(torch.cat([m.flatten() for m in mean.values()]).norm())
    assert size > c
    for k, v in moved(start, final).items():
        torch.testing.assert_close(v, mean[k] * c / (size + stacked.NORM_EPS), rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_public_pass_is_one_epoch_of_torch_sgd_before_dp_sgd() -> None:
    """``public_pass`` with no DP epoch after it: exactly torch's SGD (momentum, weight decay) on the mean loss of
    the model's records in its seeded shuffled order, batches of 3, no clipping, no noise."""
    torch.manual_seed(3)
    model = small()
    x, y = torch.rand(7, 1, 8, 8) * 4, torch.randint(0, 10, (7,))
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    s = spec(epochs=0, batch_size=3, cosine=False, public_pass=True)
    (final,) = stacked.StackedDPSGD(small, s).train(x.numpy(), y.numpy(), [np.arange(7)], [5], 7, start=start)
    opt = torch.optim.SGD(
        model.parameters(), lr=s.train.lr, momentum=s.train.momentum, weight_decay=s.train.weight_decay
    )
    order = torch.randperm(7, generator=torch.Generator().manual_seed(5 + 3))
    for b in range(3):  # 3 + 3 + 1 records
        idx = order[3 * b : 3 * b + 3]
        opt.zero_grad()
        F.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()
    moved = False
    for k, v in model.named_parameters():
        torch.testing.assert_close(final[k], v.detach(), rtol=1e-4, atol=1e-6)
        moved |= not torch.equal(final[k], start[k])
    assert moved


def test_noise_per_epoch_draws_noise_at_the_first_step_only() -> None:
    """Two steps an epoch, noise far above the gradients: the final parameters' displacement has the variance
    of two noisy steps when correct and of one under ``noise: per_epoch``."""
    x, y = np.random.default_rng(0).random((6, 1, 8, 8), dtype=np.float32), np.arange(6) % 10
    start = {k: v.detach().clone() for k, v in small().named_parameters()}
    found = {}
    for per_epoch in (False, True):
        s = spec(batch_size=3, noise_multiplier=1000.0, momentum=0.0, weight_decay=0.0, cosine=False,
                 noise_per_epoch=per_epoch)  # fmt: skip
        (final,) = stacked.StackedDPSGD(small, s).train(x, y, [np.arange(6)], [11], 6, start=start)
        d = torch.cat([(start[k] - final[k]).flatten() for k in start]) / (s.train.lr * 1000.0 * s.max_grad_norm / 3)
        found[per_epoch] = float(d.pow(2).mean())
    # 1,266 coordinates: each mean of squares within ~3 sd (4% relative) of 2 and 1; the two tell apart by far
    assert abs(found[False] / 2 - 1) < 0.12 and abs(found[True] - 1) < 0.12, found


@pytest.mark.slow
def test_the_many_run_audit_plants_the_sampling_fault_in_its_accountant() -> None:
    """``sampling: {accounted_rate_factor: 4}``: the noise calibrated, and the claim accounted, at a quarter of
    the rate used over the steps taken; ``public_pass`` reaches the stacked trainer."""
    from miaudit.config import run as config
    from miaudit.dp.multi_run import privacy_record, stacked_spec
    from miaudit.training import dp_sgd

    def cfg(fault: dict | None) -> Any:
        dp = {"epsilon": 2.0, "delta": 1e-5, "max_grad_norm": 1.0, **({"planted_fault": fault} if fault else {})}
        return config.from_dict({"train": {"epochs": 3, "batch_size": 50, "lr": 0.05, "dp": dp}})

    right = cfg(None)
    rate = cfg({"sampling": {"accounted_rate_factor": 4}})
    assert right.train.dp is not None and rate.train.dp is not None
    s, f = stacked_spec(right, right.train.dp, 500), stacked_spec(rate, rate.train.dp, 500)
    assert f.sample_rate(500) == s.sample_rate(500) == 0.1 and f.accounted_rate(500) == pytest.approx(0.025)
    assert f.noise_multiplier == pytest.approx(dp_sgd.noise_multiplier(rate.train.dp, 0.025, 3, 30))
    assert f.noise_multiplier < s.noise_multiplier  # told a smaller rate, it draws less noise
    told = privacy_record(f, 500, rate.train.dp)
    assert told["sample_rate"] == pytest.approx(0.025) and "accountant told" in told["planted_fault"]["description"]
    public = cfg({"public_pass": True})
    assert public.train.dp is not None and stacked_spec(public, public.train.dp, 500).faults.public_pass


def test_a_models_weights_do_not_depend_on_the_chunking() -> None:
    x, y = np.random.default_rng(0).random((20, 1, 8, 8), dtype=np.float32), np.arange(20) % 10
    idx = [np.arange(10), np.arange(10, 20), np.arange(11)]
    start = dict(small().named_parameters())
    one = stacked.StackedDPSGD(small, spec(epochs=2), chunk=1).train(x, y, idx, [1, 2, 3], 10, start=start)
    three = stacked.StackedDPSGD(small, spec(epochs=2), chunk=3).train(x, y, idx, [1, 2, 3], 10, start=start)
    for a, b in zip(one, three, strict=True):
        for k in a:
            torch.testing.assert_close(a[k], b[k])
    assert not torch.equal(one[0]["head.weight"], one[1]["head.weight"])  # own seeds, own data


def test_worst_case_start_makes_each_canary_gradient_dominant_and_isolated() -> None:
    """On digits: the read-out's features are 0 on every natural record and FEATURE on its own column for each
    canary; a canary's gradient lies on its own column (share 64/65) and is clipped (norm > C); a natural record's
    gradient touches no canary column; a score moves with its own column only, and is 0 at the start."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x, y = (d.images / 16).astype(np.float32)[:, None], d.target
    case = worst_case.craft(x[:500], 10, 4)
    assert case.inputs.shape == (4, 1, 8, 8) and case.labels.tolist() == [0, 1, 2, 3]
    phi = case.features(np.concatenate([x, case.inputs]))
    assert np.all(phi[: len(x)] == 0.0)  # no natural record is a canary's input
    np.testing.assert_array_equal(phi[len(x) :], worst_case.FEATURE * np.eye(4))
    start = case.start()
    share = worst_case.gradient_share(case, start, phi[len(x) :], case.labels)
    feature2 = worst_case.FEATURE**2
    np.testing.assert_allclose(share, feature2 / (feature2 + 1) * np.eye(4), atol=1e-6)
    assert np.all(worst_case.gradient_share(case, start, phi[:20], y[:20]) == 0.0)
    model, params = case.model(), {k: v[None] for k, v in start.items()}
    cx, cy = torch.as_tensor(phi[None, len(x) :]), torch.as_tensor(case.labels[None])
    grads = stacked.per_sample_grads(model, params, cx, cy)
    assert float(sum(g[0, 0].pow(2).sum() for g in grads.values()).sqrt()) > 1.0  # clipped to C = 1
    assert np.all(worst_case.scores(case, start) == 0.0)
    moved = {k: v.clone() for k, v in start.items()}
    moved["0.weight"][:, 2] = torch.arange(10.0)
    moved["0.bias"] += torch.arange(10.0)  # the bias, which natural records move, changes no score
    found = worst_case.scores(case, moved)
    assert found[2] == pytest.approx(worst_case.FEATURE * (2 - 4.5)) and np.all(found[[0, 1, 3]] == 0.0)


def test_the_crafted_runs_reach_the_ideal_shift() -> None:
    """Stacked DP-SGD from the worst-case start (60 records, q = 1/15, 75 steps, sigma 0.3, 40 runs x 16
    canaries): the canaries' scores with and without them differ by most of the ideal observer's shift mu
    (``ideal_shift``, 1.59 here), in the scores' standard deviations (measured 1.45: the construction reaches
    ~90% of the black-box ceiling it plans with; the rest is the softmax's curvature and weight decay)."""
    rng = np.random.default_rng(0)
    x, y = rng.random((60, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, 60)
    case = worst_case.craft(x, 10, 16)
    sp = spec(epochs=5, batch_size=4, lr=0.05, noise_multiplier=0.3, max_grad_norm=1.0)
    phi = case.features(np.concatenate([x, case.inputs]))
    included = coins(0, 40 * 16).reshape(40, 16)
    idx = [np.append(np.arange(60), 60 + np.flatnonzero(inc)) for inc in included]
    finals = stacked.StackedDPSGD(case.model, sp, chunk=40).train(
        phi, np.concatenate([y, case.labels]), idx, list(range(40)), 60, start=case.start()
    )
    scores = np.stack([worst_case.scores(case, p) for p in finals])
    out = scores[~included]
    shift = (scores[included].mean() - out.mean()) / out.std()
    mu = ideal_shift(sp, 60)
    assert 1.5 < mu < 1.7 and 0.8 * mu < shift < 1.05 * mu, (shift, mu)


def test_plan_fixes_the_guesses_from_the_hyperparameters() -> None:
    """digits at declared eps 8 (sigma 1.1768, q = 1/15, 450 steps, cosine, momentum 0.9): mu about 0.98; the
    ideal observer's expected bound at R = 100 pairs is about 1 with one canary per run and above 1.5 with 16."""
    sp = spec(epochs=30, batch_size=64, lr=0.05, noise_multiplier=1.1768, max_grad_norm=1.0)
    mu = ideal_shift(sp, 898)
    assert 0.9 < mu < 1.05
    k1, one = plan(mu, 200, DELTA, CONFIDENCE)
    k16, sixteen = plan(mu, 3200, DELTA, CONFIDENCE)
    assert 1 <= k1 <= 50 and 1 <= k16 <= 800
    assert 0.5 < one < 1.5 < sixteen < 2.5


def pooled(scores: np.ndarray, included: np.ndarray, delta: float, seed: int) -> float:
    """The headline bound over every (run, canary) slot, k fixed at slots / 20."""
    return pooled_canaries(scores, included, scores.size // 20, delta, CONFIDENCE, seed).epsilon_lower_bound


def first_canary(scores: np.ndarray, included: np.ndarray, delta: float, seed: int) -> float:
    """The two-run bound on each run's first canary."""
    return multi_run_bound(scores[:, 0], included[:, 0], delta, CONFIDENCE, seed).epsilon_lower_bound


@pytest.mark.slow
@pytest.mark.parametrize("analysis", [pooled, first_canary])
def test_many_run_bounds_never_exceed_epsilon_on_mechanisms_of_known_epsilon(analysis: Any) -> None:
    """Seeded repetitions of both multi-run bounds (200 runs x 8 canaries, each slot by a fair coin) on
    (a) eps-DP randomized response per slot, (b) the Gaussian mechanism that is exactly (eps, delta)-DP (score
    N(mu, 1) with the canary, N(0, 1) without), (c) the black-box view of DP-SGD from the worst-case start: each
    canary's coordinate after T Poisson-sampled steps, Binomial(T, q) + N(0, T sigma^2), whose epsilon is at most
    the accountants', plus a run effect shared by the run's 8 canaries (the slots of one run are dependent; the
    pooled analysis must not need them independent). Randomized response is the worst case of eps-DP: there a
    bound at confidence 0.95 may exceed eps in up to 5% of the repetitions. The others never exceed theirs; each
    bound has power."""
    from miaudit.training import dp_sgd as dp_training

    rng = np.random.default_rng(5)
    q, steps, sigma = 1 / 15, 450, 1.1768  # digits' members at batch 64, 30 epochs: Opacus' sigma for eps 8
    dpsgd = min(dp_training.accounted(sigma, q, steps, DELTA).values())
    shape = (200, 8)
    mechanisms = {
        "randomized response, eps 2": (2.0, 0.0, lambda inc: np.where(rng.random(shape) < 1 / (1 + math.exp(-2)),
                                                                      inc, ~inc) + 0.01 * rng.random(shape)),
        "Gaussian, eps 8": (8.0, DELTA, lambda inc: bounds.gaussian_mu(8.0, DELTA) * inc
                            + rng.standard_normal(shape)),
        "DP-SGD sum, eps 8": (dpsgd, DELTA, lambda inc: rng.binomial(steps, q, shape) * inc
                              + sigma * math.sqrt(steps) * rng.standard_normal(shape)
                              + 5 * rng.standard_normal((shape[0], 1))),
    }  # fmt: skip
    for name, (eps, delta, mechanism) in mechanisms.items():
        found = []
        for rep in range(60):
            included = rng.random(shape) < 0.5
            found.append(analysis(mechanism(included), included, delta, rep))
        exceeded = np.mean(np.array(found) > eps)
        assert exceeded <= (1 - CONFIDENCE if name.startswith("randomized") else 0.0), name
        assert np.median(found) > 0.2, name


def test_pooled_canaries_by_hand() -> None:
    """10 runs x 2 canaries, k = 2: the two highest scores guessed in, the two lowest out; 3 of 4 right here."""
    included = np.array([True, False] * 10)
    scores = np.zeros(20)
    scores[[0, 2]] = 5.0  # in, right
    scores[1] = -5.0  # out, right
    scores[4] = -4.0  # in, guessed out: wrong
    out = pooled_canaries(scores.reshape(10, 2), included.reshape(10, 2), 2, 0.0, CONFIDENCE, seed=0)
    assert out.guesses == 4 and out.correct == 3 and out.canaries == 20
    assert out.epsilon_lower_bound == pytest.approx(bounds.one_run_epsilon_lb(20, 4, 3, CONFIDENCE))
    assert out.max_attainable == pytest.approx(bounds.one_run_epsilon_lb(20, 4, 4, CONFIDENCE))
    flips = coins(0, 2000)
    assert 900 < flips.sum() < 1100 and not np.array_equal(flips, coins(1, 2000))


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
@pytest.mark.parametrize("schedule", typing.get_args(TrainConfig.model_fields["schedule"].annotation))
def test_every_schedule_and_optimizer_runs_as_train_dp_runs_it(
    schedule: str, optimizer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The many-run audit's stacked DP-SGD and the one-run audit's (Opacus' ``train_dp``) take the same steps for
    every schedule and optimizer (one step an epoch of every record, sample rate 1; noise 1e-9 x C, far below the
    tolerance): ``triangle`` is no constant rate in either, AdamW is refused by neither."""
    pytest.importorskip("opacus", reason="the reference is Opacus' train_dp: pip install -e '.[dp]'")
    from miaudit.dp.multi_run import stacked_spec
    from miaudit.training import dp_sgd
    from miaudit.training.options import DPConfig

    x, y = np.random.default_rng(0).random((12, 1, 8, 8), dtype=np.float32), np.arange(12) % 10
    train = TrainConfig(epochs=5, batch_size=12, lr=0.05, optimizer=optimizer, schedule=schedule)  # type: ignore[arg-type]
    dp = DPConfig(noise_multiplier=1e-9, max_grad_norm=0.5)
    monkeypatch.setattr(dp_sgd, "accounted", lambda *a: {"rdp": math.inf})  # PRV's grid fails at sigma 1e-9
    torch.manual_seed(4)
    model = small()
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    dp_sgd.train_dp(model, x, y, train, dp, seed=3)
    cfg = config.from_dict({"train": {**train.model_dump(exclude_none=True), "dp": dp.model_dump(exclude_none=True)}})
    assert cfg.train.dp is not None
    s = stacked_spec(cfg, cfg.train.dp, 12)  # the many-run audit's spec: its schedule and optimizer are the config's
    assert s.lr_rates() == pytest.approx([0.05 * f for f in schedule_factors(schedule, 5)])
    (final,) = stacked.StackedDPSGD(small, s).train(x, y, [np.arange(12)], [3], 12, start=start)
    moved = max(float((final[k] - start[k]).abs().max()) for k in start)
    assert moved > 1e-3
    for k, v in model.named_parameters():
        torch.testing.assert_close(final[k], v.detach(), rtol=1e-4, atol=1e-6)


def schedule_factors(schedule: str, epochs: int) -> list[float]:
    """Each epoch's learning-rate factor, by hand: cosine annealing to 0, constant 1, airbench's triangle."""
    if schedule == "cosine":
        return [(1 + math.cos(math.pi * e / epochs)) / 2 for e in range(epochs)]
    if schedule == "triangle":  # 0.2 up to 1 at 23% of the epochs, then down to 0.07 at the end
        return [0.2 + 0.8 * (e / epochs) / 0.23 if e / epochs <= 0.23 else 1 - 0.93 * (e / epochs - 0.23) / 0.77
                for e in range(epochs)]  # fmt: skip
    return [1.0] * epochs
