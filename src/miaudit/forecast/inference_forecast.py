"""``miaudit plan`` of an infer-dataset config: the question's record sets (checked against the data, as
``infer-dataset`` checks them), the test's power before the answer, and the models it obtains (those of ``miaudit
run`` on the config, so ``forecast``'s training time) with an endpoint's query cost. Nothing is trained, cached,
asked or written.

The power is the normal approximation of ``power.py`` at a few per-record member AUCs: the answer's own power figures
use the AUC the references measure, which needs the models; before them, the table says what each leak would allow.
"""

from __future__ import annotations

from pathlib import Path

from .. import forecast
from ..attack_plan import build, config_roles
from ..dataset_inference import power
from ..dataset_inference.infer import check_records
from ..dataset_inference.request import Request, from_mapping
from ..errors import ConfigError
from ..results import InferencePlan, PowerAt

MEMBER_AUCS = (0.55, 0.6, 0.7, 0.8, 0.9)


def power_table(n_suspect: int, n_validation: int, level: float) -> list[PowerAt]:
    """Per member AUC of ``MEMBER_AUCS``: the power if every suspect was used, the smallest fraction detected and
    the smallest fully used suspect set detected (both at ``power.POWER``)."""
    return [
        PowerAt(
            member_auc=a,
            power_if_all_used=power.power_at(a, 1.0, n_suspect, n_validation, level),
            detectable_fraction=power.detectable_fraction(a, n_suspect, n_validation, level),
            smallest_suspect_set=power.smallest_suspect_set(a, n_validation, level),
        )
        for a in MEMBER_AUCS
    ]


def forecast_inference(req: Request) -> InferencePlan:
    """The plan of ``req`` (module docstring); a record outside the data refused first (``ConfigError``)."""
    req = check_records(req)
    cfg = req.cfg
    plan = build(cfg, config_roles(cfg))  # as pipeline.prepare builds it: the same references
    records = forecast.audit_records(cfg)
    t = forecast.models_time(cfg, plan, records)
    n_s, n_v, level = len(req.suspect), len(req.validation), req.options.level
    q = forecast.queries(cfg, records)  # every record of a target you give: the suspects and validation among them
    return InferencePlan(
        command=f"infer-dataset: the models of miaudit {t.command}",
        dataset=records.dataset.name,
        n_records=len(records.dataset),
        n_suspect=n_s,
        n_validation=n_v,
        level=level,
        permutations=req.options.permutations,
        references=plan.references,
        power=power.POWER,
        power_at=power_table(n_s, n_v, level),
        models=t.models,
        seconds_per_epoch=t.seconds_per_epoch,
        measured=t.measured,
        **({} if t.workers is None else {"workers": t.workers}),
        **({} if t.references_by is None else {"references_by": t.references_by}),
        estimated_training_seconds=t.estimated_training_seconds,
        **({"queries": q} if q is not None else {}),
    )


def lines(f: InferencePlan) -> list[str]:
    """What ``miaudit plan`` prints for an infer-dataset config."""
    pct = f"{100 * f.power:.0f}%"
    out = [
        f"dataset inference on {f.dataset} ({f.n_records} records): {f.n_suspect} suspect and {f.n_validation} "
        f"validation records; level {f.level:g}, {f.permutations} permutations; {f.references} reference model(s)",
        f"power before the answer (the per-record leak is measured on the references when it runs; here what each "
        f"would allow, at level {f.level:g}):",
        f"  member AUC  power if all used  smallest fraction seen ({pct} power)  smallest suspect set ({pct} power)",
    ]
    for p in f.power_at:
        share = "none" if p.detectable_fraction is None else f"{100 * p.detectable_fraction:.0f}%"
        smallest = "none" if p.smallest_suspect_set is None else str(p.smallest_suspect_set)
        out.append(f"  {p.member_auc:<10g}  {100 * p.power_if_all_used:>16.0f}%  {share:>34}  {smallest:>32}")
    out.append(forecast.time_line(f))
    if f.queries is not None:
        q = f.queries
        out.append(
            f"endpoint: the inference reads its answers for {q.records} records (those miaudit run reads, the "
            f"suspect and validation records among them); {q.to_ask} are not in the answer store: {q.to_ask} queries "
            f"in {q.requests} requests of up to {q.batch_size}"
        )
    return out


def asks_inference(config: object) -> bool:
    """Whether ``config`` (a dict, or a YAML path; ``api.plan``'s argument) is an infer-dataset config: it has
    ``suspect:`` or ``validation:``."""
    from ..config.files import read

    if isinstance(config, dict):
        raw = config
    elif isinstance(config, str | Path) and Path(config).is_file():
        raw = read(config)
    else:
        return False
    return isinstance(raw, dict) and ("suspect" in raw or "validation" in raw)


def from_config(
    config: dict | str | Path, overrides: list[str] | tuple[str, ...] = (), runs: int | None = None
) -> InferencePlan:
    """``api.plan`` (and ``miaudit plan``) of an infer-dataset config: a dict (relative files as given) or a YAML
    path (relative to its folder), with ``--set`` ``overrides``; ``runs`` (``--runs``, the many-run DP audit's)
    refused."""
    from ..config.files import load_config, with_overrides
    from ..config.run import RunConfig

    if runs is not None:
        raise ConfigError("--runs: plans the many-run DP audit (dp-audit --runs R), not an infer-dataset config")

    if isinstance(config, dict):
        return forecast_inference(from_mapping(with_overrides(config, overrides)))
    return forecast_inference(load_config(config, overrides, RunConfig, from_mapping))
