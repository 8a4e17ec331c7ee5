"""Strict inputs for auditing a user's model: every bad input is a one-line error naming the field,
exit code 2 on the command line, and no output directory left behind."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn
from _byo import (
    N_CLASSES,
    N_FEATURES,
    TinyNet,
    api_sets,
    assert_refused,
    audit_config,
    fitted_net,
    run_cli,
    tiny_data,
    write_audit_files,
)
from PIL import Image
from safetensors.torch import save_file

import miaudit
from miaudit.attacks import AttackRequirementError
from miaudit.data import DataError, load
from miaudit.errors import ConfigError
from miaudit.models.io import ModelError, read_state_dict
from miaudit.models.mlp import MLP


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    x, y = tiny_data()
    return write_audit_files(tmp_path, x, y)


def refused(tmp_path: Path, raw: dict, message: str) -> None:
    out = tmp_path / "out"
    code, output = run_cli(tmp_path, raw, out)
    assert_refused(code, output, message, out)


class Evil:
    """Unpickling this runs a shell command: what a malicious checkpoint does."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_valid_own_model_config_runs(tmp_path: Path, files: dict[str, Path]) -> None:
    code, output = run_cli(tmp_path, audit_config(tmp_path), tmp_path / "out")
    assert code == 0, output
    assert (tmp_path / "out" / "results.json").is_file()


def test_queries_config_ranks_records_without_roc(tmp_path: Path, files: dict[str, Path]) -> None:
    np.save(tmp_path / "queries.npy", np.arange(10, 30))
    raw = {
        k: v
        for k, v in audit_config(tmp_path, queries=str(tmp_path / "queries.npy")).items()
        if k not in ("members", "nonmembers")
    }
    code, output = run_cli(tmp_path, raw, tmp_path / "out")
    assert code == 0 and "membership unknown (no ROC)" in output, output
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert (
        results["membership"] == "unknown" and results["n_queries"] == 20 and results["n_population"] == 94
    )  # 140 records left: 2/3 population
    assert set(results["attacks"][0]["most_exposed"]) <= set(range(10, 30))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "at_risk.csv",
        "report.html",
        "report.md",
        "results.json",
        "scores.csv",
        "scores.parquet",
    ]


# --- checkpoints: nothing in a model file runs ---------------------------------------------------


def test_pickled_checkpoint_is_refused_without_running(tmp_path: Path, files: dict[str, Path]) -> None:
    marker = tmp_path / "PWNED"
    torch.save({"state": Evil(marker)}, tmp_path / "evil.pt")
    raw = audit_config(tmp_path, target={"architecture": "mlp", "checkpoint": str(tmp_path / "evil.pt")})
    refused(tmp_path, raw, "target.checkpoint: evil.pt needs pickle to load, which miaudit refuses; convert it with:")
    assert not marker.exists()


def test_plain_pickle_file_is_refused_without_running(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    (tmp_path / "raw.pth").write_bytes(pickle.dumps({"w": Evil(marker)}))
    with pytest.raises(ModelError, match="raw.pth needs pickle to load"):
        read_state_dict(tmp_path / "raw.pth")
    assert not marker.exists()


def test_whole_pickled_module_is_refused(tmp_path: Path) -> None:
    torch.save(MLP((4,), 2, hidden=(8,)), tmp_path / "module.pt")
    with pytest.raises(ModelError, match=r"module.pt needs pickle to load.*state_dict"):
        read_state_dict(tmp_path / "module.pt")


def test_weights_only_torch_checkpoint_loads(tmp_path: Path) -> None:
    model = MLP((4,), 2, hidden=(8,))
    torch.save({"state_dict": model.state_dict(), "epoch": 3}, tmp_path / "ok.pt")
    state = read_state_dict(tmp_path / "ok.pt")
    assert set(state) == set(model.state_dict()) and torch.equal(state["head.weight"], model.head.weight)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("garbage.pt", b"not a checkpoint", "garbage.pt is not a torch checkpoint miaudit can read"),
        ("garbage.safetensors", b"\x00\x01", "garbage.safetensors is not a valid safetensors file"),
        ("model.pkl", b"", "unsupported file type '.pkl'"),
    ],
)
def test_unreadable_checkpoints(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ModelError, match=message) as info:
        read_state_dict(tmp_path / name)
    assert "\n" not in str(info.value)


def test_checkpoint_for_other_input_shape(tmp_path: Path, files: dict[str, Path]) -> None:
    save_file(MLP((N_FEATURES + 2,), N_CLASSES, hidden=(16,)).state_dict(), str(tmp_path / "wide.safetensors"))
    raw = audit_config(
        tmp_path, target={"architecture": "_byo:small_mlp", "checkpoint": str(tmp_path / "wide.safetensors")}
    )
    refused(
        tmp_path,
        raw,
        "target.checkpoint: body.1.weight has shape (16, 8), architecture _byo:small_mlp built "
        "for this data expects (16, 6)",
    )


def test_labels_beyond_the_checkpoints_classes(tmp_path: Path, files: dict[str, Path]) -> None:
    x, y = tiny_data()
    y[7] = N_CLASSES + 1
    np.savez(tmp_path / "data.npz", x=x, y=y)
    data = {"path": str(tmp_path / "data.npz"), "num_classes": N_CLASSES + 2}  # class N_CLASSES has no records
    refused(
        tmp_path,
        audit_config(tmp_path, dataset=data),
        f"dataset: labels go up to {N_CLASSES + 1} but the target has {N_CLASSES} outputs",
    )


# --- data ----------------------------------------------------------------------------------------


def test_nan_features_write_nothing(tmp_path: Path, files: dict[str, Path]) -> None:
    x, y = tiny_data()
    x[5, 3] = np.nan
    np.savez(tmp_path / "data.npz", x=x, y=y)
    refused(tmp_path, audit_config(tmp_path), "dataset data: x contains NaN or inf in 1 record(s)")


@pytest.mark.parametrize(
    ("members", "nonmembers", "message"),
    [
        ([0, 1, 2, 3], [3, 4, 5], "nonmembers: 1 record index(es) also in members (e.g. 3)"),
        ([0, 1, 2], [0, 1], "nonmembers: 2 record index(es) also in members (e.g. 0)"),
        ([0, 1, 1], [5, 6], "members: index 1 is listed 2 times"),
        ([0, 1, 160], [5, 6], "members: index 160 is outside the data set's 160 records"),
        ([0, -1], [5, 6], "members: index -1 is outside"),
        ([0.5, 1], [5, 6], "members: members.npy must hold one integer record index per line"),
        ([], [5, 6], "members: no records"),
    ],
)
def test_bad_index_files(tmp_path: Path, files: dict[str, Path], members: list, nonmembers: list, message: str) -> None:
    np.save(tmp_path / "members.npy", np.array(members, dtype=np.float64 if 0.5 in members else np.int64))
    np.savetxt(tmp_path / "nonmembers.txt", np.array(nonmembers), fmt="%d")
    refused(tmp_path, audit_config(tmp_path), message)


def test_pickled_index_file_is_refused(tmp_path: Path, files: dict[str, Path]) -> None:
    np.save(tmp_path / "members.npy", np.array([0, 1, None], dtype=object), allow_pickle=True)
    refused(tmp_path, audit_config(tmp_path), "members: members.npy is not a list of record indices")


def test_duplicate_rows_across_members_and_nonmembers(tmp_path: Path, files: dict[str, Path]) -> None:
    x, y = tiny_data()
    x[45], y[45] = x[2], y[2]  # record 45 (a non-member) is a copy of record 2 (a member)
    x[46], y[46] = -0.0 * x[3] + x[3], y[3]  # equal up to the sign of zero: still a duplicate
    np.savez(tmp_path / "data.npz", x=x, y=y)
    refused(
        tmp_path,
        audit_config(tmp_path),
        "nonmembers: 2 record(s) duplicate members records (e.g. nonmembers "
        "record 45 = members record 2: same features and label)",
    )


def test_too_few_nonmembers_for_requested_fpr(tmp_path: Path, files: dict[str, Path]) -> None:
    refused(
        tmp_path, audit_config(tmp_path, min_fpr=0.01), "min_fpr: 0.01 needs at least 100 non-members, the audit has 40"
    )


def test_requested_fpr_is_reported(tmp_path: Path, files: dict[str, Path]) -> None:
    code, output = run_cli(tmp_path, audit_config(tmp_path, min_fpr=0.025), tmp_path / "out")
    assert code == 0, output
    attack = json.loads((tmp_path / "out" / "results.json").read_text())["attacks"][0]
    assert set(attack["tpr_at_fpr"]) == {"0.001", "0.01", "0.025", "0.05"}
    assert "0.025" in attack["unreliable_fpr_levels"]  # 0.025 < 10/40: measurable, flagged


# --- configuration and attack requirements, refused before anything is trained -------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"references": 1, "attacks": [{"name": "mr-bmia", "references": 1}]},
            "attacks.0: mr-bmia: needs at least 2 reference model(s), got references=1",
        ),
        (
            {"references": 2, "attacks": [{"name": "bmia", "references": 2}]},
            "attacks.0: bmia: uses at most 1 reference model(s), got references=2",
        ),
        (
            {"mode": "online", "references": 2, "attacks": [{"name": "bmia", "references": 1}]},
            "attacks.0: bmia: runs in offline mode only",
        ),
        ({"nonmembers": None}, "nonmembers: give both members and nonmembers index files, or neither"),
        ({"queries": "q.npy"}, "queries: give either queries (membership unknown) or members and nonmembers"),
        ({"target": None}, "members: index files select records to audit for a model you trained"),
        ({"members": None, "nonmembers": None}, "members: to audit target.checkpoint, give members and nonmembers"),
        (
            {"target": {"architecture": "no_such_module:f", "checkpoint": "m.pt"}},
            "target.architecture: cannot import 'no_such_module:f'",
        ),
        (
            {"members": None, "nonmembers": None, "queries": "q.npy", "min_fpr": 0.1},
            "min_fpr: needs members and nonmembers",
        ),
    ],
)
def test_config_mistakes(
    tmp_path: Path, files: dict[str, Path], isolated_cache: Path, overrides: dict, message: str
) -> None:
    raw = {k: v for k, v in audit_config(tmp_path, **overrides).items() if v is not None}
    refused(tmp_path, raw, message)
    assert not (isolated_cache / "models").exists()  # nothing was trained


def test_attack_needing_validation_when_none_is_left(
    tmp_path: Path, files: dict[str, Path], isolated_cache: Path
) -> None:
    raw = audit_config(
        tmp_path, split={"population": 0.4, "validation": 0.0}, attacks=["qmia"], calibration="none"
    )  # with calibration on (the default), validation records would be held out of the population
    refused(tmp_path, raw, "attacks.0: qmia: needs validation inputs, which this run did not provide")


# --- the Python API: the same checks, raised as one-line ValueErrors -----------------------------


@pytest.fixture(scope="module")
def user() -> tuple[TinyNet, np.ndarray, np.ndarray]:
    x, y = tiny_data()
    return fitted_net(x[:40], y[:40]), x, y


def api_error(error: type[Exception], message: str, target: nn.Module, **kwargs) -> None:
    with pytest.raises(error) as info:
        miaudit.audit(target, **kwargs)
    assert message in str(info.value) and "\n" not in str(info.value)


def with_set(sets: dict, name: str, x: np.ndarray | None = None, y: np.ndarray | None = None) -> dict:
    old_x, old_y = sets[name]
    return {**sets, name: (old_x if x is None else x, old_y if y is None else y)}


@pytest.mark.slow
def test_api_nan_features(user) -> None:
    net, x, y = user
    xm = x[:40].copy()
    xm[3, 0] = np.inf
    api_error(
        DataError,
        "dataset members: x contains NaN or inf in 1 record(s)",
        net,
        **with_set(api_sets(x, y), "members", xm),
    )


@pytest.mark.slow
def test_api_labels_out_of_range(user) -> None:
    net, x, y = user
    yn = y[40:80].copy()
    yn[0] = N_CLASSES
    api_error(
        DataError,
        f"dataset nonmembers: labels must be in [0, {N_CLASSES}), found {N_CLASSES}",
        net,
        **with_set(api_sets(x, y), "nonmembers", y=yn),
    )


@pytest.mark.slow
def test_api_input_shape_mismatch(user) -> None:
    net, x, y = user
    api_error(
        ModelError,
        "target: forward pass fails on records of shape (5,) (RuntimeError: mat1 and mat2",
        net,
        **{k: (v[0][:, :5], v[1]) for k, v in api_sets(x, y).items()},
    )


@pytest.mark.slow
def test_api_sets_of_different_shapes(user) -> None:
    net, x, y = user
    wide = np.concatenate([x[80:], x[80:, :1]], axis=1)
    api_error(
        DataError,
        "population: records have shape (7,), members records (6,)",
        net,
        **with_set(api_sets(x, y), "population", wide),
    )


@pytest.mark.slow
def test_api_nan_logits(user) -> None:
    _, x, y = user

    class Unstable(TinyNet):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = super().forward(x)
            return torch.where(x[:, :1] > 2.0, torch.nan, out)  # blows up on large first features

    api_error(ModelError, "target: outputs NaN or inf logits on", Unstable(), **api_sets(x, y))


@pytest.mark.slow
def test_api_duplicate_rows(user) -> None:
    net, x, y = user
    xn, yn = x[40:80].copy(), y[40:80].copy()
    xn[7], yn[7] = x[12], y[12]
    api_error(
        DataError,
        "nonmembers: 1 record(s) duplicate members records (e.g. nonmembers record 7 = members record 12",
        net,
        **with_set(with_set(api_sets(x, y), "nonmembers", xn), "nonmembers", y=yn),
    )


@pytest.mark.slow
def test_api_too_few_nonmembers_for_min_fpr(user) -> None:
    net, x, y = user
    api_error(
        ConfigError,
        "min_fpr: 0.001 needs at least 1000 non-members, the audit has 40",
        net,
        min_fpr=0.001,
        **api_sets(x, y),
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"attacks": ["mr-bmia"], "references": 1},
            AttackRequirementError,
            "attacks.0: mr-bmia: needs at least 2 reference model(s)",
        ),
        (
            {"attacks": [{"name": "lira", "samples": 3}]},
            ConfigError,
            "attacks.0.samples: unknown key",
        ),
        (
            {"attacks": ["qmia"], "calibration": None},
            AttackRequirementError,
            "attacks.0: qmia: needs validation inputs",
        ),
        (
            {"train": {"epochs": 1}, "train_fn": lambda m, x, y: None},
            ConfigError,
            "train: settings of miaudit's training loop",
        ),
        (
            {"population": None, "attacks": ["attack-p"]},  # auto would run what can (GLS): name the attack
            AttackRequirementError,
            "attacks.0: attack-p: needs population inputs",
        ),
        (
            {"population": None, "attacks": ["attack-r"], "references": 2},
            DataError,
            "population: 0 record(s) cannot train 2 reference model(s)",
        ),
        ({"nonmembers": None}, DataError, "nonmembers: give members and nonmembers (membership known), or queries"),
        (
            {"queries": "set below"},
            DataError,
            "queries: give either queries (membership unknown) or members and nonmembers",
        ),
        ({"members": [1, 2, 3]}, DataError, "members: expected a pair (x, y) of arrays or tensors, or a torch Dataset"),
        ({"members": (np.zeros((0, N_FEATURES)), np.zeros(0))}, DataError, "members: no records"),
    ],
)
def test_api_argument_mistakes(user, kwargs: dict, error: type[Exception], message: str) -> None:
    net, x, y = user
    if kwargs.get("queries") == "set below":
        kwargs = {**kwargs, "queries": (x[:10], y[:10])}
    api_error(error, message, net, **{**api_sets(x, y), **kwargs})


@pytest.mark.slow
def test_api_model_without_last_layer_for_bmia(user) -> None:
    _, x, y = user
    plain = nn.Sequential(nn.Linear(N_FEATURES, 8), nn.ReLU(), nn.Linear(8, N_CLASSES))
    api_error(
        ModelError,
        "target: bmia needs a model with features(x) and head (nn.Linear with bias)",
        plain,
        attacks=["bmia"],
        **api_sets(x, y),
    )


@pytest.mark.slow
def test_api_single_logit_model(user) -> None:
    _, x, y = user
    api_error(
        ModelError,
        "target: returns 1 value(s) per record; miaudit needs logits for at least 2 classes",
        nn.Linear(N_FEATURES, 1),
        **api_sets(x, y),
    )


@pytest.mark.slow
def test_api_factory_with_other_class_count(user) -> None:
    net, x, y = user
    api_error(
        ModelError,
        "model_factory: builds models with 4 outputs, the target has 3",
        net,
        references=1,
        attacks=["attack-r"],  # an attack that uses the reference model, so one is built
        model_factory=lambda: TinyNet(n_classes=4),
        **api_sets(x, y),
    )


@pytest.mark.slow
def test_api_target_that_cannot_be_reinitialised(user) -> None:
    _, x, y = user

    class Scaled(TinyNet):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(()))  # a bare parameter: no reset_parameters knows it

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.scale * super().forward(x)

    api_error(
        ModelError,
        "model_factory: cannot re-initialise Scaled '' of the target",
        Scaled(),
        references=1,
        attacks=["attack-r"],
        **api_sets(x, y),
    )


# --- image folders -------------------------------------------------------------------------------


def test_image_folder_loads_classes_in_sorted_order(tmp_path: Path) -> None:
    for label, name in enumerate(["cat", "dog"]):
        (tmp_path / name).mkdir()
        for i in range(3):
            Image.fromarray(np.full((5, 4), 60 * label + 10 * i, dtype=np.uint8)).save(tmp_path / name / f"{i}.png")
    ds = load(path=tmp_path)
    assert ds.x.shape == (6, 1, 5, 4) and ds.y.tolist() == [0, 0, 0, 1, 1, 1]
    assert ds.x[4, 0, 0, 0] == pytest.approx(70 / 255)


def test_image_folder_with_mixed_sizes(tmp_path: Path) -> None:
    for name, size in (("a", (4, 4)), ("b", (4, 5))):
        (tmp_path / name).mkdir()
        Image.new("RGB", size).save(tmp_path / name / "0.png")
    with pytest.raises(DataError, match=r"dataset.path: image .*0.png is 4x5, .* is 4x4; resize all images"):
        load(path=tmp_path)
