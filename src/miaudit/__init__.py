"""miaudit: membership inference auditing.

The front doors: ``miaudit.audit(model, members=..., nonmembers=..., population=...)``
audits a model you trained on records you hold; ``miaudit.run(config)`` runs an
audit from a config (dict, YAML path or RunConfig). Both return an
``AuditResult``. ``miaudit.attacks.registry`` lists and runs attacks on plain
arrays.
"""

from __future__ import annotations

from ._version import __version__
from .api import AuditResult, audit, run

__all__ = ["audit", "run", "AuditResult", "__version__"]
