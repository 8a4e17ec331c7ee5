"""The wire formats: v2 and MLflow bodies and answers, and a user's adapter."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest

from miaudit.endpoint.protocols import V2, MalformedAnswer, MLflow, wire_format
from miaudit.errors import ConfigError


def test_v2_body_and_answer():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    body = V2().body(x)
    assert body["inputs"][0] == {"name": "input", "shape": [2, 3], "datatype": "FP32", "data": [0, 1, 2, 3, 4, 5]}
    answer = {"outputs": [{"name": "label", "datatype": "INT64", "shape": [2], "data": [1, 0]}]}
    (labels,) = V2().parse(answer, 2)
    assert labels.dtype == np.int64 and labels.tolist() == [1, 0]


@pytest.mark.parametrize("payload", [{"outputs": []}, [1, 2], {"outputs": [{"datatype": "FP32", "shape": [3]}]}])
def test_v2_answers_that_do_not_decode(payload):
    with pytest.raises(MalformedAnswer):
        V2().parse(payload, 2)


def test_mlflow_body_and_answers():
    x = np.ones((2, 2, 2), dtype=np.float32)
    assert MLflow().body(x) == {"inputs": [[1.0] * 4, [1.0] * 4]}
    (p,) = MLflow().parse({"predictions": [[0.2, 0.8], [0.9, 0.1]]}, 2)
    assert p.shape == (2, 2)
    classes, probs = MLflow().parse({"predictions": {"classes": [[1], [0]], "probabilities": [[0.8], [0.9]]}}, 2)
    assert classes.tolist() == [[1], [0]] and probs.shape == (2, 1)
    with pytest.raises(MalformedAnswer, match="predictions"):
        MLflow().parse({"result": []}, 2)


def test_an_adapter_is_a_class_with_body_and_parse(monkeypatch):
    module = types.ModuleType("my_api")

    class Api:
        def body(self, x):
            return {"rows": x.tolist()}

        def parse(self, payload, n):
            return [np.asarray(payload["scores"])]

    class NotOne:
        pass

    module.Api, module.NotOne = Api, NotOne  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "my_api", module)
    assert isinstance(wire_format("v2", "my_api:Api"), Api)
    with pytest.raises(ConfigError, match="has no body"):
        wire_format("v2", "my_api:NotOne")


def test_mlflow_dataframe_split_bodies_and_records_answers() -> None:  # issue 49, item 6

    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert MLflow().body(x) == {"inputs": [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]}
    split = MLflow(["px0", "px1"]).body(x)
    assert split == {"dataframe_split": {"columns": ["px0", "px1"], "data": [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]}}
    with pytest.raises(ConfigError, match="2 column names for records of 3 features"):
        MLflow(["a", "b"]).body(np.zeros((1, 3)))
    records = {"predictions": [{"0": 0.1, "1": 0.9}, {"0": 0.7, "1": 0.3}]}  # a DataFrame answer, orient=records
    got = MLflow().parse(records, 2)
    np.testing.assert_array_equal(np.stack(got, axis=1), [[0.1, 0.9], [0.7, 0.3]])
    with pytest.raises(MalformedAnswer):
        MLflow().parse({"no": 1}, 2)


def test_the_servers_reason_is_shown_not_cut_before_its_cause() -> None:  # issue 49, item 6
    from miaudit.endpoint.client import REASON_CHARS, server_reason

    cause = "Model is missing inputs ['px0', 'px1', 'px2']. Note that there were extra inputs: ['0', '1']"
    mlflow = json.dumps({"error_code": "BAD_REQUEST", "message": f"Failed to enforce schema of data. {cause}",
                         "stack_trace": "Traceback (most recent call last):\n" + "  File x\n" * 300})  # fmt: skip
    assert len(mlflow) > 3000 and cause in server_reason(mlflow) and "Traceback" not in server_reason(mlflow)
    assert (
        server_reason('{"error": "predict failed: shapes (2,5) and (3,)"}') == "predict failed: shapes (2,5) and (3,)"
    )
    assert server_reason("plain\ntext") == "plain text" and len(server_reason("x" * 5000)) == REASON_CHARS
