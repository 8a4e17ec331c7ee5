"""Issue 38 part 1: do the pair attacks collapse when the target is not trained like its references, and does
mapping the target's scores onto the references' OUT law undo it?

    python benchmarks/target_mismatch/target_mismatch.py CONFIG.yaml [OUT.json]

The config names a target recipe unlike the references' (``model`` vs ``reference_model``, e.g.
``target_mismatch_models:dropout_mlp`` with ``benchmarks/target_mismatch/`` on PYTHONPATH), as an auditor of someone
else's model meets. Results: ``target_mismatch.json`` beside this script. Per attack and K: TPR@1% on the target as
it is, and with the target's rescaled logit quantile-mapped from its own law on the population records (all non-members
of the target: no membership read) onto the references' law on the population records they did not train on
(their OUT law); the shift ``pair.exchangeability_shift`` measures is printed beside. Diagnostic only: no
attack applies the map (the committed frontier numbers were measured without it).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from miaudit import pipeline
from miaudit.attacks import RecordSet, registry
from miaudit.attacks.pair import exchangeability_shift
from miaudit.config import run as config
from miaudit.experiment.run import evaluate
from miaudit.stats import signals
from miaudit.stats.signals import Signal

SIGNAL = Signal.rescaled_logit


def _score(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return signals.oriented(SIGNAL, np.asarray(logits, dtype=np.float64), labels)


def mapped(records: RecordSet, own: np.ndarray, out_law: np.ndarray) -> RecordSet:
    """The target's true-class logit moved so that its rescaled logit goes from quantile q of ``own`` to
    quantile q of ``out_law``."""
    s = _score(records.target_logits, records.labels)
    q = np.searchsorted(np.sort(own), s, side="right") / len(own)
    new = np.quantile(out_law, np.clip(q, 0.0, 1.0))
    logits = np.array(records.target_logits, dtype=np.float64, copy=True)
    logits[np.arange(len(s)), records.labels] += new - s
    return replace(records, target_logits=logits)


def main(path: str, out: str | None = None) -> None:
    cfg = config.load(path)
    exp = pipeline.prepare(cfg)
    inputs = exp.attack_inputs()
    pop = inputs.population
    ref_in = np.asarray(pop.ref_in, dtype=bool)
    k_all = cfg.references
    own = _score(pop.target_logits, pop.labels)
    out_law = np.concatenate([_score(pop.ref_logits[j], pop.labels)[~ref_in[j]] for j in range(k_all)])
    moved = replace(inputs, queries=mapped(inputs.queries, own, out_law), population=mapped(pop, own, out_law))
    rows = {}
    for a in exp.plan.attacks:
        row = {}
        for label, given in (("as is", inputs), ("mapped", moved)):
            result = registry.execute(a.info, a.params, a.references, given.first(a.references))
            metrics = evaluate(exp, result)
            row[label] = None if metrics is None else metrics.tpr_at_fpr["0.01"]
        for label, given in (("shift_sd as is", inputs), ("shift_sd mapped", moved)):
            row[label] = exchangeability_shift(given.first(a.references), SIGNAL)
        rows[f"{a.name} (K={a.references})"] = row
        print(
            a.name,
            a.references,
            {k: round(100 * v if "sd" not in k else v, 2) for k, v in row.items() if v is not None},
        )
    if out:
        Path(out).write_text(json.dumps({"config": path, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
