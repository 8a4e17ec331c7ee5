"""What every audit's config answers: the one settings protocol ``RunConfig`` and ``ScoreConfig`` satisfy.

The Plan, the ``Experiment``, the pipeline and the report read a config only through ``AuditSettings``,
so a scores-only audit (``miaudit score``) is checked by mypy against everything they read: a field read
downstream that ``ScoreConfig`` lacks is a type error, not a failure at run time. What only a training run
has (the model, the device, the executor, query views) reaches the Experiment as its own fields.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol


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
