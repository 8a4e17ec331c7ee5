"""Draw the tutorial's score picture from a run's scores.csv (the default audit).

    miaudit run --out /tmp/tut                                   # the default audit, seed 0
    python docs/tutorial_figures.py /tmp/tut docs/img/tutorial-scores.png
    cp /tmp/tut/roc.png docs/img/tutorial-roc.png

Left: LiRA's score (n=4, offline: how far above the references' Gaussian a record's rescaled logit
sits) for members and non-members. Right: LiRA's p-values on the non-members, raw (the Gaussian's
tail) and conformally calibrated: a valid p-value is uniform on non-members, so its histogram is flat
and P(p < a) = a.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd


def main(run_dir: str, out: str) -> None:
    df = pd.read_csv(Path(run_dir) / "scores.csv")
    member = df["member"].to_numpy() == 1
    score = df["lira_n4.score"].to_numpy()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=90)
    bins = np.linspace(np.quantile(score, 0.005), np.quantile(score, 0.995), 40)
    left.hist(score[~member], bins=bins, alpha=0.6, label="non-members", color="tab:blue")
    left.hist(score[member], bins=bins, alpha=0.6, label="members", color="tab:red")
    left.set_xlabel("LiRA score (higher: more likely member)")
    left.set_ylabel("records")
    left.set_title("LiRA (n=4) scores")
    left.legend()
    edges = np.linspace(0, 1, 21)
    raw = df.loc[~member, "lira_n4.p_value_raw"].to_numpy()  # the attack's own Gaussian tail
    cal = df.loc[~member, "lira_n4.p_value"].to_numpy()  # the headline: calibrated
    right.hist(raw, bins=edges, histtype="step", linewidth=2, label="raw (Gaussian) p-value", color="tab:orange")
    right.hist(cal, bins=edges, histtype="step", linewidth=2, label="calibrated p-value", color="tab:green")
    right.axhline(len(raw) / (len(edges) - 1), color="black", linestyle=":", label="uniform (valid)")
    right.set_xlabel("p-value")
    right.set_ylabel("non-members")
    right.set_title("LiRA p-values on non-members")
    right.legend()
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
