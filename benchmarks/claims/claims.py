"""The BMIA paper's headline claims, checked against our committed suite results.

    python benchmarks/claims/claims.py            # reads benchmarks/results/{paper,ablations,seeds}.json
                                           # writes benchmarks/claims/claims.md and table1.md

A claim is a comparison of two rows' means on one data set. Per data set the
verdict is "yes" (holds by more than one standard deviation of the difference:
seed-to-seed spread combined with the binomial error of each TPR), "no"
(reversed by more than that), or "tie"; over data sets,
"reproduced" (all yes), "within noise" (all ties), "not reproduced" (no yes,
some no), else "mixed".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

RESULTS = Path(__file__).parents[1] / "results"  # the `miaudit bench` suites' results
HERE = Path(__file__).parent  # claims.md and table1.md


@dataclass(frozen=True)
class Claim:
    text: str
    suite: str
    better: str  # row label expected to win
    worse: str  # row label, or "@max:<name>" for that attack at the largest n of the data set
    metric: str  # tpr@0.01, tpr@0.001, auc
    paper: str  # the paper's numbers for the same comparison
    datasets: tuple[str, ...] | None = None  # only these data sets of the suite (None: all)


CLAIMS = [
    Claim(
        "BMIA (n=1) beats LiRA (n=8) at TPR@1%",
        "paper",
        "bmia (n=1)",
        "lira (n=8)",
        "tpr@0.01",
        "CIFAR-100 35.75 vs 23.20; Texas-100 11.81 vs 8.63; ImageNet 13.59 vs 11.90",
    ),
    Claim(
        "BMIA (n=1) beats LiRA (n=8) at TPR@0.1%",
        "paper",
        "bmia (n=1)",
        "lira (n=8)",
        "tpr@0.001",
        "CIFAR-10 2.84 vs 1.73",
    ),
    Claim(
        "BMIA (n=1) beats RMIA (n=1) at TPR@1%",
        "paper",
        "bmia (n=1)",
        "rmia (n=1)",
        "tpr@0.01",
        "CIFAR-100 35.75 vs 10.08",
    ),
    Claim("BMIA (n=1) beats QMIA at TPR@1%", "paper", "bmia (n=1)", "qmia", "tpr@0.01", "CIFAR-100 35.75 vs 15.26"),
    Claim(
        "BMIA (n=1) beats LiRA (n=1) at TPR@1%",
        "paper",
        "bmia (n=1)",
        "lira (n=1)",
        "tpr@0.01",
        "LiRA is BMIA with M = 1 (section 3.2)",
    ),
    Claim(
        "MR-BMIA beats LiRA at equal n (largest n) at TPR@1%",
        "paper",
        "@max:mr-bmia",
        "@max:lira",
        "tpr@0.01",
        "64 references, CIFAR-100: 45.57 vs 43.33",
    ),
    Claim(
        "MR-BMIA beats RMIA at equal n (largest n) at TPR@1%",
        "paper",
        "@max:mr-bmia",
        "@max:rmia",
        "tpr@0.01",
        "64 references, CIFAR-100: 45.57 vs 36.06",
    ),
    Claim(
        "TPR@1% grows with M (M=1000 vs M=10)",
        "ablations",
        "bmia M=1000",
        "bmia M=10",
        "tpr@0.01",
        "monotone in M (Theorem 3.2, figure 2)",
    ),
    Claim(
        "diag Hessian ~ kron (kron not better by > 1 sd)",
        "ablations",
        "bmia hessian=diag",
        "bmia hessian=kron",
        "tpr@0.01",
        "no significant difference (figure 8)",
    ),
    Claim(
        "BMIA (n=1) beats LiRA (n=1) under architecture mismatch, TPR@1%",
        "ablations",
        "bmia M=1000",
        "lira (n=1)",
        "tpr@0.01",
        "CIFAR-10, ResNet-50 target / ResNet-18 references",
        ("cifar10-mismatch",),
    ),
    Claim(
        "BMIA (n=1) beats LiRA (largest n) under architecture mismatch, TPR@1%",
        "ablations",
        "bmia M=1000",
        "@max:lira",
        "tpr@0.01",
        "CIFAR-10, ResNet-50 target / ResNet-18 references, LiRA n=8: 8.72 vs 8.16",
        ("cifar10-mismatch",),
    ),
    Claim(
        "BaVarIA paper: at n=1 the pooled RMIA beats per-record LiRA at TPR@1%",
        "paper",
        "rmia (n=1)",
        "lira (n=1)",
        "tpr@0.01",
        "simpler attacks win at small K (BASE hierarchy, section 3.3)",
    ),
    Claim(
        "BaVarIA paper: at the largest n BaVarIA-n beats RMIA at TPR@1%",
        "paper",
        "@max:bavaria-n",
        "@max:rmia",
        "tpr@0.01",
        "richer attacks win at large K",
    ),
]


SEED_CLAIMS = [
    *(
        Claim(
            f"BMIA paper Table 5: the Laplace posterior beats {other} at TPR@1%",
            "seeds",
            "bmia posterior=laplace",
            f"bmia posterior={other}",
            "tpr@0.01",
            f"CIFAR-10: Laplace 9.48 vs {paper}",
            ("cifar10-posteriors",),
        )
        for other, paper in (("mc-dropout", "MC Dropout 7.94"), ("swag", "SWAG 6.61"), ("ensemble", "-"))
    ),
    Claim(
        "BMIA paper 4.4: BMIA (n=1) beats LiRA (n=1) when the references train on a shifted population",
        "seeds",
        "bmia (n=1)",
        "lira (n=1)",
        "tpr@0.01",
        "Figure 2: BMIA degrades less than LiRA",
        ("cifar10-shifted-population",),
    ),
    Claim(
        "BMIA paper 4.4: BMIA (n=1) beats LiRA (n=1) with out-of-distribution non-members",
        "seeds",
        "bmia (n=1)",
        "lira (n=1)",
        "tpr@0.01",
        "Figure 2",
        ("cifar10-ood-nonmembers",),
    ),
    Claim(
        "BaVarIA 3.1: the Gaussian family beats the Gamma family at K = 16 (online)",
        "seeds",
        "gaussian (n=16)",
        "gamma (n=16)",
        "tpr@0.01",
        "the Gaussian on log-odds is the strongest family",
    ),
    Claim(
        "BaVarIA 3.1: at K = 2 the equal-variance Gaussian beats the per-record Gaussian (online)",
        "seeds",
        "gaussian-equal-var (n=2)",
        "gaussian (n=2)",
        "tpr@0.01",
        "simpler estimators win at small K",
    ),
]


def _row(rows: list[dict], label: str) -> dict | None:
    if label.startswith("@max:"):
        name = label[5:]
        cands = [r for r in rows if r["name"] == name]
        return max(cands, key=lambda r: r["references"]) if cands else None
    return next((r for r in rows if r["label"] == label), None)


def _noise(stat: dict, n_members: int, n_seeds: int) -> float:
    """Seed-to-seed sd, floored by the binomial error of a TPR measured on n_members
    records (so a single seed is not read as noiseless)."""
    p = min(max(stat["mean"], 0.0), 1.0)
    return math.hypot(stat["sd"], math.sqrt(p * (1 - p) / max(n_members, 1) / max(n_seeds, 1)))


def _compare(a: dict, b: dict, metric: str, n: int, seeds: int) -> str:
    """yes / no / tie: a above b by more than one sd of the difference (seed spread and binomial error)."""
    sd = math.hypot(_noise(a[metric], n, seeds), _noise(b[metric], n, seeds))
    diff = a[metric]["mean"] - b[metric]["mean"]
    return "yes" if diff > sd else "no" if -diff > sd else "tie"


def verdict_on(data: dict, claim: Claim) -> tuple[str, str] | None:
    rows = data["rows"]
    a, b = _row(rows, claim.better), _row(rows, claim.worse)
    if a is None or b is None:
        return None
    ma, mb = a[claim.metric]["mean"], b[claim.metric]["mean"]
    word = _compare(a, b, claim.metric, data["n_members"], len(data["seeds"]))
    if claim.text.startswith("diag"):  # the claim is equality: holds unless kron wins by more than one sd
        word = "no" if word == "no" else "yes"
    return word, f"{100 * ma:.2f} vs {100 * mb:.2f} ({a['label']} / {b['label']})"


def overall(words: list[str]) -> str:
    if words and all(w == "yes" for w in words):
        return "reproduced"
    if words and all(w == "tie" for w in words):
        return "within noise"
    if not any(w == "yes" for w in words):
        return "not reproduced"
    return "mixed"


def claims_table(claims: list[Claim]) -> str:
    suites = {
        s: json.loads((RESULTS / f"{s}.json").read_text())
        for s in {c.suite for c in claims}
        if (RESULTS / f"{s}.json").exists()
    }
    lines = ["| claim | paper | ours (mean over seeds; yes / no / tie at 1 sd) | verdict |", "|---|---|---|---|"]
    for claim in claims:
        if claim.suite not in suites:
            continue
        found = {
            ds: verdict_on(d, claim)
            for ds, d in suites[claim.suite]["datasets"].items()
            if claim.datasets is None or ds in claim.datasets
        }
        found = {ds: v for ds, v in found.items() if v is not None}
        ours = "; ".join(f"{ds}: {w}, {txt}" for ds, (w, txt) in found.items())
        lines.append(f"| {claim.text} | {claim.paper} | {ours} | {overall([w for w, _ in found.values()])} |")
    return "\n".join(lines) + "\n"


AUGMENTATION = (  # (variant, the run it is compared with)
    ("cifar10-flip-crop", "cifar10"),
    ("cifar10-mirror-queries", "cifar10"),
    ("cifar10-flip-crop-mirror-queries", "cifar10-flip-crop"),
)


def augmentation_table() -> str:
    """Per attack, TPR@1% without augmentation and in each variant of ``miaudit bench realmodels``, and whether
    the variant is higher or lower than the run it is compared with by more than one sd."""
    data = json.loads((RESULTS / "realmodels.json").read_text())["datasets"]
    pairs = [(v, b) for v, b in AUGMENTATION if v in data and b in data]
    if "cifar10" not in data:
        return ""
    lines = [
        "| attack | none | " + " | ".join(f"{v.removeprefix('cifar10-')} (vs {b})" for v, b in pairs) + " |",
        "|---|---|" + "---|" * len(pairs),
    ]
    for row in data["cifar10"]["rows"]:
        cells = [_tpr_cell(row, "0.01")]
        for v, b in pairs:
            other, base = _row(data[v]["rows"], row["label"]), _row(data[b]["rows"], row["label"])
            word = _compare(other, base, "tpr@0.01", data[b]["n_members"], len(data[b]["seeds"]))
            cells.append(f"{_tpr_cell(other, '0.01')} ({ {'yes': 'higher', 'no': 'lower'}.get(word, 'tie') })")
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


TABLE1 = [
    "attack-p",
    "qmia",
    "bmia (n=1)",
    "attack-r (n=2)",
    "attack-r (n=4)",
    "attack-r (n=8)",
    "lira (n=2)",
    "lira (n=4)",
    "lira (n=8)",
    "rmia (n=1)",
    "rmia (n=2)",
    "rmia (n=4)",
    "rmia (n=8)",
    "@max:mr-bmia",
    "@max:lira",
    "@max:rmia",
    "@max:bavaria-n",
]


def _tpr_cell(row: dict, level: str) -> str:
    """Mean TPR over seeds in percent, with the mean per-seed 95% interval where the suite recorded one."""
    ci = row.get(f"tpr@{level}_ci")
    mean = f"{100 * row[f'tpr@{level}']['mean']:.2f}"
    return mean if ci is None else f"{mean} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def table1() -> str:
    """The BMIA paper's Table 1 layout: TPR@0.1%, TPR@1% (mean over seeds, [mean per-seed 95% interval] in
    suites run since intervals were recorded), reference-training seconds."""
    paper = json.loads((RESULTS / "paper.json").read_text())["datasets"]
    cols = list(paper)
    head = "| attack | " + " | ".join(f"{d} TPR@0.1% | {d} TPR@1% | {d} ref. s" for d in cols) + " |"
    lines = [head, "|---|" + "---|---|---|" * len(cols)]
    seen = set()
    for label in TABLE1:
        cells, name = [], None
        for d in cols:
            r = _row(paper[d]["rows"], label)
            if r is None:
                cells += ["-", "-", "-"]
                continue
            name = name or r["label"]
            cells += [_tpr_cell(r, "0.001"), _tpr_cell(r, "0.01"), f"{r['reference_training_s']['mean']:.0f}"]
        shown = label.replace("@max:", "") + " (largest n)" if label.startswith("@max:") else label
        if shown not in seen:
            seen.add(shown)
            lines.append(f"| {shown} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    table = claims_table(CLAIMS) + (
        "\n## The seeds' other methods (`miaudit bench seeds`: posteriors and shifts on the CIFAR-10 subset, "
        "families online on location, digits and the CIFAR-10 subset, one seed where stated in results/seeds.md)\n\n"
        + claims_table(SEED_CLAIMS)
    )
    if (RESULTS / "realmodels.json").exists():
        table += (
            "\n## Augmentation (`miaudit bench realmodels`, CIFAR-10 subset, seeds 3-5): TPR@1% [mean per-seed "
            "95% interval], and whether it is higher or lower than without augmentation by more than one sd\n\n"
            "The LiRA paper (Carlini et al. 2022, section 5) finds augmented queries raise LiRA's TPR; training "
            "with augmentation generalises better and leaks less.\n\n" + augmentation_table()
        )
    (HERE / "claims.md").write_text("# The papers' claims on our data\n\n" + table)
    (HERE / "table1.md").write_text("# Table 1 on our data (mean over 3 seeds)\n\n" + table1())
    print(table)
    print(table1())
