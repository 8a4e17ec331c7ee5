"""A minimal Open Inference Protocol (v2) server for trying an endpoint audit on your own machine.

``V2Server(model)`` serves any function from records (n, d) to logits (n, C), a torch module included
(``module_fn``), at ``http://127.0.0.1:PORT/v2/models/NAME/infer`` in a background thread, answering what an
``output`` mode answers (logits, probabilities, top-k, label). It is for examples and tests (docs/endpoint.md):
the standard library's ``http.server``, one process, loopback only; serve a real model with KServe, Triton,
MLServer or ``mlflow models serve``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch.nn as nn

Model = Callable[[np.ndarray], np.ndarray]  # (n, ...) float32 records -> (n, C) logits
Reply = tuple[int, bytes, dict[str, str]] | None  # status, body, extra headers; None: close unanswered


def module_fn(module: nn.Module) -> Model:
    """A torch module as a ``Model`` (eval mode, no gradients)."""
    import torch

    module.eval()

    def logits(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return module(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).numpy()

    return logits


class V2Server:
    """``model`` served on 127.0.0.1 (``port`` 0: a free one) until ``stop()``; counts requests and rows."""

    def __init__(self, model: Model, name: str = "model", output: str = "logits", port: int = 0, top_k: int = 1):
        self.model, self.name, self.output, self.top_k = model, name, output, top_k
        self.rows = 0
        self.requests = 0
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v2/models/{self.name}/infer"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def respond(self, raw: bytes) -> Reply:
        """The reply to one inference request's body."""
        try:
            inp = json.loads(raw)["inputs"][0]
            x = np.asarray(inp["data"], dtype=np.float32).reshape(inp["shape"])
        except (ValueError, KeyError, IndexError, TypeError) as e:
            return 400, json.dumps({"error": f"bad request: {e}"}).encode(), {}
        body = self.answer(x)
        with self.lock:
            self.rows += len(x)
        return 200, json.dumps(body).encode(), {}

    def answer(self, x: np.ndarray) -> dict:
        """The v2 response body for records x."""
        z = np.asarray(self.model(x), dtype=np.float64)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        if self.output == "label":
            outs = [_tensor("label", "INT64", z.argmax(axis=1))]
        elif self.output == "probabilities":
            outs = [_tensor("probabilities", "FP32", p)]
        elif self.output == "top-k":
            top = np.argsort(-p, axis=1)[:, : self.top_k]
            outs = [_tensor("classes", "INT64", top), _tensor("probabilities", "FP32", np.take_along_axis(p, top, 1))]
        else:
            outs = [_tensor("logits", "FP32", z)]
        return {"model_name": self.name, "outputs": outs}


def _tensor(name: str, datatype: str, a: np.ndarray) -> dict:
    a = a.astype(np.float32 if datatype == "FP32" else np.int64)
    return {"name": name, "datatype": datatype, "shape": list(a.shape), "data": a.ravel().tolist()}


def _handler(srv: V2Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # quiet: the audit's own lines matter
            pass

        def do_GET(self) -> None:  # health and readiness
            self._send(200, b'{"ready": true}', {})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with srv.lock:
                srv.requests += 1
                srv.headers.append(dict(self.headers))
            reply = srv.respond(raw)
            if reply is None:
                self.close_connection = True
                return
            self._send(*reply)

        def _send(self, code: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

    return Handler
