"""``miaudit dp-audit``'s outputs. A one-run audit with input-space canaries writes a run's usual outputs (the
membership audit of its canaries: ``membership.decide.write``, handed in by the caller). A white-box-only audit (no
input-space canary, so no attack and no per-record table) and a multi-run audit write results.json with the keys a
run has where they apply (``target`` with ``dp``, ``dp_audit``, ``config``, ``environment``; the same
``AuditReport`` and writer as a run), report.md, report.html (the DP section alone) and scores.csv (one row per
gradient canary, or per trained model), atomically (``report.write_dp``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import data, report
from ..config.run import RunConfig
from ..errors import ConfigError
from ..experiment.run import RunResult
from ..report.records import without_attacks
from ..results import AuditReport, Calibration, DPAudit, Target
from . import bounds, multi_run, one_run
from .audit import declared_epsilon, one_run_level
from .canaries import guesses

if TYPE_CHECKING:
    from .user_code import ModelFactory


def results(cfg: RunConfig, ds: data.Dataset, target: Target, dp_audit: DPAudit) -> AuditReport:
    """results.json of a DP audit without attacks: the keys a run has where they apply, and ``dp_audit``."""
    return without_attacks(cfg, ds, cfg.model, target, Calibration(calibrated=False, records=0),
                           json.loads(cfg.model_dump_json()), dp_audit=dp_audit)  # fmt: skip


def _kept(results: AuditReport, columns: dict[str, np.ndarray], title: str, out: Path | None) -> AuditReport:
    """``report.write_dp`` into ``out``; nothing written without one (the Python API's ``out=None``)."""
    return results if out is None else report.write_dp(results, columns, title, out)


def whitebox(found: one_run.WhiteBoxAudit, cfg: RunConfig, out: Path | None) -> AuditReport:
    """A white-box-only audit (``one_run.run_whitebox``): one scores.csv row per gradient canary."""
    a, observed = found.dp_audit, found.observed
    target = Target(
        train_accuracy=a.target_train_accuracy,
        test_accuracy=a.target_test_accuracy,
        training_seconds=found.target.seconds,
        source="trained",
        dp=found.privacy,
    )
    k = next(b for b in a.bounds or [] if b.analysis == "binomial").guesses // 2
    columns = {
        "canary": np.arange(observed.count),
        "member": observed.included.astype(int),
        "score": np.asarray(observed.scores, dtype=np.float64),
        "guess": guesses(observed.scores, k, cfg.seed),
    }
    return _kept(results(cfg, found.dataset, target, a), columns, "white-box DP audit", out)


def multirun(found: multi_run.MultiRunAudit, cfg: RunConfig, out: Path | None) -> AuditReport:
    """A multi-run audit (``multi_run.run``): one scores.csv row per (run, canary) slot."""
    scores, included = np.asarray(found.scores, dtype=np.float64), np.asarray(found.included, dtype=bool)
    runs, count = scores.shape
    columns = {"run": np.repeat(np.arange(runs), count), "canary": np.tile(np.arange(count), runs),
               "member": included.reshape(-1).astype(int), "score": scores.reshape(-1)}  # fmt: skip
    res = results(cfg, found.dataset, Target(source="trained", dp=found.privacy), found.dp_audit)
    return _kept(res, columns, "multi-run DP audit", out)


def multi_run_power(cfg: RunConfig, runs: int) -> str:
    """What ``runs`` pairs of runs can show, said before any training: the most (every guess right) and what the
    ideal black-box observer of this DP-SGD expects (``multi_run.plan``); whether that is too little for the
    declared epsilon; and what more canaries per run would give when the config asks for few."""
    confidence, delta = one_run_level(cfg)
    count = multi_run.per_run(cfg)
    slots = 2 * runs * count
    mu, claim = multi_run.foreseen(cfg)
    k, expected = multi_run.planned_guesses(cfg, mu, slots, delta, confidence, claim)
    power = bounds.one_run_epsilon_lb(slots, 2 * k, 2 * k, confidence, delta)
    said = (
        f"power: {2 * runs} runs x {count} canar{'y' if count == 1 else 'ies'} per run ({slots} slots) can show at "
        f"most epsilon {power:.3f} "
        f"at confidence {confidence:g}; the ideal black-box observer of this DP-SGD (shift mu {mu:.2f}) expects "
        f"about {expected:.2f}"
    )
    if count < multi_run.PER_RUN:
        more = multi_run.plan(mu, 2 * runs * multi_run.PER_RUN, delta, confidence)[1]
        said += f" (about {more:.2f} with {multi_run.PER_RUN} canaries per run, canaries.count: {multi_run.PER_RUN})"
    declared = declared_epsilon(cfg.dp_audit, cfg)
    if declared is not None and power <= declared:
        return (
            f"{said}: too little power to detect any violation of the declared epsilon {declared:g}; more runs or "
            "canaries per run"
        )
    return said


def one_run_power(cfg: RunConfig) -> str | None:
    """What the one-run audit can show at most, said before any training: every observer's guesses all right,
    Bonferroni-corrected over the observers as the verdict is (``verdict.tests``), against the declared epsilon.
    None without canaries or a declared epsilon to compare with."""
    from ..attack_plan import build

    spec, declared = cfg.canaries, declared_epsilon(cfg.dp_audit, cfg)
    if spec is None:
        return None
    confidence, delta = one_run_level(cfg)
    observers: list[tuple[int, int]] = []  # (canaries, guesses each way) per observer
    if spec.implied_threat_model == "white-box":
        observers.append((spec.count, spec.guesses or max(1, spec.count // 10)))
    else:
        # every planned attack scores the canaries and is an observer of the verdict, a ranking one included
        tests = len(build(cfg.revised(calibration=None)).attacks)
        observers += [(spec.count, spec.guesses or max(1, spec.count // 10))] * tests
        if spec.gradient:
            observers.append((spec.gradient, spec.gradient_guesses or max(1, spec.gradient // 10)))
    if not observers:
        return None
    corrected = 1 - (1 - confidence) / len(observers)
    power = max(
        bounds.one_run_epsilon_lb(m, 2 * min(k, m // 2), 2 * min(k, m // 2), corrected, delta) for m, k in observers
    )
    said = (
        f"power: {spec.count} canaries, {len(observers)} observer(s): the bound can show at most epsilon {power:.3f} "
        f"(every guess right) at confidence {confidence:g}"
    )
    if declared is not None and power <= declared:
        return (
            f"{said}: too little power to detect any violation of the declared epsilon {declared:g}; more canaries "
            "(canaries.count) or more guesses (canaries.guesses)"
        )
    return said


def _membership(
    written: Callable[[RunResult, Path | None], AuditReport] | None,
) -> Callable[[RunResult, Path | None], AuditReport]:
    """``written``, which an audit with attacks on the canaries needs (its membership audit of them)."""
    if written is None:
        raise ValueError("dp.output.audit: an audit with attacks needs written (miaudit.membership.decide.written)")
    return written


def audit(
    cfg: RunConfig,
    out: Path | None,
    runs: int | None = None,
    say: Callable[[str], None] = print,
    train_fn: Callable[..., object] | None = None,
    model: ModelFactory | None = None,
    written: Callable[[RunResult, Path | None], AuditReport] | None = None,
) -> AuditReport:
    """``miaudit dp-audit`` (and ``miaudit.dp_audit``): the multi-run audit with ``runs``, else the one-run audit
    (white-box only, or with input-space canaries and attacks; of a user's training function with ``dp_training``,
    ``user_code``, which ``train_fn`` and ``model`` give from Python); its outputs written into ``out`` (None:
    nothing written). ``say`` gets the lines said before training (the multi-run audit's power). ``written``
    decides and writes an audit with attacks on the canaries, a membership audit of them
    (``miaudit.membership.decide.written``, which the caller above both packages gives: dp never imports it)."""
    if cfg.dp_training is not None:
        if runs is not None:
            raise ConfigError(
                "--runs: the many-run audit trains miaudit's stacked DP-SGD; of your dp_training function only the "
                "one-run audit is built (omit --runs)"
            )
        from . import user_code

        res = user_code.run(cfg, train_fn, model)
        return _membership(written)(res, out)
    if runs is not None:
        multi_run.check(cfg, runs)  # every refusal before the power line
        say(multi_run_power(cfg, runs))
        return multirun(multi_run.run(cfg, runs), cfg, out)
    one_run.check(cfg)
    if (power := one_run_power(cfg)) is not None:
        say(power)
    if cfg.canaries is not None and cfg.canaries.implied_threat_model == "white-box":
        return whitebox(one_run.run_whitebox(cfg), cfg, out)
    res = one_run.run(cfg)
    return _membership(written)(res, out)
