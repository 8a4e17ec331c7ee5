"""Stage 1 of the null benchmark (null_rates.py reads it): train the models once, keep their logits.

    MIAUDIT_DATA_DIR=../shared/data OMP_NUM_THREADS=1 python benchmarks/unlearning/null_models.py \
        --dataset digits --seeds 100 219 --logits /tmp/unlearn-null [--extras 20 --one-class 3 --sisa 5]

Per audit seed (the config of `miaudit unlearn`: mlp, `references: 4`, forget 50 on digits / 100 on Location
drawn with the seed): the 4 models retrained on the retained records that `miaudit unlearn` trains (the same
cache keys), and, as the unlearned model, exact retraining under each legitimate variation of the recipe:

- ``retrain``: the built-in `method: retrain` (its own seed);
- ``seed``: another seed (another init and batch order);
- ``epochs``: 25 epochs instead of 30;
- ``lr``: learning rate 0.05 instead of 0.1;

on the first ``--extras N`` seeds: the original model too (the `noop` unlearned model: nothing forgotten),
with ``--one-class C`` a second audit per seed whose forget set is every training record of class C (the
retained records then hold none of class C: 4 retrained models and an exact retrain), with ``--sisa S`` a
SISA-style ensemble (S shard models on disjoint parts of the retained records, softmax averaged; none saw a
forgotten record), with ``--half`` a partial unlearning whose truth is known: exact retraining on the retained
records plus a seeded half of the forget set (``half_kept``: those records stayed, the other half is forgotten;
the `remembered` list's precision is the share of its names among ``half_kept``; added to existing files on a
rerun). One .npz per data set and seed: the record roles and every model's logits (float32).
The model store is the usual cache ($MIAUDIT_CACHE_DIR): a rerun trains nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from miaudit.experiment import datasets, together
from miaudit.experiment.recipes import ModelJob, model_seed, open_store, target_job
from miaudit.progress import ModelProgress
from miaudit.unlearning import audit
from miaudit.unlearning.config import from_mapping

FORGET = {"digits": 50, "location": 100}
VARIATIONS: dict[str, dict] = {"seed": {}, "epochs": {"epochs": 25}, "lr": {"lr": 0.05}}
SEED_TAG = 0x5EED  # the "another seed" variation's model seed
HALF_TAG = 0x4A1F  # the half-forgotten model's seed and the draw of the half kept


def config(dataset: str, seed: int, forget: object, train: dict | None = None):
    raw = {
        "dataset": dataset,
        "model": "mlp",
        "seed": seed,
        "references": 4,
        "unlearning": {"forget": forget, "method": "retrain"},
    }
    if train:
        raw["train"] = train
    return from_mapping(raw)


def logits_of(u, ds, jobs: list[ModelJob]) -> list[np.ndarray]:
    store = open_store(u.cfg)
    with ModelProgress(len(jobs)) as tracker:
        got = together.obtain_all(store, jobs[0].recipe, ds, jobs, tracker, u.cfg.device)
    return [np.asarray(m.logits, dtype=np.float32) for m in got]


def sisa(u, ds, retain: np.ndarray, shards: int, seed: int) -> np.ndarray:
    """log of the mean softmax of ``shards`` models, each trained on its own part of the retained records."""
    rng = np.random.default_rng(seed)
    parts = np.array_split(rng.permutation(retain), shards)
    recipe = target_job(u.cfg, ds, retain).recipe
    jobs = [
        ModelJob(role=f"shard {i}", recipe=recipe, ds=ds, seed=model_seed(seed, 0x515A + i), train_idx=np.sort(p))
        for i, p in enumerate(parts)
    ]
    probs = np.mean([torch.softmax(torch.as_tensor(lg), dim=1).numpy() for lg in logits_of(u, ds, jobs)], axis=0)
    return np.log(np.clip(probs, 1e-12, 1.0)).astype(np.float32)


def half(u, ds, rec) -> dict[str, np.ndarray]:
    """Exact retraining on the retained records and a seeded half of the forget set: the half kept stayed."""
    rng = np.random.default_rng(np.random.SeedSequence([u.cfg.seed, HALF_TAG]))
    kept = np.sort(rng.choice(rec.forget, len(rec.forget) // 2, replace=False))
    recipe = target_job(u.cfg, ds, rec.members).recipe
    job = ModelJob(role="half", recipe=recipe, ds=ds, seed=model_seed(u.cfg.seed, HALF_TAG),
                   train_idx=np.sort(np.concatenate([rec.retain, kept])))  # fmt: skip
    return {"half": logits_of(u, ds, [job])[0], "half_kept": kept}


def one_audit(u, ds, rec, with_noop: bool, shards: int) -> dict[str, np.ndarray]:
    jobs = audit.model_jobs(u, rec)  # [original, unlearned (retrain), retrained 1..4]
    seed = u.cfg.seed
    chosen = jobs[1:] + ([jobs[0]] if with_noop else [])
    for name, train in VARIATIONS.items():  # "seed": the default recipe; the others a recipe of their own
        varied = config(u.cfg.dataset.name, seed, 1, train).cfg
        recipe = target_job(varied, ds, rec.members).recipe if train else jobs[1].recipe
        chosen.append(ModelJob(role=name, recipe=recipe, ds=ds, seed=model_seed(seed, SEED_TAG), train_idx=rec.retain))
    out: dict[str, np.ndarray] = {}
    for recipe in {id(j.recipe): j.recipe for j in chosen}.values():  # the jobs of one recipe train together
        group = [j for j in chosen if j.recipe is recipe]
        out |= dict(zip([j.role for j in group], logits_of(u, ds, group), strict=True))
    result = {
        "refs": np.stack([out[f"retrained {j + 1}/4"] for j in range(4)]),
        "retrain": out["unlearned (retrain)"],
        **{name: out[name] for name in VARIATIONS},
        "forget": rec.forget,
        "unseen": rec.unseen,
        "retain": rec.retain,
        "y": np.asarray(ds.y),
    }
    if with_noop:
        result["noop"] = out["target"]
    if shards:
        result["sisa"] = sisa(u, ds, rec.retain, shards, seed)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="digits")
    ap.add_argument("--seeds", type=int, nargs=2, default=[100, 219], help="first and last seed")
    ap.add_argument("--logits", type=Path, default=Path("/tmp/unlearn-null"))
    ap.add_argument("--extras", type=int, default=0, help="noop, one class and SISA on the first N seeds only")
    ap.add_argument("--one-class", type=int, default=None, help="also forget every training record of this class")
    ap.add_argument("--sisa", type=int, default=0, help="shards of a SISA ensemble (0: none)")
    ap.add_argument("--half", action="store_true", help="also a model that kept half the forget set (extras seeds)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.logits.mkdir(parents=True, exist_ok=True)
    for seed in range(args.seeds[0], args.seeds[1] + 1):
        path = args.logits / f"{args.dataset}-{seed}.npz"
        extras = seed - args.seeds[0] < args.extras
        start = time.perf_counter()
        u = config(args.dataset, seed, FORGET[args.dataset])
        if path.exists():
            with np.load(path) as done:
                if not (args.half and extras and "half" not in done):
                    continue
                arrays = dict(done)
            ds = datasets.load(u.cfg)
            arrays |= half(u, ds, audit.records(u, ds))
            np.savez_compressed(path, **arrays)
            print(f"{args.dataset} seed {seed}: half in {time.perf_counter() - start:.1f} s", flush=True)
            continue
        ds = datasets.load(u.cfg)
        rec = audit.records(u, ds)
        arrays = one_audit(u, ds, rec, extras, args.sisa if extras else 0)
        if extras and args.half:
            arrays |= half(u, ds, rec)
        if extras and args.one_class is not None:
            members = rec.members
            cls = members[np.asarray(ds.y)[members] == args.one_class]
            forget_file = args.logits / f"{args.dataset}-{seed}-class{args.one_class}.npy"
            np.save(forget_file, cls)
            u1 = config(args.dataset, seed, str(forget_file))
            rec1 = audit.records(u1, ds)
            jobs = audit.model_jobs(u1, rec1)[1:]
            lg = logits_of(u1, ds, jobs)
            arrays |= {"oc_refs": np.stack(lg[1:]), "oc_retrain": lg[0], "oc_forget": rec1.forget}
        np.savez_compressed(path, **arrays)
        print(f"{args.dataset} seed {seed}: {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
