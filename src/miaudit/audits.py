"""The audits a config asks for, composed: the membership audit (``membership/run.py``) and, where the config's
``dp_audit:`` asks, the DP audit's epsilon lower bound on its chosen attack's scores (``dp/audit.py``). It sits
above the four audits (which import none of each other) and below the front doors; the Experiment comes from the
engine below them (``pipeline.prepare``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .attack_plan import Plan, audit_roles, build
from .config.run import RunConfig
from .config.target import TargetConfig
from .data.base import validate_arrays
from .errors import DataError
from .experiment.base import Experiment
from .experiment.given import audit_records, checked_sets
from .experiment.recipes import ModelRecipe
from .experiment.run import AttackRun, RunResult
from .membership import run
from .pipeline import prepare
from .progress import log
from .results import DPAudit
from .training import executor

if TYPE_CHECKING:  # torch and the LM's texts load only where a user's model is audited
    import torch.nn as nn

    from .experiment.own_lm import TextSets


def run_config(cfg: RunConfig) -> RunResult:
    """The whole audit of a config in memory; ``membership.decide.write`` puts it on disk. With ``executor: ray`` one
    cluster serves the run's training and attack tasks."""
    with executor.session(cfg.executor, log.info):
        return run_experiment(prepare(cfg))


def run_experiment(exp: Experiment) -> RunResult:
    """Every planned attack on a prepared experiment (``membership/run.py``), then the epsilon lower bound of the
    chosen attack's scores where the config asks for one (``dp_audit``)."""
    res = run.run_experiment(exp)
    res.dp_audit = dp_audit(exp, res.attacks)
    return res


def dp_audit(exp: Experiment, runs: list[AttackRun]) -> DPAudit | None:
    """results.json's ``dp_audit``: the chosen attack's epsilon lower bound (``miaudit.dp.audit``)."""
    if not isinstance(exp.cfg, RunConfig) or exp.cfg.dp_audit is None or exp.is_member is None:
        return None  # a scores-only audit trains nothing, so it has no DP-SGD to audit
    from .dp import audit

    spec = exp.cfg.dp_audit

    i = audit.chosen_attack([r.attack.label for r in runs], [r.attack.name for r in runs], spec.attack)
    accounted = (exp.target.privacy or {}).get("accounted_epsilon")
    return audit.two_run(runs[i].result.scores, exp.is_member, spec, exp.cfg, runs[i].attack.label, accounted)


def audit_endpoint(cfg: RunConfig, spec: TargetConfig, given: dict[str, tuple[np.ndarray, np.ndarray]]) -> RunResult:
    """``audit(target=Endpoint(...))``: the given sets checked and assembled, the endpoint asked, the references
    trained in ``spec.architecture`` by miaudit's loop (cached, as in a config)."""
    from .endpoint.target import audit_endpoint  # within this function only: the module's function
    from .experiment.recipes import reference_recipe

    n_classes = 1 + max(int(np.max(np.asarray(y))) for _, y in given.values() if len(y))
    sets = {name: validate_arrays(name, x, y, n_classes) for name, (x, y) in given.items()}
    first = next(iter(sets))
    for name, ds in sets.items():
        if ds.input_shape != sets[first].input_shape:
            raise DataError(f"{name}: records have shape {ds.input_shape}, {first} records {sets[first].input_shape}")
    planned = build(cfg, audit_roles(given, cfg))
    records, _, _ = audit_records(cfg, sets)
    recipe = reference_recipe(cfg, records.dataset, planned.head_dropout)
    exp = audit_endpoint(cfg, planned, records, spec, recipe, cfg.target_architecture)
    return run_experiment(exp)


def audit_given(
    cfg: RunConfig,
    plan: Plan,
    target: nn.Module,
    given: dict[str, tuple[np.ndarray, np.ndarray]],
    recipe: ModelRecipe,
    references_by: str,
    lm: TextSets | None = None,
) -> RunResult:
    """The given sets checked and assembled (``lm``: with a causal LM's texts), then ``target`` audited."""
    from .experiment import own_model

    records, origin, position = audit_records(cfg, checked_sets(target, given), lm)
    exp = own_model.audit_given(
        cfg,
        plan,
        records,
        target,
        recipe,
        source="given (Python API)",
        architecture=lm.name if lm else type(target).__name__,
        reference_field="model_factory",
        references_by=references_by,
        record_name=lambda i: f"{origin[i]} row {position[i]}",
    )
    return run_experiment(exp)
