"""A membership audit's every decision, once, before anything is written (``decide``): the verdict and its answer
(``verdict``), the records at risk and why none (``at_risk``, ``findings``), the worst case, PPV, the headline attack
of ``auto``; results.json (the typed ``AuditReport``) and the per-record table (``scores``) built from them.
``miaudit.report`` renders those two alone (``report.write_decided``; ``miaudit report DIR`` from the files)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .. import lm, report
from .._version import __version__
from ..config.run import RunConfig
from ..experiment import announce, budget
from ..experiment.base import Experiment
from ..experiment.run import AttackRun, RunResult
from ..report.at_risk import preview
from ..report.ranking import attack_kind
from ..report.records import environment
from ..report.table import ScoresTable
from ..results import (
    SCHEMA_VERSION,
    AttackChoice,
    AttackRow,
    AuditReport,
    Calibration,
    JsonObject,
    Ranking,
    ReferenceModel,
    Target,
)
from ..stats import metrics
from . import at_risk, findings, verdict
from .ranking import headline_log_pvalues, risk_values
from .scores import scores_frame

UNKNOWN_MEMBERSHIP_NOTE = (
    "membership of the queries is unknown: no ROC metrics; each attack's p-values and "
    "the risk ranking (scores.csv, column risk_rank) are the result"
)


UNCALIBRATED_NOTE = (
    "p-values are NOT calibrated (calibration: none): they rest on each attack's own null model, which can be "
    "far off; BMIA's raw t-test flagged 13-31% of true non-members at p < 0.05 in our benchmarks "
    "(docs/conventions.md, p-values)"
)
CANARIES_RAW_NOTE = (
    "the canaries' p-values are raw, never calibrated in a DP audit: random-label or crafted canaries are not "
    "exchangeable with the validation records a calibration would rank them among; the DP verdict rests on the "
    "canaries' guesses, not on these p-values"
)


def truthful_config(res: RunResult) -> JsonObject:
    """The run's config; for a model the user brought, its model keys say what was audited, not defaults."""
    exp = res.experiment
    config: JsonObject = json.loads(exp.cfg.model_dump_json())
    if exp.target.source != "trained":
        config["model"] = exp.target.architecture
        config["reference_model"] = exp.references[0].architecture if exp.references else None
        config["target"] = config.get("target") or {
            "source": exp.target.source,
            "architecture": exp.target.architecture,
        }
    return config


def _attack_row(r: AttackRun, exp: Experiment) -> AttackRow:
    calibrated = r.result.log_pvalues_calibrated is not None
    found = r.metrics.section() if r.metrics is not None else ranking(r, exp.query_idx)
    return AttackRow(
        name=r.attack.name,
        label=r.attack.label,
        kind=attack_kind(r.attack.name),
        references=r.attack.references,
        params=r.attack.params.model_dump(mode="json", exclude={"label"}),
        p_values="calibrated" if calibrated else ("raw" if r.result.log_pvalues is not None else None),
        **found.model_dump(exclude_unset=True),
        **({"ppv": findings.ppv(r, *counts)} if (counts := _membership_counts(r, exp)) else {}),
        **({"deployable": r.deployable} if r.deployable else {}),
        seconds=r.seconds,
    )


def _membership_counts(r: AttackRun, exp: Experiment) -> tuple[int, int] | None:
    """(members, non-members) where the row is a membership test with ROC metrics (PPV applies), else None."""
    if r.metrics is None or r.attack.info.is_ranking or exp.is_member is None:
        return None
    return int(exp.is_member.sum()), int((~exp.is_member).sum())


@dataclass(frozen=True)
class Decided:
    """Every decision of a membership audit, made once before anything is written: results.json's typed model
    (the verdict, the records at risk and why none, the worst case, PPV, the headline attack of ``auto``) and the
    per-record table (scores.csv, scores.parquet: its ``at_risk`` column the records named). The reports render
    these two alone (``miaudit report DIR`` reads them back from the files); ``preview`` shows a record in
    report.html (a thumbnail or its text) where the data set is at hand."""

    results: AuditReport
    scores: ScoresTable
    preview: Callable[[int], tuple[str, str] | None] | None = None

    def write(self, out_dir: Path) -> AuditReport:
        """Every output file into ``out_dir``, atomically (``report.write_decided``); the report."""
        return report.write_decided(self.results, self.scores, out_dir, self.preview)


def decide(res: RunResult) -> Decided:
    """A run's every decision, once: the screen on the references (its mean loss also ranks the worst case), the
    claims of records at risk, results.json and the per-record table from the same claims."""
    where = at_risk.screen(res)
    found, head = at_risk.named(res, where)
    results = _audit_report(res, found, head, where)
    dataset = res.experiment.dataset
    return Decided(results, scores_frame(res, found, head), lambda record: preview(dataset, record))


def write(res: RunResult, out_dir: Path) -> AuditReport:
    """Decide (``decide``) and write every output file atomically (``report.write_decided``); return the report."""
    return decide(res).write(Path(out_dir))


def written(res: RunResult, out_dir: Path | None) -> AuditReport:
    """The run decided, and written into ``out_dir`` where one is given (a DP audit with attacks: ``dp.output``)."""
    return audit_report(res) if out_dir is None else write(res, out_dir)


def audit_report(res: RunResult) -> AuditReport:
    """The run's results.json, typed, without the per-record table (``decide``: both)."""
    where = at_risk.screen(res)
    return _audit_report(res, *at_risk.named(res, where), where)


def _audit_report(
    res: RunResult, found: list[at_risk.Claim], head: at_risk.Claim | None, where: at_risk.Screen | None
) -> AuditReport:
    """The run's results.json, typed: every section built here once, by the code that computes it (``findings``,
    ``leak_verdict``, ``stats.metrics``, ``miaudit.dp``, ``miaudit.lm``)."""
    exp, cfg = res.experiment, res.experiment.cfg
    member = exp.is_member
    reference_training = _reference_training(exp)
    worst = findings.worst_case(res, where)
    # an LM's two-class "sequence logits" have no accuracy worth the name: its loss and perplexity instead
    fit: dict[str, float | None] = dict(lm.perplexities(exp) or exp.target_accuracy())
    dp = res.dp_audit
    if dp is not None and dp.kind == "one-run" and dp.target_test_accuracy is not None:
        # a one-run DP audit's target is evaluated on its real records, not on the canaries (random labels)
        fit |= {"train_accuracy": dp.target_train_accuracy, "test_accuracy": dp.target_test_accuracy}
    # a one-run DP audit's canaries are never calibrated, whatever the config says: its own note, not calibration: none
    canaries = dp is not None and dp.kind == "one-run"
    uncalibrated = [] if exp.calibrates else [CANARIES_RAW_NOTE if canaries else UNCALIBRATED_NOTE]
    notes = ([] if member is not None else [UNKNOWN_MEMBERSHIP_NOTE]) + uncalibrated
    notes += [res.blind_baseline.warning] if res.blind_baseline and res.blind_baseline.warning else []
    if exp.target.source != "trained" and exp.references and exp.references[0].source == "trained":
        notes.append(
            f"the reference models were trained by {reference_training}, not by the recipe that trained "
            "your target; if that differs, name yours (target.train_fn, or train_fn in the Python API)"
        )
    return AuditReport(
        schema_version=SCHEMA_VERSION,
        miaudit_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        dataset=cfg.data_label,
        data_fingerprint=exp.dataset.content_sha256,
        n_records=len(exp.dataset),
        membership="known" if member is not None else "unknown",
        n_queries=len(exp.query_idx),
        n_members=int(member.sum()) if member is not None else None,
        n_nonmembers=int((~member).sum()) if member is not None else None,
        n_population=len(exp.split.population),
        n_validation=len(exp.split.validation),
        model=exp.target.architecture,
        reference_model=exp.references[0].architecture if exp.references else None,
        mode=cfg.mode,
        seed=cfg.seed,
        references=len(exp.references),
        reference_training=reference_training,
        target=Target(
            **fit,
            training_seconds=exp.target.seconds,
            source=exp.target.source,
            **({"dp": exp.target.privacy} if exp.target.privacy else {}),
        ),
        **({"endpoint": exp.oracle.usage()} if exp.oracle is not None else {}),
        reference_models=[
            ReferenceModel(train_accuracy=r.train_accuracy, seconds=r.seconds, cached=r.cached) for r in exp.references
        ],
        **({"reference_budget": bought} if (bought := budget.section(exp)) else {}),
        calibration=Calibration(
            calibrated=exp.calibrates,
            records=len(getattr(exp.split, exp.calibration_part)) if exp.calibrates else 0,
        ),
        **({"attack_choice": attack_choice(res)} if getattr(exp.plan, "auto", None) else {}),
        verdict=verdict.verdict(res),
        records_at_risk=findings.records_at_risk(res, found, head),
        **({"worst_case": worst} if worst else {}),
        attacks=[_attack_row(r, exp) for r in res.attacks],
        **({"dp_audit": res.dp_audit} if res.dp_audit else {}),
        **({"blind_baseline": res.blind_baseline} if res.blind_baseline else {}),
        **({"canary_exposure": res.canary_exposure} if res.canary_exposure else {}),
        config=truthful_config(res),
        environment=environment(exp.device),
        **({"notes": notes} if notes else {}),
    )


def results_json(res: RunResult) -> JsonObject:
    """results.json as written (``audit_report(res).dump()``)."""
    return audit_report(res).dump()


def attack_choice(res: RunResult) -> AttackChoice:
    """results.json's ``attack_choice``: why ``attacks: auto`` ran these attacks; with K >= 2 references each
    candidate's pseudo-target estimate, its interval, and why it ran or was left out (``membership.choice``)."""
    plan = res.experiment.plan
    if res.attack_choice is not None:
        return AttackChoice.model_validate({"attacks": "auto", "why": plan.auto, **res.attack_choice.to_json()})
    if plan.candidates:  # candidates planned, but nothing to measure them on: the leave-one-data-set-out rule ran
        ran = [r.attack.name for r in res.attacks if r.attack.name in plan.candidates]
        every = len(ran) == len(plan.candidates)
        return AttackChoice(
            attacks="auto",
            why=f"{', '.join(plan.candidates)} planned, but none could be ranked: no reference holds records of "
            "known membership to measure them on (a one-run DP audit's references never train on a canary), so "
            + ("every one of them ran" if every else f"the leave-one-data-set-out rule ran {', '.join(ran)}"),
            rule="none: all ran" if every else "leave-one-data-set-out",
        )
    return AttackChoice(attacks="auto", why=plan.auto)


def _reference_training(exp: Experiment) -> str | None:
    """How the reference models were obtained: miaudit's loop with its settings, or what the user named."""
    if not exp.references:
        return None
    source = exp.references[0].source
    own = exp.cfg.dp_training if isinstance(exp.cfg, RunConfig) else None
    if source == "trained" and own is not None and own.references == "function":  # the user's DP function
        return f"your function {own.function} (dp_training.references: function), on population records"
    if source == "trained" and isinstance(exp.cfg, RunConfig):  # miaudit's loop: the run config says how
        return announce.loop_recipe(exp.cfg)
    return source


def ranking(run: AttackRun, query_idx: np.ndarray, top: int = 10) -> Ranking:
    """Without membership there is no ROC: the most exposed records and how many each test flags."""
    log_p = headline_log_pvalues(run)
    return Ranking(
        most_exposed=[int(i) for i in query_idx[np.argsort(-risk_values(run), kind="stable")[:top]]],
        n_nan_scores=int(np.isnan(run.result.scores).sum()),
        **(
            {"n_p_below": {str(a): int((log_p < np.log(a)).sum()) for a in metrics.ALPHAS}} if log_p is not None else {}
        ),
    )
