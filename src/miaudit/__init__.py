"""miaudit: membership inference auditing.

The front doors: ``miaudit.audit(model, members=..., nonmembers=..., population=...)``
audits a model you trained on records you hold; ``miaudit.run(config)`` runs an
audit from a config (dict, YAML path or RunConfig). Both return an
``AuditResult``. ``miaudit.plan(config)`` forecasts an audit's power and cost before it runs;
``miaudit.export(config, out)`` writes a run's model outputs for ``miaudit score``.
``miaudit.dp_audit(config or train_fn, ...)`` is ``miaudit dp-audit``: a DP audit
of a config's DP-SGD, or of your own DP training function (``train_fn(model, x, y)``), whose Opacus optimizer
``miaudit.dp_observe(optimizer)`` opens to white-box canaries.
``miaudit.compare(a, b)`` sets two audits side by side (run directories or
``AuditResult``s): per attack the TPR and AUC differences with bootstrap intervals.
``miaudit.attacks.registry`` lists and runs attacks on plain arrays.

The front doors are imported on first use (PEP 562), so ``import miaudit.config.run``
or ``miaudit --help`` does not pay for torch.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:
    from pathlib import Path

    from .api import AuditResult, Endpoint, audit, dp_audit, export, infer_dataset, run, score, verify_unlearning
    from .config.run import RunConfig
    from .dp.user_code import dp_observe
    from .report.compare import compare
    from .results import AuditPlan, InferencePlan, MultiRunPlan

__all__ = [
    "audit",
    "run",
    "score",
    "plan",
    "export",
    "dp_audit",
    "dp_observe",
    "verify_unlearning",
    "infer_dataset",
    "compare",
    "AuditResult",
    "Endpoint",
    "__version__",
]


# the names ``api`` defines, loaded on first use (``import miaudit`` stays light)
API = ("audit", "run", "score", "export", "dp_audit", "verify_unlearning", "infer_dataset", "AuditResult", "Endpoint")


def __getattr__(name: str) -> object:
    if name in (
        "audit",
        "run",
        "score",
        "export",
        "dp_audit",
        "verify_unlearning",
        "infer_dataset",
        "AuditResult",
        "Endpoint",
    ):
        from . import api

        return getattr(api, name)
    if name == "dp_observe":
        from .dp.user_code import dp_observe

        return dp_observe
    if name == "plan":  # the submodule, made callable as it is imported (``_Package``)
        import importlib

        return importlib.import_module(".plan", __name__)
    if name == "compare":
        from .report.compare import compare

        return compare
    raise AttributeError(f"module 'miaudit' has no attribute {name!r}")


class _CallablePlan(types.ModuleType):
    """The submodule ``miaudit.plan`` (the ``Plan``: attacks, references, models), which, called, is the API's
    ``plan`` (``api.plan``, what ``miaudit plan`` runs): ``miaudit.plan(config)`` and ``from miaudit import plan;
    plan.build(cfg)`` both hold, whichever was imported first. (A type checker sees the module: typed code calls
    ``miaudit.api.plan``.)"""

    def __call__(
        self, config: RunConfig | dict | str | Path | None = None, halfwidth: float = 0.01, runs: int | None = None
    ) -> AuditPlan | MultiRunPlan | InferencePlan:
        from .api import plan

        return plan(config, halfwidth, runs)


class _Package(types.ModuleType):
    """The package's module type: the import system sets each submodule as an attribute of its package; the
    submodule ``plan`` is made callable then (``_CallablePlan``)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name == "plan" and isinstance(value, types.ModuleType):
            value.__class__ = _CallablePlan
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
