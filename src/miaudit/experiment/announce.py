"""The line a run starts with: what it will train or load, on which records, and which attacks follow.

Printed once every input check has passed and before the first model, so a run in a pipe says at once
what the next minutes are for (the per-model lines then count the models and estimate the time left).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..attack_plan import Plan
from ..config.run import RunConfig
from ..progress import log
from .base import AuditRecords

_INFERENCE: ContextVar[tuple[int, int] | None] = ContextVar("dataset_inference", default=None)


@contextmanager
def dataset_inference(n_suspect: int, n_validation: int) -> Iterator[None]:
    """Within it, the start line says what ``miaudit infer-dataset`` does with the models (its own features of
    ``n_suspect`` suspect and ``n_validation`` validation records), not the config's attacks, which it does not run."""
    token = _INFERENCE.set((n_suspect, n_validation))
    try:
        yield
    finally:
        _INFERENCE.reset(token)


def loop_recipe(cfg: RunConfig) -> str:
    """How miaudit's loop trains models, as results and warnings state it."""
    t = cfg.train
    said = f"miaudit's loop ({t.optimizer}, {t.epochs} epochs, lr {t.lr:g}, batch {t.batch_size}, {t.schedule})"
    if cfg.reference_budget is not None:  # the references' epochs and records: reference_budget.design
        said += f", the references cut to references: {{budget: {cfg.reference_budget.budget:g}}}"
    return said


def start(
    cfg: RunConfig,
    plan: Plan,
    records: AuditRecords,
    target_trains: bool,
    references_by: str = "",
    reference_model: str = "",
) -> None:
    """Log the start line.

    Args:
        cfg: the run's config.
        plan: the planned attacks and the number of reference models.
        records: the audit's records and their roles.
        target_trains: whether miaudit trains the target (False: the user's model is audited).
        references_by: how the reference models train, when not by miaudit's loop with ``cfg.train``.
        reference_model: what the references start from, as their recipe names it (results.json's
            ``reference_model``), when not ``cfg.reference_architecture`` (an own LM's ``train.base``).
    """
    ds, member = records.dataset, records.is_member
    if member is not None:
        who = f"{int(member.sum())} members, {int((~member).sum())} non-members queried"
    else:
        who = f"{len(records.query_idx)} queries of unknown membership"
    loop = references_by or loop_recipe(cfg)
    models = [f"the target ({cfg.model}, {cfg.train.epochs} epochs)"] if target_trains else []
    if plan.references:
        models.append(f"{plan.references} reference model(s) ({reference_model or cfg.reference_architecture}, {loop})")
    obtain = " and ".join(models) + " to train or load from the cache" if models else "no model to train"
    inference = _INFERENCE.get()
    if inference is not None:
        log.info(
            "dataset inference on %s: %d suspect and %d validation records; %s; then per record the target's "
            "outputs%s, compared between the two sets",
            ds.name,
            *inference,
            obtain if target_trains else f"your target as given; {obtain}",
            " and the offline attacks against the references" if plan.references else "",
        )
        return
    labels = ", ".join(a.label for a in plan.attacks)
    log.info(
        "auditing %s, %d records (%s): %s; then %d attack(s): %s",
        ds.name,
        len(ds),
        who,
        obtain,
        len(plan.attacks),
        labels,
    )
