"""The tests' v2 server: ``miaudit.endpoint.serve.V2Server`` with faults scripted per request.

Beside it, ``test_real_servers.py`` runs KServe's Python model server and ``mlflow models serve`` where the
``serving`` test extra is installed (they pull in a web framework and dozens of packages: FastAPI, uvicorn, grpcio,
MLflow's stack, hundreds of MB), and skips saying so where it is not; this one runs on every suite. The server
speaks the v2 REST inference request and response (JSON tensors; ``outputs`` with name, datatype, shape, data) as
they do, on 127.0.0.1 only; ``/work/shared/checks/endpoint`` runs its own, independent one.
"""

from __future__ import annotations

import json
import threading
import time

from miaudit.endpoint.serve import Reply, V2Server


class FaultyServer(V2Server):
    """``faults`` lists what the next requests get instead of an answer, one per request: "ok", "500", "429"
    (Retry-After: 0.2), "slow" (1.5 s, then the answer), "garbage" (not JSON), "shape" (a value short), "die"
    (the connection closes unanswered and the server stops)."""

    faults: list[str]

    def respond(self, raw: bytes) -> Reply:
        with self.lock:
            fault = self.faults.pop(0) if getattr(self, "faults", None) else None
        if fault == "500":
            return 500, b'{"error": "internal"}', {}
        if fault == "429":
            return 429, b'{"error": "slow down"}', {"Retry-After": "0.2"}
        if fault == "garbage":
            return 200, b'{"outputs": [', {}
        if fault == "die":
            threading.Thread(target=self.stop, daemon=True).start()
            return None
        if fault == "slow":
            time.sleep(1.5)
        reply = super().respond(raw)
        if fault == "shape" and reply is not None:
            body = json.loads(reply[1])
            out = body["outputs"][0]
            out["data"] = out["data"][:-1]
            out["shape"] = [len(out["data"])]
            return 200, json.dumps(body).encode(), {}
        return reply
