"""What every audit's config answers, and the settings ``RunConfig`` and ``ScoreConfig`` share.

The Plan, the ``Experiment``, the pipeline and the report read a config only through ``AuditSettings``,
so a scores-only audit (``miaudit score``) is checked by mypy against everything they read: a field read
downstream that ``ScoreConfig`` lacks is a type error, not a failure at run time. What only a training run
has (the model, the device, the executor, query views) reaches the Experiment as its own fields.

The settings both configs hold are defined once here, as annotated field types (``Seed``, ``Mode``,
``AttacksOrAuto``/``AttackRows``, ``Fdr``, ``MinFpr``, ``OffWhenNone`` for calibration): the same type,
bounds, description and before-validator in both, each config declaring them where its keys are read in
order. (A shared base model would move them to the front of every config: results.json's ``config``,
``miaudit init``'s file and the schema would change order.) ``Augment`` (``training/options.py``: training
owns augmentation) is the one vocabulary of image augmentation, of ``train.augment`` and ``queries.augment``.
Where the two configs differ, they do on purpose;
``ScoreConfig``'s docstring says why.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, Literal, Protocol

from pydantic import BeforeValidator, Field

from ..training.options import Augment
from .checks import attack_entries, off_when_none

Seed = Annotated[int, Field(ge=0, description="fixes the split, every model and every attack")]
Mode = Annotated[
    Literal["offline", "online"],
    Field(description="online: each query is IN for half the references (LiRA/RMIA online, BASE2-4)"),
]
Fdr = Annotated[
    float, Field(gt=0, lt=1, description="false discovery rate of the records at risk (Benjamini-Hochberg)")
]
MinFpr = Annotated[
    float | None,
    Field(gt=0, lt=1, description="smallest FPR the audit must resolve; refused with fewer than 1/min_fpr non-members"),
]
AttacksOrAuto = Annotated[list[dict[str, Any]] | Literal["auto"], BeforeValidator(attack_entries)]
"""``auto``, or attack rows: a name, or ``{name: ..., parameters}``; each row validated by ``attack_plan.build``."""


def _named_rows(raw: object) -> object:
    if isinstance(raw, str) and raw.strip().lower() == "auto":
        raise ValueError(
            "auto is for audits miaudit trains; name the attacks for precomputed outputs (attacks: lira, rmia ...)"
        )
    if isinstance(raw, (list, tuple)) and not raw:
        raise ValueError("no attacks; give at least one attack row (attacks: lira, rmia ...)")
    return attack_entries(raw)


AttackRows = Annotated[list[dict[str, Any]], BeforeValidator(_named_rows)]
"""Attack rows only (``ScoreConfig``): ``auto`` refused in one line."""

# The one vocabulary of image augmentation: ``flip`` mirrors, ``flip-crop`` also moves the window by up to
# 4 pixels (random while training, the fixed -4/0/+4 shifts for the queries' views). queries.augment said
# mirror/mirror-shift before: still read, with a one-line deprecation warning, so committed configs and the
# benchmark suites run unchanged (a refusal would break every config written before, for a spelling).
RENAMED = {"mirror": "flip", "mirror-shift": "flip-crop"}


def _renamed_augment(v: object) -> object:
    if isinstance(v, str) and v in RENAMED:
        logging.getLogger("miaudit").warning(
            "queries.augment: %r is deprecated, read as %r (one vocabulary: none, flip, flip-crop)", v, RENAMED[v]
        )
        return RENAMED[v]
    return v


QueryAugment = Annotated[
    Augment,
    BeforeValidator(_renamed_augment),
    Field(
        description="image data: signals on the flipped (2 views) or flipped and shifted by -4/0/+4 pixels "
        "(18 views) records too"
    ),
]
OffWhenNone = BeforeValidator(off_when_none)
"""``calibration: none`` (or null) turns calibration off, in both configs."""


class CalibrationSettings(Protocol):
    """Conformal calibration: on the validation records, else a held-out ``fraction`` of the population."""

    @property
    def fraction(self) -> float | None: ...


class AuditSettings(Protocol):
    @property
    def seed(self) -> int: ...

    @property
    def mode(self) -> Literal["offline", "online"]: ...

    @property
    def references(self) -> int | None:
        """Reference models available; None: every one the outputs hold (a scores-only config, until read)."""

    @property
    def attacks(self) -> list[dict[str, Any]] | Literal["auto"]: ...

    @property
    def calibration(self) -> CalibrationSettings | None: ...

    @property
    def min_fpr(self) -> float | None: ...

    @property
    def fdr(self) -> float: ...

    @property
    def data_label(self) -> str:
        """What reports call the audited data."""

    def model_dump_json(self) -> str:
        """The config as JSON (results.json's ``config``)."""
