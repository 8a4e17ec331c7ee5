"""An endpoint as the audit's target: its answers on the audited records, and on inputs label-only attacks make.

``from_config`` (``target: {endpoint: ...}``) and ``miaudit.audit(target=miaudit.Endpoint(...))`` both end in
``audit_endpoint``: every check first (the plan refused attacks the output mode cannot feed before this
runs) and a probe of the endpoint (a server down fails before any work), then the references train in the
named architecture on the auditor's records, as for a model the user brought (``experiment.own_model``),
and are cached; last the endpoint is asked about the audited records (queries, population, validation:
what the attacks and the calibration read of the target). An audit the endpoint stops mid-run keeps both
the references and the answers, so its rerun asks only the rest.
"""

from __future__ import annotations

import numpy as np

from ..attack_plan import Plan
from ..config.endpoint import EndpointFields
from ..config.run import RunConfig
from ..data.split import Split
from ..errors import ModelError
from ..experiment import announce, datasets, own_model, validate
from ..experiment.base import AuditRecords, Experiment, TrainedModel
from ..experiment.build import with_references
from ..experiment.recipes import ModelRecipe, open_store, reference_recipe
from ..progress import log
from ..stats.metrics import accuracy
from . import outputs
from .client import EndpointClient, shown_url

TARGET_STAGE = "target outputs"  # the count of the records audited, in results.json's queries_by_stage


class EndpointTarget:
    """The endpoint's answers as logits (the audited records) and labels (what label-only attacks ask)."""

    def __init__(self, client: EndpointClient, spec: EndpointFields, n_classes: int):
        self.client, self.spec, self.n_classes = client, spec, n_classes

    def logits(self, x: np.ndarray) -> np.ndarray:
        return outputs.logits(self.client.rows(x, TARGET_STAGE), self.spec.output, self.n_classes)

    def labels(self, x: np.ndarray, asked_by: str) -> np.ndarray:
        return outputs.labels(self.client.rows(x, asked_by), self.spec.output)

    def usage(self) -> dict:
        u = self.client.usage
        return {
            "url": self.client.name,
            "protocol": self.spec.adapter or self.spec.protocol,
            "output": self.spec.output,
            **({"top_k": self.spec.top_k} if self.spec.output == "top-k" else {}),
            "queries_spent": u.queries,
            "requests": u.requests,
            "retries": u.retries,
            "answered_from_store": u.from_store,
            "queries_by_stage": dict(u.by_stage),
            **(
                {"probability_floor": outputs.PROBABILITY_FLOOR}
                if self.spec.output in ("probabilities", "top-k")
                else {}
            ),
        }


def from_config(cfg: RunConfig, plan: Plan) -> Experiment:
    """The experiment for ``target: {endpoint: URL, ...}`` with the config's data and index files."""
    assert cfg.target is not None
    ds = datasets.load(cfg)
    split, query_idx, is_member = own_model.membership_from_files(cfg, ds)
    records = AuditRecords(dataset=ds, split=split, query_idx=query_idx, is_member=is_member)
    recipe, by = own_model.with_train_fn(reference_recipe(cfg, ds, plan.head_dropout), cfg.target.train_fn)
    return audit_endpoint(cfg, plan, records, cfg.target, recipe, cfg.target_architecture, references_by=by)


def asked_rows(split: Split, query_idx: np.ndarray) -> np.ndarray:
    """The records whose target outputs an audit reads: the queries, the population, the validation records."""
    return np.unique(np.concatenate([query_idx, split.population, split.validation]).astype(np.int64))


def audit_endpoint(
    cfg: RunConfig,
    plan: Plan,
    records: AuditRecords,
    spec: EndpointFields,
    recipe: ModelRecipe,
    architecture: str,
    references_by: str = "",
) -> Experiment:
    """Check, probe the endpoint (when the store lacks answers), train the references, then ask the endpoint
    about the audited records; the Experiment."""
    ds, split = records.dataset, records.split
    if records.is_member is not None:
        validate.check_min_fpr(cfg.min_fpr, int((~records.is_member).sum()))
    own_model.check_roles(plan, split)
    own_model.check_pool(plan, split, records.query_idx)
    if plan.references:
        probe = validate.model_classes(recipe.build(), ds.x, "target.architecture")
        if probe != ds.n_classes:
            raise ModelError(f"target.architecture: builds models with {probe} outputs, the data has {ds.n_classes}")
    store = open_store(cfg)
    client = EndpointClient(spec, store.root, ds.n_classes)
    oracle = EndpointTarget(client, spec, ds.n_classes)
    asked = asked_rows(split, records.query_idx)
    to_ask = client.missing(ds.x[asked])
    if to_ask:  # a server down fails now, not after the references have trained
        client.probe()
    # the references first (cached): an audit the endpoint stops mid-run keeps them as well as the answers
    logits = np.full((len(ds), ds.n_classes), np.nan)
    target = TrainedModel(
        role="target",
        module=None,
        logits=logits,
        train_idx=split.members,
        seconds=0.0,
        train_accuracy=float("nan"),
        cached=False,
        architecture=architecture,
        source=f"endpoint {shown_url(client.url)} (output: {spec.output})",
    )
    announce.start(cfg, plan, records, target_trains=False, references_by=references_by)
    exp = with_references(cfg, plan, records, target, recipe, store)
    log.info(
        "endpoint %s (%s, output: %s): %d of %d records to ask",
        client.name,
        spec.adapter or spec.protocol,
        spec.output,
        to_ask,
        len(asked),
    )
    logits[asked] = oracle.logits(ds.x[asked])
    if len(split.members):
        target.train_accuracy = accuracy(logits[split.members], ds.y[split.members])
    for ref in exp.references:
        ref.source = references_by or "trained"
    exp.oracle = oracle
    return exp
