"""Attacks: pure functions from AttackInputs to AttackResult, behind one registry.

Every module in this package registers its attacks on import; importing the
package loads them all, so adding an attack is adding a file.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..errors import AttackRequirementError
from . import registry
from .base import AttackInputs, AttackParams, AttackResult, ModelAccess, RecordSet

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name not in ("base", "registry"):
        importlib.import_module(f"{__name__}.{_mod.name}")

__all__ = [
    "registry",
    "AttackInputs",
    "AttackParams",
    "AttackRequirementError",
    "AttackResult",
    "ModelAccess",
    "RecordSet",
]
