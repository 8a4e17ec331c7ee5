"""The multi-run audit (``miaudit dp-audit --runs R``; Jagielski, Ullman & Oprea 2020; Nasr et al. 2021): R models
trained with one canary and R without it, each on the target's training records otherwise, with its own seed.

It audits the training ALGORITHM, not one deployed model: DP-SGD with the declared hyperparameters (noise
multiplier calibrated to the declared epsilon, sample rate, steps, clipping, optimizer) on the config's
architecture, every run starting from the worst-case start of ``worst_case`` (a crafted initial model and a
canary chosen for it, after Annamalai & De Cristofaro 2024). The 2R models train together, as one stack
(``stacked``: per-sample gradients with a model axis, each model its own Poisson sampler and noise); they are
not cached (each is fixed by its seed).

Each run gets the canary by an independent fair coin. Two bounds, both valid with no assumption on the model:
- the headline (``runs_as_canaries``): the 2R runs as 2R canaries of Steinke, Nasr & Jagielski's analysis
  (``bounds.one_run_epsilon_lb``): the mechanism that outputs all 2R models is (eps, delta)-DP with respect to
  each coin, since a coin changes one run's data set by one record. The auditor guesses "in" on the k = 2R / 10
  highest scores and "out" on the k lowest (k fixed in advance); under eps-DP the correct guesses are
  dominated by Binomial(2k, e^eps / (1 + e^eps)). It uses every run and both tails, so it is tighter than
- the two-run bound (``multi_run_bound``): each run's decision at a threshold chosen on a seeded half of the
  runs is one Bernoulli trial at the mechanism's TPR or FPR, bounded by Clopper-Pearson on the other half
  (``bounds.rate_bound``).
On the idealised black-box observer of DP-SGD from this start (the canary's coordinate of the final model,
moved by the canary and the noise only; digits at declared eps 8, 2 x 100 runs; benchmarks/dp_many_run.py) the
medians over 40 repetitions are 1.05 (binomial) and 0.00 (two-run).
The score is black-box: the final model's log-probability of the canary's label on the canary.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any

import numpy as np

from .. import data
from ..config.run import RunConfig
from ..errors import ConfigError
from ..experiment import datasets
from ..experiment.recipes import model_seed
from ..progress import ModelProgress
from ..training import dp_sgd, dp_stacked
from ..training.options import DPConfig
from . import audit, bounds, canaries, verdict, worst_case

RUN_ROLE = 5000  # model seeds of the runs: model_seed(seed, RUN_ROLE + 1 + i), apart from the references'
COIN_SEED = 0xC01  # the runs' coins
GUESS_SHARE = 10  # k = runs // 10 guesses each way, as the one-run audit's default (canaries.guesses)
CHUNK = 25  # models trained at once: memory ~ 5 x CHUNK x parameters floats


def multi_run_bound(
    scores: np.ndarray, included: np.ndarray, delta: float, confidence: float, seed: int
) -> dict[str, Any]:
    """The bound from one score per run and whether that run had the canary; threshold on a seeded half."""
    scores, included = np.asarray(scores, dtype=np.float64), np.asarray(included, dtype=bool)
    select = audit.halves(included, seed)
    threshold = audit.select_threshold(scores[select], included[select], delta, confidence)
    flagged, member = (scores >= threshold)[~select], included[~select]
    tp, fp, n1, n0 = (
        int((flagged & member).sum()),
        int((flagged & ~member).sum()),
        int(member.sum()),
        int((~member).sum()),
    )
    found = bounds.rate_bound(tp, n1, fp, n0, delta, confidence)
    return {
        "analysis": "multi-run",
        "epsilon_lower_bound": found.epsilon_lb,
        "max_attainable": bounds.rate_bound(n1, n1, 0, n0, delta, confidence).epsilon_lb,
        "confidence": confidence,
        "delta": delta,
        "runs": len(scores),
        "guesses": n1 + n0,
        "correct": tp + n0 - fp,
        "threshold": threshold,
        "tpr": found.tpr,
        "fpr": found.fpr,
        "source": bounds.SOURCE_TWO_RUN,
    }


def coins(seed: int, count: int) -> np.ndarray:
    """Which runs get the canary: independent fair coins, seeded apart from the runs' training seeds."""
    return np.random.default_rng(np.random.SeedSequence([seed, COIN_SEED])).random(count) < 0.5


def runs_as_canaries(
    scores: np.ndarray, included: np.ndarray, delta: float, confidence: float, seed: int
) -> dict[str, Any]:
    """The headline bound: each run's canary as one canary of Steinke et al.'s analysis, k = runs / 10 "in"
    guesses on the highest scores and k "out" guesses on the lowest (fixed before any score is seen)."""
    m = len(scores)
    k = max(1, m // GUESS_SHARE)
    g = canaries.guesses(scores, k, seed)
    truth = np.where(np.asarray(included, dtype=bool), 1, -1)
    r, v = int((g != 0).sum()), int(((g != 0) & (g == truth)).sum())
    return {
        "analysis": "binomial",
        "epsilon_lower_bound": bounds.one_run_epsilon_lb(m, r, v, confidence, delta),
        "max_attainable": bounds.one_run_epsilon_lb(m, r, r, confidence, delta),
        "confidence": confidence,
        "delta": delta,
        "runs": m,
        "included": int(np.sum(included)),
        "guesses": r,
        "correct": v,
        "source": bounds.SOURCE_ONE_RUN + "; each run's inclusion an independent fair coin",
    }


def run(cfg: RunConfig, runs: int) -> dict[str, Any]:
    """Train 2 x ``runs`` models, each with the canary by a fair coin, together (``stacked``), from the
    worst-case start (``worst_case``); bound epsilon from their canary scores."""
    spec = cfg.canaries
    if spec is not None and spec.implied_threat_model != "black-box":
        raise ConfigError(
            "canaries: the multi-run audit is black-box: it crafts its own canary (a worst-case input), so give "
            "no canaries or a black-box kind (random-label, natural, crafted)"
        )
    if runs < 2:
        raise ConfigError(f"--runs: at least 2 runs with and 2 without the canary, got {runs}")
    dp = cfg.train.dp
    if dp is None:
        raise ConfigError("train.dp: the multi-run audit trains with DP-SGD; give train.dp (epsilon or noise)")
    import torch

    from ..models import build_model

    started = time.perf_counter()
    ds = datasets.load(cfg)
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    build = lambda: dp_sgd.compatible(build_model(cfg.model, ds.input_shape, ds.n_classes))
    torch.manual_seed(model_seed(cfg.seed, RUN_ROLE))
    template = build()
    public = ds.x[split.population] if len(split.population) else ds.x[split.nonmembers]
    case = worst_case.craft(template, public)
    ds_c = worst_case.with_canary(ds, case)  # the canary: record len(ds)
    canary = len(ds)
    n = len(split.members)
    trainer = dp_stacked.StackedDPSGD(build, stacked_spec(cfg, dp, n), chunk=CHUNK)
    included = coins(cfg.seed, 2 * runs)
    train_idx = [np.append(split.members, canary) if inc else split.members for inc in included]
    seeds = [model_seed(cfg.seed, RUN_ROLE + 1 + i) for i in range(2 * runs)]
    with ModelProgress(2 * runs) as tracker:
        clock = [time.perf_counter()]

        def done(count: int) -> None:
            now = time.perf_counter()
            for _ in range(count - tracker.trained):
                tracker.finished("multi-run models", (now - clock[0]) / CHUNK, cached=False)
            clock[0] = now

        finals = trainer.train(ds_c.x, ds_c.y, train_idx, seeds, n, start=case.start, progress=done)
    scores = np.array([worst_case.score(template, p, case) for p in finals])
    privacy = privacy_record(trainer.spec, n, dp)
    confidence, delta = audit.one_run_level(cfg)
    about = {
        "threat_model": "black-box",
        "canary_kind": "worst-case",
        "observer": "log-probability of the canary's label",
        "audits": worst_case.THREAT_MODEL,
        "start": "crafted (worst case)",
        "worst_case": case.to_json(),
        "canaries": 1,
    }
    # the binomial analysis counts each run's coin as one canary: m = 2R (one record, in or out of each run)
    head = {**runs_as_canaries(scores, included, delta, confidence, cfg.seed), **about, "canaries": len(scores)}
    two_run = {**multi_run_bound(scores, included, delta, confidence, cfg.seed), **about}
    entries = [head, {**two_run, "included": int(included.sum())}]
    declared = audit.declared_epsilon(cfg.dp_audit, cfg)
    claim = audit.tightest(privacy, declared)
    return {
        "dataset": ds_c,
        "privacy": privacy,
        "scores": scores,
        "included": included,
        "dp_audit": {
            "kind": "multi-run",
            "bounds": entries,
            "headline": {k: head[k] for k in ("observer", "analysis", "threat_model", "canary_kind")},
            "epsilon_lb": head["epsilon_lower_bound"],
            "max_attainable": head["max_attainable"],
            **audit.claims(confidence, delta, declared, privacy),
            **verdict.multi_run(head, claim, privacy),
            "threat_model": worst_case.THREAT_MODEL,
            "how": f"{2 * runs} models ({int(included.sum())} with the canary, by fair coins) trained together by "
            f"stacked DP-SGD from a crafted start; {head['guesses']} guesses on the highest and lowest scores, "
            f"{head['correct']} correct; {time.perf_counter() - started:.0f} s. This {worst_case.THREAT_MODEL}",
        },
    }


def stacked_spec(cfg: RunConfig, dp: DPConfig, n: int) -> dp_stacked.StackSpec:
    """The DP-SGD algorithm of ``train_dp`` for a data set of n records: the hyperparameters and the noise
    multiplier Opacus' accountant calibrates to the declared epsilon."""
    train = cfg.train
    if train.optimizer != "sgd":
        raise ConfigError("train.optimizer: the multi-run audit's stacked DP-SGD trains with sgd")
    q = 1.0 / math.ceil(n / train.batch_size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sigma = dp_sgd.noise_multiplier(dp, q, train.epochs)
    planted = dp.planted_fault.kinds() if dp.planted_fault is not None else {}
    if set(planted) - {"noise_scale"}:  # refused rather than ignored: the audit would test a fault never planted
        raise ConfigError(
            f"train.dp.planted_fault: the multi-run audit's stacked DP-SGD plants noise_scale only, not "
            f"{', '.join(sorted(set(planted) - {'noise_scale'}))}; audit those faults with the one-run dp-audit"
        )
    fault = float(planted.get("noise_scale", 1.0))
    return dp_stacked.StackSpec(
        epochs=train.epochs,
        batch_size=train.batch_size,
        lr=train.lr,
        momentum=train.momentum,
        weight_decay=train.weight_decay,
        cosine=train.schedule == "cosine",
        noise_multiplier=sigma,
        max_grad_norm=dp.max_grad_norm,
        noise_scale=fault,
    )


def privacy_record(spec: dp_stacked.StackSpec, n: int, dp: DPConfig) -> dict[str, Any]:
    """What every run of the stack claims, as ``train_dp`` records it (all steps counted as noisy: a skipped
    empty batch only lowers the true epsilon)."""
    q, steps = spec.sample_rate(n), spec.epochs * spec.steps_per_epoch(n)
    epsilons = dp_sgd.accounted(spec.noise_multiplier, q, steps, dp.delta)
    return {
        "declared_epsilon": dp.epsilon,
        "accounted_epsilon": epsilons["rdp"],
        "accounted": epsilons,
        "delta": dp.delta,
        "noise_multiplier": spec.noise_multiplier,
        "max_grad_norm": spec.max_grad_norm,
        "sample_rate": q,
        "steps": steps,
        "accountant": f"opacus {dp_sgd.ACCOUNTANT} (noise calibration; accounted: {sorted(epsilons)})",
        **({"planted_fault": {"noise_scale": spec.noise_scale}} if spec.noise_scale != 1 else {}),
        "poisson_sampling": True,
        "clipping": "flat, stacked (torch.func / ghost norms)",
        "trainer": "stacked DP-SGD (miaudit.training.dp_stacked)",
    }
