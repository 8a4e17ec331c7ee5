"""The benchmark suites: which data sets, attack rows and seeds each runs (``miaudit bench NAME``).

``run.py`` runs a suite and aggregates it; this module only describes them. Each suite writes
``benchmarks/results/<suite>.{json,md}`` (``miaudit bench --out`` elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import lm as lm_bench

PEERS = ("attack-r", "lira", "rmia")


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    datasets: dict[str, dict[str, Any]]  # label -> base config (everything but seed and attacks)
    rows: Callable[[int], list[dict[str, Any]]]  # attack rows for a run with K references
    seeds: tuple[int, ...] = (0, 1, 2)
    seeds_for: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # fewer seeds where a data set is costly
    rows_for: dict[str, Callable[[int], list[dict[str, Any]]]] = field(default_factory=dict)  # per data set
    prepare: dict[str, Callable[[], None]] = field(default_factory=dict)  # run once before a data set's seeds


def table1_rows(k_max: int, budgets: tuple[int, ...] = (1, 2, 4, 8, 16)) -> list[dict[str, Any]]:
    """Table 1 of the BMIA paper, extended to every reference budget up to k_max."""
    ks = [k for k in budgets if k <= k_max]
    rows: list[dict[str, Any]] = [
        {"name": "attack-p"},
        {"name": "qmia"},
        {"name": "gls"},
        {"name": "bmia", "references": 1},
    ]
    rows += [{"name": n, "references": k} for n in PEERS for k in ks]
    rows += [{"name": n, "references": k} for n in ("bavaria-n", "bavaria-t") for k in ks]
    # BASE2-4 need per-record IN estimates, so they run online only; these suites are offline (SPEC).
    rows += [{"name": "base1", "references": k_max}]
    rows += [{"name": "mr-bmia", "references": k} for k in ks if k >= 2]
    return rows


def ablation_rows(k_max: int) -> list[dict[str, Any]]:
    """BMIA's knobs one at a time around the default (M=1000, kron, marglik, weight sampling)."""
    bmia = {"name": "bmia", "references": 1}
    rows = [{**bmia, "samples": m, "label": f"bmia M={m}"} for m in (10, 100, 1000)]
    rows += [{**bmia, "hessian": h, "label": f"bmia hessian={h}"} for h in ("diag", "kron", "full")]
    rows += [
        {**bmia, "prior": "validation", "label": "bmia prior=validation"},
        {**bmia, "predictive": "glm", "label": "bmia predictive=glm"},
        {"name": "lira", "references": 1},
        {"name": "lira", "references": k_max},
        # the published LiRA code centres on the median of the reference scores; ours defaults to the mean
        {"name": "lira", "references": k_max, "center": "median", "label": f"lira (n={k_max}) center=median"},
    ]
    return rows


FRONTIER_BUDGETS = (1, 2, 4, 8, 16)
FRONTIER_CANDIDATES = ("eb-bmia", "lr-bmia", "rmia-draws")  # attacks/bmia_variants.py
FRONTIER_SEEDS = (3, 4, 5)  # reporting seeds, fixed in benchmarks/frontier/frontier_protocol.md; development used 0-2


def frontier_rows(k_max: int) -> list[dict[str, Any]]:
    """Offline, every reference budget up to k_max: the frontier candidates and the best existing attacks."""
    ks = [k for k in FRONTIER_BUDGETS if k <= k_max]
    rows: list[dict[str, Any]] = [{"name": "bmia", "references": 1}]
    rows += [{"name": "mr-bmia", "references": k} for k in ks if k >= 2]
    rows += [{"name": n, "references": k} for n in ("lira", "rmia", "bavaria-n", *FRONTIER_CANDIDATES) for k in ks]
    return rows


def ceiling_rows(k_max: int) -> list[dict[str, Any]]:
    """Online (each query IN for half the references): LiRA and BaVarIA-n with 16 and, where trained, 64."""
    return [{"name": n, "references": k} for n in ("lira", "bavaria-n") for k in (16, 64) if k <= k_max]


LOCATION = {"dataset": "location", "model": "mlp", "train": {"epochs": 30, "batch_size": 64, "lr": 0.1}}
# 5,000 records: 1,000 members, 1,000 non-members, references on 1,000 each; sized so that
# one model trains in one to two minutes on 2 cores and overfits as in the paper.
CIFAR10: dict[str, Any] = {
    "dataset": {"name": "cifar10", "subset": 5000},
    "model": "cnn",
    "train": {"epochs": 35, "batch_size": 32, "lr": 0.1},
}
AG_NEWS = {"dataset": "ag_news", "model": "mlp", "train": {"epochs": 30, "batch_size": 64, "lr": 0.1}}
DIGITS = {"dataset": "digits", "model": "mlp", "train": {"epochs": 40, "batch_size": 32, "lr": 0.05}}


def posterior_rows(k: int) -> list[dict[str, Any]]:
    """BMIA paper Table 5: BMIA with each last-layer posterior (one reference model)."""
    return [
        {"name": "bmia", "references": 1, "posterior": p, "label": f"bmia posterior={p}"}
        for p in ("laplace", "mc-dropout", "swag", "ensemble")
    ]


FAMILIES = ("exponential", "gamma", "beta", "gaussian", "gaussian-equal-var")
ROBUST = {"median": {"center": "median"}, "trimmed": {"center": "trimmed"}, "winsorized": {"spread": "winsorized"}}
ROBUST |= {"iqr": {"spread": "iqr"}, "logsumexp": {"pool": "logsumexp"}}


def family_rows(k_max: int) -> list[dict[str, Any]]:
    """BaVarIA paper section 3.1 / B.6: each family, and each robust estimator of the Gaussian family, at
    K = 2, 8, 16 references (online)."""
    rows: list[dict[str, Any]] = []
    for k in (2, 8, 16):
        if k <= k_max:
            rows += [{"name": "exp-family", "references": k, "family": f, "label": f"{f} (n={k})"} for f in FAMILIES]
            rows += [
                {"name": "exp-family", "references": k, "family": "gaussian", **opts, "label": f"gaussian {r} (n={k})"}
                for r, opts in ROBUST.items()
            ]
    return rows


def shift_rows(k: int) -> list[dict[str, Any]]:
    """BMIA paper section 4.4: BMIA against LiRA (1 and 4 references) and RMIA (1) under a shift."""
    rows = [{"name": "bmia", "references": 1}, {"name": "lira", "references": 1}]
    return rows + [{"name": "lira", "references": 4}, {"name": "rmia", "references": 1}]


# The seeds suite on the paper suite's configurations (models that learn as in Table 1), fewer seeds where costly.
SEEDS_SUITE = Suite(
    "seeds",
    "the seeds' methods on the paper configurations: (a) BMIA per posterior on the CIFAR-10 subset (Table 5), "
    "3 seeds; (b) each exponential family and robust estimator online at K = 2/8/16 on location, digits and "
    "the CIFAR-10 subset, 1 seed; (c) BMIA, LiRA, RMIA with references on noisy CIFAR-10 and with noisy "
    "CIFAR-10 non-members, 1 seed",
    {
        "cifar10-posteriors": {**CIFAR10, "references": 1, "min_fpr": 0.005},
        "location-online": {**LOCATION, "mode": "online", "references": 16},
        "digits-online": {**DIGITS, "mode": "online", "references": 16},
        "cifar10-online": {**CIFAR10, "mode": "online", "references": 16},
        "cifar10-shifted-population": {**CIFAR10, "references": 4, "reference_data": "cifar10-noise"},
        "cifar10-ood-nonmembers": {**CIFAR10, "references": 4, "nonmember_data": "cifar10-noise"},
    },
    lambda k: shift_rows(k),
    # cifar10-online on seed 3: the frontier suite's online CIFAR-10 models (the same configuration), shared
    seeds_for={d: (0,) for d in ("location-online", "digits-online", "cifar10-shifted-population")}
    | {"cifar10-ood-nonmembers": (0,), "cifar10-online": (3,)},
    rows_for={label: family_rows for label in ("location-online", "digits-online", "cifar10-online")}
    | {"cifar10-posteriors": posterior_rows},
)

SUITES: dict[str, Suite] = {
    s.name: s
    for s in [
        Suite(
            "smoke",
            "a seconds-long run for CI: tiny digits subset, 2 references, every attack family",
            {
                "digits": {
                    "dataset": {"name": "digits", "subset": 400},
                    "model": "mlp",
                    "references": 2,
                    "train": {"epochs": 3, "batch_size": 32, "lr": 0.05},
                }
            },
            lambda k: table1_rows(k),
            seeds=(0, 1),
        ),
        Suite(
            "quick",
            "digits and location, 4 references, Table 1 rows, 3 seeds (minutes)",
            {"digits": {**DIGITS, "references": 4}, "location": {**LOCATION, "references": 4}},
            lambda k: table1_rows(k),
        ),
        Suite(
            "paper",
            "Table 1 on every offline data set: location (16 refs), cifar10 subset, ag_news, digits (8 refs)",
            {
                "location": {**LOCATION, "references": 16},
                "cifar10": {**CIFAR10, "references": 8},
                "ag_news": {**AG_NEWS, "references": 8},
                "digits": {**DIGITS, "references": 8},
            },
            lambda k: table1_rows(k),
        ),
        Suite(
            "ablations",
            "BMIA: posterior samples M, Hessian structure, prior precision, predictive; "
            "architecture mismatch (target cnn, references resnet) as in the paper's Table 4",
            {
                "location": {**LOCATION, "references": 8},
                "cifar10": {**CIFAR10, "references": 8},
                "cifar10-mismatch": {**CIFAR10, "reference_model": "resnet", "references": 4},
            },
            # location on one seed: its full-Hessian row (3,870 last-layer parameters) costs minutes per seed here
            lambda k: ablation_rows(k),
            seeds_for={"location": (0,), "cifar10-mismatch": (0,)},
        ),
        SEEDS_SUITE,
    ]
}


SUITES["frontier"] = Suite(
    "frontier",
    "the strongest offline attack per reference budget K = 1-16 (the frontier candidates and the best existing "
    "attacks) against the ceiling, online LiRA and BaVarIA-n with K = 16 and 64; reporting seeds 3-5 "
    "(benchmarks/frontier/frontier_protocol.md)",
    {
        "location": {**LOCATION, "references": 16},
        "digits": {**DIGITS, "references": 16},
        "cifar10": {**CIFAR10, "references": 8},  # amendment 1 of the protocol: compute
        "ag_news": {**AG_NEWS, "references": 16},
        "location-online": {**LOCATION, "mode": "online", "references": 64},
        "digits-online": {**DIGITS, "mode": "online", "references": 64},
        "cifar10-online": {**CIFAR10, "mode": "online", "references": 16},
    },
    frontier_rows,
    seeds=FRONTIER_SEEDS,
    seeds_for={label: FRONTIER_SEEDS[:1] for label in ("location-online", "digits-online", "cifar10-online")},
    rows_for={label: ceiling_rows for label in ("location-online", "digits-online", "cifar10-online")},
)


FRONTIER2_CANDIDATES = ("pair-lr", "pair-logit")  # attacks/pair.py (issue 27)
FRONTIER2_BUDGETS = (1, 2, 4, 8)
# the first round's candidates and the existing attacks that were best somewhere in it
# (benchmarks/frontier/frontier_table.md)
FRONTIER2_PEERS = ("lira", "rmia", "bavaria-n", "rmia-draws", "lr-bmia")


def frontier2_rows(k_max: int) -> list[dict[str, Any]]:
    """Offline, K = 1, 2, 4, 8: the round-two candidates beside the first round's best on the same models."""
    ks = [k for k in FRONTIER2_BUDGETS if k <= k_max]
    return [{"name": n, "references": k} for n in (*FRONTIER2_CANDIDATES, *FRONTIER2_PEERS) for k in ks]


# Protocol amendment 2 (benchmarks/frontier/frontier_protocol.md): the first round's configurations, 8 references.
SUITES["frontier2"] = Suite(
    "frontier2",
    "round two of the frontier: offline attacks that predict each record's IN behaviour (pair-lr, pair-logit) "
    "beside the first round's best, K = 1, 2, 4, 8 on location, digits, the CIFAR-10 subset and AG News; "
    "reporting seeds 3-5 (benchmarks/frontier/frontier_protocol.md, amendment 2)",
    {
        label: {**base, "references": 8}
        for label, base in (("location", LOCATION), ("digits", DIGITS), ("cifar10", CIFAR10), ("ag_news", AG_NEWS))
    },
    frontier2_rows,
    seeds=FRONTIER_SEEDS,
)


def augmentation_rows(k_max: int) -> list[dict[str, Any]]:
    """Issue 15's rows: LiRA (n=1, 4, 8), RMIA (n=1, 4), BMIA (n=1)."""
    rows = [{"name": "lira", "references": k} for k in (1, 4, 8) if k <= k_max]
    rows += [{"name": "rmia", "references": k} for k in (1, 4) if k <= k_max]
    return rows + [{"name": "bmia", "references": 1}]


TINY_BERT = Path("~/.cache/miaudit/tiny-bert-ag_news").expanduser()
TINY_BERT_LENGTH = 32  # tokens: most AG News titles + descriptions are cut; 4x cheaper than 64 on a CPU


def build_tiny_bert() -> None:
    """A 2-layer, 32-wide BERT from scratch with a word-level tokenizer over AG News' 5,000 most frequent
    words (the text path at a size 2 CPU cores train: about 30 s per model), once."""
    if (TINY_BERT / "config.json").is_file():
        return
    from miaudit.data import base, text

    from . import tiny_bert

    data_dir = base.default_data_dir()
    if data_dir is None:
        raise SystemExit("realmodels: the ag_news-bert data set needs AG News (set MIAUDIT_DATA_DIR)")
    texts, _ = text.read_news(data_dir / text.AG_NEWS_FILE)
    tiny_bert.build(TINY_BERT, tiny_bert.vocabulary(texts, 5000), 4, max_length=TINY_BERT_LENGTH)


# The frontier suite's reporting seeds, so the unaugmented CIFAR-10 models are the frontier's (shared in the cache).
SUITES["realmodels"] = Suite(
    name="realmodels",
    description="augmentation on the CIFAR-10 subset (small CNN, 8 references): none, flip-crop training, mirrored "
    "queries, and both (2 views; LiRA, RMIA a Gaussian / ratio per view, BMIA the mean score over views); "
    "the text path: a 2-layer, 32-wide BERT trained from scratch (AdamW) on AG News token ids; 3 seeds",
    datasets={
        "cifar10": {**CIFAR10, "references": 8},
        "cifar10-flip-crop": {**CIFAR10, "train": {**CIFAR10["train"], "augment": "flip-crop"}, "references": 8},
        "cifar10-mirror-queries": {**CIFAR10, "queries": {"augment": "flip"}, "references": 8},
        # the LiRA paper's setting: queries augmented as the models were trained (flip-crop models shared)
        "cifar10-flip-crop-mirror-queries": {
            **CIFAR10,
            "train": {**CIFAR10["train"], "augment": "flip-crop"},
            "queries": {"augment": "flip"},
            "references": 8,
        },
        "ag_news-bert": {
            "dataset": "ag_news",
            "model": f"hf:{TINY_BERT}[max_length={TINY_BERT_LENGTH}]",
            "train": {"epochs": 10, "batch_size": 32, "lr": 0.002, "optimizer": "adamw", "weight_decay": 0.01},
            "references": 8,
        },
    },
    rows=augmentation_rows,
    seeds=FRONTIER_SEEDS,
    prepare={"ag_news-bert": build_tiny_bert},
)

SUITES["lm"] = Suite(
    "lm",
    "causal LMs on AG News (docs/lm-audits.md): gpt-tiny (2 layers, 64 wide, word-level) trained from scratch, "
    "and a gpt-tiny base pre-trained on half of AG News fine-tuned on texts of the other half; members and "
    "non-members from one pool; K = 0, 1 and 4 references; the blind baseline beside them",
    lm_bench.DATASETS,
    lm_bench.rows,
    prepare={"ag_news-finetune": lm_bench.build_finetune_base},
)
