"""``AuditReport``: the whole of results.json as one typed model, its schema version, reading (a file of the
previous format migrated, anything else refused in one line) and the one writer."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, JsonValue, ValidationError

from ..errors import DataError
from ..storage import atomic_write
from .answer import Answer
from .attacks import AttackRow, BlindBaseline, Kind
from .base import Count, JsonObject, Section, lenient
from .budget import ReferenceBudget
from .dataset_inference import DatasetInference
from .dp import DPAudit
from .findings import AttackChoice, RecordsAtRisk, Verdict, WorstCase
from .run import Calibration, CanaryExposure, Endpoint, Environment, ReferenceModel, Target, Tracking
from .unlearning import UnlearningSection

# The version of results.json's layout, an integer raised when a key is added, changes meaning or goes away (every
# section refuses keys it does not declare). Files written before it existed (no ``schema_version``) are version
# 0, ``load`` migrates them; version 1 (sections that kept undeclared keys) reads with unknown keys dropped and
# named in a warning, as does a file of a newer version than this one.
SCHEMA_VERSION = 5  # 3: the optional unlearning, dataset_inference and dp_audit.training sections; 4:
# dataset_inference.at_least; 5: dataset_inference.direction, calibrated, references_guard,
# power.unmeasured_because; dp_audit.training.defects and observed_sample_rate; verdict.summary and .detail,
# records_at_risk.summary; unlearning's
# no_claim verdict, p_selection, compared, damaged and utility_note (all optional: older files load)
# the versions ``load`` reads with unknown keys dropped: 1 (sections were open) and any newer than this
OPEN_SECTIONS = 1
log = logging.getLogger("miaudit")
SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"


class AuditReport(Section):
    """What an audit found (``miaudit run``, ``score``, ``dp-audit``): results.json. Built once by ``miaudit.report``
    (a DP audit's section by ``miaudit.dp``), written by ``write``, read back by ``load``."""

    model_config = ConfigDict(extra="forbid", title="miaudit results.json")

    schema_version: int = SCHEMA_VERSION
    """the layout version of this file (SCHEMA_VERSION)"""
    miaudit_version: str
    """the miaudit that wrote the file"""
    created: str
    """when the report was built, ISO 8601 UTC"""
    dataset: str
    """the audited data set"""
    data_fingerprint: str
    """sha256 of the audited data's content"""
    n_records: Count
    """records in the data set"""
    membership: Literal["known", "unknown"] | None = None
    """whether the queries' membership is known (ROC metrics) or not (rankings and p-values only)"""
    n_queries: Count | None = None
    """the records the attacks score"""
    n_members: Count | None = None
    """members among the queries; None: membership unknown"""
    n_nonmembers: Count | None = None
    """non-members among them"""
    n_population: Count | None = None
    """population records, which the reference models train on"""
    n_validation: Count | None = None
    """validation records"""
    model: str | None
    """the target's architecture"""
    reference_model: str | None = None
    """the reference models' architecture; None without any"""
    mode: str | None = None
    """offline, or online (each query in the training set of half the references)"""
    seed: int
    """the run's seed: the same config and seed give the same numbers"""
    references: Count | None = None
    """how many reference models the audit has"""
    reference_training: str | None = None
    """how they were obtained: miaudit's training loop and its settings, or what the user named"""
    target: Target
    """the audited model"""
    endpoint: Endpoint | None = None
    """a deployed target: what its queries cost"""
    reference_models: list[ReferenceModel] | None = None
    """one entry per reference model"""
    reference_budget: ReferenceBudget | None = None
    """``references: {budget: B}``: the design the budget bought, its cost ratio and the measured seconds"""
    calibration: Calibration
    """whether and on how many records the p-values were calibrated"""
    attack_choice: AttackChoice | None = None
    """attacks: auto: why these attacks ran"""
    verdict: Verdict | None
    """does the model leak; required, null without a membership test or membership: ``unlearn``,
    ``infer-dataset`` and a DP audit without attack rows answer in their own section"""
    records_at_risk: RecordsAtRisk | None = None
    """the records named at the run's FDR"""
    worst_case: WorstCase | None = None
    """the membership tests on the records most at risk"""
    attacks: list[AttackRow]
    """one row per attack run"""
    dp_audit: DPAudit | None = None
    """a differential-privacy audit's bounds and verdict"""
    blind_baseline: BlindBaseline | None = None
    """an LM audit's text-only baseline"""
    canary_exposure: CanaryExposure | None = None
    """an LM audit's secret-sharer canaries"""
    unlearning: UnlearningSection | None = None
    """``miaudit unlearn``'s answer: did the forgotten records leave the model (the verdict, its p-value, the
    records still remembered or over-forgotten, and the null each figure rests on)"""
    dataset_inference: DatasetInference | None = None
    """``miaudit infer-dataset``'s answer: was a suspect set of records used to train the model (the verdict,
    its p-value, the blind guard, the fraction used)"""
    config: JsonObject
    """the run's config, as validated (a user's model: what was audited; ``unlearn``'s with ``unlearning``,
    ``infer-dataset``'s with ``suspect`` and ``validation`` as record indices, and ``inference``)"""
    environment: Environment
    """what produced the numbers"""
    notes: list[str] | None = None
    """what a reader must know to read the numbers right"""
    tracking: Tracking | None = None
    """where the audit was logged in an experiment tracker (MLflow: the host and the run id); absent: not logged"""

    @property
    def membership_known(self) -> bool:
        return self.membership == "known"

    @property
    def answer(self) -> Answer | None:
        """What the audit answers (``results.answer``): the answer of the section its command wrote
        (``dataset_inference``, ``unlearning``, a ``dp-audit``'s ``dp_audit``), else the membership ``verdict``'s;
        None in files written before answers, and without membership (no verdict)."""
        for section in (self.dataset_inference, self.unlearning, self.dp_audit if self.dp_audited else None):
            if section is not None:
                return section.answer
        return self.verdict.answer if self.verdict is not None else None

    @property
    def tests(self) -> list[AttackRow]:
        """The rows that test membership (the risk rankings left out)."""
        return [a for a in self.attacks if not a.is_ranking]

    @property
    def dp_audited(self) -> bool:
        """A one-run or multi-run DP audit's results (``miaudit dp-audit``): its queries are canaries."""
        return self.dp_audit is not None and self.dp_audit.audits_canaries

    def dump(self) -> JsonObject:
        """results.json as a dict: ``schema_version`` first, then every key the report was built with, in order
        (an absent optional key stays absent; a None stays None)."""
        out = self.model_dump(exclude_unset=True, exclude={"schema_version"})
        return {"schema_version": self.schema_version, **out}

    def to_json(self) -> str:
        return json.dumps(self.dump(), indent=1)

    def write(self, path: str | Path) -> Path:
        """Write results.json at ``path`` atomically (a temporary sibling, then a rename), with the mode every other
        output file gets (the umask's: readable by others under 022; mkstemp's 0600 hid it from a colleague)."""
        path = Path(path)
        atomic_write(path, lambda tmp: tmp.write_text(self.to_json(), encoding="utf-8"))
        return path

    @classmethod
    def load(cls, path: str | Path, kind_of: Callable[[str], Kind] | None = None) -> AuditReport:
        """Read a results.json: the current version as is, a file of the previous format (no ``schema_version``)
        migrated (``migrate``; ``kind_of`` names an attack's kind where the old row cannot say), anything else
        refused with a one-line ``DataError`` naming the file and what is wrong."""
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise DataError(f"{path}: not a readable results.json ({type(e).__name__}: {e})") from None
        return cls.from_dict(data, where=str(path), kind_of=kind_of)

    @classmethod
    def from_dict(
        cls, data: object, where: str = "results.json", kind_of: Callable[[str], Kind] | None = None
    ) -> AuditReport:
        if not isinstance(data, dict):
            raise DataError(f"{where}: results.json holds a {type(data).__name__}, not an object")
        version = data.get("schema_version", 0)
        if not isinstance(version, int) or isinstance(version, bool) or version < 0:
            raise DataError(
                f"{where}: schema_version {version!r} is not a layout version (a non-negative integer; this miaudit "
                f"writes {SCHEMA_VERSION})"
            )
        if version == 0:
            data = migrate(data, where, kind_of)
        elif version <= OPEN_SECTIONS and "verdict" not in data:
            data = {**data, "verdict": None}  # version 1's DP audits wrote no verdict (their answer is dp_audit's)
        dropped: list[str] = []
        newer = version > SCHEMA_VERSION
        try:
            if newer or version <= OPEN_SECTIONS:
                report = cls.model_validate({**data, "schema_version": SCHEMA_VERSION}, context=lenient(dropped))
            else:
                report = cls.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            at = ".".join(map(str, first["loc"])) or "(top)"
            said = f"{where}: not a miaudit results.json: {at}: {first['msg']}"
            if newer:
                said += f" (the file is schema_version {version}, newer than this miaudit's {SCHEMA_VERSION})"
            raise DataError(said) from None
        if dropped:
            shown = ", ".join(dropped[:8]) + (", ..." if len(dropped) > 8 else "")
            log.warning(
                "%s: schema_version %s (this miaudit reads %s): %d key(s) it does not know left out: %s",
                where, version, SCHEMA_VERSION, len(dropped), shown,
            )  # fmt: skip
        return report

    @classmethod
    def json_schema(cls) -> JsonObject:
        """The JSON Schema (draft 2020-12) every results.json validates against (``miaudit schema``)."""
        return {"$schema": SCHEMA_URI, **cls.model_json_schema(mode="validation")}


def migrate(data: Mapping[str, JsonValue], where: str, kind_of: Callable[[str], Kind] | None) -> JsonObject:
    """A results.json of the previous format (before ``schema_version``) in the current one: the version added,
    and each attack row's ``kind``: from ``kind_of`` (the attack registry, ``report.attack_kind``) when given,
    else from the row: p-values or a precision (``ppv``, which the previous format wrote for every membership test
    of known membership) make it a test, ROC metrics without a precision a ranking; a row that says neither (no
    p-values, membership unknown) is refused in one line."""
    rows: list[JsonValue] = []
    given = data.get("attacks")
    for i, row in enumerate(given if isinstance(given, list) else []):
        if isinstance(row, dict) and "kind" not in row:
            if kind_of is not None:
                kind = kind_of(str(row.get("name")))
            elif row.get("p_values") is not None or "ppv" in row:
                kind = "test"
            elif "auc" in row:  # ROC metrics without a precision: the previous format's rankings only
                kind = "ranking"
            else:
                raise DataError(
                    f"{where}: previous results.json format, and attacks.{i} ({row.get('name')}) does not say "
                    "whether it is a test or a ranking: read it with miaudit.report.load_results"
                )
            at = list(row).index("label") + 1 if "label" in row else len(row)
            items = list(row.items())
            row = dict([*items[:at], ("kind", kind), *items[at:]])
        rows.append(row)
    out = {"schema_version": SCHEMA_VERSION, **data, **({"attacks": rows} if "attacks" in data else {})}
    return out if "verdict" in out else {**out, "verdict": None}  # the previous format's DP audits wrote none
