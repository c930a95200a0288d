"""The HTTP service (``zstc serve``): zero-shot classification for every model family, batched across requests.

One model per process, loaded at start-up; requests are validated by the same functions as the CLI and the
Python API (so a mistake reads the same everywhere), queued, and scored by :class:`~zstc.server.engine.BatchingEngine`
in batches formed across requests. Endpoints (OpenAPI at ``/docs``):

* ``POST /classify``: zstc's shape, or the Hugging Face zero-shot shape (an object with ``inputs``);
  ``POST /``: the Hugging Face shape, where hub clients send it;
* ``POST /rerank``, ``POST /v1/rerank`` and ``POST /v2/rerank``: Cohere/Jina rerank (the shape infinity, vLLM and TEI
  serve; Cohere's v1 and v2 SDKs post to the last two), with :mod:`zstc.server.rerank`'s fields;
* ``GET /health`` (liveness), ``GET /health/ready`` (a forward pass succeeded), ``GET /info``, ``GET /metrics``
  (Prometheus), ``GET /`` (a playground page).

A text longer than the model reads is truncated, and the answer names it: zstc's shape in ``notes``, the Hugging
Face and rerank shapes (whose bodies other ecosystems fix) in the ``x-zstc-notes`` header, a JSON list of strings.

Errors have text-embeddings-inference's shape ``{"error": ..., "error_type": ...}``: 401 unauthorized, 408 a
body that did not arrive in time, 413 too large (the body, checked from Content-Length before it is read, or a
published limit), 422 invalid input,
429 overloaded (with Retry-After), 503 loading or shutting down. No input gives a 500: strings with lone
surrogates and NaN numbers are 422s, and error messages never echo raw input.

Scores and probabilities. ``score`` is the model's raw score, of the scorer's score type: ``cosine``
(embedding, encoder), ``logodds`` / ``logit`` / ``prob`` (NLI, by ``--score-type``), ``logit`` (reranker),
``prob`` (yes/no: p(yes)), and for LLMs a distribution over the options. Every decision and probability is
:mod:`zstc.policy`'s, as the library's and ``zstc classify``'s: for single-label classification ``probability`` is a
softmax over the text's labels at the family's measured temperature or a calibration file's (``serve
--calibration``; ``GET /info``: ``single_label_temperature``). For multi-label (zstc's shape and the Hugging Face
shape) each label's probability is >= 0.5 exactly when the label passed
(:meth:`zstc.policy.MultiLabelRule.probabilities`). Rerank's relevance is a document's own probability at the default
cut, ``sigmoid((score - t0) / T)`` (``GET /info``: ``own_probability_center`` and ``own_probability_temperature``);
probabilities pass through unchanged.
"""

# No `from __future__ import annotations` here: FastAPI reads the route signatures' annotations at runtime.

import asyncio
import hmac
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from typing import Any, Union

import numpy as np
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.security import HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from zstc import __version__
from zstc.api import Classifier, check_labels_read_apart, label_hypotheses
from zstc.hypotheses.variants import HypothesisSet
from zstc.errors import (
    DataError,
    DescriptionTooLongError,
    LabelError,
    NonFiniteScoresError,
    OptionError,
    ZstcError,
    quoted,
)
from zstc.policy import (
    DecisionPolicy,
    MultiLabelRule,
    argmax_decisions,
    check_label_thresholds,
    check_multi_label_options,
    check_multilabel_names,
)
from zstc.scorers.cascade import CascadeScorer, flattens_to_pairs
from zstc.models.families import find_family
from zstc.scorers.nli import NliScorer
from zstc.server.engine import BatchingEngine, Overloaded, ScoreJob, Unavailable
from zstc.server.settings import ServeSettings
from zstc.server.lifecycle import REQUEST_ID, access_logger, error_content, request_ids, send_error
from zstc.server.hf import pipeline_scores
from zstc.server.rerank import check_model, count_tokens, document_text, truncate, truncation_note
from zstc.io import check_distinct_keys
from zstc.server.playground import PLAYGROUND_HTML
from zstc.server.schemas import (
    AnyClassifyRequest,
    ClassifyRequest,
    ClassifyResponse,
    ErrorResponse,
    HealthResponse,
    HFLabelScore,
    HFZeroShotRequest,
    InfoResponse,
    RerankRequest,
    RerankResponse,
)
from zstc.server.telemetry import Telemetry
from zstc.validation import (
    blank_detail,
    check_distinct_descriptions,
    check_encodable,
    check_labels,
    check_template,
    check_texts,
    is_blank,
)

logger = logging.getLogger("zstc.server")


class ServiceError(Exception):
    """An answer other than 200, with TEI's error body."""

    def __init__(self, status: int, error_type: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.error_type, self.headers = status, error_type, headers or {}


# -- the gate: metrics, API key, availability and body size, before FastAPI reads a byte -------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

WORK_PATHS = frozenset({"/classify", "/", "/rerank", "/v1/rerank", "/v2/rerank"})
"""POST endpoints that queue model work."""
OPEN_PATHS = frozenset(
    {"/health", "/health/ready", "/metrics", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}
)
ALWAYS_OPEN = frozenset({"/health", "/health/ready"})
"""What ``--protect-all`` leaves open: the probes (the kubelet sends no key)."""
KNOWN_PATHS = WORK_PATHS | OPEN_PATHS | {"/info"}
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
REASONS = {
    400: "validation",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    408: "timeout",
    413: "too_large",
    415: "unsupported_media_type",
    422: "validation",
    429: "overloaded",
    499: "cancelled",
    503: "unhealthy",
}


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
        path, method = scope["path"], scope["method"]
        endpoint = path if path in KNOWN_PATHS else "other"
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
        if 200 <= code < 300:
            self.telemetry.successes.labels(endpoint=endpoint).inc()
        else:
            reason = REASONS.get(code, "backend" if code >= 500 else "validation")
            self.telemetry.failures.labels(endpoint=endpoint, reason=reason).inc()
        elapsed = time.perf_counter() - started
        self.telemetry.latency.labels(endpoint=endpoint).observe(elapsed)
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
        if key is not None and path not in open_paths and (is_work or path != "/"):
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


# -- the app ---------------------------------------------------------------------------------------------------


def create_app(classifier: Classifier | Any, settings: ServeSettings | None = None) -> FastAPI:
    """The FastAPI app serving ``classifier``'s model (a :class:`~zstc.api.Classifier`, or a scorer). Its batching engine starts with the app (lifespan)
    and warms up in the background: ``/health/ready`` answers 200 once a forward pass has succeeded."""
    settings = settings or ServeSettings()
    limits = settings.limits
    scorer = classifier.scorer if isinstance(classifier, Classifier) else classifier
    if isinstance(classifier, Classifier) and classifier.hypotheses != "dataset":
        # Requests describe their labels (descriptions, a template, or the classifier's template); the service
        # has no per-request hypotheses choice, so a Classifier built for another one would be ignored silently.
        raise OptionError(
            f"hypotheses={classifier.hypotheses!r} is not served: the service describes labels by each request's "
            "descriptions or template; build the Classifier with hypotheses='dataset'",
            "hypotheses",
        )
    # Decisions and probabilities are the library's (zstc.policy), with the classifier's calibration.
    probability_model = classifier if isinstance(classifier, Classifier) else Classifier(scorer, template=None)
    policy = probability_model.policy
    # A Platt calibration is for multi-label requests (single-label probabilities refuse it); single-label ones get
    # the family's temperature, as without a file (zstc serve says so when it starts).
    single_label_policy = policy if policy.platt() is None else DecisionPolicy.for_scorer(scorer)

    def single_label_probabilities(row: np.ndarray) -> np.ndarray:
        matrix = np.asarray(row, dtype=np.float64)[None, :]
        return single_label_policy.single_label_probabilities(matrix, probability_model.scored(matrix))[0]

    telemetry = Telemetry()
    engine = BatchingEngine(scorer, settings.engine, telemetry)
    score_type = policy.score_type
    model_id, family = scorer.spec.model_id, scorer.family

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        engine.start()
        try:
            yield
        finally:
            await engine.stop()

    app = FastAPI(
        title="zstc",
        version=__version__,
        lifespan=lifespan,
        description=(__doc__ or "").split("\n\n", 1)[1],
    )
    app.state.engine, app.state.telemetry, app.state.settings = engine, telemetry, settings
    app.add_middleware(Gate, settings=settings, engine=engine, telemetry=telemetry)
    if settings.cors_allow_origins:  # outside the Gate: a browser's preflight (OPTIONS) carries no key
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_allow_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type", "x-request-id"],
            expose_headers=["x-request-id", "x-zstc-notes", "retry-after"],
        )

    # -- errors -----------------------------------------------------------------------------------------------

    def error_response(
        status: int, error_type: str, message: str, headers: dict[str, str] | None = None
    ) -> JSONResponse:
        return JSONResponse(error_content(error_type, message), status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Built from each error's place and message only: pydantic's default body echoes the input, which may hold
        # a NaN or a lone surrogate that no JSON encoder writes (the cause of the old server's 500s).
        errors = list(exc.errors())
        content_type = request.headers.get("content-type", "")
        media = content_type.partition(";")[0].strip().lower()
        # FastAPI parses a body as JSON only when its Content-Type says JSON; otherwise say so, not what the bytes lack.
        if media and media != "application/json" and not media.endswith("+json"):
            return error_response(
                415,
                "unsupported_media_type",
                f"the body must be JSON sent with 'Content-Type: application/json', not {quoted(content_type)}",
            )
        if not media and request.headers.get("content-length", "0") not in ("", "0"):
            return error_response(
                415,
                "unsupported_media_type",
                "the body must be JSON sent with 'Content-Type: application/json' (the request has no Content-Type)",
            )
        for error in errors:
            if error.get("type") == "json_invalid":
                at = next((part for part in error.get("loc", ()) if isinstance(part, int)), None)
                reason = str((error.get("ctx") or {}).get("error", "not JSON"))
                return error_response(
                    422,
                    "validation",
                    f"the body is not valid JSON: {reason}" + (f" at character {at}" if at is not None else ""),
                )
            if error.get("type") == "missing" and tuple(error.get("loc", ())) == ("body",):
                return error_response(422, "validation", "the request has no body: send a JSON object (see /docs)")
        # A field that may be one string or a list fails once per alternative; a value error (ours) says the most.
        specific = [e for e in errors if e.get("type") == "value_error"] or errors
        problems: list[str] = []
        for error in specific:
            where = ".".join(
                _place(part)
                for part in error.get("loc", ())
                if part not in ("body", "zstc", "hf") and "[" not in str(part)
            )  # drop pydantic's union tags
            message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
            problem = f"{where}: {message}" if where else message
            if problem not in problems:
                problems.append(problem)
        return error_response(422, "validation", "; ".join(problems[:5]) or "invalid request body")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if (
            exc.status_code == 400 and exc.detail == "There was an error parsing the body"
        ):  # FastAPI's, for bytes json.loads refused
            return error_response(
                422, "validation", "the body is not valid JSON (not UTF-8, nested too deeply, or an integer too long)"
            )
        kind = REASONS.get(exc.status_code, "validation")
        return error_response(exc.status_code, kind, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(ZstcError)
    async def user_error(request: Request, exc: ZstcError) -> JSONResponse:
        return error_response(422, "validation", str(exc))

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.error_type, str(exc), exc.headers)

    # -- queueing one request's work ----------------------------------------------------------------------------

    def check_size(what: str, count: int, limit: str) -> None:
        """``count`` of ``what`` within the limit named ``limit`` (documents are held to max_labels: the message names it)."""
        if count > getattr(limits, limit):
            raise ServiceError(
                413,
                "too_large",
                f"{count} {what} in one request; the limit is {getattr(limits, limit)} ({limit} in GET /info)",
            )

    def check_chars(what: str, strings: Sequence[str]) -> None:
        """Each of ``strings`` (``text``: "text 3 has ...") within ``max_chars``."""
        for i, string in enumerate(strings):
            if len(string) > limits.max_chars:
                raise ServiceError(
                    413,
                    "too_large",
                    f"{what} {i + 1} has {len(string)} characters; the limit is {limits.max_chars} (GET /info)",
                )

    def check_field_chars(field: str, string: str) -> None:
        """One string field (``template``) within ``max_chars``."""
        if len(string) > limits.max_chars:
            raise ServiceError(
                413, "too_large", f"{field} has {len(string)} characters; the limit is {limits.max_chars} (GET /info)"
            )

    def check_pairs(pairs: int) -> None:
        if pairs > min(limits.max_request_pairs, settings.engine.max_queued_pairs):
            limit = (
                f"max_request_pairs is {limits.max_request_pairs}"
                if limits.max_request_pairs <= settings.engine.max_queued_pairs
                else f"max_queued_pairs is {settings.engine.max_queued_pairs}, so a larger request could never be queued"
            )
            raise ServiceError(
                413,
                "too_large",
                f"{pairs} (text, label description) pairs in one request (a label scored with "
                f"several descriptions counts each); {limit} (GET /info)",
            )

    async def score(
        request: Request,
        texts: list[str],
        descriptions: list[tuple[str, ...]],
        cuts: list[tuple[float, ...] | None] | None = None,
        margins: list[tuple[float, ...] | None] | None = None,
        variants: list[int] | None = None,
    ) -> tuple[list[np.ndarray], ScoreJob]:
        """Queue ``texts`` (each with its descriptions, ``variants[i]`` per label, variant after variant) and wait for
        their rows: one score per label (the mean of its variants), or the error the request gets."""
        check_pairs(sum(len(d) for d in descriptions))
        try:
            job = engine.submit(texts, descriptions, cuts, margins, variants)
        except Overloaded as error:
            raise ServiceError(429, "overloaded", str(error), {"retry-after": str(error.retry_after)}) from None
        except Unavailable as error:
            raise ServiceError(503, "unhealthy", str(error), {"connection": "close"}) from None
        disconnected = asyncio.ensure_future(_client_gone(request))
        try:
            waited: list[asyncio.Future[Any]] = [job.future, disconnected]
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the server stopped (drain timeout): the work is dropped with the request
            engine.cancel(job)
            raise
        finally:
            disconnected.cancel()
        if not job.future.done():  # the client left: drop its work
            engine.cancel(job)
            raise ServiceError(499, "validation", "the client closed the connection")
        try:
            rows = job.future.result()
        except NonFiniteScoresError as error:  # the model's fault, not the request's
            logger.error("scoring failed: %s", error)
            raise ServiceError(500, "backend", "the model produced a non-finite score") from None
        except ZstcError:
            raise
        except Unavailable as error:
            raise ServiceError(503, "unhealthy", str(error), {"connection": "close"}) from None
        except Exception as error:
            logger.exception("scoring failed", exc_info=error)
            raise ServiceError(500, "backend", f"the model failed: {type(error).__name__}") from None
        return rows, job

    def timing_headers(job: ScoreJob, started: float) -> dict[str, str]:
        # TEI's headers, in milliseconds.
        return {
            "x-queue-time": f"{job.queue_s * 1000:.1f}",
            "x-inference-time": f"{job.inference_s * 1000:.1f}",
            "x-total-time": f"{(time.perf_counter() - started) * 1000:.1f}",
        }

    # Of what the scorer notes, only truncation is told, and per request: the engine scores the requests of a batch in
    # one call, whose notes mix them, so each request's truncated texts come from the positions the scorer reports
    # (ScoreJob.truncated). The rest is not the request's: bf16's fp32 recheck counts the pairs of the whole batch and
    # makes decisions fp32's (nothing for the client to act on); "prefix cache not used" and a shortlist's prompt
    # are facts of the model and its settings (GET /info), the same for every request. A text is cut as the family
    # reads it (behind a shortlist, the main model's): beside a label description (cross-encoders), inside a prompt
    # (the generative families), or alone.
    cut_with_label = flattens_to_pairs(family)
    record = find_family(family)
    cut_in_prompt = record is not None and record.text_in_prompt  # "with its prompt", as the library says

    def request_notes(job: ScoreJob, subject: str = "text") -> list[str]:
        """What ``job``'s request is told of its own inputs: its texts the model cut to its token limit, by position
        (``subject`` 1, 2, ...; "the query" for rerank's one), in the library's words."""
        if not job.truncated:
            return []
        one = len(job.truncated) == 1
        if subject == "query":
            which = "the query"
        else:
            numbers = [str(i + 1) for i in job.truncated]
            which = f"{subject} {numbers[0]}" if one else f"{subject}s {', '.join(numbers[:-1])} and {numbers[-1]}"
        limit = scorer.describe().get("max_length")  # the limit in force, once the model is loaded (it is: it scored)
        within = (
            f"the room left by the label description within {limit} tokens" if cut_with_label else f"{limit} tokens"
        )
        if cut_in_prompt:
            within += f" with {'its' if one else 'their'} prompt"
        # A cascade's positions are its shortlister's too: one with a lower limit cuts texts the model reads whole.
        shortlister = scorer.shortlister.describe().get("max_length") if isinstance(scorer, CascadeScorer) else None
        if isinstance(shortlister, int) and isinstance(limit, int) and shortlister < limit:
            within += f", or the shortlister's {shortlister} tokens,"
        return [
            f"{which} {'exceeds' if one else 'exceed'} {within} and {'was' if one else 'were'} truncated"
            + (" (label descriptions never are)" if cut_with_label else "")
        ]

    def notes_header(notes: list[str]) -> dict[str, str]:
        """The notes of a request whose body another ecosystem fixes (Hugging Face, rerank): a JSON list of strings
        in the ``x-zstc-notes`` header (ASCII: non-ASCII characters are JSON escapes), absent when there are none."""
        return {"x-zstc-notes": json.dumps(notes, ensure_ascii=True)} if notes else {}

    # -- POST /classify, POST / ----------------------------------------------------------------------------------

    async def label_descriptions(
        label_sets: list[tuple[list[str], list[str] | None, str | None]],
    ) -> tuple[list[tuple[str, ...]], list[int]]:
        """What the model scores for each ``(names, their descriptions or None, template)``, and how many descriptions
        each label has: one, or (zstc's default for polarity labels, :func:`zstc.api.describe_labels`) several, variant
        after variant, which the engine averages (in bf16 rechecking the average, as the library does). Labels the model
        reads alike are refused (:func:`check_labels_read_apart`: off the event loop, where it may wait for the tokenizer;
        a label set seen before is answered from the scorer's cache)."""
        flat: list[tuple[str, ...]] = []
        counts: list[int] = []
        distinct = {}
        for names, given, template in label_sets:
            if given is not None and len(given) != len(names):
                raise LabelError(f"{len(given)} descriptions for {len(names)} labels")
            # Checks the template (zstc.validation), and refuses one given with descriptions other than the names.
            described = label_hypotheses(names, template=template, descriptions=given)
            check_distinct_descriptions(names, described)
            variants = list(described.variants.values()) if isinstance(described, HypothesisSet) else [list(described)]
            flat.append(tuple(description for variant in variants for description in variant))
            counts.append(len(variants))
            check_chars("label description", flat[-1])
            distinct[(tuple(names), flat[-1])] = (names, described)

        def read_apart() -> None:
            for names, described in distinct.values():
                check_labels_read_apart(scorer, names, described)

        await asyncio.to_thread(read_apart)
        return flat, counts

    async def classify_zstc(request: Request, body: ClassifyRequest) -> JSONResponse:
        started = time.perf_counter()
        texts = [body.texts] if isinstance(body.texts, str) else list(body.texts)
        check_size("texts", len(texts), "max_texts")
        check_chars("text", texts)  # every size before any other check: no message quotes a string past the limits
        if body.template is not None:
            check_field_chars("template", body.template)
        texts = check_texts(texts)
        per_text = bool(body.labels) and isinstance(body.labels[0], list)
        label_lists: list[list[str]] = list(body.labels) if per_text else [list(body.labels)]  # type: ignore[arg-type]
        given_lists: list[Any] = [None] * len(label_lists)  # one list of descriptions per label set, or None
        if body.descriptions is not None:
            descriptions_per_text = bool(body.descriptions) and isinstance(body.descriptions[0], list)
            if descriptions_per_text != per_text:
                raise LabelError(
                    "descriptions must have the shape of labels: one list for all texts, or one list per text"
                )
            given_lists = list(body.descriptions) if per_text else [list(body.descriptions)]
            if len(given_lists) != len(label_lists):
                raise LabelError(f"{len(given_lists)} description lists for {len(label_lists)} label lists")
        if per_text and len(label_lists) != len(texts):
            raise LabelError(
                f"{len(label_lists)} label sets for {len(texts)} texts: give one label set per text, or one list for all"
            )
        names_per_set, label_sets = [], []
        for names, given in zip(label_lists, given_lists):
            check_size("labels", len(names), "max_labels")
            check_chars("label", names)
            if given is not None:
                check_chars("label description", given)
            names = check_labels(names, allow_single=body.multi_label)
            if body.multi_label:
                check_multilabel_names(names)
            # Label names without a template get the classifier's (zstc's default "This is {}."), as classify does.
            template = body.template if body.template is not None or given is not None else probability_model.template
            names_per_set.append(names)
            label_sets.append((names, given, template))
        descriptions_per_set, variants_per_set = await label_descriptions(label_sets)
        if not per_text:
            names_per_set, descriptions_per_set = names_per_set * len(texts), descriptions_per_set * len(texts)
            variants_per_set = variants_per_set * len(texts)
        check_multi_label_options(body.multi_label, threshold=body.threshold, label_thresholds=body.label_thresholds)
        rules: list[MultiLabelRule | None] = [None] * len(texts)
        if body.multi_label:
            # With one label set per text, a threshold names a label of any set and applies where that label is.
            every_name = list(dict.fromkeys(name for names in names_per_set for name in names))
            given = check_label_thresholds(body.label_thresholds or {}, every_name, "label_thresholds")
            by_set: dict[tuple[str, ...], MultiLabelRule] = {}
            for names in names_per_set:
                if tuple(names) not in by_set:
                    own = {name: value for name, value in given.items() if name in names}
                    by_set[tuple(names)] = policy.multi_label(
                        names, body.threshold, own, per_label_parameter="label_thresholds"
                    )
            rules = [by_set[tuple(names)] for names in names_per_set]
        # bf16 rechecks the scores near each label's cut and, under the embedding family's default rule, near the text's
        # best minus the margin, as the library does; for an average of description variants, on the average (the
        # engine's Backend.answer).
        cuts = [None if rule is None else tuple(rule.recheck_cuts()) for rule in rules]
        margins = [
            None if rule is None or rule.margin is None else tuple(rule.recheck_margins() or ()) for rule in rules
        ]
        rows, job = await score(request, texts, descriptions_per_set, cuts, margins, variants_per_set)
        results = [
            text_result(text, row, names, rule, body.precision)
            for text, row, names, rule in zip(texts, rows, names_per_set, rules)
        ]
        content = {
            "model": model_id,
            "family": family,
            "score_type": score_type,
            "multi_label": body.multi_label,
            "results": results,
            "notes": request_notes(job),
        }
        return JSONResponse(content, headers=timing_headers(job, started))

    def text_result(
        text: str, row: np.ndarray, names: list[str], rule: MultiLabelRule | None, decimals: int | None
    ) -> dict[str, Any]:
        """One text's answer: its label (single-label) or labels (``rule``'s, multi-label), and each label's score and
        probability, highest score first (ties keep the label order)."""

        def rounded(value: float) -> float:
            return round(float(value), decimals) if decimals is not None else float(value)

        order = np.argsort(-row, kind="stable")
        if rule is not None:
            matrix = np.asarray(row, dtype=np.float64)[None, :]
            scored = probability_model.scored(matrix)
            passed, probabilities = rule.decide(matrix, scored)[0], rule.probabilities(matrix, scored)[0]
            scores = [
                {
                    "label": names[j],
                    "score": rounded(row[j]),
                    "probability": rounded(probabilities[j]),
                    "passed": bool(passed[j]),
                }
                for j in order
            ]
            return {"text": text, "labels": rule.label_sets(matrix, scored)[0], "scores": scores}
        probabilities = single_label_probabilities(row)
        scores = [
            {"label": names[j], "score": rounded(row[j]), "probability": rounded(probabilities[j])} for j in order
        ]
        return {"text": text, "label": names[int(argmax_decisions(row[None, :])[0])], "scores": scores}

    async def classify_hf(request: Request, body: HFZeroShotRequest) -> JSONResponse:
        started = time.perf_counter()
        single = isinstance(body.inputs, str)
        texts: list[str] = [body.inputs] if isinstance(body.inputs, str) else list(body.inputs)
        check_size("texts", len(texts), "max_texts")
        texts = check_texts(texts)
        given = body.parameters.candidate_labels
        candidates = (
            [label for label in given.split(",") if not is_blank(label)] if isinstance(given, str) else list(given)
        )
        check_size("labels", len(candidates), "max_labels")
        check_chars("text", texts)
        check_chars("candidate label", candidates)
        check_field_chars("hypothesis_template", body.parameters.hypothesis_template)
        check_template(body.parameters.hypothesis_template, what="hypothesis_template")  # named as this shape names it
        # One candidate label is scored on its own, as with multi_label: the pipeline's rule (a softmax over one
        # label would always say 1).
        multi_label = body.parameters.multi_label or len(candidates) == 1
        names = check_labels(candidates, what="candidate_labels", allow_single=multi_label)
        (descriptions,), (variants,) = await label_descriptions([(names, None, body.parameters.hypothesis_template)])
        # Multi-label: zstc's default rule, whose probabilities are >= 0.5 exactly where a label passed (a client
        # thresholding at 0.5, as Hugging Face clients do, gets zstc's decisions); the cuts are rechecked in bf16.
        rule = policy.rule_without_options(names) if multi_label else None
        cuts: list[tuple[float, ...] | None] = [None if rule is None else tuple(rule.recheck_cuts())] * len(texts)
        margins: list[tuple[float, ...] | None] = [
            None if rule is None or rule.margin is None else tuple(rule.recheck_margins() or ())
        ] * len(texts)
        if isinstance(scorer, NliScorer) and variants == 1:  # the pipeline's numbers (zstc.server.hf)
            check_pairs(len(texts) * len(descriptions))
            try:
                logits = await engine.call(scorer.pipeline_logits, texts, list(descriptions))
            except Unavailable as error:
                raise ServiceError(503, "unhealthy", str(error), {"connection": "close"}) from None
            pipeline = []
            for pairs in logits:
                probabilities = pipeline_scores(pairs, multi_label)
                order = np.argsort(-probabilities, kind="stable")
                pipeline.append([{"label": names[j], "score": float(probabilities[j])} for j in order])
            return JSONResponse(
                pipeline[0] if single else pipeline,
                headers={"x-total-time": f"{(time.perf_counter() - started) * 1000:.1f}"},
            )
        rows, job = await score(request, texts, [descriptions] * len(texts), cuts, margins, [variants] * len(texts))
        answers = []
        for row in rows:
            matrix = np.asarray(row, dtype=np.float64)[None, :]
            probabilities = (
                rule.probabilities(matrix, probability_model.scored(matrix))[0]
                if rule is not None
                else single_label_probabilities(row)
            )
            order = np.argsort(-probabilities, kind="stable")
            answers.append([{"label": names[j], "score": float(probabilities[j])} for j in order])
        return JSONResponse(
            answers[0] if single else answers,
            headers={**timing_headers(job, started), **notes_header(request_notes(job))},
        )

    # What each route can answer besides 200 (the Gate's and the handlers' codes), for /docs; under --api-key the
    # routes that need the key declare the bearer scheme, so /docs can send it ("Authorize").
    def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
        return {code: {"model": ErrorResponse, "description": ERROR_MEANINGS[code]} for code in codes}

    work_errors = errors(*((401,) if settings.api_key else ()), 408, 413, 415, 422, 429, 500, 503)
    keyed = [Depends(HTTPBearer(auto_error=False, description="zstc serve --api-key"))] if settings.api_key else []
    hf_answer = Union[list[HFLabelScore], list[list[HFLabelScore]]]

    @app.post(
        "/classify",
        response_model=Union[ClassifyResponse, hf_answer],
        responses=work_errors,
        dependencies=keyed,
        tags=["classify"],
        response_description="zstc's shape: ClassifyResponse; the Hugging Face shape: [{label, score}] "
        "(a list of them per text when `inputs` is a list)",
    )
    async def classify(request: Request, body: AnyClassifyRequest) -> Response:
        """Classify texts: zstc's shape, or the Hugging Face zero-shot shape when the body has `inputs`."""
        if isinstance(body, HFZeroShotRequest):
            return await classify_hf(request, body)
        return await classify_zstc(request, body)

    @app.post(
        "/",
        response_model=hf_answer,
        responses=work_errors,
        dependencies=keyed,
        tags=["classify"],
        response_description="[{label, score}] sorted by score; a list of them per text when `inputs` is a list",
    )
    async def hugging_face(request: Request, body: HFZeroShotRequest) -> Response:
        """The Hugging Face inference task for zero-shot classification, where hub clients post it."""
        return await classify_hf(request, body)

    # -- POST /rerank -----------------------------------------------------------------------------------------------

    async def rerank(request: Request, body: RerankRequest) -> JSONResponse:
        """Cohere/Jina rerank: the query is scored as a text against each document as a label description."""
        started = time.perf_counter()
        check_model(body.model, model_id)
        given = [d if isinstance(d, str) else d.model_dump(exclude_none=True) for d in body.documents]
        documents = [document_text(d, body.rank_fields, i + 1) for i, d in enumerate(given)]
        check_size("documents", len(documents), "max_labels")
        check_field_chars("query", body.query)
        check_encodable(body.query, "query")  # first: a NUL is binary data, not an invisible character
        if is_blank(body.query):
            raise DataError(f"query is empty{blank_detail(body.query)}")
        check_chars("document", documents)
        if not documents:
            raise LabelError("no documents given")
        loaded = await asyncio.to_thread(lambda: _tokenizer_of(scorer))
        notes: list[str] = []
        if body.max_tokens_per_doc is not None:
            if loaded is None:
                raise OptionError(
                    f"max_tokens_per_doc is not supported for {model_id} (no tokenizer to count its tokens)",
                    "max_tokens_per_doc",
                )
            documents, cut, _ = await asyncio.to_thread(truncate, *loaded, documents, body.max_tokens_per_doc)
            if cut:
                notes.append(truncation_note(cut, body.max_tokens_per_doc))
        # Positions as the client gave them (a repeated document is scored once, but an error names where it is).
        stripped = check_labels(documents, what="documents", allow_single=True, allow_repeats=True)
        distinct = list(dict.fromkeys(stripped))
        try:
            rows, job = await score(request, [body.query], [tuple(distinct)])
        except DescriptionTooLongError as error:  # the scorer's words are classification's ("label description")
            index = next(
                (i for i, d in enumerate(stripped) if error.description in (d, scorer.spec.format_document(d))), None
            )
            which = f"document {index + 1}" if index is not None else "a document"
            raise LabelError(
                f"{which} is too long for {model_id}'s limit of {error.limit} tokens (a cross-encoder reads it "
                "with the query); documents are scored whole unless max_tokens_per_doc cuts them: "
                "set it, shorten or split it"
            ) from None
        relevance = dict(zip(distinct, rows[0] if body.raw_scores else policy.relevance(rows[0])))
        ranked = sorted(range(len(documents)), key=lambda i: -relevance[stripped[i]])[: body.top_n]
        results = [
            {
                "index": i,
                "relevance_score": float(relevance[stripped[i]]),
                **(
                    {"document": {"text": given[i]} if isinstance(given[i], str) else given[i]}
                    if body.return_documents
                    else {}
                ),
            }
            for i in ranked
        ]
        tokens = await asyncio.to_thread(count_tokens, *loaded, [body.query, *documents]) if loaded is not None else 0
        version = "2" if request.url.path.startswith("/v2/") else "1"
        content = {
            "id": str(uuid.uuid4()),
            "model": model_id,
            "results": results,
            "meta": {
                "api_version": {"version": version},
                "billed_units": {"search_units": 1},
                "tokens": {"input_tokens": tokens, "output_tokens": 0},
            },
            "usage": {"total_tokens": tokens},
        }
        return JSONResponse(
            content, headers={**timing_headers(job, started), **notes_header([*notes, *request_notes(job, "query")])}
        )

    for path in ("/rerank", "/v1/rerank", "/v2/rerank"):
        app.post(path, response_model=RerankResponse, responses=work_errors, dependencies=keyed, tags=["rerank"])(
            rerank
        )

    # -- health, info, metrics, playground ----------------------------------------------------------------------

    @app.get("/health", response_model=HealthResponse, tags=["operations"])
    async def health() -> dict[str, Any]:
        """Liveness: the process answers (`zstc serve` answers it while the model loads: zstc.server.lifecycle)."""
        return {"status": "ok", "model": model_id, "family": family}

    @app.get("/health/ready", response_model=HealthResponse, responses=errors(503), tags=["operations"])
    async def ready() -> Response:
        """Readiness: 200 once a tiny forward pass has succeeded; 503 while loading, after a failure, or draining."""
        if engine.state == "ready":
            return JSONResponse({"status": "ready", "model": model_id, "family": family})
        return error_response(503, "unhealthy", engine.unavailable_reason())

    @app.get(
        "/info",
        response_model=InfoResponse,
        responses=errors(401) if settings.api_key else {},
        dependencies=keyed,
        tags=["operations"],
    )
    async def info() -> dict[str, Any]:
        """The model, its family and score type, the probabilities' temperatures, the limits and the batching settings."""
        single_label_temperature = single_label_policy.temperature()
        center, temperature = policy.own_probability_sigmoid() or (None, None)
        return {
            "model": model_id,
            "family": family,
            "score_type": score_type,
            "temperature": single_label_temperature,
            "single_label_temperature": single_label_temperature,
            "own_probability_temperature": temperature,
            "own_probability_center": center,
            "scorer": _jsonable(scorer.describe()),
            "limits": asdict(limits),
            "batching": {
                **asdict(settings.engine),
                "torch_threads": engine.torch_threads,
                "kernel_caches": engine.kernel_caches,
                "state": engine.state,
                "queued_pairs": engine.queued_pairs,
            },
            "version": __version__,
        }

    @app.get("/metrics", tags=["operations"], response_class=Response)
    async def metrics() -> Response:
        """Prometheus text format."""
        return Response(telemetry.render(), media_type=telemetry.content_type)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def playground() -> HTMLResponse:
        return HTMLResponse(PLAYGROUND_HTML)

    # Load balancers, uptime checkers and scrapers' availability checks often probe with HEAD (the same answer
    # without a body): not a 405. /info keeps its key.
    for path, endpoint, dependencies in (
        ("/health", health, []),
        ("/health/ready", ready, []),
        ("/info", info, keyed),
        ("/metrics", metrics, []),
        ("/", playground, []),
    ):
        app.head(path, include_in_schema=False, dependencies=dependencies)(endpoint)

    return app


def _tokenizer_of(scorer: Any) -> tuple[Any, Any] | None:
    """The scorer's tokenizer and the lock its calls hold (a cascade's: its main model's), or None (a GGUF model)."""
    loaded = getattr(scorer.main if isinstance(scorer, CascadeScorer) else scorer, "loaded", None)
    tokenizer, lock = getattr(loaded, "tokenizer", None), getattr(loaded, "tokenizer_lock", None)
    return (tokenizer, lock) if callable(tokenizer) and lock is not None else None


async def _client_gone(request: Request) -> None:
    """Return once the client has disconnected (the body is already read, so the next message is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


def _place(part: object) -> str:
    """One step of a validation error's place (``labels``, ``0``): a key the client chose (an unknown field, a
    label_thresholds name) is quoted and cut like any input a message names, not echoed whole."""
    text = str(part)
    return text if len(text) <= 60 and text.isascii() and text.isprintable() else quoted(part)


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
