"""Generalized Leverage Score (GLS) of a last linear layer (GLS paper, appendix C).

The GLS of record i is the sensitivity of the fitted model's prediction at x_i
to its own label (Definition 4.1, eq. 12): ``GLS_i = d f(x_i) / d y_i``, an
m x m matrix. Implicit differentiation of the optimality condition gives the
closed form (Proposition 4.2, eq. 14)

    GLS_i = -(1/n) J_i H^{-1} J_i^T (d^2 l / dy df),

with J_i the output Jacobian and H the Hessian of the *averaged* loss (eq. 11).
Restricted to the last layer f = W g(x) + b, with the bias-augmented feature
g~ = [g(x), 1] (appendix C), the Jacobian is J_i = I_m (x) g~_i^T (eq. C.27).

Damping: as in the paper's Algorithm 1, H is replaced by H + lambda I (the
Hessian of the averaged loss plus (lambda/2)||theta||^2). Below, everything is
multiplied through by n: A = n (H + lambda I), so the 1/n of eq. 14 cancels.

Every array is float64. Labels never enter: d^2 l / dy df is a constant matrix
for both losses (Propositions 4.3, 4.4) and the Hessians do not involve y.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

Structure = Literal["full", "kron"]
Space = Literal["probability", "logit"]

__all__ = ["augment_bias", "regression_leverage", "cross_entropy_gls_matrices", "cross_entropy_gls"]


def augment_bias(features: ArrayLike) -> np.ndarray:
    """g~ = [g, 1] (appendix C): the bias is a last-layer parameter like the weights."""
    g = _matrix(features, "features")
    return np.hstack([g, np.ones((g.shape[0], 1))])


def regression_leverage(
    train_features: ArrayLike, query_features: ArrayLike | None = None, *, damping: float = 0.0, bias: bool = True
) -> np.ndarray:
    """Last-layer GLS for the quadratic loss, one scalar per query (Proposition C.1, eq. C.26).

    GLS_i = I_m * h_i with h_i = g~_i^T (G^T G + (n lambda / 2) I)^{-1} g~_i: the
    quadratic loss ||f - y||^2 has Hessian (2/n) I_m (x) G^T G and
    -d^2 l / dy df = 2 I_m (eq. 15), so with ``damping`` lambda = 0 this is the
    classical hat-matrix diagonal h_ii = x_i^T (X^T X)^{-1} x_i (section 3.1).
    ``query_features`` defaults to the training records themselves. ``bias``
    appends the constant feature of appendix C.

    Cost: O(n d^2 + d^3 + m d^2) time, O(d^2) memory beyond the inputs.
    """
    from scipy.linalg import LinAlgError, cholesky, solve_triangular  # here: scipy.linalg costs every import 0.1 s

    design = augment_bias if bias else (lambda f: _matrix(f, "features"))
    g_train = design(train_features)
    g_query = g_train if query_features is None else design(query_features)
    _check_width(g_train, g_query)
    gram = g_train.T @ g_train
    gram[np.diag_indices_from(gram)] += g_train.shape[0] * damping / 2
    try:
        chol = cholesky(gram, lower=True)
    except LinAlgError:
        raise ValueError("regression_leverage: G^T G is singular; use damping > 0") from None
    whitened = solve_triangular(chol, g_query.T, lower=True)  # L^{-1} g~_i, column per query
    return np.einsum("dm,dm->m", whitened, whitened)


def cross_entropy_gls_matrices(
    train_features: ArrayLike,
    train_probs: ArrayLike,
    query_features: ArrayLike,
    *,
    damping: float = 1e-3,
    structure: Structure = "full",
    batch_size: int = 2048,
) -> np.ndarray:
    """Logit-space last-layer GLS for cross-entropy, (m, C, C) (Proposition C.2, eq. C.30).

    (GLS_i)_uv = g~_i^T (A^{-1})_[u,v] g~_i with A = sum_j S_j (x) g~_j g~_j^T + n lambda I,
    S_j = diag(p_j) - p_j p_j^T (eq. C.31 times n; -d^2 l / dy df = I by eq. 17).
    ``train_*`` are the records the Hessian is built from (features (n, d),
    softmax probabilities (n, C)); ``query_features`` (m, d) the records scored.
    ``batch_size`` records (and Hessian rows) are processed at a time.
    ``damping`` must be > 0: S_j 1 = 0, so every direction 1 (x) v is in the
    Hessian's null space.

    ``structure="full"``: the exact C(d+1) x C(d+1) Hessian. Built block by block
    (only the C(C-1)/2 off-diagonal blocks cost a pass over the records; the
    diagonal blocks follow because the rows of S_j sum to zero), inverted in
    place by Cholesky; then the C(C+1)/2 distinct blocks of A^{-1} are
    contracted with the query features. Time O((n + m) C^2 d^2 + C^3 d^3),
    memory one C(d+1) x C(d+1) matrix plus O(batch_size C d): for d=512, C=10,
    n = m = 50k, about 2.8e12 flops and 210 MB (C=100, d=128: 1.3 GB).

    ``structure="kron"``: the K-FAC approximation H ~ mean(S_j) (x) mean(g~ g~^T)
    (exact when all S_j are equal), damped exactly through the eigenbases of
    the two factors. Time O(n (d^2 + C^2) + d^3 + C^3 + m (d^2 + C d + C^3)).
    """
    return np.concatenate(
        list(_logit_gls_batches(train_features, train_probs, query_features, damping, structure, batch_size))
    )


def cross_entropy_gls(
    train_features: ArrayLike,
    train_probs: ArrayLike,
    query_features: ArrayLike,
    query_probs: ArrayLike,
    *,
    damping: float = 1e-3,
    structure: Structure = "full",
    space: Space = "logit",
    batch_size: int = 2048,
) -> np.ndarray:
    """Trace of the last-layer cross-entropy GLS for each query, (m,) (Remark B.1: trace summary).

    ``space="logit"``: trace(GLS_i), the matrix M_i of eq. C.30 (``query_probs``
    unused). ``space="probability"`` (the paper's metric in its experiments,
    section 4.4): trace(S_i M_i), the sensitivity d p_i / d y_i of the predicted
    probabilities, with S_i = diag(p_i) - p_i p_i^T the softmax Jacobian at the
    query; computed as sum_u p_u M_uu - p^T M p.
    Only ``batch_size`` matrices are held at once. See
    ``cross_entropy_gls_matrices`` for the other arguments and the cost.
    """
    if space not in ("probability", "logit"):
        raise ValueError(f"space: expected 'probability' or 'logit', got {space!r}")
    p = _probabilities(query_probs, "query_probs")
    if p.shape[0] != np.shape(query_features)[0]:
        raise ValueError(f"query_probs: {p.shape[0]} rows for {np.shape(query_features)[0]} query_features")
    traces, start = [], 0
    for matrices in _logit_gls_batches(train_features, train_probs, query_features, damping, structure, batch_size):
        p_batch, start = p[start : start + len(matrices)], start + len(matrices)
        if space == "logit":
            traces.append(np.trace(matrices, axis1=1, axis2=2))
        else:
            # trace(S_i M_i) with S_i = diag(p_i) - p_i p_i^T
            traces.append(
                np.einsum("mu,muu->m", p_batch, matrices) - np.einsum("mu,muv,mv->m", p_batch, matrices, p_batch)
            )
    return np.concatenate(traces)


def _logit_gls_batches(
    train_features: ArrayLike,
    train_probs: ArrayLike,
    query_features: ArrayLike,
    damping: float,
    structure: Structure,
    batch_size: int,
) -> Iterator[np.ndarray]:
    """The (batch, C, C) GLS matrices of consecutive query batches; the Hessian is factorised once."""
    g_train, probs = augment_bias(train_features), _probabilities(train_probs, "train_probs")
    g_query = augment_bias(query_features)
    _check_width(g_train, g_query)
    if probs.shape[0] != g_train.shape[0]:
        raise ValueError(f"train_probs: {probs.shape[0]} rows for {g_train.shape[0]} train_features")
    if not damping > 0:
        raise ValueError("damping: must be > 0 (the cross-entropy Hessian of a softmax layer is singular)")
    if structure == "kron":
        per_batch = _kron_gls(g_train, probs, damping)
    elif structure == "full":
        inverse = _spd_inverse(_full_hessian(g_train, probs, damping, batch_size), batch_size)
        per_batch = partial(_contract_blocks, inverse, n_classes=probs.shape[1])
    else:
        raise ValueError(f"structure: expected 'full' or 'kron', got {structure!r}")
    for start in range(0, max(len(g_query), 1), batch_size):  # no queries: one empty batch keeps the shape
        yield per_batch(g_query[start : start + batch_size])


def _full_hessian(g: np.ndarray, probs: np.ndarray, damping: float, batch_size: int) -> np.ndarray:
    """A = sum_j S_j (x) g~_j g~_j^T + n lambda I, class-major (block (k, l) is eq. C.31 times n)."""
    n, width = g.shape
    n_classes = probs.shape[1]
    hessian = np.zeros((n_classes * width, n_classes * width))
    blocks = hessian.reshape(n_classes, width, n_classes, width)  # a view: blocks[k, :, l, :] = block (k, l)
    for start in range(0, n, batch_size):
        g_batch, p_batch = g[start : start + batch_size], probs[start : start + batch_size]
        # row j is p_j (x) g~_j, so (cols k)^T (cols l) = sum_j p_jk p_jl g~_j g~_j^T = -block (k, l), k != l
        weighted = (p_batch[:, :, None] * g_batch[:, None, :]).reshape(len(g_batch), -1)
        for k in range(n_classes - 1):
            rows = slice(k * width, (k + 1) * width)
            hessian[rows, (k + 1) * width :] -= weighted[:, rows].T @ weighted[:, (k + 1) * width :]
    for k in range(n_classes):
        for j in range(k + 1, n_classes):
            blocks[j, :, k, :] = blocks[k, :, j, :]  # each block is a weighted sum of g~ g~^T: symmetric
    for k in range(n_classes):
        # rows of S_j sum to 0: (S_j)_kk = p_k (1 - p_k) = -sum_{l != k} (S_j)_kl, without 1 - p_k cancellation
        blocks[k, :, k, :] = -blocks[k].sum(axis=1)
    hessian[np.diag_indices_from(hessian)] += n * damping
    return hessian


def _spd_inverse(matrix: np.ndarray, block: int) -> np.ndarray:
    """Inverse of a symmetric positive-definite matrix by Cholesky (LAPACK potrf/potri), overwriting it."""
    from scipy.linalg import lapack

    factor, info = lapack.dpotrf(matrix.T, lower=1, overwrite_a=1, clean=0)  # .T: Fortran order, same matrix
    if info != 0:
        raise ValueError("cross_entropy_gls: the damped Hessian is not positive definite; increase damping")
    inverse, info = lapack.dpotri(factor, lower=1, overwrite_c=1)
    if info != 0:
        raise ValueError("cross_entropy_gls: Hessian inversion failed; increase damping")
    for start in range(0, len(inverse), block):  # potri fills the lower triangle: mirror it, a block at a time
        stop = start + block
        diagonal = inverse[start:stop, start:stop]
        diagonal[...] = np.tril(diagonal) + np.tril(diagonal, -1).T
        inverse[start:stop, stop:] = inverse[stop:, start:stop].T
    return inverse


def _contract_blocks(inverse: np.ndarray, q: np.ndarray, n_classes: int) -> np.ndarray:
    """M_i[u, v] = g~_i^T (A^{-1})_[u,v] g~_i, using M_i[v, u] = M_i[u, v] (A^{-1} symmetric)."""
    width = q.shape[1]
    out = np.empty((len(q), n_classes, n_classes))
    for u in range(n_classes):
        row_blocks = inverse[u * width : (u + 1) * width, u * width :]  # blocks (u, v) for v >= u
        projected = (q @ row_blocks).reshape(len(q), n_classes - u, width)
        values = np.matmul(projected, q[:, :, None])[..., 0]
        out[:, u, u:] = values
        out[:, u:, u] = values
    return out


def _kron_gls(g: np.ndarray, probs: np.ndarray, damping: float) -> Callable[[np.ndarray], np.ndarray]:
    """q -> (1/n) J_i (S (x) G + lambda I)^{-1} J_i^T with S = mean S_j, G = mean g~ g~^T (K-FAC).

    With S = U diag(s) U^T and G = V diag(e) V^T the damped inverse is
    (U (x) V) diag(1 / (s_a e_b + lambda)) (U (x) V)^T, so
    M_i = U diag(w_i) U^T / n with w_ia = sum_b (V^T g~_i)_b^2 / (s_a e_b + lambda).
    """
    n = g.shape[0]
    s, u = np.linalg.eigh(np.diag(probs.mean(axis=0)) - probs.T @ probs / n)
    e, v = np.linalg.eigh(g.T @ g / n)
    inverse_eigenvalues = 1.0 / (np.outer(s, e) + damping)

    def per_batch(q: np.ndarray) -> np.ndarray:
        weights = (q @ v) ** 2 @ inverse_eigenvalues.T / n
        return np.einsum("ua,ma,va->muv", u, weights, u)

    return per_batch


def _matrix(values: ArrayLike, name: str) -> np.ndarray:
    out = np.asarray(values, dtype=np.float64)
    if out.ndim != 2:
        raise ValueError(f"{name}: expected a 2-d array (records, dims), got shape {out.shape}")
    return out


def _probabilities(values: ArrayLike, name: str) -> np.ndarray:
    """Softmax outputs: non-negative rows summing to 1 (the Hessian's null space relies on it)."""
    p = _matrix(values, name)
    if (p < 0).any() or not np.allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-6):
        raise ValueError(f"{name}: rows must be probabilities summing to 1")
    return p


def _check_width(g_train: np.ndarray, g_query: np.ndarray) -> None:
    if g_train.shape[1] != g_query.shape[1]:
        raise ValueError(f"query_features: {g_query.shape[1]} columns, train_features give {g_train.shape[1]}")
