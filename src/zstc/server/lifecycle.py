"""``zstc serve``'s lifecycle as Kubernetes runs a pod: the port opens at once, the model loads behind it, and a
SIGTERM drains instead of dropping connections.

:class:`Launcher` is the ASGI app uvicorn serves. Until the model is loaded and the app built (in a thread, so the
event loop answers meanwhile), ``GET /health`` (liveness) is 200, ``GET /health/ready`` and every other path a 503
naming the reason with Retry-After: a liveness probe does not kill a pod whose large model takes minutes to load.
Then it hands every request to the app :func:`zstc.server.app.create_app` built, and starts its batching engine.

On SIGTERM (:meth:`Launcher.begin_shutdown`): readiness turns 503 at once, so the endpoints controller takes the pod
out of its Service, while the listener keeps serving for ``--shutdown-delay`` seconds (the time the endpoint removal
takes to reach every proxy: the preStop window); every response then carries ``Connection: close``, so a client's
pooled keep-alive connection is closed cleanly after its next answer instead of failing on a closed socket. After the
delay uvicorn stops listening and requests in flight and queued finish within ``--drain-timeout``
(:class:`zstc.server.engine.BatchingEngine` refuses new work with a 503 meanwhile); the process then exits 0.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from zstc.server.statuses import send_error, send_json
from zstc.server.gate import access_logger, endpoint_of, origin_form, record
from zstc.server.telemetry import Telemetry

logger = logging.getLogger("zstc.server")

Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class Launcher:
    """The ASGI app of ``zstc serve``: answers health while ``build`` (which loads the model and returns the FastAPI
    app) runs in a thread, then delegates to the app it returned. ``model`` and ``family`` (the ones asked for: "unknown"
    when the family is detected as the model loads) name the model in the health answers meanwhile. What it answers
    itself (while the model loads; readiness once shutting down) is counted in :attr:`telemetry`, which ``build`` gives
    the app (:func:`zstc.server.app.create_app`), so that ``/metrics`` counts the 503s of the loading time."""

    def __init__(self, build: Callable[[], Any], model: str, family: str | None = None) -> None:
        self.build, self.model, self.family = build, model, family or "unknown"
        self.telemetry = Telemetry()
        self.app: Any = None
        self.failure: BaseException | None = None
        """Why ``build`` failed (the server then stops, and ``zstc serve`` reports it)."""
        self.shutting_down = False
        self.draining = False
        self.on_failure: Callable[[], None] = lambda: None
        """Called (from the event loop) when ``build`` failed: ``zstc serve`` stops the server."""
        self._loader: threading.Thread | None = None

    @property
    def loading(self) -> bool:
        """Whether the model is still loading (its thread in torch: the process must not finalise under it)."""
        return self._loader is not None and self._loader.is_alive()

    @property
    def engine(self) -> Any:
        """The app's batching engine, or None before the app is built."""
        return self.app.state.engine if self.app is not None else None

    def begin_shutdown(self) -> None:
        """SIGTERM: unready at once; responses close their connections. Work is still served until the drain."""
        self.shutting_down = True

    def begin_drain(self) -> None:
        """The end of the shutdown delay: the engine takes no new work (503); what is queued still runs."""
        self.shutting_down = self.draining = True
        if self.engine is not None:
            self.engine.begin_drain()

    # -- ASGI ---------------------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            if self.app is not None:
                await self.app(scope, receive, send)
            return
        if self.shutting_down:
            send = _closing(send)
        path = origin_form(scope)["path"]
        if self.app is not None and not (self.shutting_down and path == "/health/ready"):
            await self.app(scope, receive, send)
            return
        started, endpoint = time.perf_counter(), endpoint_of(path)
        self.telemetry.requests.labels(endpoint=endpoint).inc()
        if self.shutting_down and path == "/health/ready":
            status = 503
            await send_error(send, status, "unhealthy", "the server is shutting down")
        elif path == "/health":
            status = 200
            await send_json(send, status, {"status": "ok", "model": self.model, "family": self.family})
        else:
            status = 503
            reason = "the server is shutting down" if self.shutting_down else "the model is loading"
            await send_error(send, status, "unhealthy", reason, {"retry-after": "5"})
        record(self.telemetry, endpoint, status, time.perf_counter() - started)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        built = asyncio.Event()

        def load() -> None:
            try:
                app = self.build()
            except BaseException as error:  # noqa: BLE001  # reported by zstc serve once the server stopped
                self.failure = error
                loop.call_soon_threadsafe(self.on_failure)
                return

            def started() -> None:
                app.state.engine.start()
                self.app = app
                if self.shutting_down:  # a SIGTERM came while the model loaded
                    app.state.engine.begin_drain()
                built.set()

            loop.call_soon_threadsafe(started)

        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._loader = threading.Thread(target=load, name="zstc-model-loader", daemon=True)
                self._loader.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.app is not None:
                    await self.app.state.engine.stop()
                await send({"type": "lifespan.shutdown.complete"})
                return


def _closing(send: Send) -> Send:
    """``send`` with ``Connection: close`` on the response: the client's pool drops the connection after this answer."""

    async def closing(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
            message = {**message, "headers": [*headers, (b"connection", b"close")]}
        await send(message)

    return closing


class JsonLines(logging.Formatter):
    """A log record as one JSON object: time, level, message and the access record's fields."""

    FIELDS = ("method", "path", "status", "latency_ms", "request_id", "trace_id")

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update({name: getattr(record, name) for name in self.FIELDS if hasattr(record, name)})
        return json.dumps(line)


def json_access_log() -> None:
    """``zstc serve --log-format json``: each request (the access logger of :mod:`zstc.server.gate`) as a JSON line on stderr."""
    import sys

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    access_logger.addHandler(handler)
    access_logger.setLevel(logging.INFO)
    access_logger.propagate = False
