"""The typed contract of an audit's results: results.json as ``AuditReport`` and its sections (pydantic only;
this package imports nothing of miaudit above ``errors``). ``miaudit.report`` builds it once, ``miaudit.dp``
builds its DP section, every reader (the CLI, the reports, compare, the API, the benchmarks) reads the model."""

from .attacks import AttackRow, BlindBaseline, Kind, Metrics, PPVCell, Seconds
from .audit_report import SCHEMA_VERSION, AuditReport, migrate
from .base import Section
from .dataset_inference import BlindTest, DatasetInference, FractionUsed, InferencePower
from .dp import Bound, DPAudit, ObserverTest
from .findings import AttackChoice, Claim, RealizedFDP, RecordsAtRisk, Verdict, WorstCase, WorstCell
from .run import Calibration, CanaryExposure, Endpoint, Environment, ReferenceModel, Target

__all__ = [
    "SCHEMA_VERSION",
    "AttackChoice",
    "AttackRow",
    "AuditReport",
    "BlindBaseline",
    "BlindTest",
    "Bound",
    "Calibration",
    "CanaryExposure",
    "Claim",
    "DPAudit",
    "DatasetInference",
    "Endpoint",
    "Environment",
    "FractionUsed",
    "InferencePower",
    "Kind",
    "Metrics",
    "ObserverTest",
    "PPVCell",
    "RealizedFDP",
    "RecordsAtRisk",
    "ReferenceModel",
    "Section",
    "Seconds",
    "Target",
    "Verdict",
    "WorstCase",
    "WorstCell",
    "migrate",
]
