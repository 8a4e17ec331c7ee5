"""Attacks: pure functions from AttackInputs to AttackResult, behind one registry.

Every module in this package registers its attacks on import; importing the
package loads them all, so adding an attack is adding a file.
"""

from __future__ import annotations

from ..errors import AttackRequirementError
from ..registries import discover
from . import registry
from .base import AttackInputs, AttackParams, AttackResult, ModelAccess, RecordSet

discover(__name__, __path__, skip=("base", "registry"))

__all__ = [
    "registry",
    "AttackInputs",
    "AttackParams",
    "AttackRequirementError",
    "AttackResult",
    "ModelAccess",
    "RecordSet",
]
