"""The Laplace posterior's option kinds, and its warm-up, importable without torch: the BMIA attacks'
parameters name them when ``miaudit.attacks`` is imported (``laplace`` loads torch)."""

from __future__ import annotations

from typing import Any, Literal

Hessian = Literal["diag", "kron", "full"]
Prior = Literal["marglik", "validation"]
Predictive = Literal["weights", "glm"]


def warm_laplace() -> Any:
    """laplace-torch (``laplace.import_laplace``), imported before an attack's timer starts."""
    from .laplace import import_laplace

    return import_laplace()
