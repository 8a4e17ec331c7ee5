"""The attack contract, checked on every registered attack (as scikit-learn's ``check_estimator`` checks
estimators): an attack added to the registry is held to it without a test of its own.

For every attack, on simulated inputs:
- the kind it declares: a test with p-values in the mode it runs (``pvalues``, True or the modes named) returns
  finite log p-values <= 0; one without p-values there, and every risk ranking, returns none (an attack with
  p-values in one mode only is checked in both, ``test_pvalues_in_exactly_the_modes_declared``);
- score direction: higher = more likely member, where members are clearly separated (and smaller p-values);
- a NaN signal is the least significant result: a NaN or lowest score, p = 1;
- determinism: the same inputs and seed give the same output, bit for bit;
- permutation equivariance: permuting the records permutes the scores;
- the first k references: K references with ``references=k`` give what the first k alone give;
- under a simulated null (no member anywhere), its p-values are uniform;
- no read of the target's membership: the inputs an attack receives carry none (a check of the types).

Two simulated worlds feed them. The signal world (``signal_world``) draws each model's signal on each record
from per-record Gaussians (the OUT mean depends on the record's inputs x; a member's is higher by ``gap``),
with binary logits (phi, 0) and label 0 so every signal is phi; label-only attacks ask a nearest-record oracle
whose correct radius grows with the model's signal. The model world (``model_world``) has real torch models
(fixed random features, logistic-regression heads fitted on each model's training records, which they
memorize) for the attacks that read the models (``needs`` models). The causal-LM attacks are routed to the
checks an untrained LM allows (``lm_world``). What an attack is not held to is listed with the reason
(``NOT_ITS_SIGNAL``, ``NULL_ROUTED``, ``CONSERVATIVE``); known defects are ``KNOWN_DEFECTS``, expected to fail
and reported as failures the day they pass (then the entry goes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import typing
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from miaudit.attacks import AttackInputs, AttackResult, ModelAccess, RecordSet, registry
from miaudit.attacks.base import LabelAccess
from miaudit.attacks.registry import AttackInfo
from miaudit.data.split import reference_subsets

ALL = registry.names()
N, K, Z = 120, 4, 120  # queries, references, population (and validation) records
LM_ATTACKS = {a.name for a in registry.all_attacks() if a.fn.__module__.endswith("lm_reference_free")}
LM_UNTRAINED = (
    "reads a causal LM's per-token outputs; its world's LM (an untrained gpt-tiny, built in a second) memorizes "
    "nothing, so there is no member to score higher (a trained one: tests/lm/test_audit.py)"
)
LM_NO_LOGITS = "reads a causal LM's per-token outputs on the texts x, not the target's logits"
WORDS = [f"w{i}" for i in range(20)]  # the texts' vocabulary


def info(name: str) -> AttackInfo:
    return registry.get(name)


def mode_of(name: str) -> str:
    return "offline" if info(name).offline else "online"


def uses_models(name: str) -> bool:
    return info(name).needs_models


# --- the signal world -------------------------------------------------------------------------------------------


def binary_logits(phi: np.ndarray) -> np.ndarray:
    return np.stack([phi, np.zeros_like(phi)], axis=-1)


@dataclass
class World:
    inputs: AttackInputs
    members: np.ndarray  # the target's membership of the queries: held by the test, never given to an attack


def masks(rng: np.random.Generator, k: int, n: int, balanced: bool) -> np.ndarray:
    """(k, n) reference training masks as a run draws them (``data.split.reference_subsets``): each a random
    half; balanced (online) in complementary pairs, so each record is IN for half of every even prefix."""
    return reference_subsets(n, k, int(rng.integers(2**31)), balanced=balanced)


class Oracle:
    """A model known by its labels: an input is labelled correctly (0) when it lies within the model's radius
    of its nearest record, a radius that grows with the model's signal on that record (members: wider)."""

    def __init__(self, x: np.ndarray, phi: np.ndarray) -> None:
        self.x, self.radius = x.reshape(len(x), -1), 12.0 * np.exp(0.12 * phi)

    def __call__(self, batch: np.ndarray, asked_by: str = "") -> np.ndarray:
        flat = batch.reshape(len(batch), -1).astype(np.float64)
        d2 = (flat**2).sum(1)[:, None] - 2 * flat @ self.x.T + (self.x**2).sum(1)[None, :]
        nearest = np.argmin(d2, axis=1)
        dist = np.sqrt(np.maximum(d2[np.arange(len(flat)), nearest], 0.0))
        return np.where(dist < self.radius[nearest], 0, 1).astype(np.int64)


def signal_world(seed: int, *, gap: float = 4.0, mode: str = "offline", n: int = N, k: int = K, z: int = Z) -> World:
    """Per record OUT signal N(mu(x), 1), IN N(mu(x) + gap, 1); the target trained on half the queries, the
    references on half the population (offline) or half of every record (online)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=6)
    members = rng.permutation(n) < n // 2

    def record_set(size: int, target_in: np.ndarray, ref_in: np.ndarray) -> tuple[RecordSet, np.ndarray]:
        x = rng.normal(scale=10.0, size=(size, 6))
        mu = 0.1 * x @ w
        phi0 = rng.normal(mu + gap * target_in)
        phi = rng.normal(mu + gap * ref_in, size=ref_in.shape)
        rs = RecordSet(
            labels=np.zeros(size, dtype=np.int64),
            target_logits=binary_logits(phi0),
            ref_logits=binary_logits(phi),
            ref_in=ref_in,
            x=x.astype(np.float32),
        )
        return rs, np.vstack([phi0[None], phi])

    none = np.zeros((k, n), dtype=bool)
    queries, q_phi = record_set(n, members, masks(rng, k, n, balanced=True) if mode == "online" else none)
    population, p_phi = record_set(z, np.zeros(z, dtype=bool), masks(rng, k, z, balanced=False))
    validation, _ = record_set(z, np.zeros(z, dtype=bool), np.zeros((k, z), dtype=bool))
    assert queries.x is not None  # label-only attacks ask about the queries' neighbourhoods only
    labels = LabelAccess(
        target=Oracle(queries.x, q_phi[0]), references=[Oracle(queries.x, q_phi[1 + j]) for j in range(k)]
    )
    inputs = AttackInputs(
        queries=queries,
        population=population,
        validation=validation,
        mode=mode,
        seed=seed,
        labels=labels,  # type: ignore[arg-type]
    )
    return World(inputs, members)


# --- the model world --------------------------------------------------------------------------------------------


class Net(torch.nn.Module):
    """Fixed random features tanh(x P) under a linear head: ``features`` and ``head`` as miaudit's models."""

    def __init__(self, projection: torch.Tensor, head: torch.nn.Linear) -> None:
        super().__init__()
        self.register_buffer("projection", projection)
        self.head = head

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ self.projection)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def _fitted(projection: torch.Tensor, x: np.ndarray, y: np.ndarray) -> Net:
    """A head fitted by logistic regression on the training records' features (it memorizes them)."""
    with torch.no_grad():
        g = torch.tanh(torch.as_tensor(x) @ projection).double().numpy()
    fit = LogisticRegression(C=5.0, max_iter=300).fit(g, y)
    head = torch.nn.Linear(projection.shape[1], 3)
    with torch.no_grad():
        head.weight.copy_(torch.as_tensor(fit.coef_))
        head.bias.copy_(torch.as_tensor(fit.intercept_))
    return Net(projection, head).eval()


def model_world(seed: int, *, member_share: float = 0.5, n: int = 60, k: int = 3, mode: str = "offline") -> World:
    """Queries, population and validation records (x in R^5, 3 random classes); the target trained on the member
    queries (member_share 0: on a pool of its own), reference j on a random half of the population (online: of
    the queries and the population)."""
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    projection = torch.randn(5, 48, generator=gen)
    x = {s: rng.normal(size=(size, 5)).astype(np.float32) for s, size in (("q", n), ("p", n), ("v", n), ("t", n))}
    y = {s: rng.integers(0, 3, len(v)) for s, v in x.items()}
    members = rng.permutation(n) < int(member_share * n)
    target_x = x["q"][members] if members.any() else x["t"][: n // 2]
    target_y = y["q"][members] if members.any() else y["t"][: n // 2]
    target = _fitted(projection, target_x, target_y)
    pool_x = np.concatenate([x["q"], x["p"]]) if mode == "online" else x["p"]
    pool_y = np.concatenate([y["q"], y["p"]]) if mode == "online" else y["p"]
    ref_in_pool = masks(rng, k, len(pool_x), balanced=mode == "online")
    refs = [_fitted(projection, pool_x[m], pool_y[m]) for m in ref_in_pool]
    q_in = ref_in_pool[:, :n] if mode == "online" else np.zeros((k, n), dtype=bool)
    p_in = ref_in_pool[:, n:] if mode == "online" else ref_in_pool

    def logits(model: Net, xs: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model(torch.as_tensor(xs)).double().numpy()

    def record_set(s: str, ref_in: np.ndarray) -> RecordSet:
        return RecordSet(
            labels=y[s],
            target_logits=logits(target, x[s]),
            ref_logits=np.stack([logits(r, x[s]) for r in refs]),
            ref_in=ref_in,
            x=x[s],
        )

    access = ModelAccess(
        target=target,
        references=refs,
        reference_train=[(pool_x[m], pool_y[m]) for m in ref_in_pool],
        query_x=x["q"],
    )
    inputs = AttackInputs(
        queries=record_set("q", q_in),
        population=record_set("p", p_in),
        validation=record_set("v", np.zeros((k, n), dtype=bool)),
        models=access,
        mode=mode,  # type: ignore[arg-type]
        seed=seed,
    )
    return World(inputs, members)


_WORLDS: dict[tuple[str, int, str], World] = {}


def lm_world(seed: int, *, n: int = 60, z: int = 120) -> World:
    """Texts of random words, an untrained gpt-tiny as the target: queries and population exchangeable (members
    are half the queries in name only: the model trained on nothing)."""
    from miaudit.lm import data, model

    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(4, 9)))) for _ in range(n + z)]
    tokenizer = data.word_tokenizer(texts, 24, 10)
    torch.manual_seed(seed)
    lm = model.build("gpt-tiny[max_length=10,width=8,layers=2]", tokenizer)
    x = data.encode(tokenizer, texts, 10)

    def record_set(part: np.ndarray) -> RecordSet:
        return RecordSet(
            labels=np.zeros(len(part), dtype=np.int64),
            target_logits=np.zeros((len(part), 2)),  # LM attacks read the model on x, not these
            ref_logits=np.zeros((0, len(part), 2)),
            x=part,
        )

    access = ModelAccess(target=lm, references=[], reference_train=[], query_x=x[:n])
    inputs = AttackInputs(queries=record_set(x[:n]), population=record_set(x[n:]), models=access, seed=seed)
    return World(inputs, rng.permutation(n) < n // 2)


def world(name: str, seed: int = 0) -> World:
    """The world that feeds attack ``name``, in the first mode it runs in: built once per seed and mode (the
    models' fits take seconds), handed out with a fresh memo, so no result carries over between runs."""
    key = ("lm" if name in LM_ATTACKS else "model" if uses_models(name) else "signal", seed, mode_of(name))
    if key not in _WORLDS:
        _WORLDS[key] = {"lm": lambda: lm_world(seed), "model": lambda: model_world(seed, mode=key[2])}.get(
            key[0], lambda: signal_world(seed, mode=key[2])
        )()
    w = _WORLDS[key]
    models = None if w.inputs.models is None else replace(w.inputs.models, memo={})
    return World(replace(w.inputs, models=models), w.members)


# Only to keep the file fast: the posterior attacks' draws (1000 by default; the statistics do not change).
FAST = {a.name: {"samples": 100} for a in registry.all_attacks() if "samples" in a.params.model_fields}


def run(name: str, inputs: AttackInputs, **params: typing.Any) -> AttackResult:
    return registry.score(name, inputs, **{**FAST.get(name, {}), **params})


_BASE: dict[str, tuple[World, AttackResult]] = {}


def base(name: str) -> tuple[World, AttackResult]:
    """Attack ``name`` on its world (seed 0), computed once for the checks that only read it."""
    if name not in _BASE:
        w = world(name)
        _BASE[name] = w, run(name, w.inputs)
    return _BASE[name]


# --- transformations of the inputs, written here (not with AttackInputs.first), so they check it ---------------


def _permuted_set(rs: RecordSet, perm: np.ndarray) -> RecordSet:
    return RecordSet(
        labels=rs.labels[perm],
        target_logits=rs.target_logits[perm],
        ref_logits=np.asarray(rs.ref_logits)[:, perm],
        ref_in=None if rs.ref_in is None else rs.ref_in[:, perm],
        x=None if rs.x is None else rs.x[perm],
    )


def permuted(inputs: AttackInputs, perm: np.ndarray) -> AttackInputs:
    models = inputs.models
    if models is not None:
        models = replace(models, query_x=models.query_x[perm], memo={})
    return replace(inputs, queries=_permuted_set(inputs.queries, perm), models=models)


def _first_set(rs: RecordSet | None, k: int) -> RecordSet | None:
    if rs is None:
        return None
    return RecordSet(
        labels=rs.labels,
        target_logits=rs.target_logits,
        ref_logits=np.array(np.asarray(rs.ref_logits)[:k]),
        ref_in=None if rs.ref_in is None else np.array(rs.ref_in[:k]),
        x=rs.x,
    )


def only_first(inputs: AttackInputs, k: int) -> AttackInputs:
    """The inputs as if only the first k references had been trained."""
    m, labels = inputs.models, inputs.labels
    return replace(
        inputs,
        queries=_first_set(inputs.queries, k),
        population=_first_set(inputs.population, k),
        validation=_first_set(inputs.validation, k),
        models=None
        if m is None
        else ModelAccess(m.target, list(m.references[:k]), list(m.reference_train[:k]), m.query_x),
        labels=None if labels is None else LabelAccess(labels.target, list(labels.references[:k])),
    )


def with_nan_signal(inputs: AttackInputs, record: int) -> AttackInputs:
    """The target's logits on one query NaN."""
    logits = inputs.queries.target_logits.copy()
    logits[record] = np.nan
    models = None if inputs.models is None else replace(inputs.models, memo={})
    return replace(inputs, queries=replace(inputs.queries, target_logits=logits), models=models)


def assert_same(a: AttackResult, b: AttackResult, exact: bool = True) -> None:
    """Equal outputs: bit for bit, or (exact False) up to the rounding of sums taken in another order."""

    def check(x: np.ndarray, y: np.ndarray) -> None:
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-7, atol=1e-9)

    check(a.scores, b.scores)
    assert (a.log_pvalues is None) == (b.log_pvalues is None)
    if a.log_pvalues is not None:
        check(a.log_pvalues, b.log_pvalues)


# --- uniformity under the null ----------------------------------------------------------------------------------

LEVELS = (0.01, 0.05, 0.1, 0.25, 0.5)
ALPHA = 1e-4  # the checks' level: with fixed seeds nothing flakes; this is the margin against a change of seed


def validity_pvalue(p: np.ndarray) -> float:
    """At each level a, an exact one-sided binomial test of the share of p-values at or below a (more than a:
    the p-values are anti-conservative, i.e. invalid); the smallest of them."""
    p = np.asarray(p, dtype=np.float64)
    return float(min(stats.binomtest(int((p <= a).sum()), p.size, a, alternative="greater").pvalue for a in LEVELS))


def uniformity_pvalue(p: np.ndarray) -> float:
    """Valid (``validity_pvalue``) and uniform (a KS test against U(0, 1)): the smaller p-value. A rank p-value
    whose smallest attainable value is 1 / (K + 1) passes where K is large enough for KS not to see the floor."""
    return float(min(validity_pvalue(p), stats.kstest(np.asarray(p, dtype=np.float64), "uniform").pvalue))


def test_the_null_checks_can_fail() -> None:
    """The checks pass uniform p-values and fail miscalibrated ones of the size they are run on."""
    u = np.random.default_rng(0).random(300)
    assert uniformity_pvalue(u) > ALPHA and validity_pvalue(u) > ALPHA
    assert validity_pvalue(u**1.5) < ALPHA  # anti-conservative: too many small p-values
    assert uniformity_pvalue(u**1.5) < ALPHA
    assert validity_pvalue(np.sqrt(u)) > ALPHA  # conservative: valid, not uniform
    assert uniformity_pvalue(np.sqrt(u)) < ALPHA


# --- the contract -----------------------------------------------------------------------------------------------

# What an attack is not held to, and why; a reason names the attack. Known defects are xfail (strict: a fix
# makes the test pass, and the entry must go).
NOT_ITS_SIGNAL = {  # the NaN check writes NaN into the target's logits, which these do not read
    "gls": "gls: reads the target model's last layer on the inputs x, not the target's logits",
    "label-lira": "label-lira: reads the target's labels on perturbed inputs, not its logits",
    **{name: f"{name}: {LM_NO_LOGITS}" for name in LM_ATTACKS},
}
NULL_ROUTED = {  # raw p-values that hold only as approximations of real models: the run calibrates them
    name: f"{name}: its raw p-values assume the posterior's draws are the law of the target's signal on a "
    "non-member, which real models meet only approximately (the run's conformal calibration makes the headline "
    "p-values valid); its statistic's null is checked with draws from that law in tests/attacks/test_bmia.py "
    "and test_bmia_variants.py"
    for name in ("bmia", "mr-bmia", "eb-bmia", "lr-bmia", "rmia-draws")
}
CONSERVATIVE = {  # valid (never anti-conservative) but not uniform in the simulated world: held to validity only
    name: f"{name}: below 64 references LiRA's global variance is the spread of every OUT observation, between "
    "records included (as the released LiRA code), so where records' OUT means differ its raw p-values are "
    "conservative; the run's calibration makes the headline p-values uniform"
    for name in ("lira", "label-lira", "label-dist", "exp-family")  # exp-family: its gaussian default, offline
}
KNOWN_DEFECTS: dict[tuple[str, str], str] = {}


@contextlib.contextmanager
def known_defect(check: str, name: str) -> Iterator[None]:
    """Around a check's assertions: a known defect's failure is an expected failure (xfail), and its passing is a
    failure (strict: a fix must remove the entry)."""
    reason = KNOWN_DEFECTS.get((check, name))
    if reason is None:
        yield
        return
    try:
        yield
    except AssertionError:
        pytest.xfail(reason)
    pytest.fail(f"{name} passes its {check} check now: remove its KNOWN_DEFECTS entry ({reason})")


def _members_auc(values: np.ndarray, members: np.ndarray) -> float:
    return float(roc_auc_score(members, np.nan_to_num(values, nan=-1e300, neginf=-1e300, posinf=1e300)))


# An attack that reads the models needs the model world, whose reference models train: slow (tests/conftest.py).
CONTRACT = [pytest.param(name, marks=pytest.mark.slow) if uses_models(name) else name for name in ALL]


@pytest.mark.parametrize("name", CONTRACT)
class TestAttackContract:
    def test_declares_a_kind_and_returns_what_it_declares(self, name: str) -> None:
        a = info(name)
        assert a.kind in typing.get_args(registry.Kind)
        assert not (a.is_ranking and a.pvalue_modes), f"{name}: a risk ranking cannot return p-values"
        w, result = base(name)
        assert result.scores.shape == (w.inputs.queries.labels.size,)
        if a.pvalues_in(mode_of(name)):
            assert result.log_pvalues is not None, f"{name}: declares p-values in this mode, returned none"
            assert result.log_pvalues.shape == result.scores.shape
            assert np.all(np.isfinite(result.log_pvalues)) and np.all(result.log_pvalues <= 0)
        else:
            with known_defect("kind", name):
                assert result.log_pvalues is None, f"{name}: returns p-values but does not declare them in this mode"

    def test_higher_scores_for_clear_members(self, name: str) -> None:
        if name in LM_ATTACKS:
            pytest.skip(f"{name}: {LM_UNTRAINED}")
        if info(name).is_ranking:
            pytest.skip(
                f"{name}: a risk ranking (kind ranking): its score ranks exposure, which membership does not define "
                "(GLS: members have low leverage once fitted); its definition is checked in its own tests"
            )
        w, result = base(name)
        assert _members_auc(result.scores, w.members) > 0.7, f"{name}: members do not score higher"
        if result.log_pvalues is not None:
            assert _members_auc(-result.log_pvalues, w.members) > 0.7, f"{name}: members' p-values are not smaller"

    def test_nan_signal_is_least_significant(self, name: str) -> None:
        if name in NOT_ITS_SIGNAL:
            pytest.skip(NOT_ITS_SIGNAL[name])
        result = run(name, with_nan_signal(world(name).inputs, 0))
        s0, rest = result.scores[0], result.scores[1:]
        assert np.isnan(s0) or s0 <= np.nanmin(rest), f"{name}: a NaN signal scored {s0}, above other records"
        if result.log_pvalues is not None:
            assert result.log_pvalues[0] == 0.0, f"{name}: a NaN signal has p = {np.exp(result.log_pvalues[0])}"

    def test_deterministic_under_a_seed(self, name: str) -> None:
        assert_same(run(name, world(name, seed=3).inputs), run(name, world(name, seed=3).inputs))

    def test_permuting_records_permutes_scores(self, name: str) -> None:
        w, result = base(name)
        perm = np.random.default_rng(1).permutation(w.inputs.queries.labels.size)
        want = AttackResult(
            scores=result.scores[perm], log_pvalues=None if result.log_pvalues is None else result.log_pvalues[perm]
        )
        with known_defect("permutation", name):
            assert_same(run(name, permuted(world(name).inputs, perm)), want, exact=False)

    def test_uses_the_first_k_references(self, name: str) -> None:
        a = info(name)
        if not a.uses_references:
            pytest.skip(f"{name}: uses no reference model (max_references=0)")
        w = world(name)
        k = a.max_references or 2  # online, the first two are complementary: every record IN for one
        assert w.inputs.n_references > k
        assert_same(run(name, w.inputs, references=k), run(name, only_first(world(name).inputs, k)))

    def test_pvalues_uniform_under_the_null(self, name: str) -> None:
        if not info(name).pvalues_in(mode_of(name)):
            pytest.skip(f"{name}: returns no p-values in {mode_of(name)} mode")
        if name in NULL_ROUTED:
            pytest.skip(NULL_ROUTED[name])
        if name in LM_ATTACKS:  # the untrained LM: queries and population exchangeable, no member anywhere
            result = run(name, lm_world(11, n=300, z=1500).inputs)
            assert result.log_pvalues is not None
            assert uniformity_pvalue(np.exp(result.log_pvalues)) > ALPHA, f"{name}: p-values not uniform under the null"
            return
        # 16 references keep the parametric tests near their asymptotics; a population of 3000 makes the queries'
        # p-values, which all rank against it, nearly independent (the label-only oracles are slower: 8)
        k = 8 if "labels" in info(name).needs else 16
        null = signal_world(11, gap=0.0, n=300, k=k, z=3000, mode=mode_of(name))
        result = run(name, null.inputs)
        assert result.log_pvalues is not None
        p = np.exp(result.log_pvalues)
        with known_defect("null", name):
            assert validity_pvalue(p) > ALPHA, f"{name}: p-values anti-conservative under the null"
            if name not in CONSERVATIVE:
                assert uniformity_pvalue(p) > ALPHA, f"{name}: p-values not uniform under the null"


MODE_AWARE = [a.name for a in registry.all_attacks() if a.pvalue_modes not in ((), a.modes)]


@pytest.mark.parametrize("mode", ["offline", "online"])
@pytest.mark.parametrize("name", MODE_AWARE)
def test_pvalues_in_exactly_the_modes_declared(name: str, mode: str) -> None:
    """An attack whose p-values depend on the mode (a test in one, a likelihood ratio in the other; the class
    checks only the first mode) returns them in the modes its entry names, in no other."""
    if mode not in info(name).modes:
        pytest.skip(f"{name}: does not run {mode}")
    assert not uses_models(name) and name not in LM_ATTACKS, f"{name}: give it its world here"
    result = run(name, signal_world(0, mode=mode).inputs)
    assert (result.log_pvalues is not None) == info(name).pvalues_in(mode), f"{name} {mode}: {info(name).pvalues}"


def test_attack_inputs_carry_no_target_membership() -> None:
    """Every field an attack can read, through every dataclass it holds, is one of these: a new field is a
    decision to check, and none holds which queries the target trained on (``ref_in`` is the references')."""
    seen: dict[str, set[str]] = {}

    def walk(cls: type) -> None:
        if cls.__name__ in seen or not dataclasses.is_dataclass(cls):
            return
        hints = typing.get_type_hints(cls, localns={"View": tuple})  # View: imported for type checking only
        seen[cls.__name__] = {f.name for f in dataclasses.fields(cls)}
        for f in dataclasses.fields(cls):
            for arg in (hints[f.name], *typing.get_args(hints[f.name])):
                if isinstance(arg, type):
                    walk(arg)

    walk(AttackInputs)
    assert seen == {
        "AttackInputs": {"queries", "population", "validation", "models", "mode", "seed", "labels"},
        "RecordSet": {"labels", "target_logits", "ref_logits", "ref_in", "x", "target_views", "ref_views"},
        "ModelAccess": {
            "target",
            "references",
            "reference_train",
            "query_x",
            "query_set",
            "device",
            "memo",
            "executor",
            "query_views",
        },
        "LabelAccess": {"target", "references"},
    }
    assert not any("member" in f for fields in seen.values() for f in fields)
