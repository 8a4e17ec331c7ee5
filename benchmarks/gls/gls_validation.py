"""Does the GLS of one trained model predict which records LiRA exposes? (GLS paper, section 6.2.)

Ground truth (shadow-model vulnerability, as the paper's Table 2). N_MODELS MLPs
(``bench.LOCATION`` recipe) each train on a random half of a fixed pool of
location records, every record IN for exactly half of them
(``reference_subsets(balanced=True)``). Each model in turn is the target of an
online LiRA (the registered ``lira`` attack, rescaled logits) whose references
are the other N_MODELS - 1 models. s[m, i] is record i's LiRA score against
model m. Per record:
* ``lira_score`` (primary, the paper's "LiRA score" row): mean of s[m, i] over
  the models m that trained on i; the LiRA likelihood ratio of a member.
* ``lira_auc``: AUC of s[., i] between the models that trained on i and those
  that did not (the per-record attack success over every threshold).
* ``lira_gap``: mean s[m, i] over IN models minus mean over OUT models.
* ``tpr_low_fpr``: the paper's TPR@FPR=0.05; with N_MODELS/2 OUT models the
  only FPR below 5% is 0, so: the fraction of IN scores above every OUT score.
* ``mean_gap`` |mu_in - mu_out| and ``sd_ratio`` sigma_out/sigma_in of the
  rescaled logit over all models (the paper's two remaining rows).
* ``lira_score_model0``: s[0, i] alone (the paper's protocol compares GLS and
  LiRA of the same model).

Predictors, all from model 0 alone (plus one reference for BMIA), on the pool:
GLS (``leverage.cross_entropy_gls``, Hessian of model 0's own training records:
an auditor who holds the training set; logit and probability space), GLS as
the ``gls`` attack runs it (Hessian of the queried records, i.e. the whole
pool), the loss, the last-layer gradient norm, and BMIA's t (one extra
reference trained on pool-disjoint records). Spearman correlations with the
ground truth over model 0's training records and over the whole pool, and
precision at the top 5% most vulnerable records. Writes JSON and markdown.

    python benchmarks/gls/gls_validation.py [--models 32] [--pool 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from scipy import stats
from scipy.special import softmax
from threadpoolctl import threadpool_limits

from miaudit import data
from miaudit.attacks import AttackInputs, ModelAccess, RecordSet, registry
from miaudit.config import run as config
from miaudit.experiment import datasets, recipes
from miaudit.experiment.base import TrainedModel
from miaudit.models.features import penultimate
from miaudit.progress import ModelProgress
from miaudit.stats import leverage, signals
from miaudit_bench import run as bench

TOP_FRACTION = 0.05
BOOTSTRAP = 1000
PRIMARY = "lira_score"


# ---- models -------------------------------------------------------------------------------------------------


def pools(n_records: int, pool_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The shadow pool and, disjoint from it, the BMIA reference's training records (pool_size / 2)."""
    perm = np.random.default_rng(np.random.SeedSequence([seed, 0x615])).permutation(n_records)
    if n_records < pool_size + pool_size // 2:
        raise SystemExit(f"--pool {pool_size}: needs {pool_size + pool_size // 2} records, data set has {n_records}")
    return np.sort(perm[:pool_size]), np.sort(perm[pool_size : pool_size + pool_size // 2])


def train_models(
    cfg: config.RunConfig, ds: data.Dataset, train_sets: list[np.ndarray], roles: list[str]
) -> list[TrainedModel]:
    """Each model trained on its records (or loaded from the MIAUDIT_CACHE_DIR store)."""
    store, recipe = recipes.open_store(cfg), recipes.builtin_recipe(cfg, ds, cfg.model)
    with ModelProgress(len(train_sets)) as progress:
        return [
            recipes.obtain(
                store,
                recipe,
                ds,
                role,
                int(np.random.SeedSequence([cfg.seed, 0x6C5, k]).generate_state(1)[0]),
                idx,
                progress,
            )
            for k, (idx, role) in enumerate(zip(train_sets, roles))
        ]


# ---- ground truth -------------------------------------------------------------------------------------------


def leave_one_out_lira(logits: np.ndarray, masks: np.ndarray, labels: np.ndarray, seed: int) -> np.ndarray:
    """(M, n) online LiRA score of every record against every model, the other M - 1 models as references."""
    scores = []
    for m in range(len(logits)):
        others = np.delete(np.arange(len(logits)), m)
        queries = RecordSet(labels=labels, target_logits=logits[m], ref_logits=logits[others], ref_in=masks[others])
        scores.append(registry.score("lira", AttackInputs(queries=queries, mode="online", seed=seed)).scores)
    return np.stack(scores)


def per_record_auc(scores: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """P(IN score > OUT score) + P(tie)/2 per record: Mann-Whitney U over the M models, divided by n_in n_out."""
    ranks = stats.rankdata(scores, axis=0)
    n_in, n_out = masks.sum(axis=0), (~masks).sum(axis=0)
    return ((ranks * masks).sum(axis=0) - n_in * (n_in + 1) / 2) / (n_in * n_out)


def vulnerability(
    scores: np.ndarray, masks: np.ndarray, logits: np.ndarray, labels: np.ndarray
) -> dict[str, np.ndarray]:
    """Every per-record ground truth of the module docstring, (n,) each."""
    n_in = masks.sum(axis=0)
    mean_in = (scores * masks).sum(axis=0) / n_in
    mean_out = (scores * ~masks).sum(axis=0) / (~masks).sum(axis=0)
    out_max = np.where(masks, -np.inf, scores).max(axis=0)
    z = signals.rescaled_logit(logits, labels)  # (M, n)
    z_in, z_out = np.where(masks, z, np.nan), np.where(masks, np.nan, z)
    return {
        "lira_score": mean_in,
        "lira_auc": per_record_auc(scores, masks),
        "lira_gap": mean_in - mean_out,
        "tpr_low_fpr": ((scores > out_max) & masks).sum(axis=0) / n_in,
        "mean_gap": np.abs(np.nanmean(z_in, axis=0) - np.nanmean(z_out, axis=0)),
        "sd_ratio": np.nanstd(z_out, axis=0) / np.maximum(np.nanstd(z_in, axis=0), 1e-12),
        "lira_score_model0": scores[0],
    }


def split_half_reliability(scores: np.ndarray, masks: np.ndarray) -> dict[str, float]:
    """Spearman of the primary ground truth from models [0, M/2) with that from [M/2, M), and its
    Spearman-Brown projection to all M models: the most any predictor can reach."""
    half = len(scores) // 2
    first, second = (
        ((scores[s] * masks[s]).sum(axis=0) / masks[s].sum(axis=0)) for s in (slice(0, half), slice(half, None))
    )
    rho = float(stats.spearmanr(first, second).statistic)
    return {"split_half_spearman": rho, "spearman_brown": 2 * rho / (1 + rho)}


# ---- predictors on model 0 ----------------------------------------------------------------------------------


def head_arrays(model: torch.nn.Module, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(penultimate features, softmax probabilities) in float64, the probabilities from those features."""
    features = penultimate(model, x).cpu().numpy()
    weight = model.head.weight.detach().double().numpy()
    bias = model.head.bias.detach().double().numpy()
    return features, softmax(features @ weight.T + bias, axis=1)


def gls_auditor(model: torch.nn.Module, x_train: np.ndarray, x_pool: np.ndarray, space: str) -> np.ndarray:
    """trace GLS (eq. C.30) with the Hessian of the target's own training records (the auditor's view)."""
    g_train, p_train = head_arrays(model, x_train)
    g_pool, p_pool = head_arrays(model, x_pool)
    return leverage.cross_entropy_gls(g_train, p_train, g_pool, p_pool, space=space)


def gls_attack(target: TrainedModel, pool: np.ndarray, ds: data.Dataset, seed: int) -> np.ndarray:
    """The registered ``gls`` attack with its defaults: Hessian of the queried records (the whole pool)."""
    models = ModelAccess(target=target.module, references=[], reference_train=[], query_x=ds.x[pool])
    queries = RecordSet(
        labels=ds.y[pool], target_logits=target.logits[pool], ref_logits=np.zeros((0, len(pool), ds.n_classes))
    )
    return registry.score("gls", AttackInputs(queries=queries, models=models, seed=seed)).scores


def gradient_norm(model: torch.nn.Module, x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """||d loss / d (W, b)||_F = ||p - e_y|| * ||[g, 1]||: the head's gradient is the outer product (p - e_y) g~^T."""
    features, probs = head_arrays(model, x)
    residual = probs - np.eye(probs.shape[1])[labels]
    return np.linalg.norm(residual, axis=1) * np.linalg.norm(leverage.augment_bias(features), axis=1)


def bmia_t(target: TrainedModel, reference: TrainedModel, pool: np.ndarray, ds: data.Dataset, seed: int) -> np.ndarray:
    """BMIA's t (Algorithm 1, defaults) of model 0 against one reference that never saw the pool (offline)."""
    models = ModelAccess(
        target=target.module,
        references=[reference.module],
        reference_train=[(ds.x[reference.train_idx], ds.y[reference.train_idx])],
        query_x=ds.x[pool],
    )
    queries = RecordSet(labels=ds.y[pool], target_logits=target.logits[pool], ref_logits=reference.logits[pool][None])
    return registry.score("bmia", AttackInputs(queries=queries, models=models, seed=seed)).extra["t"]


def predictors(
    target: TrainedModel, reference: TrainedModel, pool: np.ndarray, ds: data.Dataset, seed: int
) -> dict[str, Callable[[], np.ndarray]]:
    """Name -> computation of one score per pool record; higher = predicted more vulnerable."""
    x_pool, y_pool, x_train = ds.x[pool], ds.y[pool], ds.x[target.train_idx]
    return {
        "GLS logit, auditor Hessian": lambda: gls_auditor(target.module, x_train, x_pool, "logit"),
        "GLS probability, auditor Hessian": lambda: gls_auditor(target.module, x_train, x_pool, "probability"),
        "GLS attack default (Hessian of queries)": lambda: gls_attack(target, pool, ds, seed),
        "loss": lambda: signals.loss(target.logits[pool], y_pool),
        "last-layer gradient norm": lambda: gradient_norm(target.module, x_pool, y_pool),
        "BMIA t (1 reference)": lambda: bmia_t(target, reference, pool, ds, seed),
    }


# ---- evaluation ---------------------------------------------------------------------------------------------


def precision_at_top(predicted: np.ndarray, truth: np.ndarray, fraction: float = TOP_FRACTION) -> float:
    """|top-k by predictor and top-k by truth| / k, k = ceil(fraction * n); chance level is fraction."""
    k = int(np.ceil(fraction * len(truth)))
    return len(_top(predicted, k) & _top(truth, k)) / k


def _top(values: np.ndarray, k: int) -> set[int]:
    return set(np.argsort(-values, kind="stable")[:k].tolist())


def spearman_interval(predicted: np.ndarray, truth: np.ndarray, rng: np.random.Generator) -> list[float]:
    """95% percentile bootstrap interval of the Spearman correlation over records."""
    draws = rng.integers(0, len(truth), size=(BOOTSTRAP, len(truth)))
    rhos = [stats.spearmanr(predicted[d], truth[d]).statistic for d in draws]
    return [float(q) for q in np.quantile(rhos, [0.025, 0.975])]


def evaluate(
    predicted: np.ndarray, truths: dict[str, np.ndarray], loss: np.ndarray, subset: np.ndarray, rng: np.random.Generator
) -> dict:
    """Spearman with every ground truth, and with the loss (how much of the ranking the loss alone gives)."""
    p, t = predicted[subset], {k: v[subset] for k, v in truths.items()}
    return {
        "spearman": {k: float(stats.spearmanr(p, v).statistic) for k, v in t.items()},
        "spearman_with_loss": float(stats.spearmanr(p, loss[subset]).statistic),
        "spearman_ci95": spearman_interval(p, t[PRIMARY], rng),
        "precision_at_top5": precision_at_top(p, t[PRIMARY]),
    }


# ---- report -------------------------------------------------------------------------------------------------


def _cell(entry: dict) -> str:
    low, high = entry["spearman_ci95"]
    return f"{entry['spearman'][PRIMARY]:+.3f} [{low:+.2f}, {high:+.2f}]"


def markdown(result: dict) -> str:
    rows = result["predictors"]
    s = result["sizes"]
    lines = [
        f"# GLS validation: location, {s['models']} shadow MLPs, pool {s['pool']}, seed {result['seed']}",
        "",
        f"Ground truth: `{PRIMARY}`, the mean online LiRA score of a record over the models that trained on "
        f"it (leave-one-out: the other {s['models'] - 1} models are the references). Predictors from model 0 "
        f"only. Spearman correlation [95% bootstrap interval]; precision@5% = share of the top 5% "
        f"by predictor that are in the top 5% by ground truth (chance: 0.05).",
        "",
        "| predictor | Spearman, model-0 train records | Spearman, all pool records "
        "| precision@5% train | precision@5% all | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        tr, al = r["train_records"], r["all_records"]
        lines.append(
            f"| {name} | {_cell(tr)} | {_cell(al)} | {tr['precision_at_top5']:.2f} "
            f"| {al['precision_at_top5']:.2f} | {r['seconds']:.2f} |"
        )
    truths = list(next(iter(rows.values()))["train_records"]["spearman"])
    lines += [
        "",
        "Spearman over model 0's training records against every ground truth, and with model 0's loss:",
        "",
        "| predictor | " + " | ".join(truths) + " | loss |",
        "|---" * (len(truths) + 2) + "|",
    ]
    for name, r in rows.items():
        tr = r["train_records"]
        lines.append(
            f"| {name} | "
            + " | ".join(f"{tr['spearman'][k]:+.3f}" for k in truths)
            + f" | {tr['spearman_with_loss']:+.3f} |"
        )
    rel, t = result["ground_truth_reliability"], result["timing_s"]
    lines += [
        "",
        f"Ground-truth split-half Spearman (models 0-{s['models'] // 2 - 1} vs the rest): "
        f"{rel['split_half_spearman']:.3f}; Spearman-Brown for all models: {rel['spearman_brown']:.3f}.",
        f"Model 0: train accuracy {result['model0']['train_accuracy']:.3f}, "
        f"pool non-member accuracy {result['model0']['nonmember_accuracy']:.3f}.",
        f"Time: training {t['training_total']:.0f} s (sum over the {s['models'] + 1} models as first trained; "
        f"{t['models_from_cache']} loaded from the cache this run), "
        f"LiRA ground truth {t['lira_ground_truth']:.1f} s, wall {t['wall']:.0f} s "
        f"on {result['hardware']['cores']} CPU cores, torch {result['hardware']['torch']}.",
        "",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict:
    start = time.perf_counter()
    cfg = config.from_dict({**bench.LOCATION, "seed": args.seed})
    ds = datasets.load(cfg)
    pool, ref_records = pools(len(ds), args.pool, args.seed)
    masks = data.reference_subsets(len(pool), args.models, args.seed, balanced=True)
    models = train_models(
        cfg,
        ds,
        [pool[m] for m in masks] + [ref_records],
        [f"shadow {m + 1}/{args.models}" for m in range(args.models)] + ["BMIA reference"],
    )
    shadows, reference = models[:-1], models[-1]
    logits = np.stack([m.logits[pool] for m in shadows])
    tick = time.perf_counter()
    scores = leave_one_out_lira(logits, masks, ds.y[pool], args.seed)
    truths = vulnerability(scores, masks, logits, ds.y[pool])
    lira_seconds = time.perf_counter() - tick
    rng = np.random.default_rng(np.random.SeedSequence([args.seed, 0xB007]))
    loss = signals.loss(logits[0], ds.y[pool])
    rows = {}
    for name, compute in predictors(shadows[0], reference, pool, ds, args.seed).items():
        tick = time.perf_counter()
        predicted = compute()
        rows[name] = {
            "seconds": time.perf_counter() - tick,
            "train_records": evaluate(predicted, truths, loss, masks[0], rng),
            "all_records": evaluate(predicted, truths, loss, np.ones(len(pool), bool), rng),
        }
        print(f"{name}: {rows[name]['train_records']['spearman'][PRIMARY]:+.3f}", file=sys.stderr, flush=True)
    target_correct = logits[0].argmax(axis=1) == ds.y[pool]
    return {
        "command": "python " + " ".join(sys.argv),
        "seed": args.seed,
        "hardware": bench.hardware(),
        "config": cfg.model_dump(mode="json", include={"dataset", "model", "train"}),
        "sizes": {
            "models": args.models,
            "pool": len(pool),
            "train_per_model": int(masks[0].sum()),
            "bmia_reference_train": len(ref_records),
            "records_in_dataset": len(ds),
        },
        "definitions": {
            "primary_ground_truth": PRIMARY,
            "lira": "online, rescaled logit, "
            f"variance 'auto' (global below 64 references), {args.models - 1} references",
            "top_fraction": TOP_FRACTION,
            "bootstrap": BOOTSTRAP,
            "doc": __doc__,
        },
        "model0": {
            "train_accuracy": float(target_correct[masks[0]].mean()),
            "nonmember_accuracy": float(target_correct[~masks[0]].mean()),
        },
        "ground_truth_reliability": split_half_reliability(scores, masks),
        "predictors": rows,
        "timing_s": {
            "training_total": float(sum(m.seconds for m in models)),
            "models_from_cache": int(sum(m.cached for m in models)),
            "lira_ground_truth": lira_seconds,
            "wall": time.perf_counter() - start,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=32, help="shadow models (even: balanced IN/OUT)")
    parser.add_argument("--pool", type=int, default=2000, help="location records the shadow models share")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads (the machine is shared)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "gls_validation.json")
    args = parser.parse_args()
    if args.models < 4 or args.models % 2:
        parser.error("--models: an even number >= 4 (each record IN for exactly half)")
    torch.set_num_threads(args.threads)
    with threadpool_limits(args.threads):  # numpy's BLAS too (GLS Hessian)
        result = run(args)
    table = markdown(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
