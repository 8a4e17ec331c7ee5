"""The endpoint client against real serving stacks on 127.0.0.1 (issue 49, item 12): KServe's Python model server
(Open Inference Protocol v2) in every output mode, and ``mlflow models serve`` with a model logged from a pandas
DataFrame (a column signature), each serving a scikit-learn MLP on digits (``_real_servers.py``).

They need the ``serving`` test extra (``pip install -e '.[serving]'``: kserve, mlflow), in this Python or in the
one ``MIAUDIT_SERVING_PYTHON`` names; without it they skip, saying so. ``_v2_server.py`` covers the faults on every
run without them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from miaudit.config.run import TargetConfig
from miaudit.endpoint import outputs
from miaudit.endpoint.client import EndpointClient, EndpointError

HERE = Path(__file__).resolve().parent


def serving_python() -> str | None:
    """A Python with kserve and mlflow: ``MIAUDIT_SERVING_PYTHON``, else this one when it has them."""
    named = os.environ.get("MIAUDIT_SERVING_PYTHON")
    candidates = [named] if named else [sys.executable]
    for python in candidates:
        ok = subprocess.run([python, "-c", "import kserve, mlflow"], capture_output=True, check=False)
        if ok.returncode == 0:
            return python
    return None


PYTHON = serving_python()
pytestmark = pytest.mark.skipif(
    PYTHON is None,
    reason="no serving stack: the 'serving' test extra (pip install -e '.[serving]': kserve, mlflow) is not "
    "installed here and MIAUDIT_SERVING_PYTHON names no Python that has it",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(proc: subprocess.Popen, url: str, seconds: float = 120) -> None:
    import requests

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited ({proc.returncode}): {proc.stdout.read() if proc.stdout else ''}")
        try:
            requests.get(url, timeout=1)
            return
        except requests.ConnectionError:
            time.sleep(0.5)
    raise RuntimeError(f"the server did not answer at {url} within {seconds} s")


def serve(command: list[str], url: str) -> Iterator[subprocess.Popen]:
    assert PYTHON is not None
    env = {**os.environ, "PATH": f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # its uvicorn
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)  # fmt: skip
    try:
        wait_until_up(proc, url)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def digits(n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    x, y = load_digits(return_X_y=True)
    return x[900 : 900 + n].astype(np.float32), y[900 : 900 + n]


def client(url: str, root: Path, **options: object) -> EndpointClient:
    return EndpointClient(TargetConfig(endpoint=url, architecture="mlp", **options), root, n_classes=10)  # type: ignore[arg-type]


@pytest.fixture(scope="module", params=["logits", "probabilities", "top-k", "label"])
def kserve_server(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    assert PYTHON is not None
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    command = [PYTHON, str(HERE / "_real_servers.py"), "kserve", request.param, str(port)]
    for _ in serve(command, f"{base}/v2/health/ready"):
        yield request.param, f"{base}/v2/models/digits/infer"


def test_kserve_answers_every_output_mode_and_a_rerun_spends_nothing(kserve_server, tmp_path: Path) -> None:
    output, url = kserve_server
    x, y = digits()
    options = {"output": output, **({"top_k": 3} if output == "top-k" else {})}
    first = client(url, tmp_path, batch_size=64, **options)
    rows = first.rows(x, "target")
    assert (first.usage.queries, first.usage.requests) == (300, 5)
    predicted = outputs.labels(rows, output)
    assert (predicted == y).mean() > 0.8  # the MLP's answers, decoded
    logits = outputs.logits(rows, output, 10)
    assert np.isfinite(logits).all() and (logits.argmax(1) == predicted).all()
    again = client(url, tmp_path, batch_size=64, **options)
    np.testing.assert_array_equal(again.rows(x, "target"), rows)
    assert (again.usage.queries, again.usage.from_store) == (0, 300)


def test_kserve_a_misdeclared_mode_and_a_wrong_shape_are_one_line(kserve_server, tmp_path: Path) -> None:
    output, url = kserve_server
    x, _ = digits(20)
    if output == "probabilities":  # declared logits: the first batch says what the answers look like
        with pytest.raises(EndpointError, match="look like probabilities"):
            client(url, tmp_path, output="logits", batch_size=8).rows(x, "target")
    if output == "logits":  # records of the wrong width: KServe's own reason, one line
        with pytest.raises(EndpointError) as e:
            client(url, tmp_path / "w", output="logits", retries=0).rows(x[:, :10], "target")
        assert "\n" not in str(e.value) and "reshape" in str(e.value), str(e.value)


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    assert PYTHON is not None
    where = tmp_path_factory.mktemp("mlflow") / "model"
    subprocess.run([PYTHON, str(HERE / "_real_servers.py"), "mlflow-log", str(where)], check=True,
                   capture_output=True)  # fmt: skip
    port = free_port()
    mlflow = str(Path(PYTHON).parent / "mlflow")
    command = [mlflow, "models", "serve", "-m", str(where), "--env-manager", "local", "-h", "127.0.0.1",
               "-p", str(port)]  # fmt: skip
    for _ in serve(command, f"http://127.0.0.1:{port}/ping"):
        yield f"http://127.0.0.1:{port}/invocations"


def test_mlflow_with_a_column_signature(mlflow_server: str, tmp_path: Path) -> None:
    x, y = digits()
    x = x / 16.0
    # without the columns the server refuses the tensor body: its reason is shown, not cut before the cause
    with pytest.raises(EndpointError) as e:
        client(mlflow_server, tmp_path / "a", protocol="mlflow", output="probabilities").rows(x, "target")
    assert "\n" not in str(e.value) and "px0" in str(e.value), str(e.value)
    columns = [f"px{i}" for i in range(64)]
    c = client(mlflow_server, tmp_path / "b", protocol="mlflow", output="probabilities", columns=columns)
    rows = c.rows(x, "target")
    assert rows.shape == (300, 10) and np.allclose(rows.sum(1), 1, atol=1e-5)
    assert (outputs.labels(rows, "probabilities") == y).mean() > 0.8
