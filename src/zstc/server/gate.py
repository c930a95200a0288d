"""The gate in front of the service's routes: counts each request, checks the API key, the model's availability and the
body's size and encoding before FastAPI reads a byte, names each request (``X-Request-ID``) and logs it.

A request target in absolute form (``GET http://host/health HTTP/1.1``, which HTTP/1.1 servers must accept, RFC 9112
3.2.2) is answered as the path it names.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from zstc.errors import DataError, quoted
from zstc.io import check_distinct_keys
from zstc.server.engine import BatchingEngine
from zstc.server.statuses import REASONS, REQUEST_ID, send_error
from zstc.server.settings import ServeSettings
from zstc.server.telemetry import Telemetry

logger = logging.getLogger("zstc.server")
access_logger = logger.getChild("access")
"""One record per request with its id, status and latency (``extra`` fields, logged by :class:`Gate`; ``zstc serve
--log-format json`` writes them as JSON lines)."""

_ACCEPTED_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")
"""A client's ``X-Request-ID`` kept as it is (a UUID, a hex trace id, a proxy's id); any other gets a new one."""
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")


def request_ids(headers: Sequence[tuple[bytes, bytes]]) -> tuple[str, str | None]:
    """The request's id (the client's ``X-Request-ID`` when it is a plain token, else a new UUID) and the W3C
    ``traceparent`` header's trace id, if one is given."""
    given = trace = None
    for key, value in headers:
        name = key.lower()
        if name == b"x-request-id":
            given = value.decode("latin-1").strip()
        elif name == b"traceparent":
            match = _TRACEPARENT.fullmatch(value.decode("latin-1").strip().lower())
            trace = match.group(1) if match else None
    return (given if given and _ACCEPTED_ID.fullmatch(given) else uuid.uuid4().hex), trace


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

WORK_PATHS = frozenset({"/classify", "/", "/rerank", "/v1/rerank", "/v2/rerank"})
"""POST endpoints that queue model work."""
DOCS_ASSETS = "/static-offline-docs"
"""Where Swagger UI's and ReDoc's scripts and styles are served from (fastapi-offline's package: /docs needs no network)."""
OPEN_PATHS = frozenset(
    {"/health", "/health/ready", "/metrics", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", DOCS_ASSETS}
)
ALWAYS_OPEN = frozenset({"/health", "/health/ready"})
"""What ``--protect-all`` leaves open: the probes (the kubelet sends no key)."""
KNOWN_PATHS = WORK_PATHS | OPEN_PATHS | {"/info"}


def endpoint_of(path: str) -> str:
    """The ``endpoint`` label of a request for ``path`` in the metrics: the path when the service has it (the docs'
    assets, one label), else "other"."""
    if path.startswith(DOCS_ASSETS + "/"):
        return DOCS_ASSETS
    return path if path in KNOWN_PATHS else "other"


def record(telemetry: Telemetry, endpoint: str, status: int, elapsed: float) -> None:
    """Count one answered request (received, then a success or a failure with its reason) and its latency."""
    if 200 <= status < 300:
        telemetry.successes.labels(endpoint=endpoint).inc()
    else:
        reason = REASONS.get(status, "backend" if status >= 500 else "validation")
        telemetry.failures.labels(endpoint=endpoint, reason=reason).inc()
    telemetry.latency.labels(endpoint=endpoint).observe(elapsed)


_ABSOLUTE_FORM = re.compile(r"https?://[^/?#]*", re.IGNORECASE)


def origin_form(scope: Scope) -> Scope:
    """``scope`` with a request target in absolute form (``http://host/health``, RFC 9112 3.2.2: a server must accept
    it, and proxies send it) as the path it names; any other unchanged."""
    path = scope["path"]
    found = _ABSOLUTE_FORM.match(path)
    if found is None:
        return scope
    rest = path[found.end() :] or "/"
    raw = scope.get("raw_path")
    raw_rest = _ABSOLUTE_FORM.sub("", raw.decode("latin-1"), count=1).encode("latin-1") if raw else None
    return {**scope, "path": rest, "raw_path": raw_rest or rest.encode()}


class Gate:
    """Pure ASGI middleware in front of the app.

    In order: counts the request; 401 without the API key (``/health``, ``/metrics``, the docs and the
    playground page stay open); 503 while the model is loading or the server drains; 413 when the body is
    larger than the limit, decided from Content-Length before the body is read (a body without one is read up
    to the limit and no further); 415 for a compressed body (Content-Encoding), which nothing here decodes; 408 when the body takes longer than ``max_body_seconds`` to arrive. It also
    turns any exception that escaped the app into a 500 without closing the connection, so the next request on
    a keep-alive connection still works.
    """

    def __init__(
        self,
        app: Callable[..., Awaitable[None]],
        *,
        settings: ServeSettings,
        engine: BatchingEngine,
        telemetry: Telemetry,
    ) -> None:
        self.app, self.settings, self.engine, self.telemetry = app, settings, engine, telemetry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = origin_form(scope)
        path, method = scope["path"], scope["method"]
        endpoint = endpoint_of(path)
        started = time.perf_counter()
        status: list[int] = []
        request_id, trace_id = request_ids(scope["headers"])
        REQUEST_ID.set(request_id)  # this request's task's own context: error bodies name it

        async def tracked_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                message = {**message, "headers": [*message.get("headers", []), (b"x-request-id", request_id.encode())]}
            await send(message)

        self.telemetry.requests.labels(endpoint=endpoint).inc()
        try:
            refusal = self._refusal(path, method, scope)
            if refusal is not None:
                await self._send_error(tracked_send, *refusal)
            else:
                bounded = (
                    await self._bounded_body(scope, receive, tracked_send)
                    if method in ("POST", "PUT", "PATCH")
                    else receive
                )
                if bounded is not None:  # None: the body was refused and answered already
                    await self.app(scope, bounded, tracked_send)
        except asyncio.CancelledError:
            # uvicorn cancels the requests still running when the drain timeout (--drain-timeout) has passed. The
            # client gets the shutdown's 503, not uvicorn's plain-text 500, and the log no traceback; the
            # cancellation ends here, with this request's answer.
            if not status:
                await self._send_error(
                    tracked_send,
                    503,
                    "unhealthy",
                    "the server stopped before this request was answered (its drain timeout passed); retry",
                    {"connection": "close", "retry-after": "5"},
                )
        except Exception:
            logger.exception("unhandled error serving %s %s", method, path)
            if not status:
                await self._send_error(tracked_send, 500, "backend", "internal error (see the server's log)")
        code = status[0] if status else 499  # no response: the client left before one was sent
        elapsed = time.perf_counter() - started
        record(self.telemetry, endpoint, code, elapsed)
        access_logger.info(
            "%s %s %s",
            method,
            path,
            code,
            extra={
                "request_id": request_id,
                "trace_id": trace_id,
                "status": code,
                "method": method,
                "path": path,
                "latency_ms": round(elapsed * 1000, 1),
            },
        )

    def _refusal(self, path: str, method: str, scope: Scope) -> tuple[int, str, str, dict[str, str]] | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        is_work = method == "POST" and path in WORK_PATHS
        key = self.settings.api_key
        open_paths = ALWAYS_OPEN if self.settings.protect_all else OPEN_PATHS
        docs_asset = path.startswith(DOCS_ASSETS + "/") and DOCS_ASSETS in open_paths
        if key is not None and path not in open_paths and not docs_asset and (is_work or path != "/"):
            scheme, _, token = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key.encode()):
                return (
                    401,
                    "unauthorized",
                    "missing or wrong API key: send the header 'Authorization: Bearer <key>'",
                    {"www-authenticate": "Bearer"},
                )
        if is_work and self.engine.state != "ready":
            extra = {"retry-after": "5"} if self.engine.state == "loading" else {"connection": "close"}
            return 503, "unhealthy", self.engine.unavailable_reason(), extra
        length = headers.get("content-length")
        if length is not None:
            if not (length.isascii() and length.isdigit()):  # "²".isdigit() is true, and int() refuses it
                return 400, "validation", f"Content-Length {length[:40]!r} is not a number", {}
            if int(length) > self.settings.limits.max_body_bytes:
                return (
                    413,
                    "too_large",
                    (
                        f"the request body has {int(length)} bytes; the limit is "
                        f"{self.settings.limits.max_body_bytes} (GET /info)"
                    ),
                    {"connection": "close"},
                )
        encoding = headers.get("content-encoding", "").strip().lower()
        if is_work and encoding not in (
            "",
            "identity",
        ):  # nothing here decodes a body: gzip bytes read as JSON say "not JSON"
            return (
                415,
                "unsupported_media_type",
                (f"Content-Encoding {quoted(encoding)} is not supported: send the body uncompressed"),
                {"accept-encoding": "identity"},
            )
        return None

    async def _bounded_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Read the body up to the size and time limits and hand it on; None when a 413, a 408 (or a disconnect)
        ended the request."""
        limit, seconds = self.settings.limits.max_body_bytes, self.settings.limits.max_body_seconds
        body = bytearray()
        try:
            async with asyncio.timeout(seconds):  # the answers are sent after it: a slow reader is not a slow body
                while len(body) <= limit:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    body += message.get("body", b"")
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            await self._send_error(
                send,
                408,
                "timeout",
                f"the request body did not arrive within {seconds:g} seconds "
                f"({len(body)} bytes came; max_body_seconds in GET /info)",
                {"connection": "close"},
            )
            return None
        if len(body) > limit:
            await self._send_error(
                send,
                413,
                "too_large",
                f"the request body is larger than {limit} bytes (GET /info)",
                {"connection": "close"},
            )
            return None
        try:  # a key given twice: json.loads, the routes' reader, keeps the last value without a word
            check_distinct_keys(body.decode("utf-8"), "the body")
        except UnicodeDecodeError:
            pass  # the route's reader says what is wrong with it
        except DataError as error:
            await self._send_error(send, 422, "validation", str(error))
            return None
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()  # after the body: the disconnect, which the route watches for

        return replay

    _send_error = staticmethod(send_error)
