"""miaudit: membership inference auditing.

The front doors: ``miaudit.audit(model, members=..., nonmembers=..., population=...)``
audits a model you trained on records you hold; ``miaudit.run(config)`` runs an
audit from a config (dict, YAML path or RunConfig). Both return an
``AuditResult``. ``miaudit.attacks.registry`` lists and runs attacks on plain
arrays.

The front doors are imported on first use (PEP 562), so ``import miaudit.config.run``
or ``miaudit --help`` does not pay for torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .api import AuditResult, audit, run, score

__all__ = ["audit", "run", "score", "AuditResult", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("audit", "run", "score", "AuditResult"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'miaudit' has no attribute {name!r}")
