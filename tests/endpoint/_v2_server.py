"""A small Open Inference Protocol (v2) server for the tests, on the standard library (http.server).

Why not a real serving stack: KServe's Python model server, Seldon MLServer and MLflow each pull in a web
framework and dozens of packages (FastAPI, uvicorn, grpcio, ray or the MLflow tracking stack: hundreds of MB),
which the offline CI registry and its time budget do not carry for one test file. This server speaks the v2
REST inference request and response (JSON tensors, ``outputs`` with name, datatype, shape, data) as those
servers do, on 127.0.0.1 only, and injects the faults a client must survive: answers scripted per request
(500, 429 with Retry-After, a delay past the client's timeout, malformed JSON, a wrong shape, the server
going away).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

Model = Callable[[np.ndarray], np.ndarray]  # (n, d) float32 -> (n, C) logits


class V2Server:
    """Serves ``model`` at http://127.0.0.1:PORT/v2/models/NAME/infer; ``faults`` lists what the next
    requests get instead of an answer ("500", "429", "slow", "garbage", "shape", "die"), one per request."""

    def __init__(self, model: Model, name: str = "m", output: str = "logits", port: int = 0):
        self.model, self.name, self.output = model, name, output
        self.faults: list[str] = []
        self.rows = 0
        self.requests = 0
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v2/models/{self.name}/infer"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, x: np.ndarray) -> dict:
        z = self.model(x)
        if self.output == "label":
            out = {"name": "label", "datatype": "INT64", "shape": [len(x)], "data": z.argmax(1).tolist()}
        elif self.output == "probabilities":
            p = np.exp(z - z.max(1, keepdims=True))
            p = (p / p.sum(1, keepdims=True)).astype(np.float32)
            out = {"name": "probabilities", "datatype": "FP32", "shape": list(p.shape), "data": p.ravel().tolist()}
        else:
            z = z.astype(np.float32)
            out = {"name": "logits", "datatype": "FP32", "shape": list(z.shape), "data": z.ravel().tolist()}
        return {"model_name": self.name, "outputs": [out]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with srv.lock:
                    srv.requests += 1
                    srv.headers.append(dict(self.headers))
                    fault = srv.faults.pop(0) if srv.faults else None
                if fault == "500":
                    return self.send(500, b'{"error": "internal"}')
                if fault == "429":
                    return self.send(429, b'{"error": "slow down"}', {"Retry-After": "0.2"})
                if fault == "garbage":
                    return self.send(200, b'{"outputs": [')
                if fault == "die":
                    srv.server.shutdown_request(self.request)  # the connection closes unanswered
                    threading.Thread(target=srv.stop, daemon=True).start()
                    return None
                if fault == "slow":
                    time.sleep(1.5)
                inp = json.loads(raw)["inputs"][0]
                x = np.asarray(inp["data"], dtype=np.float32).reshape(inp["shape"])
                body = srv.answer(x)
                if fault == "shape":
                    body["outputs"][0]["data"] = body["outputs"][0]["data"][:-1]
                    body["outputs"][0]["shape"] = [len(body["outputs"][0]["data"])]
                with srv.lock:
                    srv.rows += len(x)
                return self.send(200, json.dumps(body).encode())

        return Handler
