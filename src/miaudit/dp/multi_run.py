"""The multi-run audit (``miaudit dp-audit --runs R``; Jagielski, Ullman & Oprea 2020; Nasr et al. 2021;
Steinke, Nasr & Jagielski 2023): 2R DP-SGD runs, each on the target's training records plus ``count`` canaries
(``canaries.count``: canaries PER RUN, default ``PER_RUN``), each canary in each run by an independent fair coin.

It audits the training ALGORITHM, not one deployed model: DP-SGD with the declared hyperparameters (noise
multiplier calibrated to the declared epsilon, sample rate, steps, clipping, optimizer, schedule), from the
worst-case start of ``worst_case`` (a crafted model and start, canaries chosen for it, after Annamalai & De
Cristofaro 2024). DP-SGD's guarantee holds for every model, so the runs train the smallest model that realises
that start (a linear read-out of one feature per canary), not the config's architecture: seconds, not hours. The
2R models train together, as one stack (``training.dp_stacked``: per-sample gradients with a model axis, each
model its own Poisson sampler and noise); they are not cached (each is fixed by its seed).

Two bounds, both valid with no assumption on the model:
- the headline (``pooled_canaries``): the 2R x count (run, canary) slots as canaries of Steinke, Nasr &
  Jagielski's analysis (``bounds.one_run_epsilon_lb``). The mechanism that outputs all 2R models is
  (eps, delta)-DP with respect to each slot's coin, whatever the other coins: the coin adds or removes one record
  of one run's data set (DP-SGD's guarantee, for any data set), and the other runs do not depend on it. Their
  theorem needs nothing more (no independence between the slots of one run). The auditor guesses "in" on the k
  highest scores and "out" on the k lowest, k fixed before training from the hyperparameters alone: ``plan``'s
  (the largest bound the ideal observer of correct DP-SGD expects), raised to ``powered``'s where that is too
  few for the bound to exceed the claim at all; under eps-DP the correct guesses are dominated by
  Binomial(2k, e^eps / (1 + e^eps)).
- the two-run bound (``multi_run_bound``) on the first canary of each run (one decision per run: independent
  trials): each run's decision at a threshold chosen on a seeded half of the runs is one Bernoulli trial at the
  mechanism's TPR or FPR, bounded by Clopper-Pearson on the other half (``bounds.rate_bound``).
A planted fault (``train.dp.planted_fault``: every kind) is planted into the stacked DP-SGD (``stacked_spec``).
What more canaries buy: the final model shows each canary only through the sum of its clipped steps and the noise
(a Gaussian shift of about mu = q sum(c_t) / (sigma sqrt(sum(c_t^2))), c_t a step's weight in the final model: ~1
at declared eps 8 on digits), so one canary per run caps the bound near 1 at R = 100
(benchmarks/dp_many_run/dp_many_run.md); more slots let the binomial analysis resolve the tail of that shift.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
import torch
from pydantic import JsonValue
from scipy import optimize, stats

from .. import data
from ..config.run import RunConfig
from ..errors import ConfigError
from ..experiment import datasets
from ..experiment.recipes import model_seed
from ..progress import ModelProgress
from ..results import Bound, ComparedWith, DPAudit, DPSGDRecord, Headline
from ..training import dp_sgd, dp_stacked
from ..training.options import DPConfig
from . import audit, bounds, canaries, verdict, worst_case
from .answer import answered

RUN_ROLE = 5000  # model seeds of the runs: model_seed(seed, RUN_ROLE + 1 + i), apart from the references'
COIN_SEED = 0xC01  # the slots' coins
PER_RUN = 16  # canaries per run when the config gives no canaries section
POWER_HEADROOM = 1.1  # ``powered``: how far above the claim the bound must reach with every guess right
CHUNK = 50  # models trained at once


def multi_run_bound(scores: np.ndarray, included: np.ndarray, delta: float, confidence: float, seed: int) -> Bound:
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
    return Bound(
        analysis="multi-run",
        epsilon_lower_bound=found.epsilon_lb,
        max_attainable=bounds.rate_bound(n1, n1, 0, n0, delta, confidence).epsilon_lb,
        confidence=confidence,
        delta=delta,
        runs=len(scores),
        guesses=n1 + n0,
        correct=tp + n0 - fp,
        threshold=threshold,
        tpr=found.tpr,
        fpr=found.fpr,
        source=bounds.SOURCE_TWO_RUN,
    )


def coins(seed: int, count: int) -> np.ndarray:
    """Which slots get their canary: independent fair coins, seeded apart from the runs' training seeds."""
    return np.random.default_rng(np.random.SeedSequence([seed, COIN_SEED])).random(count) < 0.5


def pooled_canaries(
    scores: np.ndarray, included: np.ndarray, k: int, delta: float, confidence: float, seed: int
) -> Bound:
    """The headline bound: every (run, canary) slot as one canary of Steinke et al.'s analysis, k "in" guesses on
    the highest scores and k "out" guesses on the lowest (k fixed before any score is seen: ``plan``)."""
    scores, included = np.asarray(scores).reshape(-1), np.asarray(included, dtype=bool).reshape(-1)
    m = len(scores)
    g = canaries.guesses(scores, k, seed)
    truth = np.where(included, 1, -1)
    r, v = int((g != 0).sum()), int(((g != 0) & (g == truth)).sum())
    return Bound(
        analysis="binomial",
        epsilon_lower_bound=bounds.one_run_epsilon_lb(m, r, v, confidence, delta),
        max_attainable=bounds.one_run_epsilon_lb(m, r, r, confidence, delta),
        confidence=confidence,
        delta=delta,
        canaries=m,
        included=int(included.sum()),
        guesses=r,
        correct=v,
        source=bounds.SOURCE_ONE_RUN + "; each (run, canary) slot's inclusion an independent fair coin",
    )


def step_weights(spec: dp_stacked.StackSpec, n: int) -> np.ndarray:
    """c_t: how much step t's update moves the final parameters (SGD with momentum: sum over s >= t of
    lr_s momentum^(s - t); weight decay neglected; AdamW's normalised steps are not modelled: planned as SGD's)."""
    lrs = np.repeat(spec.lr_rates(), spec.steps_per_epoch(n))
    out, carry = np.empty(len(lrs)), 0.0
    for t in range(len(lrs) - 1, -1, -1):  # c_t = lr_t + momentum c_{t+1}
        carry = lrs[t] + spec.train.momentum * carry
        out[t] = carry
    return out


def ideal_shift(spec: dp_stacked.StackSpec, n: int) -> float:
    """mu: the shift, in noise standard deviations, of a canary's coordinate in the final model between runs with
    and without it, for the ideal black-box observer (every sampled step's clipped gradient on that coordinate, in
    one direction): q sum(c_t) / (sigma sum(c_t^2)^(1/2)). Of the DP-SGD as claimed (sigma the noise multiplier
    the accountant calibrated): a planted fault is not the auditor's to know, so it never shapes the plan."""
    c = step_weights(spec, n)
    return float(spec.sample_rate(n) * c.sum() / (spec.noise_multiplier * math.sqrt(float((c**2).sum()))))


def expected_correct(mu: float, slots: int, k: int) -> float:
    """Expected correct guesses of k "in" on the highest and k "out" on the lowest of ``slots`` scores, half
    N(mu, 1) (in) and half N(0, 1) (out)."""
    t = optimize.brentq(lambda t: slots / 2 * (stats.norm.sf(t) + stats.norm.sf(t - mu)) - k, -50, 50)
    return 2 * slots / 2 * float(stats.norm.sf(t - mu))


def plan(mu: float, slots: int, delta: float, confidence: float) -> tuple[int, float]:
    """k (guesses each way) maximising the binomial bound the ideal observer's expected guesses give, and that
    bound: a function of the hyperparameters alone, fixed before any training (so the bound stays valid)."""
    ks = grid(slots)
    best = (ks[-1], 0.0)
    for k in ks:
        v = min(2 * k, int(math.floor(expected_correct(mu, slots, k))))
        found = bounds.one_run_epsilon_lb(slots, 2 * k, v, confidence, delta)
        if found > best[1]:
            best = (k, found)
    return best


def powered(slots: int, claim: float, delta: float, confidence: float) -> int | None:
    """The fewest guesses each way (on ``plan``'s grid) whose bound, every guess right, exceeds ``POWER_HEADROOM``
    x the claimed epsilon, or None when no number of guesses can (too few slots). A gross fault then shows as a
    violation, where ``plan``'s k, chosen for the largest bound under correct DP-SGD, can cap the bound below the
    claim however many guesses are right (at declared epsilon 4 on digits: 3.32 < 3.66 with 92 of 92 right).
    A function of the hyperparameters alone, fixed before training: the bound stays valid."""
    for k in grid(slots):
        if bounds.one_run_epsilon_lb(slots, 2 * k, 2 * k, confidence, delta) > POWER_HEADROOM * claim:
            return k
    return None


def grid(slots: int) -> list[int]:
    """The guesses each way ``plan`` and ``powered`` consider: 0.2% to 25% of the slots, geometric."""
    return sorted({max(1, int(round(slots * f))) for f in np.geomspace(0.002, 0.25, 40)})


def planned_guesses(
    cfg: RunConfig, mu: float, slots: int, delta: float, confidence: float, claim: float | None
) -> tuple[int, float]:
    """k and the ideal observer's expected bound with ``plan``'s k: ``canaries.guesses`` if given, else the
    larger of ``plan``'s k and ``powered``'s (when the claim can be exceeded at all)."""
    k, expected = plan(mu, slots, delta, confidence)
    enough = powered(slots, claim, delta, confidence) if claim is not None else None
    k = max(k, enough or 0)
    given = cfg.canaries.guesses if cfg.canaries is not None else None
    if given is not None:
        if 2 * given > slots:
            raise ConfigError(f"canaries.guesses: 2 x {given} exceeds the {slots} (run, canary) slots")
        k = given
    return k, expected


def per_run(cfg: RunConfig) -> int:
    """Canaries per run: ``canaries.count``, or PER_RUN without a canaries section."""
    return cfg.canaries.count if cfg.canaries is not None else PER_RUN


def setting(cfg: RunConfig) -> tuple[data.Dataset, data.Split, dp_stacked.StackSpec]:
    """The data set, its split and the DP-SGD every run takes (``stacked_spec``); train.dp refused if absent."""
    dp = cfg.train.dp
    if dp is None:
        raise ConfigError("train.dp: the multi-run audit trains with DP-SGD; give train.dp (epsilon or noise)")
    ds = datasets.load(cfg)
    split = data.split_indices(len(ds), cfg.seed, cfg.split.as_tuple())
    return ds, split, stacked_spec(cfg, dp, len(split.members))


def claim_of(cfg: RunConfig, privacy: DPSGDRecord) -> tuple[str, float] | None:
    """The claim the audit tests: the smallest of the declared and the accounted epsilons."""
    return audit.tightest(privacy, audit.declared_epsilon(cfg.dp_audit, cfg))


def foreseen(cfg: RunConfig) -> tuple[float, float | None]:
    """``ideal_shift`` of the config's DP-SGD and the epsilon it claims (``claim_of``), with no training."""
    _, split, spec = setting(cfg)  # refuses a config without train.dp
    dp = cfg.train.dp
    assert dp is not None  # setting refused it
    n = len(split.members)
    found = claim_of(cfg, privacy_record(spec, n, dp))
    return ideal_shift(spec, n), None if found is None else found[1]


@dataclass(frozen=True)
class MultiRunAudit:
    """A multi-run audit's findings (``run``): what ``output.multirun`` writes."""

    dataset: data.Dataset  # the data with the crafted canaries appended
    privacy: DPSGDRecord  # what every run claims (``privacy_record``)
    scores: np.ndarray  # (2R, count): each canary's score in each run
    included: np.ndarray  # (2R, count): whether that run had it
    dp_audit: DPAudit


def with_canaries(
    ds: data.Dataset, split: data.Split, count: int
) -> tuple[worst_case.WorstCase, np.ndarray, np.ndarray]:
    """The worst-case canaries crafted on the public records, and the records with them appended (canary j:
    record len(ds) + j)."""
    public = ds.x[split.population] if len(split.population) else ds.x[split.nonmembers]
    case = worst_case.craft(public, ds.n_classes, count)
    x = np.concatenate([ds.x, case.inputs.astype(ds.x.dtype)])
    y = np.concatenate([ds.y, case.labels.astype(ds.y.dtype)])
    return case, x, y


def check(cfg: RunConfig, runs: int) -> None:
    """Every refusal of the multi-run audit, before anything is computed or trained (the power line included)."""
    spec = cfg.canaries
    if spec is not None and spec.implied_threat_model != "black-box":
        raise ConfigError(
            "canaries: the multi-run audit is black-box: it crafts its own canaries (worst-case inputs), so give "
            "no canaries or a black-box kind (random-label, natural, crafted)"
        )
    if runs < 2:
        raise ConfigError(f"--runs: at least 2 runs with and 2 without the canary, got {runs}")
    if cfg.train.dp is None:
        raise ConfigError("train.dp: the multi-run audit trains with DP-SGD; give train.dp (epsilon or noise)")


def run(cfg: RunConfig, runs: int) -> MultiRunAudit:
    """Train 2 x ``runs`` models, each with each of its canaries by a fair coin, together (``dp_stacked``), from
    the worst-case start (``worst_case``); bound epsilon from the canaries' black-box scores."""
    check(cfg, runs)
    started = time.perf_counter()
    ds, split, spec_dp = setting(cfg)
    dp = cfg.train.dp
    assert dp is not None  # setting refused it
    count, n = per_run(cfg), len(split.members)
    case, x, y = with_canaries(ds, split, count)
    trainer = dp_stacked.StackedDPSGD(case.model, spec_dp, chunk=CHUNK)
    slots = 2 * runs * count
    confidence, delta = audit.one_run_level(cfg)
    mu = ideal_shift(trainer.spec, n)
    privacy = privacy_record(trainer.spec, n, dp)
    claim = claim_of(cfg, privacy)
    k, expected = planned_guesses(cfg, mu, slots, delta, confidence, None if claim is None else claim[1])
    included = coins(cfg.seed, slots).reshape(2 * runs, count)
    canary_ids = len(ds) + np.arange(count)
    train_idx = [np.append(split.members, canary_ids[inc]) for inc in included]
    seeds = [model_seed(cfg.seed, RUN_ROLE + 1 + i) for i in range(2 * runs)]
    with ModelProgress(2 * runs) as tracker:
        clock = [time.perf_counter()]

        def done(trained: int) -> None:  # one line per stack of up to CHUNK models, not one per model
            now, new = time.perf_counter(), trained - tracker.trained
            for j in range(new):
                tracker.finished("multi-run models", (now - clock[0]) / new, cached=False, together=new,
                                 say=j == new - 1)  # fmt: skip
            clock[0] = now

        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tensors of a few thousand numbers: a second thread only spins
        try:
            finals = trainer.train(case.features(x), y, train_idx, seeds, n, start=case.start(), progress=done)
        finally:
            torch.set_num_threads(threads)
    scores = np.stack([worst_case.scores(case, p) for p in finals])  # (2R, count)
    observer = (
        "log-probability of the canary's label (minus the mean over classes) at the canary minus at a blank input"
    )
    about = {
        "threat_model": "black-box",
        "canary_kind": "worst-case",
        "observer": observer,
        "audits": worst_case.THREAT_MODEL,
        "start": "crafted (worst case)",
        "worst_case": case.described(),
        "runs": 2 * runs,
    }
    pooled = pooled_canaries(scores, included, k, delta, confidence, cfg.seed)
    head = Bound.model_validate({**pooled.model_dump(exclude_unset=True), **about, "expected_ideal": expected})
    first = multi_run_bound(scores[:, 0], included[:, 0], delta, confidence, cfg.seed)
    two_run = Bound.model_validate(
        {
            **first.model_dump(exclude_unset=True),
            **about,
            "canaries": 2 * runs,
            "included": int(included[:, 0].sum()),
            "observer": f"the first canary of each run: {observer}",
        }  # fmt: skip
    )
    declared = audit.declared_epsilon(cfg.dp_audit, cfg)
    violated, said = verdict.multi_run(head, claim, privacy)
    return MultiRunAudit(
        dataset=replace(ds, name=f"{ds.name}+worst-case-canaries", x=x, y=y),
        privacy=privacy,
        scores=scores,
        included=included,
        dp_audit=answered(
            DPAudit(
                kind="multi-run",
                bounds=[head, two_run],
                headline=Headline(
                    observer=observer, analysis=head.analysis, threat_model="black-box", canary_kind="worst-case"
                ),  # fmt: skip
                epsilon_lb=head.epsilon_lower_bound,
                max_attainable=head.max_attainable,
                **vars(audit.claims(confidence, delta, declared, privacy)),
                violated=violated,
                verdict=said,
                compared_with=None if claim is None else ComparedWith(claim=claim[0], epsilon=claim[1]),
                threat_model=worst_case.THREAT_MODEL,
                how=f"{2 * runs} models trained together by stacked DP-SGD from a crafted start, {count} "
                f"canar{'y' if count == 1 else 'ies'} each ({head.included} of the {slots} slots with their canary, "
                f"by fair coins); {head.guesses} guesses on the highest and lowest scores, {head.correct} correct; "
                f"the ideal black-box observer of this DP-SGD (shift mu {mu:.2f}) expects about {expected:.2f} from "
                f"{slots} slots "
                f"({time.perf_counter() - started:.0f} s). This {worst_case.THREAT_MODEL}",
            )
        ),
    )


def stacked_spec(cfg: RunConfig, dp: DPConfig, n: int) -> dp_stacked.StackSpec:
    """The DP-SGD algorithm of ``train_dp`` for a data set of n records: the hyperparameters, the planted faults
    and the noise multiplier Opacus' accountant calibrates to the declared epsilon."""
    return dp_stacked.StackSpec.of(cfg.train, dp, n)


def privacy_record(spec: dp_stacked.StackSpec, n: int, dp: DPConfig) -> DPSGDRecord:
    """What every run of the stack claims, as ``train_dp`` records it (all steps counted as noisy: a skipped
    empty batch only lowers the true epsilon; a planted sampling fault: the accountant told the smaller rate)."""
    q, steps = spec.accounted_rate(n), spec.train.epochs * spec.steps_per_epoch(n)
    epsilons: dict[str, JsonValue] = dict(dp_sgd.accounted(spec.noise_multiplier, q, steps, dp.delta))
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
        **(
            {"planted_fault": {**dp.planted_fault.kinds(), "description": dp.planted_fault.description()}}
            if dp.planted_fault is not None
            else {}
        ),  # fmt: skip
        "poisson_sampling": True,
        "clipping": "flat, stacked (torch.func / ghost norms)",
        "trainer": "stacked DP-SGD (miaudit.training.dp_stacked)",
    }
