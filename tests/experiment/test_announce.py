"""The start line: ``miaudit run``'s names the attacks it runs; within ``announce.dataset_inference`` (``miaudit
infer-dataset``, which runs none of the config's attacks) it says what the inference does with the models."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from miaudit import forecast
from miaudit.attack_plan import build, config_roles
from miaudit.config.run import RunConfig
from miaudit.experiment import announce
from miaudit.progress import log


@pytest.fixture
def lines() -> Iterator[list[str]]:
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    level = log.level
    log.setLevel(logging.INFO)
    log.addHandler(handler := Keep())
    try:
        yield said
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def _start(cfg: RunConfig, target_trains: bool = True) -> None:
    announce.start(cfg, build(cfg, config_roles(cfg)), forecast.audit_records(cfg), target_trains=target_trains)


def test_the_run_line_names_the_attacks(tiny_config: RunConfig, lines: list[str]) -> None:
    _start(tiny_config)
    assert lines == [
        "auditing digits, 300 records (60 members, 60 non-members queried): the target (mlp, 3 epochs) and 2 "
        "reference model(s) (mlp, miaudit's loop (sgd, 3 epochs, lr 0.05, batch 16, cosine)) to train or load from "
        "the cache; then 2 attack(s): attack-p, attack-r (n=2)"
    ]


def test_the_inference_line_says_what_infer_dataset_does(tiny_config: RunConfig, lines: list[str]) -> None:
    with announce.dataset_inference(30, 40):
        _start(tiny_config)
    _start(tiny_config)  # outside it, the run's line again
    assert lines[0] == (
        "dataset inference on digits: 30 suspect and 40 validation records; the target (mlp, 3 epochs) and 2 "
        "reference model(s) (mlp, miaudit's loop (sgd, 3 epochs, lr 0.05, batch 16, cosine)) to train or load from "
        "the cache; then per record the target's outputs and the offline attacks against the references, compared "
        "between the two sets"
    )
    assert "attack" not in lines[0].split("; then")[0] and lines[1].startswith("auditing digits, 300 records")
    no_refs = tiny_config.model_copy(update={"references": 0, "attacks": [{"name": "attack-p"}]})
    with announce.dataset_inference(5, 6):
        _start(no_refs)
    assert lines[2].endswith("records; the target (mlp, 3 epochs) to train or load from the cache; then per record "
                             "the target's outputs, compared between the two sets")  # fmt: skip
    with announce.dataset_inference(5, 6):  # the user's model (target:, an endpoint): only the references train
        _start(tiny_config, target_trains=False)
    assert lines[3].startswith("dataset inference on digits: 5 suspect and 6 validation records; your target as given; "
                               "2 reference model(s) (mlp, ")  # fmt: skip
