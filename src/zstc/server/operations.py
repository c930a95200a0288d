"""The routes an operator's tools call: ``GET /health`` (liveness), ``GET /health/ready`` (readiness: a forward pass
succeeded), ``GET /info`` (the model, its probabilities' temperatures, the limits and the batching settings) and
``GET /metrics`` (Prometheus). Each answers ``HEAD`` too: load balancers, uptime checkers and scrapers' availability
checks often probe with it (the same answer without a body), and a 405 would read as down.
"""

# No `from __future__ import annotations` here: FastAPI reads the route signatures' annotations at runtime.

import json
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from zstc import __version__
from zstc.server.statuses import error_response
from zstc.server.openapi import answered, errors
from zstc.server.schemas import HealthResponse, InfoResponse
from zstc.server.service import service_of

router = APIRouter(tags=["operations"])
"""The routes open without the API key (``--protect-all`` closes ``/metrics``: :class:`zstc.server.gate.Gate`)."""
info_router = APIRouter(tags=["operations"])
"""``/info``, which needs the key under ``--api-key``."""


@router.get("/health", response_model=HealthResponse, responses=answered())
async def health(request: Request) -> dict[str, Any]:
    """Liveness: the process answers (`zstc serve` answers it while the model loads: zstc.server.lifecycle)."""
    service = service_of(request)
    return {"status": "ok", "model": service.model_id, "family": service.family}


@router.get("/health/ready", response_model=HealthResponse, responses={**answered(), **errors(503)})
async def ready(request: Request) -> Response:
    """Readiness: 200 once a tiny forward pass has succeeded; 503 while loading, after a failure, or draining."""
    service = service_of(request)
    if service.engine.state == "ready":
        return JSONResponse({"status": "ready", "model": service.model_id, "family": service.family})
    return error_response("unhealthy", service.engine.unavailable_reason())


@info_router.get("/info", response_model=InfoResponse, responses=answered())
async def info(request: Request) -> dict[str, Any]:
    """The model, its family and score type, the probabilities' temperatures, the limits and the batching settings."""
    service = service_of(request)
    engine, policy = service.engine, service.policy
    single_label_temperature = service.single_label_policy.temperature()
    center, temperature = policy.own_probability_sigmoid() or (None, None)
    return {
        "model": service.model_id,
        "family": service.family,
        "score_type": service.score_type,
        "temperature": single_label_temperature,
        "single_label_temperature": single_label_temperature,
        "own_probability_temperature": temperature,
        "own_probability_center": center,
        "scorer": json.loads(json.dumps(service.scorer.describe(), default=str)),
        "limits": asdict(service.limits),
        "batching": {
            **asdict(service.settings.engine),
            "torch_threads": engine.torch_threads,
            "kernel_caches": engine.kernel_caches,
            "state": engine.state,
            "queued_pairs": engine.queued_pairs,
        },
        "version": __version__,
    }


@router.get("/metrics", response_class=Response, responses=answered())
async def metrics(request: Request) -> Response:
    """Prometheus text format."""
    telemetry = service_of(request).telemetry
    return Response(telemetry.render(), media_type=telemetry.content_type)


for _router, _path, _endpoint in (
    (router, "/health", health),
    (router, "/health/ready", ready),
    (info_router, "/info", info),
    (router, "/metrics", metrics),
):
    _router.head(_path, include_in_schema=False)(_endpoint)
