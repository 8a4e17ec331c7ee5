"""The Laplace posterior's option kinds, and the import of laplace-torch, without torch: the BMIA attacks'
parameters name them when ``miaudit.attacks`` is imported (``laplace`` loads torch)."""

from __future__ import annotations

import types
import warnings
from typing import Literal

Hessian = Literal["diag", "kron", "full"]
Prior = Literal["marglik", "validation"]
Predictive = Literal["weights", "glm"]


def import_laplace() -> types.ModuleType:
    """laplace-torch, imported (seconds: it pulls in torchmetrics) before an attack's timer starts. Its
    dependencies call ``torch.jit.script`` while importing, which torch answers with a FutureWarning
    that is no concern of a user's: that one warning is silenced, here only."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"`torch\.jit\.script` is deprecated", FutureWarning, r"torch\.jit\._script")
        import laplace

    return laplace
