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

from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.security import HTTPBearer
from fastapi_offline import FastAPIOffline

from zstc import __version__
from zstc.api import Classifier
from zstc.server import hf, operations, playground, rerank, zstc_shape
from zstc.server.statuses import ERROR_MEANINGS, REASONS, ServiceError, install_error_handlers
from zstc.server.gate import DOCS_ASSETS, Gate
from zstc.server.openapi import errors
from zstc.server.service import Service
from zstc.server.settings import ServeSettings
from zstc.server.telemetry import Telemetry

__all__ = ["ERROR_MEANINGS", "REASONS", "Gate", "ServeSettings", "ServiceError", "create_app"]


def create_app(
    classifier: Classifier | Any, settings: ServeSettings | None = None, telemetry: Telemetry | None = None
) -> FastAPI:
    """The FastAPI app serving ``classifier``'s model (a :class:`~zstc.api.Classifier`, or a scorer). Its batching engine
    starts with the app (lifespan) and warms up in the background: ``/health/ready`` answers 200 once a forward pass has
    succeeded. ``telemetry``: the metrics to count in (``zstc serve``'s, which counted the answers given while the model
    loaded), else new ones.

    Wiring only: the routes are module-level routers (one module per family of routes) over the one
    :class:`~zstc.server.service.Service` they fetch from ``app.state``; every error is answered by
    :mod:`zstc.server.statuses`; the :class:`~zstc.server.gate.Gate` stands in front of them all."""
    settings = settings or ServeSettings()
    service = Service(classifier, settings, telemetry)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # type: ignore[no-untyped-def]
        service.engine.start()
        try:
            yield
        finally:
            await service.engine.stop()

    # Swagger UI's and ReDoc's assets come from fastapi-offline's package: /docs works with no network.
    app = FastAPIOffline(
        title="zstc",
        version=__version__,
        lifespan=lifespan,
        description=(__doc__ or "").split("\n\n", 1)[1],
        static_url=DOCS_ASSETS,
    )
    app.state.service = service
    app.state.engine, app.state.telemetry, app.state.settings = service.engine, service.telemetry, settings
    app.add_middleware(Gate, settings=settings, engine=service.engine, telemetry=service.telemetry)
    if settings.cors_allow_origins:  # outside the Gate: a browser's preflight (OPTIONS) carries no key
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_allow_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type", "x-request-id"],
            expose_headers=["x-request-id", "x-zstc-notes", "retry-after"],
        )
    install_error_handlers(app)
    # Under --api-key the routes that need the key declare the bearer scheme, so /docs can send it ("Authorize").
    keyed: dict[str, Any] = (
        {
            "dependencies": [Depends(HTTPBearer(auto_error=False, description="zstc serve --api-key"))],
            "responses": errors(401),
        }
        if settings.api_key
        else {}
    )
    for router in (zstc_shape.router, hf.router, rerank.router, operations.info_router):
        app.include_router(router, **keyed)
    app.include_router(operations.router)
    app.include_router(playground.router)
    return app
