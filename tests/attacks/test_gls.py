"""The Generalized Leverage Score (GLS paper): closed forms against the paper's definition.

The reference values never come from ``miaudit.stats.leverage``: the classical hat
matrix, a dense Kronecker-built Hessian, and the definition GLS_i = d f(x_i)/d y_i
(eq. 12) evaluated with autograd by implicit differentiation (eq. B.25) and by
refitting the model with a perturbed label.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from scipy.special import softmax

from miaudit.attacks import AttackInputs, AttackRequirementError, ModelAccess, RecordSet, registry
from miaudit.models.mlp import MLP
from miaudit.stats import leverage

Loss = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (n, m) outputs, (n, m) targets -> (n,)


def squared_loss(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return ((f - y) ** 2).sum(-1)  # ||f - y||^2, section 4.3


def cross_entropy(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return -(y * f).sum(-1) + torch.logsumexp(f, -1)  # proof of Proposition 4.4


class LastLayer:
    """f(x_i) = W [g_i, 1] with theta = vec(W), trained on (1/n) sum_i loss + (damping/2) ||theta||^2."""

    def __init__(self, features: np.ndarray, targets: np.ndarray, loss: Loss, damping: float):
        n = features.shape[0]
        self.design = torch.cat([torch.as_tensor(features), torch.ones(n, 1, dtype=torch.float64)], 1)
        self.targets = torch.as_tensor(targets, dtype=torch.float64)
        self.loss, self.damping = loss, damping

    def outputs(self, theta: torch.Tensor) -> torch.Tensor:
        return self.design @ theta.reshape(self.targets.shape[1], -1).T

    def objective(self, theta: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.loss(self.outputs(theta), targets).mean() + self.damping / 2 * theta.square().sum()

    def fit(self, targets: torch.Tensor) -> torch.Tensor:
        """Newton's method on the strictly convex objective, to machine precision."""
        theta = torch.zeros(self.targets.shape[1] * self.design.shape[1], dtype=torch.float64)
        for _ in range(50):
            grad = torch.func.grad(self.objective)(theta, targets)
            if grad.abs().max() < 1e-13:
                return theta
            theta = theta - torch.linalg.solve(torch.func.hessian(self.objective)(theta, targets), grad)
        raise AssertionError("Newton's method did not converge")

    def implicit_gls(self, theta: torch.Tensor, link: Callable[[torch.Tensor], torch.Tensor]) -> np.ndarray:
        """d link(f(x_i)) / d y_i for every i, (n, m, m): dtheta/dy_i = -H^{-1} d(grad L)/dy_i (eq. B.25)."""
        hessian = torch.func.hessian(self.objective)(theta, self.targets)
        mixed = torch.func.jacrev(torch.func.grad(self.objective), argnums=1)(theta, self.targets)  # (p, n, m)
        dtheta = -torch.linalg.solve(hessian, mixed.flatten(1)).reshape(mixed.shape)
        jac = torch.func.jacrev(lambda t: link(self.outputs(t)))(theta)  # (n, m, p)
        return torch.einsum("iup,pik->iuk", jac, dtheta).numpy()

    def refit_gls_column(self, i: int, c: int, eps: float = 1e-5) -> np.ndarray:
        """Column c of d f(x_i) / d y_i straight from Definition 4.1: refit with y_ic +- eps."""
        outs = []
        for sign in (1.0, -1.0):
            targets = self.targets.clone()
            targets[i, c] += sign * eps
            outs.append(self.outputs(self.fit(targets))[i])
        return ((outs[0] - outs[1]) / (2 * eps)).numpy()


def _classification(seed: int, n: int = 12, d: int = 3, n_classes: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, d))
    return features, np.eye(n_classes)[rng.integers(0, n_classes, n)]


def _random_probs(rng: np.random.Generator, n: int, n_classes: int) -> np.ndarray:
    return softmax(2.0 * rng.normal(size=(n, n_classes)), axis=1)


def test_regression_leverage_is_the_hat_matrix_diagonal() -> None:
    x = np.array([[1.0], [1.0], [2.0]])  # X^T X = 6: h = x^2 / 6
    np.testing.assert_allclose(leverage.regression_leverage(x, bias=False), [1 / 6, 1 / 6, 4 / 6], rtol=1e-12)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 4))
    design = np.hstack([x, np.ones((30, 1))])
    hat = design @ np.linalg.inv(design.T @ design) @ design.T
    h = leverage.regression_leverage(x)
    np.testing.assert_allclose(h, np.diag(hat), rtol=1e-10)
    assert h.sum() == pytest.approx(5.0, rel=1e-12)  # trace of the hat matrix = d + 1 (section 3.1)


def test_regression_leverage_is_the_definition_for_quadratic_loss() -> None:
    # Damped case, two outputs: GLS_i = d f(x_i)/d y_i = h_i I_m (Proposition C.1) with ridge n lambda / 2.
    rng = np.random.default_rng(1)
    x, y, damping = rng.normal(size=(10, 3)), rng.normal(size=(10, 2)), 0.1
    model = LastLayer(x, y, squared_loss, damping)
    gls = model.implicit_gls(model.fit(model.targets), link=lambda f: f)
    h = leverage.regression_leverage(x, damping=damping)
    np.testing.assert_allclose(gls, h[:, None, None] * np.eye(2), atol=1e-12)
    queries = rng.normal(size=(4, 3))
    design, q = np.hstack([x, np.ones((10, 1))]), np.hstack([queries, np.ones((4, 1))])
    explicit = np.einsum("md,de,me->m", q, np.linalg.inv(design.T @ design + 10 * damping / 2 * np.eye(4)), q)
    np.testing.assert_allclose(leverage.regression_leverage(x, queries, damping=damping), explicit, rtol=1e-12)


def test_cross_entropy_gls_is_the_definition() -> None:
    features, labels = _classification(seed=2)
    damping = 0.05
    model = LastLayer(features, labels, cross_entropy, damping)
    theta = model.fit(model.targets)
    probs = torch.softmax(model.outputs(theta), -1).numpy()
    logit_gls = model.implicit_gls(theta, link=lambda f: f)
    np.testing.assert_allclose(model.refit_gls_column(i=4, c=1), logit_gls[4, :, 1], atol=1e-8)
    matrices = leverage.cross_entropy_gls_matrices(features, probs, features, damping=damping)
    np.testing.assert_allclose(matrices, logit_gls, atol=1e-12)
    prob_gls = model.implicit_gls(theta, link=lambda f: torch.softmax(f, -1))  # section 4.4
    scores = leverage.cross_entropy_gls(features, probs, features, probs, damping=damping, space="probability")
    np.testing.assert_allclose(scores, np.trace(prob_gls, axis1=1, axis2=2), atol=1e-12)
    logit_scores = leverage.cross_entropy_gls(features, probs, features, probs, damping=damping, space="logit")
    np.testing.assert_allclose(logit_scores, np.trace(logit_gls, axis1=1, axis2=2), atol=1e-12)


def test_full_structure_matches_a_dense_kronecker_hessian() -> None:
    rng = np.random.default_rng(3)
    n, d, n_classes, damping = 50, 6, 4, 1e-2
    g, p = rng.normal(size=(n, d)), _random_probs(rng, n, n_classes)
    q, pq = rng.normal(size=(9, d)), _random_probs(rng, 9, n_classes)
    design, q_design = np.hstack([g, np.ones((n, 1))]), np.hstack([q, np.ones((9, 1))])
    hessian = sum(np.kron(np.diag(pj) - np.outer(pj, pj), np.outer(gj, gj)) for gj, pj in zip(design, p)) / n
    inverse = np.linalg.inv(hessian + damping * np.eye(n_classes * (d + 1)))
    jac = np.stack([np.kron(np.eye(n_classes), qi[None, :]) for qi in q_design])  # J_i = I (x) g~_i^T (C.27)
    expected = jac @ inverse @ jac.transpose(0, 2, 1) / n  # eq. C.29 with -d2l/dydf = I
    got = leverage.cross_entropy_gls_matrices(g, p, q, damping=damping, batch_size=7)  # several batches
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-13)
    softmax_jac = np.stack([np.diag(pi) - np.outer(pi, pi) for pi in pq])
    scores = leverage.cross_entropy_gls(g, p, q, pq, damping=damping, space="probability", batch_size=4)
    np.testing.assert_allclose(scores, np.trace(softmax_jac @ expected, axis1=1, axis2=2), rtol=1e-10, atol=1e-15)


def test_kron_structure_is_exact_when_all_softmax_covariances_agree() -> None:
    rng = np.random.default_rng(4)
    g, q = rng.normal(size=(40, 5)), rng.normal(size=(6, 5))
    p = np.repeat(_random_probs(rng, 1, 3), 40, axis=0)  # S_j = S for all j: H = S (x) mean g~ g~^T
    full = leverage.cross_entropy_gls_matrices(g, p, q, damping=1e-3)
    kron = leverage.cross_entropy_gls_matrices(g, p, q, damping=1e-3, structure="kron")
    np.testing.assert_allclose(kron, full, rtol=1e-9, atol=1e-12)


def test_permuting_records_permutes_scores() -> None:
    rng = np.random.default_rng(5)
    g, p = rng.normal(size=(25, 4)), _random_probs(rng, 25, 3)
    perm = rng.permutation(25)
    for structure, space in (("full", "probability"), ("kron", "logit")):
        scores = leverage.cross_entropy_gls(g, p, g, p, structure=structure, space=space)
        permuted = leverage.cross_entropy_gls(g[perm], p[perm], g[perm], p[perm], structure=structure, space=space)
        np.testing.assert_allclose(permuted, scores[perm], rtol=1e-10)
    np.testing.assert_allclose(leverage.regression_leverage(g[perm]), leverage.regression_leverage(g)[perm], rtol=1e-10)


def test_cross_entropy_needs_damping() -> None:
    rng = np.random.default_rng(6)
    g, p = rng.normal(size=(10, 2)), _random_probs(rng, 10, 3)
    with pytest.raises(ValueError, match="damping"):
        leverage.cross_entropy_gls_matrices(g, p, g, damping=0.0)


def _tiny_inputs(population: bool) -> tuple[AttackInputs, torch.nn.Module, np.ndarray]:
    torch.manual_seed(0)
    model = MLP((4,), 3, hidden=(8, 6)).to(torch.float32).eval()
    rng = np.random.default_rng(7)
    x, pop_x = rng.normal(size=(20, 4)).astype(np.float32), rng.normal(size=(15, 4)).astype(np.float32)

    def records(inputs: np.ndarray) -> RecordSet:
        with torch.no_grad():
            logits = model(torch.as_tensor(inputs)).double().numpy()
        return RecordSet(
            labels=rng.integers(0, 3, len(inputs)),
            target_logits=logits,
            ref_logits=np.zeros((0, len(inputs), 3)),
            x=inputs,
        )

    access = ModelAccess(target=model, references=[], reference_train=[], query_x=x)
    inputs = AttackInputs(queries=records(x), population=records(pop_x) if population else None, models=access)
    return inputs, model, pop_x


def _features_and_probs(model: torch.nn.Module, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        g = model.features(torch.as_tensor(x)).double().numpy()
        weight, bias = model.head.weight.double().numpy(), model.head.bias.double().numpy()
    return g, softmax(g @ weight.T + bias, axis=1)


def test_gls_attack_scores_the_target_last_layer() -> None:
    inputs, model, pop_x = _tiny_inputs(population=True)
    result = registry.score("gls", inputs)
    g, p = _features_and_probs(model, inputs.models.query_x)
    # the attack's default is the paper's probability-space exposure score (section 4.4)
    np.testing.assert_allclose(result.scores, leverage.cross_entropy_gls(g, p, g, p, space="probability"), rtol=1e-6)
    assert result.log_pvalues is None
    np.testing.assert_allclose(inputs.models.memo[("features", None, "queries")], g, rtol=1e-6)
    pop_result = registry.score("gls", inputs, hessian_data="population")
    pop_g, pop_p = _features_and_probs(model, pop_x)
    np.testing.assert_allclose(
        pop_result.scores, leverage.cross_entropy_gls(pop_g, pop_p, g, p, space="probability"), rtol=1e-6
    )
    logit_result = registry.score("gls", inputs, space="logit")
    np.testing.assert_allclose(logit_result.scores, leverage.cross_entropy_gls(g, p, g, p, space="logit"), rtol=1e-6)


def test_gls_attack_requirements() -> None:
    inputs, _, _ = _tiny_inputs(population=False)
    with pytest.raises(AttackRequirementError, match="population"):
        registry.score("gls", inputs, hessian_data="population")
    no_models = AttackInputs(queries=inputs.queries)
    with pytest.raises(AttackRequirementError, match="models"):
        registry.score("gls", no_models)
    with pytest.raises(ValueError, match="damping"):
        registry.get("gls").params(damping=0)
