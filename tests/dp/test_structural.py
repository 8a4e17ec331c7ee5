"""What a run of a user's DP training shows directly (``dp.structural``): each defect class found in a few steps of a
small DP-SGD, none in correct code (fresh noise from a reproducible seed, a fixed public initialisation)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn as nn

from miaudit.config.dp_training import AccountantFacts
from miaudit.dp import structural

pytestmark = pytest.mark.slow  # every test here steps an optimizer

N, D, K, BATCH, STEPS, SIGMA, C = 240, 12, 4, 24, 25, 1.0, 1.0
FACTS = AccountantFacts(noise_multiplier=SIGMA, sample_rate=BATCH / N, steps=STEPS)


def data(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N, D)).astype(np.float32), rng.integers(0, K, size=N)


def model(bn: bool = False) -> nn.Module:
    norm = [nn.BatchNorm1d(16, affine=False)] if bn else []
    return nn.Sequential(nn.Linear(D, 16), *norm, nn.Tanh(), nn.Linear(16, K))


PUBLIC = model().state_dict()  # a fixed public initialisation


def dp_sgd(m: nn.Module, x: np.ndarray, y: np.ndarray, bug: str | None = None) -> None:
    """Plain-torch DP-SGD (Poisson sampling, per-example clipping, Gaussian noise), with one of the bugs."""
    xt, yt = torch.as_tensor(x), torch.as_tensor(y)
    if bug == "public_init":
        m.load_state_dict(PUBLIC)
    seed = 1234 if bug == "seed_per_run" else int(torch.randint(2**31 - 1, (1,)))
    noise = torch.Generator().manual_seed(seed)
    params = dict(m.named_parameters())
    plain = {"2.weight", "2.bias"} if bug == "head_plain" else set()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    m.eval()  # per-example gradients: BatchNorm in eval mode
    for _ in range(STEPS):
        if bug == "same_noise":
            noise.manual_seed(7)
        idx = (torch.rand(N) < BATCH / N).nonzero().squeeze(1)
        grads: dict[str, torch.Tensor] = {k: torch.zeros_like(p) for k, p in params.items()}
        for i in idx:
            m.zero_grad()
            nn.functional.cross_entropy(m(xt[i : i + 1]), yt[i : i + 1]).backward()
            g = {k: p.grad.detach().clone() for k, p in params.items() if p.grad is not None}
            norm = torch.sqrt(sum(v.pow(2).sum() for v in g.values()))
            for k, v in g.items():
                grads[k] += v * (1.0 if k in plain else min(1.0, C / float(norm)))
        for k, p in params.items():
            noisy = k not in plain
            p.grad = (grads[k] + (torch.randn(p.shape, generator=noise) * SIGMA * C if noisy else 0)) / BATCH
        opt.step()
    if bug == "bn_recalibrated":  # BatchNorm's running statistics recomputed on the private records
        m.train()
        with torch.no_grad():
            m(xt)
        m.eval()


def watched(fn: Any, seed: int, bn: bool = False) -> structural.Trace:
    torch.manual_seed(seed)  # as miaudit seeds torch before each model
    m = model(bn)
    x, y = data(seed)
    with structural.watch(m, K, N) as trace:
        fn(m, x, y)
    return trace


def kinds(bug: str | None, bn: bool = False, facts: AccountantFacts | None = FACTS) -> list[str]:
    fn = lambda m, x, y: dp_sgd(m, x, y, bug)
    target, reference = watched(fn, 1, bn), watched(fn, 2, bn)
    return [d.kind for d in structural.defects(target, [reference], facts, "fn")[0]]


@pytest.mark.parametrize("bug", [None, "public_init"])
def test_correct_dp_sgd_shows_no_defect_with_a_public_start_or_fresh_seeded_noise(bug: str | None) -> None:
    assert kinds(bug) == []


@pytest.mark.parametrize(
    ("bug", "bn", "kind"),
    [
        ("head_plain", False, "noiseless_updates"),  # the last layer on the plain gradient
        ("same_noise", False, "repeated_noise"),  # re-seeded with a constant at every step
        ("seed_per_run", False, "repeated_noise"),  # the same seed in every run: the same noise
        ("bn_recalibrated", True, "private_buffers"),  # BatchNorm's running statistics from the private records
    ],
)
def test_each_defect_is_found_directly(bug: str, bn: bool, kind: str) -> None:
    assert kinds(bug, bn) == [kind]


def test_a_correct_model_with_batchnorm_in_eval_mode_is_not_flagged() -> None:
    assert kinds(None, bn=True) == []


def opacus_fn(bug: str | None = None, told_rate: float = BATCH / N) -> Any:
    def train(m: nn.Module, x: np.ndarray, y: np.ndarray) -> dict[str, float]:
        from opacus import PrivacyEngine
        from torch.utils.data import DataLoader, TensorDataset

        import miaudit

        loader = DataLoader(TensorDataset(torch.as_tensor(x), torch.as_tensor(y)), batch_size=BATCH)
        params = list(m[0].parameters()) if bug == "head_outside" else list(m.parameters())
        base = torch.optim.SGD(params, lr=0.05)
        pm, opt, loader = PrivacyEngine().make_private(
            module=m, optimizer=base, data_loader=loader, noise_multiplier=SIGMA, max_grad_norm=C,
            poisson_sampling=bug != "head_outside",  # the head's per-example gradients pile up outside the optimizer
        )  # fmt: skip
        miaudit.dp_observe(opt, sample_rate=told_rate)  # a wrong rate given here changes nothing
        head = torch.optim.SGD(m[2].parameters(), lr=0.05) if bug == "head_outside" else None
        stepper = base if bug == "stale" else opt
        for xb, yb in loader:
            if len(yb):
                opt.zero_grad()
                nn.functional.cross_entropy(pm(xb), yb).backward()
                stepper.step()
                if head is not None:
                    head.step()
        pm.remove_hooks()
        return {"noise_multiplier": SIGMA, "sample_rate": told_rate, "steps": len(loader)}

    return train


@pytest.mark.filterwarnings("ignore")  # Opacus' notes (secure RNG off)
@pytest.mark.parametrize(
    ("bug", "told", "expected"),
    [
        (None, BATCH / N, []),
        ("stale", BATCH / N, ["optimizer_never_stepped", "steps_outside_dp", "noiseless_updates"]),
        ("head_outside", BATCH / N, ["unprotected_parameters", "steps_outside_dp", "noiseless_updates"]),
        (None, BATCH / N / 10, ["accountant_mismatch"]),  # accounted at a tenth of the rate drawn
    ],
)
def test_the_observed_opacus_optimizer(bug: str | None, told: float, expected: list[str]) -> None:
    pytest.importorskip("opacus")
    fn = opacus_fn(bug, told)
    outs: list[dict[str, float]] = []
    traces = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        m = model()
        with structural.watch(m, K, N) as trace:
            outs.append(fn(m, *data(seed)))
        traces.append(trace)
    facts = AccountantFacts.model_validate(outs[0])
    found = structural.defects(traces[0], traces[1:], facts, "fn")[0]
    assert [d.kind for d in found] == expected
    rate = structural.observed_rate(traces[0].observed, N)
    if bug == "stale":
        assert rate is None  # no noisy step drew a batch
    else:
        assert rate is not None and abs(rate - BATCH / N) < 0.03  # the batches drawn, not the rate it was told


def test_a_defect_violates_the_claim_and_the_verdict_names_it() -> None:
    from miaudit.dp.user_code import with_defects
    from miaudit.results import Defect, DPAudit
    from miaudit.results.dp import UserTraining

    training = UserTraining(function="m:f", claimed_epsilon=4.0, claimed_delta=1e-5, calls=3, target_records=10,
                            canaries_inserted=2, references_by="f", observed="-", not_observed="-")  # fmt: skip
    audit = DPAudit(kind="one-run", verdict="no violation detected: ...", epsilon_lb=0.1, confidence=0.95,
                    delta=1e-5, violated=False, training=training)  # fmt: skip
    assert with_defects(audit) == audit  # no defect: the statistical verdict stands
    found = training.model_copy(update={"defects": [Defect(kind="private_buffers", detail="BatchNorm statistics")]})
    flagged = with_defects(audit.model_copy(update={"training": found}))
    assert flagged.violated is True and flagged.verdict.startswith("violation")
    assert "private buffers" in flagged.verdict and "no violation detected" in flagged.verdict  # both, in order
