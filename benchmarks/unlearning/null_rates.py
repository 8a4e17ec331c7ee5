"""Stage 2 of the null benchmark: the verdicts of `miaudit unlearn`'s statistics on the models null_models.py kept.

    MIAUDIT_DATA_DIR=../shared/data python benchmarks/unlearning/null_rates.py --logits /tmp/unlearn-null \
        --tag after --out benchmarks/unlearning/results/null-after.json

Runs ``miaudit.unlearning.audit.verify_models`` (the very code `miaudit unlearn` runs after its models are
obtained) of whichever miaudit is imported: the current one, or the code before the change with
``PYTHONPATH=<git archive of the earlier commit>/src`` (``--tag before``). One row per audit (data set, seed,
unlearned model): the verdict, both tests' p-values, the selection guard's (after only), the records named (and
how many truly stayed: none on exact retraining, all on noop, the kept half on ``half``, the model retrained with
half the forget set) and the unlearned model's retained accuracy against the retrained models'. The AUC
intervals are not read here: their bootstrap is cut to 20 resamples to save time (it touches no verdict).
Written after every seed; a rerun with the same ``--out`` adds only the seeds not yet in it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from miaudit.experiment import datasets
from miaudit.results.unlearning import Method
from miaudit.unlearning import audit, verify
from miaudit.unlearning.config import from_mapping

try:
    from miaudit.unlearning.records import Records
except ImportError:  # the code before the house split (decb737): Records lived in audit.py
    Records = audit.Records  # type: ignore[attr-defined,misc]

FORGET = {"digits": 50, "location": 100}
_auc = verify.auc_by_records
verify.auc_by_records = lambda pos, neg, seed, resamples=20: _auc(pos, neg, seed, resamples)  # type: ignore[misc]


def row(u, ds, forget, retain, unseen, refs, unlearned, name: str, stayed: np.ndarray | None = None) -> dict:
    """One audit's row; ``stayed``: the forgotten records the unlearned model truly kept (none on exact retraining,
    all on noop, ``half_kept`` on the half-forgotten model): the records named that are among them."""
    rec = Records(ds, np.sort(np.concatenate([forget, retain])), forget, retain, unseen, unseen)
    models = audit.Models(None, unlearned.astype(np.float64), None, refs.astype(np.float64),  # type: ignore[arg-type]
                          Method(name=name, label=name), 0)  # fmt: skip
    s = audit.verify_models(u, rec, models, time.perf_counter()).section
    return {
        "dataset": u.cfg.dataset.name,
        "seed": u.cfg.seed,
        "unlearned": name,
        "verdict": s.verdict,
        "p_value": s.p_value,
        "p_records": s.p_records,
        "p_models": s.p_models,
        "p_selection": getattr(s, "p_selection", None),
        "forget": len(forget),
        "remembered": len(s.remembered),
        "remembered_right": int(np.isin(s.remembered, stayed).sum()) if stayed is not None else 0,
        "over_forgotten": len(s.over_forgotten),
        "damaged": getattr(s, "damaged", None),
        "test_acc": s.utility.test.unlearned,
        "test_acc_retrained": s.utility.test.retrained_mean,
        "retained_acc": s.utility.retained.unlearned,
        "retained_acc_retrained": s.utility.retained.retrained_mean,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logits", type=Path, default=Path("/tmp/unlearn-null"))
    ap.add_argument("--tag", default="after")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    rows = json.loads(args.out.read_text())["rows"] if args.out.exists() else []  # a rerun adds the new seeds
    done, loaded = {(r["dataset"], r["seed"]) for r in rows}, {}
    for path in sorted(args.logits.glob("*.npz")):
        name, seed = path.stem.rsplit("-", 1)
        if (name, int(seed)) in done:
            continue
        a = np.load(path)
        u = from_mapping({"dataset": name, "model": "mlp", "seed": int(seed), "references": 4,
                          "unlearning": {"forget": FORGET[name], "method": "retrain"}})  # fmt: skip
        ds = loaded.setdefault(name, datasets.load(u.cfg))
        forget, retain, unseen = a["forget"], a["retain"], a["unseen"]
        stayed = {"noop": forget, "half": a["half_kept"] if "half" in a else None}
        for model in ("retrain", "seed", "epochs", "lr", "noop", "sisa", "half"):
            if model in a:
                truth = stayed.get(model, np.zeros(0, dtype=np.int64))
                rows.append(row(u, ds, forget, retain, unseen, a["refs"], a[model], model, truth))
        if "oc_forget" in a:
            oc = a["oc_forget"]
            oc_retain = np.setdiff1d(np.concatenate([forget, retain]), oc)
            rows.append(row(u, ds, oc, oc_retain, unseen, a["oc_refs"], a["oc_retrain"], "one-class retrain", oc[:0]))
        print(path.stem, [r["verdict"] for r in rows if r["seed"] == int(seed) and r["dataset"] == name], flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"tag": args.tag, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
