"""The endpoint client against a live v2 server on 127.0.0.1 (``_v2_server``): answers, the store, and every
fault it must survive (retried, or one line naming the endpoint, with nothing already fetched lost)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _v2_server import FaultyServer as V2Server

from miaudit.config.run import TargetConfig
from miaudit.endpoint import outputs
from miaudit.endpoint.client import EndpointClient, EndpointError

pytestmark = pytest.mark.slow  # a server per test, half a second to stop each

W = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)


def linear(x: np.ndarray) -> np.ndarray:
    return x @ W


@pytest.fixture
def server():
    srv = V2Server(linear)
    yield srv
    srv.stop()


def client(url: str, root: Path, **options) -> EndpointClient:
    spec = TargetConfig(endpoint=url, architecture="mlp", backoff=0.01, timeout=1.0, **options)
    return EndpointClient(spec, root, n_classes=3)


def records(n: int = 10, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, 5)).astype(np.float32)


def test_logits_come_back_and_a_second_ask_spends_no_query(server, tmp_path):
    x = records()
    first = client(server.url, tmp_path, batch_size=4)
    got = first.rows(x, "target")
    np.testing.assert_array_equal(got, linear(x).astype(np.float32).astype(np.float64))
    assert (first.usage.queries, first.usage.requests, server.rows) == (10, 3, 10)
    again = client(server.url, tmp_path, batch_size=4)  # a rerun: a new client on the same store
    np.testing.assert_array_equal(again.rows(x, "target"), got)
    assert (again.usage.queries, again.usage.from_store, server.rows) == (0, 10, 10)


def test_identical_records_are_asked_once(server, tmp_path):
    x = np.repeat(records(2), 3, axis=0)
    c = client(server.url, tmp_path)
    got = c.rows(x, "target")
    assert c.usage.queries == 2 and server.rows == 2
    np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize("fault", ["500", "429", "slow", "garbage"])
def test_transient_faults_are_retried(server, tmp_path, fault):
    server.faults = [fault, fault]
    c = client(server.url, tmp_path)
    got = c.rows(records(), "target")
    np.testing.assert_allclose(got, linear(records()), rtol=1e-6)
    assert c.usage.retries == 2 and c.usage.requests == 3


def test_retry_after_is_honoured(server, tmp_path):
    import time

    server.faults = ["429"]
    c = client(server.url, tmp_path)
    start = time.monotonic()
    c.rows(records(), "target")
    assert time.monotonic() - start >= 0.2  # the server's Retry-After: 0.2, not the 0.01 s backoff


def test_too_many_faults_give_one_line_and_keep_what_was_fetched(server, tmp_path):
    x = records(8)
    server.faults = ["ok", "500", "500", "500"]  # the first batch answered, then the server fails for good
    c = client(server.url, tmp_path, batch_size=4, retries=2)
    with pytest.raises(EndpointError) as e:
        c.rows(x, "target")
    msg = str(e.value)
    assert "\n" not in msg and server.url.rsplit("/", 1)[0] in msg and "server error 500" in msg
    assert "server error 500 (internal)" in msg  # the server's reason, as for a 4xx (issue 49, 11b)
    resumed = client(server.url, tmp_path, batch_size=4)
    resumed.rows(x, "target")
    assert resumed.usage.from_store == 4 and resumed.usage.queries == 4


def test_a_wrong_shape_is_one_line_and_not_retried(server, tmp_path):
    server.faults = ["shape"]
    c = client(server.url, tmp_path)
    with pytest.raises(EndpointError, match=r"does not fit output: logits .*expected 10 x 3 values"):
        c.rows(records(), "target")
    assert c.usage.requests == 1


def test_a_server_down_at_the_start_is_one_line(tmp_path):
    srv = V2Server(linear)
    url = srv.url
    srv.stop()
    c = client(url, tmp_path, retries=1)
    with pytest.raises(EndpointError, match=r"cannot connect .*tried 2 times"):
        c.rows(records(), "target")


def test_a_server_gone_mid_run_keeps_the_answers_and_the_rerun_resumes(tmp_path):
    srv = V2Server(linear)
    port = srv.port
    x = records(12)
    srv.faults = ["ok", "ok", "die"]
    c = client(srv.url, tmp_path, batch_size=4, retries=1)
    with pytest.raises(EndpointError, match="rerun to resume"):
        c.rows(x, "target")
    back = V2Server(linear, port=port)  # the server back on the same port
    try:
        resumed = client(back.url, tmp_path, batch_size=4)
        got = resumed.rows(x, "target")
        assert resumed.usage.from_store == 8 and back.rows == 4
        np.testing.assert_allclose(got, linear(x), rtol=1e-6)
    finally:
        back.stop()


def test_credentials_are_sent_from_the_environment_and_kept_nowhere(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_TOKEN", "s3cret-token")
    c = client(server.url, tmp_path, credentials_env="MY_TOKEN")
    c.rows(records(), "target")
    assert server.headers[-1]["Authorization"] == "Bearer s3cret-token"
    kept = [f for f in (tmp_path / "endpoint").rglob("*") if f.is_file()]  # the answers' entries in the store
    assert kept and not any(b"s3cret" in f.read_bytes() or "s3cret" in str(f) for f in kept)
    assert c.store.endpoint.isalnum()


def test_a_missing_credential_is_refused_before_any_query(server, tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    with pytest.raises(ValueError, match="NO_SUCH_TOKEN is not set"):
        client(server.url, tmp_path, credentials_env="NO_SUCH_TOKEN")
    assert server.requests == 0


def test_label_and_probability_answers(tmp_path):
    x = records()
    for output in ("label", "probabilities"):
        srv = V2Server(linear, output=output)
        try:
            c = client(srv.url, tmp_path / output, output=output)
            stored = c.rows(x, "target")
            np.testing.assert_array_equal(outputs.labels(stored, output), linear(x).argmax(1))
        finally:
            srv.stop()


def test_rate_limit_spaces_requests(server, tmp_path):
    import time

    c = client(server.url, tmp_path, batch_size=2, rate_limit=20.0)
    start = time.monotonic()
    c.rows(records(8), "target")
    assert time.monotonic() - start >= 3 / 20.0  # four requests, at least 1/20 s apart


@pytest.mark.parametrize(("served", "declared", "said"), [("probabilities", "logits", "look like probabilities"),
                                                          ("logits", "probabilities", "do not sum to 1")])  # fmt: skip
def test_a_misdeclared_output_mode_stops_after_the_first_batch(tmp_path, served, declared, said):
    """Issue 49, item 5: answers that look like another mode are said after the first batch, before the rest of
    the queries are spent, and nothing is stored under the wrong mode."""
    srv = V2Server(lambda x: 1 / (1 + np.exp(-linear(x))), output=served)  # logits in (0, 1), not summing to 1
    try:
        c = client(srv.url, tmp_path, output=declared, batch_size=4)
        with pytest.raises(EndpointError) as e:
            c.rows(records(12), "target")
        assert said in str(e.value) and f"output: {declared}" in str(e.value) and "\n" not in str(e.value)
        assert (srv.rows, c.usage.queries) == (4, 0)
        right = client(srv.url, tmp_path, output=served, batch_size=4)
        assert right.rows(records(12), "target").shape == (12, 3)  # declared right: every batch answered
    finally:
        srv.stop()


def test_misdeclared_by_hand() -> None:
    probs = np.array([[0.2, 0.8], [0.5, 0.5], [1.0, 0.0]])
    assert outputs.misdeclared(probs, "logits") is not None and outputs.misdeclared(probs, "probabilities") is None
    logits = np.array([[0.2, 0.3], [0.5, 0.1]])  # in [0, 1] but not summing to 1: plausible logits
    assert outputs.misdeclared(logits, "logits") is None and outputs.misdeclared(logits, "probabilities") is not None
    assert outputs.misdeclared(probs[:1], "logits") is None  # one record says too little


def test_top_k_beyond_the_classes_is_refused_before_any_query(server, tmp_path):  # issue 49, 11b
    from miaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="target.top_k: 5 exceeds the data's 3 classes"):
        client(server.url, tmp_path, output="top-k", top_k=5)
    assert server.rows == 0


def test_top_k_without_output_top_k_is_refused() -> None:  # issue 49, 11b: it was silently ignored
    with pytest.raises(ValueError, match="top_k: applies to output: top-k, not output: logits"):
        TargetConfig(endpoint="http://127.0.0.1:9/x", architecture="mlp", output="logits", top_k=3)


def test_an_interrupt_says_how_many_answers_were_kept(monkeypatch, server, tmp_path):  # issue 49, 11b
    from miaudit import progress

    monkeypatch.setitem(progress.SESSION, "answers", 0)
    client(server.url, tmp_path, batch_size=4).rows(records(10), "target")
    said = progress.interrupted(None, "out")
    assert "10 endpoint answer(s) received by this run are kept in the answer store" in said
