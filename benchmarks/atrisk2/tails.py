"""Parametric tails beyond the conformal resolution (issue 45, Location seed 3), on dump.py's arrays (design runs
only: Location seeds 0-4, digits seeds 0-2).

The screened conformal procedure (stats/screened.py) flags 24 records on Location seed 3: its p-values cannot go
below 1 / (n + 1), n the calibration records kept by the screen. This compares, within the same screen (top half by
the references' mean loss) and with Storey's adaptive BH at FDR 5%:

- ``conformal``: the procedure as shipped; ``conformal, true pi0``: BH at q / pi0 with the true share of non-members
  among the kept queries (an oracle: the most Storey's estimate could give);
- ``gpd<k> ks<a>``: above u, the (k + 1)-th largest kept calibration score, p = (k + 1) / (n + 1) * S(s - u) with S a
  generalized Pareto fitted (location 0) to the k exceedances; used only when a Kolmogorov-Smirnov test of the fit on
  those exceedances does not reject at a (else the conformal p-values); ``exp<k>``: the same with an exponential;
- attack choice: every attack in the dump is run (``*``: auto's first choice, the one the report uses).

Validity is measured by null audits that need no simulation: the target's kept non-members (queries) against the
kept calibration records, and the reverse. Both are non-members of the target, exchangeable within the screen, so
every flag is a false discovery and a procedure at FDR 5% flags in at most about 5% of them.

Run: python benchmarks/atrisk2/tails.py DIR   (DIR: dump.py's --out)
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
from design import conformal, mean_loss, stepup
from scipy import stats
from scipy.stats import false_discovery_control as fdc

LEVEL = 0.05


def tail_pvalues(sq: np.ndarray, sc: np.ndarray, model: str, k: int, gate: float) -> np.ndarray:
    """Conformal p-values of sq among sc; above the (k + 1)-th largest of sc from a fitted tail if its fit passes."""
    sc = np.sort(sc[np.isfinite(sc)])
    n = len(sc)
    p = conformal(sq, sc)
    u = sc[n - k - 1]
    exc = sc[n - k :] - u
    if model == "gpd":
        xi, _, scale = stats.genpareto.fit(exc, floc=0)
        dist = stats.genpareto(xi, 0, scale)
    else:
        dist = stats.expon(0, exc.mean())
    if stats.kstest(exc, dist.cdf).pvalue < gate:
        return p
    above = sq > u
    p[above] = np.maximum((k + 1) / (n + 1) * dist.sf(sq[above] - u), 1e-300)
    return p


def flags(p: np.ndarray, pi0: float | None = None) -> np.ndarray:
    if pi0 is None:
        return stepup(p, LEVEL, True)
    return fdc(p, method="bh") * pi0 <= LEVEL


CANDIDATES = ["conformal", "conformal, true pi0", "exp25 ks0.1", "gpd15 ks0.1", "gpd20 ks0.1", "gpd25 ks0.1"]
CANDIDATES += ["gpd30 ks0.1", "gpd40 ks0.1", "gpd25 ks0.5", "gpd30 ks0.5"]


def pvalues(name: str, sq: np.ndarray, sc: np.ndarray) -> np.ndarray:
    if name.startswith("conformal"):
        return conformal(sq, sc)
    model, gate = name.split(" ")
    return tail_pvalues(sq, sc, model[:3], int(model[3:]), float(gate[2:]))


def main(where: Path) -> None:
    warnings.filterwarnings("ignore")
    runs = []
    for path in sorted(where.glob("*.npz")):
        d = np.load(path)
        meta, member = json.loads(str(d["meta"])), d["member"]
        vq = mean_loss(d["q_ref_logits"].astype(np.float64), d["q_labels"])
        vc = mean_loss(d["c_ref_logits"].astype(np.float64), d["c_labels"])
        thr = np.quantile(np.r_[vq, vc], 0.5)
        for label, key in meta["attacks"].items():
            chosen = label.split(" ")[0] == meta["chosen"][0]
            runs.append(
                (path.stem, label.split(" ")[0], chosen, d[key + "_q"], d[key + "_c"], member, vq >= thr, vc >= thr)
            )
    print(
        "the number that decides it, per run (auto's first choice): the smallest over k >= 50 of the FDR that BH with"
    )
    print("the true share of non-members bounds for the top k kept queries, m0 (1 + #calibration >= s_k) / (n + 1) / k")
    for stem, attack, chosen, sq, sc, member, kq, kc in runs:
        if chosen:
            s, c, m0 = np.sort(sq[kq])[::-1], sc[kc], int((kq & ~member).sum())
            bound = [m0 * (1 + np.sum(c >= s[k - 1])) / (len(c) + 1) / k for k in range(50, len(s) + 1)]
            k = int(np.argmin(bound))
            top = np.argsort(-sq[kq])[:50]
            false = int((~member[kq][top]).sum())
            print(f"    {stem}:{attack} {min(bound):.3f} at k = {k + 50}; top 50 hold {false} non-members")
    print("per run and attack: flagged/non-members at FDR 5% (* auto's first choice)")
    for name in CANDIDATES:
        cells, n, fp, null_runs, null_flags = [], 0, 0, 0, 0
        for stem, attack, chosen, sq, sc, member, kq, kc in runs:
            mm = member[kq]
            true_pi0 = float((~mm).mean()) if name.endswith("true pi0") else None
            f = flags(pvalues(name, sq[kq], sc[kc]), true_pi0)
            k, v = int(f.sum()), int((f & ~mm).sum())
            cells.append(f"{stem}:{attack}{'*' if chosen else ''} {k}/{v}")
            if chosen:
                n, fp = n + k, fp + v
            nm = sq[kq & ~member]
            for a, b in [(nm, sc[kc]), (sc[kc], nm)]:
                null_runs += 1
                null_pi0 = 1.0 if true_pi0 is not None else None  # under the null every query is a non-member
                null_flags += int(flags(pvalues(name, a, b), null_pi0).any())
        print(
            f"{name}: chosen attacks pooled {n} flagged, FDP {fp / max(1, n):.3f}; null audits flagging "
            f"{null_flags}/{null_runs}"
        )
        print("   ", "; ".join(cells))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
