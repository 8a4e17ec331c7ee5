"""The contenders of ``miaudit bench speed`` other than miaudit: a plain numpy implementation of the
published formulas (the floor to beat) and the peers' own attack code (PrivacyGuard, sacroml), each run
as a script in its own process so that its wall time, CPU time and peak memory are its own:

    python speed_contenders.py CONTENDER TASK STORE OUT.npy

CONTENDER is ``numpy``, ``privacyguard`` or ``sacroml``; TASK ``lira-offline``, ``lira-online``,
``rmia-offline`` or ``rmia-online``; STORE a folder in miaudit's npz layout with ``members.npy`` and
``nonmembers.npy`` (the queries, members first) and the rest of the records as population. OUT.npy
receives the queries' scores (higher = member). Exit status 3: the contender has no such task.
This file imports nothing from miaudit (the floor pays only for numpy and scipy.special); the peers
get the signals they take as input (rescaled logits, confidences) computed here with numpy, as a user
of theirs must, and their attack classes do the rest.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.special import log_ndtr

PER_RECORD_VARIANCE_MIN_REFERENCES = 64  # the LiRA code's switch from a global variance (as miaudit's default)
A_GRID = np.round(np.arange(0.0, 1.01, 0.1), 1)  # RMIA's offline a, searched as its authors do


def rescaled_logit(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """log p_y - log sum_{j != y} p_j, stably in float64 (the published LiRA code's signal)."""
    z = np.asarray(logits, dtype=np.float64)
    rows = np.arange(len(labels))
    true = z[rows, labels]
    z[rows, labels] = -np.inf
    top = z.max(axis=1)
    return true - top - np.log(np.exp(z - top[:, None]).sum(axis=1))


def load(store: str) -> dict[str, np.ndarray]:
    """The arrays, read whole (the floor's loading counts), and the queries / population positions."""
    get = {n: np.load(f"{store}/{n}.npy") for n in ("labels", "target_logits", "reference_logits", "reference_keep")}
    members, nonmembers = np.load(f"{store}/members.npy"), np.load(f"{store}/nonmembers.npy")
    queries = np.concatenate([members, nonmembers])
    population = np.setdiff1d(np.arange(len(get["labels"])), queries)
    return {**get, "queries": queries, "population": population, "n_members": np.array(len(members))}


def signals(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Rescaled logits of the target (N,) and of every reference (K, N) on every record."""
    y = d["labels"]
    return rescaled_logit(d["target_logits"], y), np.stack([rescaled_logit(r, y) for r in d["reference_logits"]])


def masked_moments(phi: np.ndarray, mask: np.ndarray, per_record: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per record mean and ddof = 0 variance over the masked references; the pooled variance when not per record."""
    n = mask.sum(axis=0)
    mu = np.where(mask, phi, 0.0).sum(axis=0) / n
    var = np.where(mask, (phi - mu) ** 2, 0.0).sum(axis=0) / n if per_record else np.full(mu.shape, phi[mask].var())
    return mu, np.maximum(var, 1e-30)


def numpy_lira(d: dict[str, np.ndarray], online: bool) -> np.ndarray:
    phi0, phi = signals(d)
    q = d["queries"]
    phi0, phi, keep = phi0[q], phi[:, q], d["reference_keep"][:, q].astype(bool)
    per_record = len(phi) >= PER_RECORD_VARIANCE_MIN_REFERENCES
    mu_out, var_out = masked_moments(phi, ~keep, per_record)
    if not online:
        return -log_ndtr(-(phi0 - mu_out) / np.sqrt(var_out))
    mu_in, var_in = masked_moments(phi, keep, per_record)
    if not per_record:  # the released code: the IN observations' variance for both classes
        var_out = var_in
    log_pdf = lambda mu, var: -0.5 * np.log(2 * np.pi * var) - (phi0 - mu) ** 2 / (2 * var)
    return log_pdf(mu_in, var_in) - log_pdf(mu_out, var_out)


def log_confidence(phi: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -phi)


def rmia_log_ratio(log_p0: np.ndarray, log_p: np.ndarray, use: np.ndarray, a: float | None) -> np.ndarray:
    """log p(x|target) - log Pr(x), Pr(x) the mean confidence of the used references (offline: a-corrected)."""
    mean = np.where(use, np.exp(log_p), 0.0).sum(axis=0) / use.sum(axis=0)
    marginal = mean if a is None else (1 + a) / 2 * mean + (1 - a) / 2
    return log_p0 - np.log(marginal)


def auc(scores: np.ndarray, member: np.ndarray) -> float:
    non = np.sort(scores[~member])
    lo, hi = np.searchsorted(non, scores[member], "left"), np.searchsorted(non, scores[member], "right")
    return float(((lo + hi) / 2).sum() / (member.sum() * non.size))


def numpy_rmia(d: dict[str, np.ndarray], online: bool) -> np.ndarray:
    phi0, phi = signals(d)
    log_p0, log_p = log_confidence(phi0), log_confidence(phi)
    keep = d["reference_keep"].astype(bool)
    q, z = d["queries"], d["population"]
    a = None
    if not online:  # the grid search: reference 0 attacked with the others, on the population
        ratios = [rmia_log_ratio(log_p[0, z], log_p[1:, z], ~keep[1:, z], a) for a in A_GRID]
        a = float(A_GRID[int(np.argmax([auc(r, keep[0, z]) for r in ratios]))])
    use = np.ones_like(keep) if online else ~keep
    log_rx = rmia_log_ratio(log_p0[q], log_p[:, q], use[:, q], a)
    log_rz = np.sort(rmia_log_ratio(log_p0[z], log_p[:, z], use[:, z], a))
    return np.searchsorted(log_rz, log_rx, side="left") / log_rz.size  # gamma = 1: #{z: ratio_x > ratio_z} / Z


def privacyguard(d: dict[str, np.ndarray], task: str) -> np.ndarray:
    import pandas as pd
    from privacy_guard.analysis.mia.aggregate_analysis_input import AggregationType

    phi0, phi = signals(d)
    keep = d["reference_keep"].astype(bool)
    q, n_members = d["queries"], int(d["n_members"])
    if task.startswith("lira"):
        from privacy_guard.attacks.lira_attack import LiraAttack

        scores = pd.DataFrame({"user_id": np.arange(len(q)), "score_orig": phi0[q]})
        out = np.where(~keep[:, q], phi[:, q], np.nan)
        scores["score_mean"], scores["score_std"] = np.nanmean(out, axis=0), np.nanstd(out, axis=0)
        inside = np.where(keep[:, q], phi[:, q], np.nan)
        scores["score_mean_out"], scores["score_std_out"] = scores["score_mean"], scores["score_std"]
        scores["score_mean_in"], scores["score_std_in"] = np.nanmean(inside, axis=0), np.nanstd(inside, axis=0)
        online = task == "lira-online"
        attack = LiraAttack(
            scores.iloc[:n_members].copy(),
            scores.iloc[n_members:].copy(),
            AggregationType.NONE,
            use_fixed_variance=not online,
            std_dev_type="mix" if online else "shadows_out",
            online_attack=online,
        )
        result = attack.run_attack()
        return np.concatenate([result.df_train_merge["score"], result.df_test_merge["score"]])
    from privacy_guard.attacks.rmia_attack import RmiaAttack

    conf = np.exp(log_confidence(phi))  # RMIA's signal: the true-class probability
    z = d["population"]

    def frame(rows: np.ndarray) -> pd.DataFrame:
        columns = {"user_id": rows, "score_orig": np.exp(log_confidence(phi0[rows]))}
        columns |= {f"score_ref_{k}": conf[k, rows] for k in range(len(conf))}
        columns |= {f"member_ref_{k}": keep[k, rows] for k in range(len(conf))}
        return pd.DataFrame(columns)

    members, nonmembers = frame(q[:n_members]), frame(q[n_members:])
    attack = RmiaAttack(members, nonmembers, frame(z), AggregationType.NONE, len(conf), online=task == "rmia-online")
    result = attack.run_attack()
    return np.concatenate([result.df_train_merge["score"], result.df_test_merge["score"]])


def sacroml(d: dict[str, np.ndarray], task: str) -> np.ndarray:
    if not task.startswith("lira"):
        raise NotImplementedError
    from sacroml.attacks.likelihood_attack import LIRAAttack

    keep = d["reference_keep"].astype(bool)
    q, y = d["queries"], d["labels"][d["queries"]]
    _, phi = signals(d)  # sacroml reads logit(confidence) off each shadow model's probabilities
    out_conf = {i: list(phi[~keep[:, r], r]) for i, r in enumerate(q)}
    in_conf = {i: list(phi[keep[:, r], r]) for i, r in enumerate(q)}
    logits = np.asarray(d["target_logits"][q], dtype=np.float64)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    online = task == "lira-online"
    attack = LIRAAttack(
        n_shadow_models=len(keep), mode="online-carlini" if online else "offline", fix_variance=len(keep) < 64
    )
    scores, _ = attack._compute_scores(y, probs, out_conf, in_conf)  # its scoring step, shadow training skipped
    return np.array([s[1] for s in scores])  # (pr_in, pr_out): its member score is the second, both modes


def main(contender: str, task: str, store: str, out: str) -> int:
    d = load(store)
    try:
        if contender == "numpy":
            scores = (numpy_lira if task.startswith("lira") else numpy_rmia)(d, task.endswith("online"))
        else:
            scores = {"privacyguard": privacyguard, "sacroml": sacroml}[contender](d, task)
    except NotImplementedError:
        return 3
    np.save(out, np.asarray(scores, dtype=np.float64))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
