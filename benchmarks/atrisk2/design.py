"""The design comparison of benchmarks/atrisk2/protocol.md, on arrays saved by dump.py (design runs only: Location
seeds 0-4, digits seeds 0-2): per candidate procedure and run, "flagged/non-members" at FDR 5% for the attack auto
chose first. Candidates: f<x> conformal p-values within the top-x screen by the references' mean loss (calibration
records screened alike; x = 1: no screen), S = Storey's adaptive BH (else BH); m<G>: G Mondrian strata by that score
tested together; u<x>: the union of f1 and f<x>, each at FDR / 2; oracle: the target's own non-member and calibration
scores as the null (not a procedure: an upper bound on what a well-calibrated null allows).

Run: python benchmarks/atrisk2/design.py DIR   (DIR: dump.py's --out)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import false_discovery_control as fdc


def mean_loss(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    lse = np.log(np.exp(z).sum(-1))
    return (lse - np.take_along_axis(z, y[None, :, None], -1)[..., 0]).mean(0)


def conformal(sq: np.ndarray, sc: np.ndarray) -> np.ndarray:
    sc = np.sort(sc[np.isfinite(sc)])
    return (1 + len(sc) - np.searchsorted(sc, sq, side="left")) / (len(sc) + 1)


def stepup(p: np.ndarray, q: float, storey: bool) -> np.ndarray:
    pi0 = min(1.0, (1 + np.sum(p > 0.5)) / (len(p) * 0.5)) if storey else 1.0
    return fdc(p, method="bh") * pi0 <= q


def procedure(sq, sc, vq, vc, name: str, q: float = 0.05) -> np.ndarray:  # type: ignore[no-untyped-def]
    storey = name.endswith("S")
    base = name.rstrip("S")
    if base.startswith("f"):
        f = float(base[1:])
        thr = np.quantile(np.r_[vq, vc], 1 - f) if f < 1 else -np.inf
        kq, kc = vq >= thr, vc >= thr
        out = np.zeros(len(sq), bool)
        out[np.flatnonzero(kq)[stepup(conformal(sq[kq], sc[kc]), q, storey)]] = True
        return out
    if base.startswith("m"):
        cuts = np.quantile(np.r_[vq, vc], np.linspace(0, 1, int(base[1:]) + 1)[1:-1])
        gq, gc = np.searchsorted(cuts, vq, side="right"), np.searchsorted(cuts, vc, side="right")
        p = np.full(len(sq), np.nan)
        for g in np.unique(gq):
            p[gq == g] = conformal(sq[gq == g], sc[gc == g])
        return stepup(p, q, storey)
    f = base[1:]
    s = "S" if storey else ""
    return procedure(sq, sc, vq, vc, "f1.0" + s, q / 2) | procedure(sq, sc, vq, vc, f"f{f}" + s, q / 2)


CANDIDATES = ["f1.0", "f1.0S", "f0.05S", "f0.1S", "f0.2S", "f0.3S", "f0.5S", "m2S", "m4S", "u0.1S", "u0.2S", "f0.2"]


def main(where: Path) -> None:
    paths = sorted(where.glob("*.npz"))
    print("runs:", " ".join(p.stem for p in paths))
    table: dict[str, list[str]] = {c: [] for c in [*CANDIDATES, "oracle"]}
    for path in paths:
        d = np.load(path)
        meta, member = json.loads(str(d["meta"])), d["member"]
        vq = mean_loss(d["q_ref_logits"].astype(np.float64), d["q_labels"])
        vc = mean_loss(d["c_ref_logits"].astype(np.float64), d["c_labels"])
        label = next(k for k in meta["attacks"] if k.split(" ")[0] == meta["chosen"][0])
        sq, sc = d[meta["attacks"][label] + "_q"], d[meta["attacks"][label] + "_c"]
        for c in CANDIDATES:
            f = procedure(sq, sc, vq, vc, c)
            table[c].append(f"{f.sum()}/{(f & ~member).sum()}")
        f = stepup(conformal(sq, np.r_[sc, sq[~member]]), 0.05, True)
        table["oracle"].append(f"{f.sum()}/{(f & ~member).sum()}")
    for c, row in table.items():
        n = sum(int(x.split("/")[0]) for x in row)
        fp = sum(int(x.split("/")[1]) for x in row)
        print(f"{c:7s}", " ".join(f"{x:>7s}" for x in row), f"  flagged {n}, pooled FDP {fp / max(1, n):.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
