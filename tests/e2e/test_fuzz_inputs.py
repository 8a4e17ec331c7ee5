"""Property: whatever arrays and configs a user brings, miaudit gives a result or a clean one-line
error (exit code 2 on the command line, no output left) -- never a traceback."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from _byo import N_CLASSES, TinyNet, audit_config, run_cli, tiny_data, write_audit_files
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import miaudit
from miaudit.errors import MiauditError

pytestmark = pytest.mark.slow  # audits end to end on generated inputs: trains models, seconds each

# Derandomized: the same examples on every run, so CI cannot flake; small, so the suite stays fast.
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# Ways a user's array goes wrong, applied to a valid (x, y) pair.
MALFORMATIONS = {
    "none": lambda x, y: (x, y),
    "nan": lambda x, y: (np.where(np.arange(x.size).reshape(x.shape) == 3, np.nan, x), y),
    "overflow": lambda x, y: (x.astype(np.float64) * np.float64(1e39), y),
    "wide": lambda x, y: (np.concatenate([x, x[:, :1]], axis=1), y),
    "flat": lambda x, y: (x.ravel(), y),
    "image": lambda x, y: (x[:, None, :], y),
    "strings": lambda x, y: (x.astype(str), y),
    "objects": lambda x, y: (x.astype(object), y),
    "booleans": lambda x, y: (x > 0, y),
    "complex": lambda x, y: (x.astype(np.complex64), y),
    "label_high": lambda x, y: (x, y + N_CLASSES),
    "label_negative": lambda x, y: (x, y - 1),
    "label_fraction": lambda x, y: (x, y + 0.5),
    "label_short": lambda x, y: (x, y[:-1]),
    "label_matrix": lambda x, y: (x, np.stack([y, y], axis=1)),
    "empty": lambda x, y: (x[:0], y[:0]),
    "one_record": lambda x, y: (x[:1], y[:1]),
}

arbitrary_x = hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64, np.int8, np.bool_]),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=7),
)
arbitrary_y = hnp.arrays(
    dtype=st.sampled_from([np.int64, np.float32]), shape=st.integers(0, 7), elements=st.integers(-2, 5)
)


@st.composite
def record_sets(draw: st.DrawFn) -> dict:
    """members / nonmembers / population: mostly valid slices, some malformed, a few wholly random."""
    x, y = tiny_data(n=48, seed=draw(st.integers(0, 3)))
    sets = {}
    for name, rows in (("members", slice(0, 12)), ("nonmembers", slice(12, 24)), ("population", slice(24, 48))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            sets[name] = (draw(arbitrary_x), draw(arbitrary_y))
        else:
            broken = "none" if kind > 3 else draw(st.sampled_from(sorted(MALFORMATIONS)))
            sets[name] = MALFORMATIONS[broken](x[rows], y[rows])
    if draw(st.integers(0, 4)) == 0:  # a member copied into the non-members
        sets["nonmembers"] = tuple(
            np.concatenate([a, b[:1]]) if a.ndim == b.ndim and a.shape[1:] == b.shape[1:] else a
            for a, b in zip(sets["nonmembers"], sets["members"])
        )
    return sets


ATTACKS = [
    "attack-p",
    "gls",
    "lira",
    {"name": "bmia", "samples": 20},
    "mr-bmia",
    "qmia",
    "rmia",
    "bogus",
    {"name": "lira", "references": 5},
    {"name": "attack-p", "signal": "margin"},
]


def mostly(valid: list, invalid: list) -> st.SearchStrategy:
    """Valid values four times as often as invalid ones, so the data checks behind them get reached."""
    return st.one_of(
        st.sampled_from(valid),
        st.sampled_from(valid),
        st.sampled_from(valid),
        st.sampled_from(valid),
        st.sampled_from(invalid),
    )


api_options = st.fixed_dictionaries(
    {
        "attacks": st.lists(mostly(ATTACKS[:7], ATTACKS[7:]), min_size=1, max_size=3),
        "references": mostly([None, 0, 1, 2], [-1]),
        "min_fpr": mostly([None, None, 0.5], [0.01, 0.0, 2.0]),
        "mode": mostly(["offline"], ["online", "sideways"]),
        "seed": mostly([0, 7], [-1]),
    }
)


def assert_clean(error: BaseException) -> None:
    assert isinstance(error, MiauditError), f"{type(error).__name__}: {error}"
    assert str(error) and "\n" not in str(error)


@FUZZ
@given(sets=record_sets(), options=api_options)
def test_api_gives_a_result_or_a_clean_error(sets: dict, options: dict) -> None:
    torch.manual_seed(0)
    try:
        result = miaudit.audit(TinyNet(), **sets, **options, train={"epochs": 1, "batch_size": 8})
    except Exception as e:
        assert_clean(e)
        event(str(e)[:40])
        return
    event("result")
    results = result.to_json()
    assert results["n_members"] == len(sets["members"][1]) and len(results["attacks"]) == len(options["attacks"])


@st.composite
def cli_configs(draw: st.DrawFn) -> dict:
    """An own-model config with some keys replaced by wrong, missing or malicious values."""
    replacements = {
        "dataset": [
            {"path": "data.npz"},
            {"path": "nan.npz"},
            {"path": "pickled.npz"},
            {"path": "missing.npz"},
            {"path": "notes.txt"},
            {"name": "no_such_set"},
            "data.npz",
        ],
        "target": [
            {"checkpoint": "model.safetensors", "architecture": "_byo:small_mlp"},
            {"checkpoint": "evil.pt", "architecture": "mlp"},
            {"checkpoint": "model.safetensors", "architecture": "mlp"},
            {"checkpoint": "model.safetensors", "architecture": "cnn"},
            {"checkpoint": "missing.pt"},
            None,
        ],
        "members": ["members.npy", "nonmembers.txt", "notes.txt", "pickled.npz", None],
        "nonmembers": ["nonmembers.txt", "members.npy", None],
        "queries": [None, None, "members.npy"],
        "references": [0, 1, 2, "two"],
        "attacks": [["attack-p"], ["gls", "lira"], [{"name": "bmia", "samples": 20}], ["mr-bmia"], "attack-p", []],
        "min_fpr": [None, 0.1, 0.001],
        "model": ["_byo:small_mlp", "cnn"],
        "bogus": [None, 1],
    }
    keys = draw(st.lists(st.sampled_from(sorted(replacements)), unique=True, max_size=4))
    return {key: draw(st.sampled_from(replacements[key])) for key in keys}


def write_fuzz_files(folder: Path) -> None:
    x, y = tiny_data()
    write_audit_files(folder, x, y)
    x[3, 2] = np.nan
    np.savez(folder / "nan.npz", x=x, y=y)
    np.savez(folder / "pickled.npz", x=np.array([{"a": 1}] * 3, dtype=object), y=np.arange(3))
    (folder / "notes.txt").write_text("members: the first forty\n")

    class Evil:
        def __reduce__(self):
            return shutil.rmtree, (str(folder),)  # would delete the whole folder if ever unpickled

    torch.save({"w": Evil()}, folder / "evil.pt")


@settings(FUZZ, max_examples=25)  # each example is a whole CLI run
@given(changes=cli_configs())
def test_cli_gives_a_result_or_exit_2_with_nothing_written(changes: dict) -> None:
    folder = Path(tempfile.mkdtemp(prefix="miaudit-fuzz-"))
    try:
        write_fuzz_files(folder)
        raw = audit_config(folder, model="_byo:small_mlp")
        raw.update(
            {
                k: (str(folder / v) if isinstance(v, str) and "." in v and k != "target" else v)
                for k, v in changes.items()
            }
        )
        if isinstance(raw.get("dataset"), dict) and "path" in raw["dataset"]:
            raw["dataset"] = {"path": str(folder / raw["dataset"]["path"])}
        if isinstance(raw.get("target"), dict):
            raw["target"] = {**raw["target"], "checkpoint": str(folder / raw["target"]["checkpoint"])}
        raw = {k: v for k, v in raw.items() if v is not None}
        out = folder / "out"
        code, output = run_cli(folder, raw, out)
        assert (folder / "evil.pt").exists()  # the pickled checkpoint never ran
        assert code in (0, 2), output
        event(output.strip().splitlines()[-1][:50] if code else "result")
        if code == 2:
            assert len([line for line in output.splitlines() if line.startswith("error:")]) == 1, output
            assert not out.exists()
        else:
            assert (out / "results.json").is_file()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
