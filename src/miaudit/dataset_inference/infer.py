"""``miaudit infer-dataset``: was this suspect set of records used to train the model?

The same Experiment as ``miaudit run`` on the config (the same target and references, from the cache), then per
record of the suspect and validation sets the features the target allows and the references' own signals on the
same records (``features``); the one-sided test calibrated against the references and the reference guard
(``calibrated``); the blind guard (``blind``); the fraction used (``fraction``) and the power (``power``) from the
references as pseudo-targets; one verdict, the typed ``dataset_inference`` section and the per-record table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .. import attack_plan, pipeline
from .._version import __version__
from ..experiment import announce, datasets
from ..experiment.base import Experiment
from ..progress import log, working
from ..report.records import environment
from ..results import SCHEMA_VERSION, AuditReport, DatasetInference
from ..results.dataset_inference import WIDE
from . import blind, calibrated, fraction, power
from .answer import answered
from .features import (
    Features,
    PseudoTarget,
    Signals,
    features,
    pseudo_targets,
    reference_signals,
    signals_of,
    with_queries,
)
from .request import InferenceOptions, Request, as_config, checked, from_mapping

ASSUMPTIONS = [
    "The validation records are of the same kind as the suspect records and were chosen the same way, so that, "
    "had the suspects not been used, the model would treat the two sets alike (the suspects and the validation "
    "records are exchangeable). The p-value's promise, a false 'used' at most at the level, rests on this. Where "
    "it fails, the answer reads the target relative to reference models that saw neither set, so that a difference "
    "any such model sees (easier records, other classes) is not taken for use; the reference guard makes no claim "
    "when the references tell the sets apart, the blind guard when the records themselves do.",
    "The validation records were not used to train the model.",
    "'No evidence of use' is not proof of non-use: the power figures say what use this test could have seen.",
    "The fraction used assumes the target leaks like the reference models, trained the same way, whose known "
    "members scale the estimate (on the models' own outputs, which the other references do not enter).",
]


UNCALIBRATED = (
    "No reference model calibrates the target's signals: suspects chosen to be easier for models of this kind than "
    "the validation records (clearer images, common cases) look like members to it and can be called 'used'; train "
    "references (references: 4) to read the target relative to them."
)

LEFT_OUT = (
    "Some suspect or validation records were in a reference model's training set, so the references were left out: "
    "only reference-free signals of the target's outputs were compared."
)


@dataclass
class Inference:
    """An answer in memory: the typed results (``results.dataset_inference``) and the per-record table."""

    results: AuditReport
    records: dict[str, np.ndarray]

    @property
    def section(self) -> DatasetInference:
        assert self.results.dataset_inference is not None
        return self.results.dataset_inference

    def report(self, out_dir: str | Path, force: bool = False) -> AuditReport:
        """Write results.json, report.md, report.html and scores.csv into ``out_dir``, atomically."""
        from ..report import inference, outdir

        with outdir.reserved(Path(out_dir), force):
            return inference.write(self.results, self.records, Path(out_dir))


def check_records(req: Request) -> Request:
    """The record sets checked against the config's data (loaded, not trained on): before any model loads."""
    ds = datasets.load(req.cfg)
    return checked(req, len(ds), ds.name)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _p(p: float, permutations: int) -> str:
    floor = 1 / (1 + permutations)
    return f"p <= {floor:.2g}" if p <= floor + 1e-12 else f"p = {p:.2g}"


def _informative(fr: fraction.Fraction) -> bool:
    """Whether the fraction's interval says something: no wider than ``WIDE``."""
    return fr.ci[1] - fr.ci[0] <= WIDE


def verdict(
    used: bool | None,
    test: calibrated.SetTest,
    guard: blind.BlindGuard,
    fr: fraction.Fraction | None,
    detectable: float | None,
    at_least: float | None = None,
    references: calibrated.ReferenceGuard | None = None,
    unmeasured: str | None = None,
) -> str:
    """The answer in one sentence (the first line of the console, report.md and report.html); ``unmeasured``: why
    the power could not be measured (None: it was, and ``detectable`` is its figure)."""
    p = f"{_p(test.p_value, test.permutations)}, AUC {test.auc:.2f}"
    if used is None and guard.shifted:
        return (
            f"No claim: the suspect and validation records differ without the model (a blind classifier tells them "
            f"apart, AUC {guard.auc:.2f} [{guard.ci[0]:.2f}, {guard.ci[1]:.2f}]), so the model's behaviour on them "
            f"cannot show that the suspects were used ({p})."
        )
    if used is None:
        assert references is not None
        return (
            f"No claim: the reference models, which trained on neither set, already tell the suspect records from "
            f"the validation records (AUC {references.auc:.2f} [{references.ci[0]:.2f}, {references.ci[1]:.2f}]): "
            f"the sets differ in a way any such model sees (how easy the records are, their kind), so the target's "
            f"behaviour on them cannot show that the suspects were used ({p})."
        )
    beyond = ", beyond what reference models that saw neither set do" if references is not None else ""
    if used:
        share = ""
        if fr is not None and _informative(fr):
            share = f"; about {_pct(fr.estimate)} of it [{_pct(fr.ci[0])}, {_pct(fr.ci[1])}] was used"
        elif fr is not None:
            share = (
                f"; the test cannot tell how much of it was used (the fraction's interval, "
                f"[{_pct(fr.ci[0])}, {_pct(fr.ci[1])}], is wider than half)"
            )
        elif at_least:  # without references the bound that assumes nothing of the members is the answer
            share = f"; at least {_pct(at_least)} of it was used (95% lower bound)"
        return (
            f"Used: the model treats the suspect records more like its training records than the validation "
            f"records{beyond} ({p}){share}."
        )
    if unmeasured is not None:
        sees = f"its power is unknown ({unmeasured}), so 'not used' cannot be read from it"
    elif detectable is None:
        sees = "this test could not have detected use even of the whole set, so 'not used' cannot be read from it"
    else:
        sees = f"at this size the test detects use of {_pct(detectable)} of the set or more with 80% power"
    return f"No evidence of use ({p}); {sees}."


def _fraction_score(pseudo: list[PseudoTarget], columns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pseudo-targets' members-vs-non-members combination of their first ``columns`` features (the reference-free
    signals): (mean, sd, direction) on standardised features.

    Only the model's own outputs: a reference attack measures a pseudo-target against references that trained on
    about half of its training records, which the target's references never did, and so scores the pseudo-target's
    members higher than the target's (member AUC 0.87 on the pseudo-targets against 0.83 on the target for LiRA,
    Location seeds 3 and 4: benchmarks/dataset_inference/README.md): the fraction would be underestimated and its
    interval miss a set used whole. The reference-free signals of a pseudo-target involve no other model."""
    pseudo = [PseudoTarget(p.members[:, :columns], p.nonmembers[:, :columns]) for p in pseudo]
    pooled = np.concatenate([np.concatenate([p.members, p.nonmembers]) for p in pseudo])
    is_member = np.concatenate([np.r_[np.ones(len(p.members)), np.zeros(len(p.nonmembers))] for p in pseudo])
    pooled = np.where(np.isfinite(pooled), pooled, np.nan)
    mean, sd = np.nanmean(pooled, axis=0), np.nanstd(pooled, axis=0)
    sd = np.where(sd > 1e-12, sd, np.inf)
    z = np.nan_to_num((pooled - mean) / sd)
    return mean, sd, fraction.fisher_direction(z, is_member.astype(bool))


@dataclass(frozen=True)
class Measured:
    """What the models say about the suspect and validation records, before any statistics: the test's features,
    the fraction's features (the target against K - 1 references) and the pseudo-targets' (whose non-members are
    the validation records). ``decide`` reads a subset of it, so a benchmark measures once and draws many sets.
    ``texts``: the records' texts (a causal LM's), for the blind guard; None for other records."""

    test: Features
    target_k1: Features | None
    pseudo: list[PseudoTarget]
    references_left_out: bool = False  # some suspect or validation records trained a reference model
    texts: list[str] | None = None
    references: np.ndarray | None = None  # (K, n, signals): each reference's own signals on the records; None: no
    # reference to calibrate with


def measure(exp: Experiment, idx: np.ndarray, validation: np.ndarray, seed: int) -> Measured:
    """Every feature of the records ``idx`` (suspects and ``validation``) on the target and the pseudo-targets."""
    inputs = with_queries(exp, idx)
    own = signals_of(exp.target.module)
    texts = getattr(exp.dataset, "texts", None)
    texts = None if texts is None else [texts[i] for i in idx]
    k = len(exp.references)
    trained_references = inputs.queries.ref_in is not None and bool(inputs.queries.ref_in.any())
    if trained_references:  # a reference's own records look like members to it: the features would differ between
        # the sets for a reason other than the target's training, so the references are left out
        log.warning("dataset inference: some suspect or validation records trained a reference model; only the "
                    "target's own signals are used, uncalibrated, and the fraction is not estimated")  # fmt: skip
        k = 0
    test = features(inputs, k, own)
    refs = exp.references
    mine = None if k == 0 else reference_signals(inputs.queries, k, lambda j: signals_of(refs[j].module))
    if k < 2:
        return Measured(test, None, [], trained_references, texts, mine)
    # the target against K - 1 references, as each pseudo-target; its own signals do not depend on the references, so
    # the test's are reused (a language model's cost a forward pass over every record)
    target_k1 = features(inputs, k - 1, Signals(own.names, lambda _: test.values[:, : test.signals]))
    pseudo = pseudo_targets(
        inputs, exp.record_set(validation), target_k1.attacks, seed, lambda j: signals_of(refs[j].module)
    )
    return Measured(test, target_k1 if pseudo else None, pseudo, texts=texts, references=mine)


def _fraction(m: Measured, is_suspect: np.ndarray, seed: int) -> tuple[fraction.Fraction | None, float | None]:
    """The fraction used and the members' AUC, on the references as pseudo-targets (None, None without them)."""
    if m.target_k1 is None or not m.pseudo:
        return None, None
    columns = m.target_k1.signals
    mean, sd, w = _fraction_score(m.pseudo, columns)

    def score(x: np.ndarray) -> np.ndarray:
        return np.nan_to_num((np.where(np.isfinite(x[:, :columns]), x[:, :columns], np.nan) - mean) / sd) @ w

    fr = fraction.estimate(
        score(m.target_k1.values[is_suspect]),
        score(m.target_k1.values[~is_suspect]),
        [(score(p.members), score(p.nonmembers)) for p in m.pseudo],
        seed=seed,
    )
    member_auc = float(np.mean([fraction.auc(score(p.members), score(p.nonmembers)) for p in m.pseudo]))
    return fr, member_auc


def _tested(m: Measured, is_suspect: np.ndarray, seed: int, permutations: int) -> calibrated.SetTest:
    """The one-sided test on the target's signals calibrated against the references' (raw without references) and
    the reference attacks (``calibrated``'s docstring)."""
    own = m.test.values[:, : m.test.signals]
    if m.references is not None:
        own = calibrated.calibrated(own, m.references)
    return calibrated.set_test(
        calibrated.score(np.c_[own, m.test.values[:, m.test.signals :]]), is_suspect, seed, permutations
    )


def _unmeasured(m: Measured) -> str | None:
    """Why the power cannot be measured (None when it can: pseudo-targets with members)."""
    if m.references_left_out:
        return (
            "the references trained on some of these records, so they cannot measure how far a used record stands out"
        )
    if m.target_k1 is None or not m.pseudo:
        return "no reference models to measure how far a used record stands out (at least 2 are needed)"
    return None


def decide(
    m: Measured,
    is_suspect: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    options: InferenceOptions,
    seed: int,
) -> tuple[DatasetInference, calibrated.SetTest]:
    """The statistics on measured features (``x``, ``y``: the records themselves, for the blind guard): the test,
    the guards, the fraction, the power, the verdict."""
    with working("dataset inference: one-sided permutation test, calibrated against the references"):
        test = _tested(m, is_suspect, seed, options.permutations)
    refs = None if m.references is None else calibrated.reference_guard(m.references, is_suspect)
    with working("dataset inference: blind guard"):
        guard = blind.guard(x, y, n_classes, is_suspect, seed, m.texts)
    with working("dataset inference: fraction used, on the references as pseudo-targets"):
        fr, member_auc = _fraction(m, is_suspect, seed)
    at_least: float | None = fraction.at_least(test.scores, is_suspect)
    no_claim = guard.shifted or (refs is not None and refs.shifted)
    if no_claim:  # the fraction rests on the exchangeability a guard found broken (a shifted set of unused
        # records was put at 28% used on Location): not estimated; the power still reads the references' member AUC
        fr, at_least = None, None
    level, n_s, n_v = options.level, int(is_suspect.sum()), int((~is_suspect).sum())
    unmeasured = _unmeasured(m) if member_auc is None else None
    detectable = None if member_auc is None else power.detectable_fraction(member_auc, n_s, n_v, level)
    used = None if no_claim else bool(test.p_value < level and test.direction > 0)
    sentence = verdict(used, test, guard, fr, detectable, at_least, refs, unmeasured)
    section = {
        "verdict": sentence,
        "used": used,
        "p_value": test.p_value,
        "level": level,
        "auc": test.auc,
        "direction": test.direction,
        "calibrated": m.references is not None,
        "permutations": test.permutations,
        "n_suspect": n_s,
        "n_validation": n_v,
        "features": m.test.names,
        "fraction": None
        if fr is None
        else {"estimate": fr.estimate, "ci": list(fr.ci), "member_auc": fr.member_auc, "suspect_auc": fr.suspect_auc},
        "at_least": at_least,
        "blind": {"auc": guard.auc, "ci": list(guard.ci), "shifted": guard.shifted, "classifier": guard.classifier},
        "references_guard": None if refs is None else {"auc": refs.auc, "ci": list(refs.ci), "shifted": refs.shifted},
        "power": {
            "basis": "unmeasured" if member_auc is None else "references",
            "unmeasured_because": unmeasured,
            "member_auc": member_auc,
            "power": power.POWER,
            "smallest_suspect_set": None if member_auc is None else power.smallest_suspect_set(member_auc, n_v, level),
            "detectable_fraction": detectable,
            "power_if_all_used": None if member_auc is None else power.power_at(member_auc, 1.0, n_s, n_v, level),
        },
        "assumptions": (ASSUMPTIONS if fr is not None else ASSUMPTIONS[:3])
        + ([UNCALIBRATED] if m.references is None else [])
        + ([LEFT_OUT] if m.references_left_out else []),
    }
    return answered(DatasetInference.model_validate(section)), test


def infer(req: Request) -> Inference:
    """The whole answer to one request (module docstring); the record sets are checked first."""
    req = check_records(req)
    cfg = req.cfg
    # every reference the config names, whatever its attacks need: the features use them all (a run trains as many
    # as its attacks use; the first ones are the same models, from the cache)
    planned = attack_plan.build(cfg, attack_plan.config_roles(cfg))
    with announce.dataset_inference(len(req.suspect), len(req.validation)):  # its own start line, not run's
        exp = pipeline.prepare(cfg, replace(planned, references=max(planned.references, cfg.references or 0)))
    ds = exp.dataset
    idx = np.concatenate([req.suspect, req.validation])
    is_suspect = np.r_[np.ones(len(req.suspect), dtype=bool), np.zeros(len(req.validation), dtype=bool)]
    with working("dataset inference: features"):
        m = measure(exp, idx, req.validation, cfg.seed)
    section, test = decide(m, is_suspect, ds.x[idx], ds.y[idx], ds.n_classes, req.options, cfg.seed)
    log.debug("dataset inference: %s", section.verdict)  # the command prints it first; Python returns it
    records = {
        "record": idx,
        "suspect": is_suspect.astype(np.int64),
        "label": ds.y[idx],
        "score": test.scores,
        **{f"feature.{n}": m.test.values[:, i] for i, n in enumerate(m.test.names)},
    }
    return Inference(_report(exp, section, as_config(req)), records)


def _report(exp: Experiment, section: DatasetInference, config: dict[str, Any]) -> AuditReport:
    """results.json: the keys a run has where they apply, no attack rows, ``dataset_inference``, and ``config``
    with the question asked (suspect, validation, inference)."""
    cfg, ds, target = exp.cfg, exp.dataset, exp.target
    fit = {k: v for k, v in exp.target_accuracy().items() if k in ("train_accuracy", "test_accuracy")}
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    head = dict(schema_version=SCHEMA_VERSION, miaudit_version=__version__, created=now, dataset=cfg.data_label)
    about = dict(data_fingerprint=ds.content_sha256, n_records=len(ds), model=target.architecture, seed=cfg.seed)
    refs = dict(reference_model=exp.references[0].architecture if exp.references else None, mode=cfg.mode,
                references=len(exp.references))  # fmt: skip
    rest: dict[str, Any] = dict(
        target={**fit, "training_seconds": target.seconds, "source": target.source},
        calibration={"calibrated": False, "records": 0},
        verdict=None,  # no membership test of the target: the answer is dataset_inference's
        attacks=[],
        dataset_inference=section.model_dump(),
        **({"endpoint": exp.oracle.usage()} if exp.oracle is not None else {}),  # the queries the answer spent
        config=config,
        environment=environment(exp.device),
    )
    return AuditReport.model_validate({**head, **about, **refs, **rest})


def from_config(config: str | Path | dict, suspect: Any = None, validation: Any = None) -> Inference:
    """``miaudit.infer_dataset``: a config (a YAML path or a dict), the record sets given replacing its own."""
    from ..config.files import load_config
    from ..config.run import RunConfig

    def as_spec(v: Any) -> list[int] | str:
        return str(v) if isinstance(v, str | Path) else [int(i) for i in np.asarray(v).reshape(-1)]

    given = {
        key: as_spec(value) for key, value in (("suspect", suspect), ("validation", validation)) if value is not None
    }
    if isinstance(config, dict):
        return infer(from_mapping({**config, **given}))
    return infer(load_config(config, (), RunConfig, lambda raw, folder: from_mapping({**raw, **given}, folder)))
