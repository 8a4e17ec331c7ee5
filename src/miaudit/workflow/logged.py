"""What an audit logs to an experiment tracker, from its typed results alone (no tracker here): params, metrics,
tags and the artifact files. docs/workflow.md's table states it per command.

Every command: params ``command``, ``dataset``, ``model``, ``seed``, ``config_hash`` (the config without its
workflow keys: the same audit hashes the same, tracked or not); tags ``miaudit.version``, ``miaudit.command``,
``miaudit.verdict``; the headline metrics under ``headline.`` (each gate metric of the command, ``conditions.METRICS``).
``run`` and ``score`` add per attack ``<attack>.auc`` and ``.auc_lo`` / ``.auc_hi`` and ``<attack>.tpr_at_fpr_<level>``
with ``_lo`` / ``_hi`` (the exact interval), ``verdict.p_value``, ``verdict.adjusted_p_value``, ``verdict.leaks``
(1 or 0) and ``records_at_risk``; the others their section's numbers (``dp.``, ``unlearning.``, ``inference.``)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._version import __version__
from ..results import AuditReport, Metrics
from . import conditions, verdicts
from .verdicts import Command

ARTIFACTS = ("results.json", "report.md", "report.html", "roc.png")
WORKFLOW_KEYS = ("gate", "tracking")  # the config's keys that change where an audit goes, not what it finds


@dataclass
class Logged:
    """One audit's run in a tracker."""

    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[Path] = field(default_factory=list)


def name(text: str) -> str:
    """A metric name trackers accept (MLflow: letters, digits, ``_ - . /``): each run of other characters one
    ``_`` (an attack's label ``lira (n=2)``: ``lira_n_2``)."""
    return re.sub(r"[^A-Za-z0-9_\-./]+", "_", text).strip("_") or "_"


def config_hash(r: AuditReport) -> str:
    """sha256 of the config as validated, its workflow keys left out (16 hex digits)."""
    audit = {k: v for k, v in r.config.items() if k not in WORKFLOW_KEYS}
    return hashlib.sha256(json.dumps(audit, sort_keys=True, default=str).encode()).hexdigest()[:16]


def contents(r: AuditReport, command: Command, out: Path | None = None) -> Logged:
    """What ``command``'s results ``r`` log (``out``: the folder whose artifact files are logged)."""
    v = verdicts.BY_COMMAND[command](r)
    logged = Logged(
        params={
            "command": command,
            "dataset": r.dataset,
            "model": str(r.model),
            "seed": str(r.seed),
            "config_hash": config_hash(r),
            "n_records": str(r.n_records),
        },
        tags={"miaudit.version": __version__, "miaudit.command": command, "miaudit.verdict": v.word or "none"},
    )
    for key, value in {"references": r.references, "reference_model": r.reference_model, "mode": r.mode}.items():
        if value is not None:
            logged.params[key] = str(value)
    if r.attacks:
        logged.params["attacks"] = ", ".join(a.label for a in r.attacks)
    for metric in conditions.METRICS.values():  # the numbers the gate reads, as it reads them
        if (read := metric.readers.get(command)) is not None:
            for level in metric.levels or (None,):
                if (m := read(r, level)) is not None:
                    logged.metrics[name(f"headline.{metric.name}" + (f"_at_fpr_{level}" if level else ""))] = m.value
    if v.number is not None:
        logged.metrics["verdict.number"] = v.number
    _membership(r, logged)
    _sections(r, logged)
    if out is not None:
        logged.artifacts = [out / a for a in ARTIFACTS if (out / a).is_file()]
    return logged


def _membership(r: AuditReport, logged: Logged) -> None:
    """Per attack row: AUC and TPR at each FPR level, with their intervals; the verdict and the records at risk."""
    for a in r.tests:
        _row(name(a.label), a, logged)
    if r.blind_baseline is not None:
        _row("blind_baseline", r.blind_baseline, logged)
    v = r.verdict
    if v is not None:
        logged.metrics["verdict.leaks"] = float(v.leaks)
        for key, value in {"p_value": v.p_value, "adjusted_p_value": v.adjusted_p_value}.items():
            if value is not None:
                logged.metrics[f"verdict.{key}"] = value
    if r.records_at_risk is not None and r.records_at_risk.count is not None:
        logged.metrics["records_at_risk"] = r.records_at_risk.count


def _row(label: str, a: Metrics, logged: Logged) -> None:
    m = logged.metrics
    if a.auc is not None:
        m[f"{label}.auc"] = a.auc
    if a.auc_ci:
        m[f"{label}.auc_lo"], m[f"{label}.auc_hi"] = a.auc_ci
    for level, tpr in (a.tpr_at_fpr or {}).items():
        m[f"{label}.tpr_at_fpr_{level}"] = tpr
        if (ci := (a.tpr_at_fpr_ci or {}).get(level)) is not None:
            m[f"{label}.tpr_at_fpr_{level}_lo"], m[f"{label}.tpr_at_fpr_{level}_hi"] = ci


def _sections(r: AuditReport, logged: Logged) -> None:
    """The other commands' headline numbers: a DP audit's bounds, an unlearning's tests, a dataset inference's."""
    m, p = logged.metrics, logged.params
    if (d := r.dp_audit) is not None:
        p["dp.kind"] = d.kind
        m |= {"dp.epsilon_lb": d.epsilon_lb, "dp.confidence": d.confidence, "dp.delta": d.delta}
        for key, value in {
            "dp.max_attainable": d.max_attainable,
            "dp.declared_epsilon": d.declared_epsilon,
            "dp.accounted_epsilon": d.accounted_epsilon,
            "dp.violated": None if d.violated is None else float(d.violated),
        }.items():
            if value is not None:
                m[key] = value
    if (u := r.unlearning) is not None:
        p |= {"unlearning.method": u.method.label, "unlearning.forget": str(len(u.forget))}
        m |= {
            "unlearning.p_value": u.p_value,
            "unlearning.p_remembered": u.p_remembered,
            "unlearning.p_over_forgotten": u.p_over_forgotten,
            "unlearning.remembered": len(u.remembered),
        }
    if (i := r.dataset_inference) is not None:
        p |= {"inference.n_suspect": str(i.n_suspect), "inference.n_validation": str(i.n_validation)}
        m |= {"inference.p_value": i.p_value, "inference.auc": i.auc, "inference.blind_auc": i.blind.auc}
        if i.used is not None:
            m["inference.used"] = float(i.used)
        if i.fraction is not None:
            m["inference.fraction_used"] = i.fraction.estimate
            m["inference.fraction_used_lo"], m["inference.fraction_used_hi"] = i.fraction.ci
