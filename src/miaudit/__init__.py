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
``miaudit.gate(["leaks", "tpr@1%>=5%"], result)`` is ``--fail-on``: the CI gate's decision on a result
(``GateDecision``: the conditions judged, its ``exit_code``; docs/workflow.md).

The front doors are imported on first use (PEP 562), so ``import miaudit.config.run``
or ``miaudit --help`` does not pay for torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:
    from .api import (
        AuditResult,
        Endpoint,
        audit,
        dp_audit,
        export,
        infer_dataset,
        plan,
        run,
        score,
        verify_unlearning,
    )
    from .dp.user_code import dp_observe
    from .report.compare import compare
    from .workflow.gate import gate

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
    "gate",
    "AuditResult",
    "Endpoint",
    "__version__",
]


def __getattr__(name: str) -> object:
    """The front doors, loaded on first use (``import miaudit`` stays light): ``dp_observe``, ``compare`` and
    ``gate`` from their modules, every other name of ``__all__`` from ``api``."""
    if name == "dp_observe":
        from .dp.user_code import dp_observe

        return dp_observe
    if name == "compare":
        from .report.compare import compare

        return compare
    if name == "gate":
        from .workflow.gate import gate

        return gate
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'miaudit' has no attribute {name!r}")
