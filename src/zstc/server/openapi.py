"""What ``/openapi.json`` says each route answers besides its body: the error responses (by status, with
:data:`zstc.server.statuses.ERROR_MEANINGS`) and the headers of every answer (``X-Request-ID`` on all; TEI's timing
headers and ``x-zstc-notes`` on the model's answers; ``Retry-After`` on a 429 or a 503 while loading; ...), so that
a gateway or a generated client knows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zstc.server.statuses import ERROR_HEADERS, ERROR_MEANINGS
from zstc.server.schemas import ErrorResponse

Responses = dict[int | str, dict[str, Any]]


def _header(description: str, kind: str = "string") -> dict[str, Any]:
    return {"description": description, "schema": {"type": kind}}


REQUEST_ID = {
    "X-Request-ID": _header("The request's id: the client's X-Request-ID when it is a plain token, else a new one")
}
INTEGER_HEADERS = frozenset({"Retry-After"})

MODEL_HEADERS = {
    **REQUEST_ID,
    "x-queue-time": _header("Milliseconds the request waited for the model (TEI's header)"),
    "x-inference-time": _header("Milliseconds its batch took in the model (TEI's header)"),
    "x-total-time": _header("Milliseconds from the request to its answer (TEI's header)"),
    "x-zstc-notes": _header(
        "Hugging Face and rerank shapes: a JSON list of notes (a text the model cut to its token limit); absent when "
        "there are none"
    ),
}
"""The headers of an answer the model computed."""


def _headers(extra: Mapping[str, str]) -> dict[str, Any]:
    return {
        **REQUEST_ID,
        **{name: _header(text, "integer" if name in INTEGER_HEADERS else "string") for name, text in extra.items()},
    }


def errors(*codes: int) -> Responses:
    """The error responses ``codes`` (statuses), as /docs lists them: the body, what it means, its headers."""
    return {
        code: {
            "model": ErrorResponse,
            "description": ERROR_MEANINGS[code],
            "headers": _headers(ERROR_HEADERS.get(code, {})),
        }
        for code in codes
    }


def answered(headers: Mapping[str, Any] = REQUEST_ID) -> Responses:
    """The 200 answer's headers."""
    return {200: {"headers": dict(headers)}}


WORK_ERRORS: Responses = {**answered(MODEL_HEADERS), **errors(408, 413, 415, 422, 429, 500, 503)}
"""What a route that queues model work can answer besides its 200 (401 too under ``--api-key``: :func:`errors`)."""
