"""The Python API: audit a model you trained on records you hold, or run a config.

    result = miaudit.audit(model, members=(x_in, y_in), nonmembers=(x_out, y_out),
                           population=(x_pop, y_pop), attacks=["attack-p", "bmia"])
    result.metrics            # per attack: AUC, TPR at FPR ...
    result.scores             # per-record table (pandas): scores, p-values, risk rank
    result.report("audit/")   # results.json, report.md, report.html, roc.png, scores.csv, scores.parquet

Records are ``(x, y)`` pairs of arrays or tensors, or a torch ``Dataset`` of
``(x, y)`` items. Members and non-members give ROC metrics; ``queries`` of
unknown membership give p-values and a risk ranking only. Reference models are
fresh copies of the target (every layer re-initialised) unless ``model_factory``
builds them, trained on random halves of ``population`` by miaudit's loop
(``train`` settings) unless ``train_fn(model, x, y)`` trains them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import audits, data, pipeline, report
from .attack_plan import audit_roles, build, fewest_references
from .config.run import DEFAULT_RUN, RunConfig, TrainConfig, from_dict, load
from .config.target import Endpoint
from .errors import ConfigError
from .experiment.given import Records, given_sets, read_records
from .experiment.run import RunResult
from .membership import decide
from .results import AuditPlan, AuditReport, InferencePlan, MultiRunPlan

if TYPE_CHECKING:  # torch and the training loop load in audit(): `miaudit score` never needs them (nor pandas)
    import pandas as pd
    import torch.nn as nn
    from typing_extensions import Unpack

    from .config.scores import ScoreConfig
    from .dataset_inference.infer import Inference
    from .dp.user_code import FunctionClaim
    from .lm.data import Tokenizer


TrainFn = Callable[["nn.Module", np.ndarray, np.ndarray], Any]


@dataclass
class AuditResult:
    """One audit in memory (what ``audit``, ``run`` and ``score`` return): metrics, the per-record table, the files.

    Attributes:
        run: the pipeline's result: the Experiment (data, split, models) and every attack's run.
    """

    run: RunResult

    @cached_property
    def decided(self) -> decide.Decided:  # every decision, made once (membership.decide): results, per-record table
        return decide.decide(self.run)

    @property
    def results(self) -> AuditReport:
        """What results.json holds, typed (``miaudit.results.AuditReport``); decided once (``decided``)."""
        return self.decided.results

    @property
    def metrics(self) -> dict[str, dict | None]:
        """Per attack row: AUC, TPR at each FPR level ... (None when membership is unknown)."""
        return {r.attack.label: None if r.metrics is None else r.metrics.to_json() for r in self.run.attacks}

    @property
    def scores(self) -> pd.DataFrame:
        """One row per audited record, most exposed first: scores, p-values and risk rank per attack."""
        return self.decided.scores.to_pandas()

    def __repr__(self) -> str:
        exp = self.run.experiment
        if exp.is_member is not None:
            who = f"{int(exp.is_member.sum())} members / {int((~exp.is_member).sum())} non-members"
        else:
            who = f"{len(exp.query_idx)} queries of unknown membership"
        tpr = {r.attack.label: r.metrics.tpr_at_fpr["0.01"] for r in self.run.attacks if r.metrics is not None}
        best = max(tpr, key=lambda label: tpr[label], default=None)
        top = "" if best is None else f"; highest TPR@1%: {best} {100 * tpr[best]:.1f}%"
        return f"<AuditResult {exp.dataset.name}: {who}, {len(self.run.attacks)} attack(s){top}>"

    def to_json(self) -> dict:
        """What ``results.json`` holds, as a dict (``results.dump()``)."""
        return self.results.dump()

    def report(self, out_dir: str | Path, force: bool = False) -> AuditReport:
        """Write results.json, report.md, report.html, roc.png, scores.csv and scores.parquet, atomically.

        Args:
            out_dir: the output directory (created if absent).
            force: write into a non-empty ``out_dir``, replacing miaudit's own files there and leaving any
                other file alone.

        Returns:
            What results.json holds (``results``).

        Raises:
            OutputDirError: ``out_dir`` is not empty and ``force`` is False, or cannot be written.
        """
        report.outdir.check(Path(out_dir), force, force_hint="force=True")
        return self.decided.write(Path(out_dir))


def run(config: RunConfig | dict | str | Path | None = None) -> AuditResult:
    """Run the audit a config describes: miaudit trains the target and the reference models.

    Args:
        config: a ``RunConfig``, a dict of its keys, the path of a YAML config, or None for the built-in
            default audit (``miaudit run`` without a config).

    Returns:
        The ``AuditResult``: ``.metrics``, ``.scores``, ``.report(dir)``.

    Raises:
        ConfigError: a bad key or value, in one line naming it.
        DataError, ModelError, AttackRequirementError: the data, a model or an attack's requirements.
    """
    return AuditResult(audits.run_config(_run_config(config)))


def _run_config(config: RunConfig | dict | str | Path | None) -> RunConfig:
    """A ``RunConfig`` from what ``run``, ``plan`` and ``export`` take (None: the built-in default audit)."""
    if config is None:
        return from_dict(DEFAULT_RUN)
    if isinstance(config, RunConfig):
        return config
    return from_dict(config) if isinstance(config, dict) else load(config)


def plan(
    config: RunConfig | dict | str | Path | None = None, halfwidth: float = 0.01, runs: int | None = None
) -> AuditPlan | MultiRunPlan | InferencePlan:
    """The audit's power and cost before it runs (``miaudit plan``): nothing is trained, cached or written.

    Returns:
        ``forecast.forecast``'s answer: split sizes, interval widths and the detectable TPR per FPR level, the
        members a wanted interval needs, and every model's training time (``forecast.lines`` prints it). For an
        infer-dataset config (``suspect:``, ``validation:``) ``InferencePlan``: the sets, the test's power, the time.

    Args:
        config: as ``run`` takes it.
        halfwidth: the wanted half-width of the TPR interval, for the members it needs.
        runs: plan the many-run DP audit ``miaudit dp-audit CONFIG --runs R`` instead (its power line and the
            training time of its 2R models, ``dp.runs_forecast.forecast``).

    Raises:
        ConfigError, DataError: as ``run``.
    """
    from . import forecast
    from .forecast import inference_forecast

    with data.cache_untouched():  # the data set read, from the cache where it is, not decoded into it
        if not isinstance(config, RunConfig) and inference_forecast.asks_inference(config):
            return inference_forecast.from_config(cast(dict | str | Path, config), runs=runs)
        cfg = _run_config(config)
        if runs is not None:
            from .dp import runs_forecast

            return runs_forecast.forecast(cfg, runs)
        return forecast.forecast(cfg, build(cfg), halfwidth=halfwidth)


def export(
    config: RunConfig | dict | str | Path | None, out: str | Path, layout: str = "npz", force: bool = False
) -> Path:
    """Write a run's model outputs (the target's and the references', from the cache or trained) for
    ``miaudit score`` (``miaudit export``); return where.

    Args:
        config: as ``run`` takes it.
        out: a .npz file (``layout="npz"``, the suffix added if missing) or a folder (``"lira"``: the LiRA code's).
        layout: ``"npz"`` (miaudit's) or ``"lira"``.
        force: replace an existing ``out``.

    Raises:
        ConfigError: a bad key or layout; OutputDirError: ``out`` exists and ``force`` is False.
    """
    import typing

    from .config.scores import Layout
    from .experiment import export  # the module (inside this function, the name is the module's)

    if layout not in typing.get_args(Layout):
        raise ConfigError(f"layout: {layout!r} is not {' or '.join(typing.get_args(Layout))}")
    export.destination(Path(out), layout, force)  # before any work
    return export.export(pipeline.prepare(_run_config(config)), Path(out), layout, force=force)


def _config(
    attacks: Sequence[str | dict] | str,
    references: int | None,
    train_settings: dict | TrainConfig | None,
    train_fn: TrainFn | None,
    has_population: bool = True,
    **keys: Any,
) -> RunConfig:
    if attacks != "auto":
        attacks = [attacks] if isinstance(attacks, (str, dict)) else list(attacks)
    if train_fn is not None and train_settings is not None:
        raise ConfigError(
            "train: settings of miaudit's training loop; with train_fn your function trains the references"
        )
    if isinstance(train_settings, TrainConfig):
        train_settings = train_settings.model_dump()
    refs = fewest_references(attacks, has_population) if references is None else references
    return from_dict({**keys, "attacks": attacks, "references": refs, "train": train_settings or {}})


def score(config: ScoreConfig | dict | str | Path) -> AuditResult:
    """Audit precomputed outputs (logits and membership masks of models trained elsewhere).

    Args:
        config: a ``ScoreConfig``, a mapping, or the path of a YAML score config.

    Returns:
        The ``AuditResult`` (``.metrics``, ``.scores``, ``.report(dir)``), as ``run`` gives.

    Raises:
        ConfigError: a bad key, or an attack that needs the models or the records' inputs.
        DataError: outputs that are missing, malformed or disagree with the index files.
    """
    from .experiment import precomputed

    return AuditResult(audits.run_experiment(precomputed.prepare(precomputed.as_config(config))))


def audit(
    target: nn.Module | str | Path | Endpoint,
    *,
    members: Records = None,
    nonmembers: Records = None,
    queries: Records = None,
    population: Records = None,
    validation: Records = None,
    attacks: Sequence[str | dict] | str = "auto",
    references: int | None = None,
    model_factory: Callable[[], nn.Module] | None = None,
    train_fn: TrainFn | None = None,
    train: dict | TrainConfig | None = None,
    mode: str = "offline",
    seed: int = 0,
    min_fpr: float | None = None,
    device: str = "cpu",
    name: str = "audit",
    calibration: float | None = 0.2,
    fdr: float = 0.05,
    tokenizer: Tokenizer | None = None,
    max_length: int | None = None,
) -> AuditResult:
    """Audit ``target``, a model you trained, on records you hold.

    Records are a pair ``(x, y)`` of arrays or tensors, or a torch ``Dataset`` of ``(x, y)`` items; lists of
    texts for a causal LM (docs/lm-audits.md). Give ``members`` and ``nonmembers`` (ROC metrics), or ``queries``
    of unknown membership (p-values and a ranking). Nothing is trained before every argument is checked.

    Args:
        target: the trained torch module (put in eval mode), a causal LM's directory, or an ``Endpoint``: a
            deployed model audited through its prediction API (docs/endpoint.md).
        members: records ``target`` trained on.
        nonmembers: records it did not train on.
        queries: records of unknown membership, instead of members and nonmembers.
        population: records it never saw: the reference models' pool and population-based attacks.
        validation: more such records, for QMIA and calibration.
        attacks: ``"auto"`` (with 2 or more references, the candidates measured on the references as
            pseudo-targets and the strongest run; with one, the leave-one-data-set-out rule), or attack
            names / rows as in a config's ``attacks``.
        references: reference models to train (default: the fewest the attacks need; with ``"auto"``, 4
            when there is a ``population``, else none).
        model_factory: builds a fresh reference model (default: a re-initialised copy of ``target``).
        train_fn: ``train_fn(model, x, y)`` trains a reference in place (default: miaudit's loop).
        train: settings of miaudit's training loop (``TrainConfig`` keys), without ``train_fn``.
        mode: ``offline`` or ``online``.
        seed: fixes the split of the given sets, the references and the attacks.
        min_fpr: the smallest FPR the audit must resolve.
        device: where the models run (``cpu``, ``cuda``, ``mps``, ``auto``).
        name: what reports call the data.
        calibration: without ``validation``, the share of ``population`` held out to calibrate every
            p-value (None: raw p-values, which can be far from valid).
        fdr: the false discovery rate of the records at risk.
        tokenizer: a causal LM's (default: its directory's), and ``max_length`` its tokens per text.

    Returns:
        The ``AuditResult``: ``.metrics``, ``.scores``, ``.report(dir)``.

    Raises:
        ConfigError, DataError, ModelError: one line naming the argument (``ValueError`` subclasses).
    """
    from .experiment import own_lm

    cfg = _config(
        attacks,
        references,
        train,
        train_fn,
        dataset={"name": name},
        mode=mode,
        seed=seed,
        min_fpr=min_fpr,
        device=device,
        calibration="none" if calibration is None else {"fraction": calibration},
        fdr=fdr,
        has_population=population is not None,
        **({"target": target.model_dump(exclude_unset=True)} if isinstance(target, Endpoint) else {}),
    )
    if isinstance(target, Endpoint):
        membership = {"members": members, "nonmembers": nonmembers, "queries": queries}
        given_endpoint = given_sets(membership, {"population": population, "validation": validation})
        return AuditResult(audits.audit_endpoint(cfg, target, given_endpoint))
    lm = own_lm.TextSets.of(target, tokenizer, max_length)  # a causal LM's texts; None for a classifier
    given = given_sets(
        {"members": members, "nonmembers": nonmembers, "queries": queries},
        {"population": population, "validation": validation},
        lm.read if lm else read_records,
    )
    planned = build(cfg, audit_roles(given, cfg), causal_lm=lm is not None)
    by = f"your train_fn {getattr(train_fn, '__qualname__', repr(train_fn))}" if train_fn else ""
    model = lm.model if lm else cast("nn.Module", target)
    if lm:
        recipe = lm.recipe(cfg, model_factory, train_fn)
    else:
        from .experiment.own_model import user_recipe

        recipe = user_recipe(cfg, model, model_factory, train_fn)
    return AuditResult(audits.audit_given(cfg, planned, model, given, recipe, by, lm))


def verify_unlearning(
    config: str | Path | dict,
    *,
    unlearn_fn: Callable[..., Any] | None = None,
    out: str | Path | None = None,
    overrides: Sequence[str] = (),
    force: bool = False,
) -> AuditReport:
    """Verify unlearning: did the forgotten records leave the model (docs/unlearning.md).

    ``config``: an audit config (YAML path or dict) with ``unlearning: {forget, method}``, or the unlearned model
    given as ``target: {architecture, checkpoint}`` with ``members:`` and ``unlearning: {forget: FILE}``.
    ``unlearn_fn(model, forget, retain)`` makes the unlearned model from a copy of the original (``forget``,
    ``retain``: ``(x, y)`` arrays; in place or returned), replacing ``unlearning.method``. ``out``: results.json,
    the reports, forget.csv, unlearned.safetensors, members.npy, forget.npy (None: nothing written); ``overrides``:
    as ``--set``; ``force``: a non-empty ``out``. Returns the report (``.unlearning``: the verdict, the p-value,
    the records named, every figure beside); ConfigError, DataError in one line before anything is trained."""
    from .unlearning.output import verify_config

    return verify_config(config, unlearn_fn=unlearn_fn, out=out, overrides=overrides, force=force)


def dp_audit(
    config: RunConfig | dict | str | Path | TrainFn | None = None,
    *,
    runs: int | None = None,
    out: str | Path | None = None,
    force: bool = False,
    say: Callable[[str], None] | None = None,
    **claim: Unpack[FunctionClaim],
) -> AuditReport:
    """A DP audit (``miaudit dp-audit``) of a config (YAML path, dict, ``RunConfig``: its ``train.dp`` or
    ``dp_training``), or of your own DP training function ``train_fn(model, x, y)`` (docs/dp-pipeline.md), e.g.
    ``dp_audit(train_fn, data="digits", epsilon=1.0, delta=1e-5, canaries={"count": 300, "kind": "crafted"})``;
    ``claim``: the function's claim and audit (``dp.user_code.FunctionClaim``). ``runs``: the many-run audit (a
    config's ``train.dp``). ``out``: write results.json and the reports there (None: nothing written; ``force``: a
    non-empty folder). Returns results.json's ``AuditReport`` (``.dp_audit.training``: whose code was audited, what
    the audit could and could not see); ConfigError, DataError, ModelError (one line) before any training."""
    from .dp import output, user_code

    fn, factory = None, None
    if callable(config) and not isinstance(config, (RunConfig, dict, str, Path)):
        fn, (cfg, factory) = config, user_code.function_config(config, **claim)
    elif claim:
        raise ConfigError(f"{next(iter(claim))}: applies to a training function; with a config, set it there")
    else:
        cfg = _run_config(config)
    if out is None:  # a one-run audit with attacks is a membership audit of the canaries: decide.written writes it
        return output.audit(cfg, None, runs, say or print, fn, factory, decide.written)
    with report.outdir.reserved(Path(out), force):
        return output.audit(cfg, Path(out), runs, say or print, fn, factory, decide.written)


def infer_dataset(
    config: str | Path | dict[str, Any], suspect: Records | None = None, validation: Records | None = None
) -> Inference:
    """Was a suspect set of records used to train the model? (``miaudit infer-dataset``, docs/dataset-inference.md)

    ``config``: a YAML path or a dict, a run config (the same models as ``run`` on it) with ``suspect:`` and
    ``validation:`` (record indices, or a .npy/.txt file of them) and optionally ``inference: {level,
    permutations}``; ``suspect`` and ``validation`` (indices or a file) replace the config's. Returns ``Inference``:
    ``.section`` (results.json's typed ``dataset_inference``), ``.results`` and ``.report(out_dir)``."""
    from .dataset_inference.infer import from_config

    return from_config(config, suspect, validation)
