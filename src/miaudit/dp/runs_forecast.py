"""``miaudit plan CONFIG --runs R``: the many-run DP audit (``multi_run``) before it runs: its power line, said
as ``miaudit dp-audit --runs R`` says it before training, and the training time of its 2R models from one epoch
of one stack timed on this machine. Nothing is cached or written."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import torch

from ..config.run import RunConfig
from ..experiment.recipes import model_seed
from ..results import MultiRunPlan
from ..training import dp_stacked
from . import multi_run
from .output import multi_run_power


def forecast(cfg: RunConfig, runs: int) -> MultiRunPlan:
    """``miaudit plan CONFIG --runs R``: the many-run DP audit ``miaudit dp-audit --runs R`` would run: its power
    line (said before any training, as dp-audit says it) and the training time of its 2R models, one epoch of
    one stack timed on this machine (``training_seconds``); nothing is cached or written."""
    multi_run.check(cfg, runs)
    seconds, epoch = training_seconds(cfg, runs)
    return MultiRunPlan(
        command=f"dp-audit --runs {runs}",
        runs=runs,
        models=2 * runs,
        canaries_per_run=multi_run.per_run(cfg),
        power=multi_run_power(cfg, runs),
        seconds_per_epoch_of_a_stack=epoch,
        estimated_training_seconds=seconds,
    )


def lines(f: MultiRunPlan) -> list[str]:
    """What ``miaudit plan --runs R`` prints."""
    return [
        f"many-run DP audit (miaudit {f.command}): {f.models} runs (2 x {f.runs}) of DP-SGD, "
        f"{f.canaries_per_run} canaries per run (each in its run by a fair coin), trained together by stacked "
        "DP-SGD, not cached",
        f.power,
        f"training: about {f.estimated_training_seconds:.0f} s for {f.models} models (one epoch of a stack "
        f"{f.seconds_per_epoch_of_a_stack:.2f} s, timed on this machine)",
    ]


def training_seconds(cfg: RunConfig, runs: int) -> tuple[float, float]:
    """(the predicted training time of the 2 x ``runs`` models, the measured seconds of one epoch of one stack):
    one epoch of a stack of min(2 x runs, CHUNK) models timed on this machine as ``run`` trains them (one thread),
    scaled to the stacks and epochs. Nothing is kept."""
    multi_run.check(cfg, runs)
    ds, split, spec = multi_run.setting(cfg)
    count, n = multi_run.per_run(cfg), len(split.members)
    case, x, y = multi_run.with_canaries(ds, split, count)
    size = min(2 * runs, multi_run.CHUNK)
    trainer = dp_stacked.StackedDPSGD(
        case.model, replace(spec, train=spec.train.revised(epochs=1)), chunk=multi_run.CHUNK
    )
    included = multi_run.coins(cfg.seed, 2 * size * count).reshape(2 * size, count)[:size]
    canary_ids = len(ds) + np.arange(count)
    train_idx = [np.append(split.members, canary_ids[inc]) for inc in included]
    seeds = [model_seed(cfg.seed, multi_run.RUN_ROLE + 1 + i) for i in range(size)]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        started = time.perf_counter()
        trainer.train(case.features(x), y, train_idx, seeds, n, start=case.start())
        epoch = time.perf_counter() - started
    finally:
        torch.set_num_threads(threads)
    return epoch * math.ceil(2 * runs / multi_run.CHUNK) * spec.train.epochs, epoch
