"""The workflow keys every command's config takes: ``gate:`` (conditions that fail the command, as ``--fail-on``)
and ``tracking:`` (where the audit is logged). Light (pydantic only): ``config.run`` and ``config.scores`` compose
them, and ``miaudit --help`` imports neither the gate's registry nor MLflow."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

from ..strict import Strict


def _as_list(v: object) -> object:
    """``gate: leaks`` (one condition, or several comma-separated) is shorthand for ``gate: [leaks]``."""
    return [v] if isinstance(v, str) else v


def _grammar(given: tuple[str, ...]) -> tuple[str, ...]:
    """Each condition parses (whether it belongs to the command is checked by the command, before any work); one a
    list item, comma-separated ones split."""
    from .gate import parse_all, split

    parse_all(given, "gate")
    return tuple(split(given))


FAIL_ON_HELP = (
    "exit 1 once the output is written if CONDITION holds: a verdict (leaks, violation, not_forgotten, "
    "over_forgotten, used) or a threshold (tpr@1%>=5%, auc>0.6, at_risk>0, epsilon_lb>2); repeatable or "
    "comma-separated; docs/workflow.md"
)
TRACK_HELP = "log the audit as one MLflow run at this tracking URI (tracking.mlflow; experiment: tracking.experiment)"

GateKey = Annotated[tuple[str, ...], BeforeValidator(_as_list), AfterValidator(_grammar)]
GATE_FIELD = Field(
    default=(),
    description="conditions that make the command exit 1 once its output is written, as --fail-on: "
    "leaks, tpr@1%>=5%, auc>0.6 ... (docs/workflow.md)",
)


class TrackingConfig(Strict):
    """``tracking:``: log the audit as one MLflow run (docs/workflow.md)."""

    mlflow: str = Field(
        min_length=1, description="the MLflow tracking URI: http(s)://HOST:PORT (a server) or sqlite:///PATH"
    )
    experiment: str = Field(default="miaudit", min_length=1, description="the experiment's name (made if new)")
    run_name: str | None = Field(default=None, description="the run's name (default: MLflow's)")
    tags: dict[str, str] = Field(default_factory=dict, description="tags set on the run, beside miaudit's own")
    parent_run_id: str | None = Field(
        default=None, description="the run that trained the model: the audit is logged as its child"
    )


TRACKING_FIELD = Field(default=None, description="log the audit in MLflow: {mlflow: URI, experiment: NAME, ...}")
