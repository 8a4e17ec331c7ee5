"""miaudit: membership inference auditing.

The front doors: ``miaudit.audit(model, members=..., nonmembers=..., population=...)``
audits a model you trained on records you hold; ``miaudit.run(config)`` runs an
audit from a config (dict, YAML path or RunConfig). Both return an
``AuditResult``. ``miaudit.compare(a, b)`` sets two audits side by side (run directories or
``AuditResult``s): per attack the TPR and AUC differences with bootstrap intervals.
``miaudit.attacks.registry`` lists and runs attacks on plain arrays.

The front doors are imported on first use (PEP 562), so ``import miaudit.config.run``
or ``miaudit --help`` does not pay for torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .api import AuditResult, Endpoint, audit, infer_dataset, run, score
    from .report.compare import compare

__all__ = ["audit", "run", "score", "infer_dataset", "compare", "AuditResult", "Endpoint", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("audit", "run", "score", "infer_dataset", "AuditResult", "Endpoint"):
        from . import api

        return getattr(api, name)
    if name == "compare":
        from .report.compare import compare

        return compare
    raise AttributeError(f"module 'miaudit' has no attribute {name!r}")
