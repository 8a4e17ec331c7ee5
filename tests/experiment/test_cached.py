"""Attack runs kept in the store by content: read back equal, recomputed when anything they read changes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from miaudit.attacks import AttackInputs, RecordSet, registry
from miaudit.experiment import cached


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Every attack run that really happens (not read from the store), by attack name; a fresh store."""
    monkeypatch.setenv("MIAUDIT_CACHE_DIR", str(tmp_path / "cache"))
    runs: list[str] = []
    real = registry.execute

    def execute(info, params, references, inputs):
        runs.append(info.name)
        return real(info, params, references, inputs)

    monkeypatch.setattr(registry, "execute", execute)
    return runs


def _inputs(seed: int = 0, n: int = 50, k: int = 4) -> AttackInputs:
    rng = np.random.default_rng(seed)
    queries = RecordSet(
        labels=rng.integers(0, 3, n),
        target_logits=rng.normal(size=(n, 3)),
        ref_logits=rng.normal(size=(k, n, 3)),
        ref_in=rng.random((k, n)).argsort(axis=0) < k // 2,  # every record IN for half the references
    )
    return AttackInputs(queries=queries, mode="online")


def _run(name: str, inputs: AttackInputs, **params):
    info = registry.get(name)
    return cached.execute(info, info.params(**params), inputs.n_references, inputs)


def test_a_second_run_reads_the_stored_result(counted: list[str]) -> None:
    first = _run("lira", _inputs())
    second = _run("lira", _inputs())
    assert counted == ["lira"]
    np.testing.assert_array_equal(first.scores, second.scores)
    assert second.log_pvalues is None and first.log_pvalues is None  # online LiRA: a ratio, no p-value
    assert first.extra.keys() == second.extra.keys()
    for key in first.extra:
        np.testing.assert_array_equal(first.extra[key], second.extra[key])


def test_p_values_and_extras_survive_the_store(counted: list[str]) -> None:
    inputs = replace(_inputs(), mode="offline", queries=replace(_inputs().queries, ref_in=None))
    first, second = _run("lira", inputs), _run("lira", inputs)
    assert counted == ["lira"]
    np.testing.assert_array_equal(first.log_pvalues, second.log_pvalues)
    np.testing.assert_array_equal(first.extra["sd_out"], second.extra["sd_out"])


def test_anything_the_attack_reads_changes_the_key(counted: list[str]) -> None:
    base = _inputs()
    _run("lira", base)
    _run("lira", base, variance="global")  # parameters
    _run("lira", _inputs(seed=1))  # logits
    flipped = base.queries.ref_in.copy()
    flipped[:, 0] = ~flipped[:, 0]  # record 0: IN where it was OUT (still two of each)
    _run("lira", replace(base, queries=replace(base.queries, ref_in=flipped)))  # which references trained on what
    _run("lira", replace(base, seed=7))  # the seed
    _run("bavaria-n", base)  # another attack
    assert counted == ["lira"] * 5 + ["bavaria-n"]


def test_attacks_that_read_models_or_inputs_are_never_stored() -> None:
    gls, qmia = registry.get("gls"), registry.get("qmia")
    assert cached.key_parts(gls, gls.params(), _inputs()) is None
    assert cached.key_parts(qmia, qmia.params(), _inputs()) is None


def test_the_key_covers_miauditss_code_and_a_users_own_attack_file(tmp_path: Path) -> None:
    from miaudit.stats import memo

    assert len(memo.code_digest()) == 64
    own = tmp_path / "own_attack.py"
    own.write_text("def attack(inputs, params):\n    return None\n")
    namespace: dict = {}
    exec(compile(own.read_text(), str(own), "exec"), namespace)
    before = cached._source_digest(namespace["attack"])
    own.write_text("def attack(inputs, params):\n    return 1\n")
    assert before is not None and cached._source_digest(namespace["attack"]) != before
    assert cached._source_digest(registry.get("lira").fn) is None  # miaudit's own: in the code digest already
