"""The wire formats: a request body for a batch of records, and the arrays in the answer.

``v2`` is the Open Inference Protocol (KServe, Triton, Seldon MLServer, TorchServe): one FP32 input tensor,
every output tensor decoded by its ``datatype`` and ``shape``. ``mlflow`` is ``mlflow models serve``'s
``/invocations`` (``{"inputs": ...}`` in, ``{"predictions": ...}`` out). Anything else: an adapter object
named ``package.module:object`` with the same two methods.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import numpy as np

from ..errors import ConfigError

V2_DTYPES = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}


class MalformedAnswer(ValueError):
    """An answer that does not decode (the parser's reason, one line)."""


class WireFormat(Protocol):
    def body(self, x: np.ndarray) -> dict[str, object]:
        """The JSON request for the records ``x`` (n, ...)."""
        ...

    def parse(self, payload: object, n: int) -> list[np.ndarray]:
        """The answer's arrays, each with n rows first (raise ``MalformedAnswer`` otherwise)."""
        ...


class V2:
    """Open Inference Protocol v2 (REST): https://kserve.github.io/website/latest/modelserving/data_plane/v2_protocol/"""

    def body(self, x: np.ndarray) -> dict[str, object]:
        flat = np.ascontiguousarray(x, dtype=np.float32)
        return {
            "inputs": [{"name": "input", "shape": list(flat.shape), "datatype": "FP32", "data": flat.ravel().tolist()}]
        }

    def parse(self, payload: object, n: int) -> list[np.ndarray]:
        if not isinstance(payload, dict) or not isinstance(payload.get("outputs"), list) or not payload["outputs"]:
            raise MalformedAnswer("a v2 answer is an object with a non-empty list 'outputs'")
        arrays = []
        for out in payload["outputs"]:
            try:
                dtype = V2_DTYPES[str(out.get("datatype", "FP32")).upper()]
                data: np.ndarray = np.asarray(out["data"], dtype=dtype)
                shape = [int(s) for s in out.get("shape", data.shape)]
                arrays.append(data.reshape(shape))
            except (KeyError, TypeError, ValueError) as e:
                raise MalformedAnswer(f"output {out.get('name', '?')!r}: {e}") from None
        return arrays


class MLflow:
    """``mlflow models serve``: POST /invocations with ``{"inputs": [[...], ...]}`` (a tensor signature), or with
    ``columns`` (a model logged from a pandas DataFrame) ``{"dataframe_split": {"columns": [...], "data": [...]}}``.
    Answers: ``{"predictions": ...}`` as a list of rows, a dict of columns (pandas orient=list), or a list of
    records (pandas orient=records, one object per row, as a DataFrame-returning model answers)."""

    def __init__(self, columns: list[str] | None = None):
        self.columns = columns

    def body(self, x: np.ndarray) -> dict[str, object]:
        rows = np.asarray(x, dtype=np.float32).reshape(len(x), -1)
        if self.columns is None:
            return {"inputs": rows.tolist()}
        if rows.shape[1] != len(self.columns):
            raise ConfigError(
                f"target.columns: {len(self.columns)} column names for records of {rows.shape[1]} features"
            )
        return {"dataframe_split": {"columns": list(self.columns), "data": rows.tolist()}}

    def parse(self, payload: object, n: int) -> list[np.ndarray]:
        predictions = payload.get("predictions") if isinstance(payload, dict) else payload
        if predictions is None:
            raise MalformedAnswer("an mlflow answer is an object with 'predictions'")
        try:
            if isinstance(predictions, dict):  # columns by name (pandas orient=list)
                return [np.asarray(v) for v in predictions.values()]
            if isinstance(predictions, list) and predictions and all(isinstance(r, dict) for r in predictions):
                keys = list(predictions[0])  # records (pandas orient=records): one object per row
                return [np.asarray([r.get(k) for r in predictions]) for k in keys]
            return [np.asarray(predictions)]
        except ValueError as e:
            raise MalformedAnswer(f"predictions: {e}") from None


def wire_format(protocol: str, adapter: str | None, columns: list[str] | None = None) -> WireFormat:
    """The protocol's wire format, or the adapter the config names (a class, imported and built now: a typo
    fails before any query)."""
    if adapter is not None:
        from ..models import io

        obj: Any = io.import_factory(adapter)()
        if not (callable(getattr(obj, "body", None)) and callable(getattr(obj, "parse", None))):
            raise ConfigError(f"target.adapter: {adapter} has no body(x) and parse(payload, n) methods")
        return cast(WireFormat, obj)
    return V2() if protocol == "v2" else MLflow(columns)
