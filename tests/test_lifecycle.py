"""``zstc serve``'s lifecycle as Kubernetes runs a pod (:mod:`zstc.server.lifecycle`), with real sockets on
127.0.0.1: the port opens before the model loads, liveness answers from then on and readiness once warm; a SIGTERM
turns readiness off at once, the listener serves on for --shutdown-delay with ``Connection: close``, and the process
exits 0 after the drain. One server process for the whole file (it loads MiniLM once)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

REPO = Path(__file__).resolve().parents[1]
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
DELAY = 6.0
"""--shutdown-delay of the server under test: long enough to see it serve on, short enough to keep the test cheap."""


def _absolute_form(port: int, path: str) -> tuple[str, Any]:
    """``GET http://127.0.0.1:PORT{path}`` (a request target in absolute form, as proxies send it) on a raw socket:
    the status line and the JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(
            f"GET http://127.0.0.1:{port}{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while chunk := raw.recv(65536):
            data += chunk
    head, _, body = data.decode().partition("\r\n\r\n")
    return head.splitlines()[0], json.loads(body)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(connection: http.client.HTTPConnection, path: str) -> tuple[int, dict[str, str], Any]:
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(body) if body else None


class Poller(threading.Thread):
    """Polls ``GET /health`` on fresh connections every 50 ms from the moment the port opened, recording
    (time, status or the connection error)."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port, self.stop, self.seen = port, threading.Event(), []  # type: list[tuple[float, Any]]

    def run(self) -> None:
        while not self.stop.is_set():
            connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                self.seen.append((time.monotonic(), _get(connection, "/health")[0]))
            except OSError as error:
                self.seen.append((time.monotonic(), error))
            finally:
                connection.close()
            time.sleep(0.05)


def test_port_opens_at_once_then_ready_then_sigterm_serves_through_the_delay_and_exits_0(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "zstc",
                "serve",
                "--model",
                MINILM,
                "--port",
                str(port),
                "--precision",
                "fp32",
                "--shutdown-delay",
                str(DELAY),
                "--drain-timeout",
                "5",
                "--log-format",
                "json",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    poller = Poller(port)
    try:
        # The port opens before the model loads: the first answer of /health/ready is the loading 503.
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, log_path.read_text()[-2000:]
            try:
                first = _get(http.client.HTTPConnection("127.0.0.1", port, timeout=10), "/health/ready")
                break
            except OSError:
                assert time.monotonic() < deadline, "the port did not open"
                time.sleep(0.05)
        assert first[0] == 503 and first[2] == {"error": "the model is loading", "error_type": "unhealthy"}, first
        poller.start()
        probe = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        assert _get(probe, "/health")[0] == 200  # liveness while loading
        work = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        work.request(
            "POST",
            "/classify",
            body=json.dumps({"texts": ["x"], "labels": ["a", "b"]}),
            headers={"Content-Type": "application/json"},
        )
        loading = work.getresponse()
        assert loading.status == 503 and loading.getheader("retry-after") == "5"
        loading.read()
        work.close()
        # An absolute-form target names the path (it was a 404), while loading and after.
        assert _absolute_form(port, "/health")[0] == "HTTP/1.1 200 OK"
        deadline = time.monotonic() + 900
        while _get(probe, "/health/ready")[0] != 200:
            assert server.poll() is None and time.monotonic() < deadline, log_path.read_text()[-2000:]
            time.sleep(0.2)
        status_line, ready = _absolute_form(port, "/health/ready")
        assert status_line == "HTTP/1.1 200 OK" and ready["status"] == "ready", ready
        # /metrics counts what was answered while the model loaded, with its reason (it counted nothing then).
        metrics = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        metrics.request("GET", "/metrics")
        counted = metrics.getresponse().read().decode()
        assert 'zstc_request_failures_total{endpoint="/classify",reason="unhealthy"} 1.0' in counted, counted
        assert 'zstc_request_failures_total{endpoint="/health/ready",reason="unhealthy"}' in counted
        idle = http.client.HTTPConnection("127.0.0.1", port, timeout=10)  # a pooled keep-alive connection, left idle
        assert "connection" not in _get(idle, "/health")[1]

        server.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        time.sleep(0.3)
        status, headers, body = _get(http.client.HTTPConnection("127.0.0.1", port, timeout=10), "/health/ready")
        assert status == 503 and body["error"] == "the server is shutting down" and headers["connection"] == "close"
        # The idle pooled connection still answers, once, and is told to close.
        status, headers, _ = _get(idle, "/health")
        assert status == 200 and headers["connection"] == "close"
        # Work sent within the delay (a proxy may not have dropped the pod yet) is answered, closing its connection.
        answer = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        answer.request(
            "POST",
            "/classify",
            body=json.dumps({"texts": ["a cat"], "labels": ["animal", "car"]}),
            headers={
                "Content-Type": "application/json",
                "X-Request-ID": "lifecycle-1",
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            },
        )
        assert time.monotonic() - signalled < DELAY, "the checks above took longer than the delay: raise DELAY"
        response = answer.getresponse()
        assert response.status == 200 and response.getheader("connection") == "close"
        assert json.loads(response.read())["results"][0]["label"] == "animal"

        assert server.wait(timeout=60) == 0, log_path.read_text()[-2000:]
        poller.stop.set()
        poller.join(15)
        errors = [(at - signalled, seen) for at, seen in poller.seen if not isinstance(seen, int)]
        answered = [(at - signalled, seen) for at, seen in poller.seen if isinstance(seen, int)]
        assert answered and all(status == 200 for _, status in answered), answered
        # No connection error before the delay ended (the listener closes then); the polls saw both sides of it.
        assert all(after >= DELAY for after, _ in errors), errors[:3]
        assert any(after > DELAY - 1 for after, _ in answered)
        text = log_path.read_text()
        assert "Finished server process" in text and "Traceback" not in text, text[-3000:]
        # --log-format json: one JSON line per request, with its id, the trace id, status and latency.
        records = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        work = next(record for record in records if record.get("request_id") == "lifecycle-1")
        assert work["status"] == 200 and work["path"] == "/classify" and work["latency_ms"] > 0
        assert work["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    finally:
        poller.stop.set()
        if server.poll() is None:
            server.kill()


def test_shutdown_delay_is_a_checked_setting() -> None:
    from zstc.errors import OptionError
    from zstc.server.settings import ServeSettings

    assert ServeSettings().shutdown_delay == 0.0  # without the flag a SIGTERM drains at once, as before
    with pytest.raises(OptionError, match="shutdown_delay must be >= 0, got -1"):
        ServeSettings(shutdown_delay=-1)
