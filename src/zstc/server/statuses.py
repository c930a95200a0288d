"""Every answer other than 200, in one place: text-embeddings-inference's body ``{"error", "error_type"}`` (and the
request's id), one map from error type to HTTP status (TEI's ``ErrorType``), and the exception handlers that turn
what a route raises into that answer, so that no route builds an error response itself.

The exceptions a route may raise: :class:`ServiceError` (a status of its own: a limit, a client that left),
:class:`zstc.errors.ZstcError` (a mistake the CLI and the library name in the same words: 422),
:class:`~zstc.server.engine.Overloaded` (429 with Retry-After) and :class:`~zstc.server.engine.Unavailable` (503).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from zstc.errors import ZstcError, quoted
from zstc.server.engine import Overloaded, Unavailable

ERROR_TYPES: Mapping[str, int] = {
    "unauthorized": 401,
    "not_found": 404,
    "method_not_allowed": 405,
    "timeout": 408,
    "too_large": 413,
    "unsupported_media_type": 415,
    "validation": 422,
    "overloaded": 429,
    "backend": 500,
    "unhealthy": 503,
}
"""Each error type's HTTP status (a ``validation`` error is 400 only for a request line or header no route reads)."""

REASONS: Mapping[int, str] = {
    **{status: error_type for error_type, status in ERROR_TYPES.items()},
    400: "validation",
    499: "cancelled",
}
"""Each status's reason in the failure metric (``zstc_request_failures_total{reason=...}``); 499: the client left."""

ERROR_MEANINGS = {
    401: "unauthorized: no or a wrong API key (`Authorization: Bearer KEY`)",
    408: "timeout: the body did not arrive within max_body_seconds (GET /info) of the headers",
    413: "too_large: the body, or texts, labels, characters or pairs per request, past the limits in GET /info",
    415: "unsupported_media_type: the body was not sent as JSON (`Content-Type: application/json`), or was compressed (`Content-Encoding`)",
    422: "validation: the body is not valid JSON or not a valid request; the message names the field",
    429: "overloaded: the queue is full; retry after `Retry-After` seconds",
    500: "backend: the model failed (see the server's log)",
    503: "unhealthy: the model is loading or failed, or the server is shutting down",
}
"""The error responses /docs lists, by status (the body is always ``{"error", "error_type"}``)."""

ERROR_HEADERS: Mapping[int, Mapping[str, str]] = {
    401: {"WWW-Authenticate": "`Bearer`: the scheme the key is sent by"},
    413: {"Connection": "`close` when the body itself was too large"},
    415: {"Accept-Encoding": "`identity`: send the body uncompressed (for a compressed body)"},
    429: {"Retry-After": "seconds until the queued work is likely done (1 to 60)"},
    503: {
        "Retry-After": "seconds to wait while the model loads",
        "Connection": "`close` while the server shuts down",
    },
}
"""The headers each error status may carry, as /docs documents them (beside X-Request-ID, on every answer)."""

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("zstc_request_id", default=None)
"""The request being answered's id (``X-Request-ID``): set by :class:`zstc.server.gate.Gate`, named in error bodies."""


class ServiceError(Exception):
    """An answer other than 200 with TEI's error body: its status is its ``error_type``'s (:data:`ERROR_TYPES`)
    unless ``status`` says otherwise."""

    def __init__(
        self, error_type: str, message: str, headers: dict[str, str] | None = None, *, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status if status is not None else ERROR_TYPES[error_type]
        self.error_type, self.headers = error_type, headers or {}


def error_content(error_type: str, message: str) -> dict[str, Any]:
    """The body of every error: ``{"error", "error_type"}`` (text-embeddings-inference's), and the request's id."""
    content: dict[str, Any] = {"error": message, "error_type": error_type}
    request_id = REQUEST_ID.get()
    if request_id is not None:
        content["request_id"] = request_id
    return content


def error_response(error_type: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An error answered by a route or a handler, with its type's status."""
    return JSONResponse(
        error_content(error_type, message), status_code=ERROR_TYPES[error_type], headers=dict(headers or {})
    )


Send = Callable[[dict[str, Any]], Any]


async def send_error(
    send: Send, status: int, error_type: str, message: str, headers: Mapping[str, str] | None = None
) -> None:
    """Answer with the error shape from below the app (the gate, the launcher), by raw ASGI messages."""
    await send_json(send, status, error_content(error_type, message), headers)


async def send_json(send: Send, status: int, content: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
    """A JSON answer by raw ASGI messages."""
    body = json.dumps(content).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


# -- the handlers ---------------------------------------------------------------------------------------------------


async def _invalid_body(request: Request, exc: Exception) -> JSONResponse:
    # Built from each error's place and message only: pydantic's default body echoes the input, which may hold
    # a NaN or a lone surrogate that no JSON encoder writes (the cause of the old server's 500s).
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    content_type = request.headers.get("content-type", "")
    media = content_type.partition(";")[0].strip().lower()
    # FastAPI parses a body as JSON only when its Content-Type says JSON; otherwise say so, not what the bytes lack.
    if media and media != "application/json" and not media.endswith("+json"):
        return error_response(
            "unsupported_media_type",
            f"the body must be JSON sent with 'Content-Type: application/json', not {quoted(content_type)}",
        )
    if not media and request.headers.get("content-length", "0") not in ("", "0"):
        return error_response(
            "unsupported_media_type",
            "the body must be JSON sent with 'Content-Type: application/json' (the request has no Content-Type)",
        )
    for error in errors:
        if error.get("type") == "json_invalid":
            at = next((part for part in error.get("loc", ()) if isinstance(part, int)), None)
            reason = str((error.get("ctx") or {}).get("error", "not JSON"))
            return error_response(
                "validation",
                f"the body is not valid JSON: {reason}" + (f" at character {at}" if at is not None else ""),
            )
        if error.get("type") == "missing" and tuple(error.get("loc", ())) == ("body",):
            return error_response("validation", "the request has no body: send a JSON object (see /docs)")
    # A field that may be one string or a list fails once per alternative; a value error (ours) says the most.
    specific = [e for e in errors if e.get("type") == "value_error"] or errors
    problems: list[str] = []
    for error in specific:
        where = ".".join(
            _place(part) for part in error.get("loc", ()) if part not in ("body", "zstc", "hf") and "[" not in str(part)
        )  # drop pydantic's union tags
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        problem = f"{where}: {message}" if where else message
        if problem not in problems:
            problems.append(problem)
    return error_response("validation", "; ".join(problems[:5]) or "invalid request body")


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if (
        exc.status_code == 400 and exc.detail == "There was an error parsing the body"
    ):  # FastAPI's, for bytes json.loads refused
        return error_response(
            "validation", "the body is not valid JSON (not UTF-8, nested too deeply, or an integer too long)"
        )
    kind = REASONS.get(exc.status_code, "validation")
    return JSONResponse(
        error_content(kind, str(exc.detail)), status_code=exc.status_code, headers=getattr(exc, "headers", None)
    )


async def _service_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ServiceError)
    return JSONResponse(error_content(exc.error_type, str(exc)), status_code=exc.status, headers=exc.headers)


async def _user_error(request: Request, exc: Exception) -> JSONResponse:
    return error_response("validation", str(exc))


async def _overloaded(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, Overloaded)
    return error_response("overloaded", str(exc), {"retry-after": str(exc.retry_after)})


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    return error_response("unhealthy", str(exc), {"connection": "close"})


HANDLERS: Mapping[type[Exception], Callable[[Request, Exception], Any]] = {
    RequestValidationError: _invalid_body,
    StarletteHTTPException: _http_error,
    ServiceError: _service_error,
    ZstcError: _user_error,
    Overloaded: _overloaded,
    Unavailable: _unavailable,
}
"""What each exception a route raises is answered with."""


def install_error_handlers(app: FastAPI) -> None:
    """Answer every exception of :data:`HANDLERS` with its error (a 500 for any other is the gate's)."""
    for exception, handler in HANDLERS.items():
        app.add_exception_handler(exception, handler)


def _place(part: object) -> str:
    """One step of a validation error's place (``labels``, ``0``): a key the client chose (an unknown field, a
    label_thresholds name) is quoted and cut like any input a message names, not echoed whole."""
    text = str(part)
    return text if len(text) <= 60 and text.isascii() and text.isprintable() else quoted(part)
