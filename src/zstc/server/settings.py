"""``zstc serve``'s settings and their defaults: request limits, the batching engine's, authentication and
draining. Each is declared once, in :data:`SERVE_OPTIONS` (type, range, default, help, flag); the settings
dataclasses take their defaults and checks from it, and ``zstc serve``'s flags are made from it. This module
imports neither FastAPI nor the model code, so the CLI reads it without the serve extra."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from zstc.errors import OptionError
from zstc.validation import Choices, Interval, Option, check_options

BATCHING = "Batching and limits"
"""The ``zstc serve --help`` panel of the batching engine's settings and the request limits."""
_COUNT = Option(int, constraint=Interval(1), panel=BATCHING)

SERVE_OPTIONS: dict[str, Option] = {
    "host": Option(str, "127.0.0.1", help="Address to listen on (127.0.0.1: this machine only)."),
    "port": Option(int, 8000, help="Port to listen on."),  # checked with the address (zstc.cli.serve)
    "calibration": Option(
        Path,
        None,
        allow_none=True,
        flags=("--calibration",),
        help="A file written by `zstc calibrate --out`: its temperature gives the single-label probabilities; a "
        "Platt file, the multi-label ones (thresholds then apply to them).",
    ),
    "api_key": Option(
        str,
        None,
        allow_none=True,
        envvar="ZSTC_API_KEY",
        help="Require 'Authorization: Bearer KEY' (401 without); /health, /health/ready, /metrics, the docs and the "
        "playground (GET /) stay open.",
    ),
    # the batching engine (EngineConfig)
    "max_batch_pairs": _COUNT.but(default=1024, help="(text, label) pairs per batch formed across requests."),
    "max_wait_ms": Option(
        float,
        5.0,
        Interval(0),
        panel=BATCHING,
        help="How long an idle model waits for a batch to fill after its first request.",
    ),
    "max_queued_pairs": _COUNT.but(
        default=32768, help="Pairs queued or running at most; past it: 429 with Retry-After."
    ),
    # request limits (Limits)
    "max_texts": _COUNT.but(default=128, help="Texts per request (413 past it)."),
    "max_labels": _COUNT.but(default=128, help="Labels (or rerank documents) per request."),
    "max_chars": _COUNT.but(default=10_000, help="Characters per text, label, description or document."),
    "max_request_pairs": _COUNT.but(default=8192, help="(text, label) pairs per request."),
    "max_body_bytes": _COUNT.but(
        default=2_000_000,  # TEI's default --payload-limit
        help="Request body size (413 past it, from Content-Length before reading).",
    ),
    # A client that stalls or trickles its body would otherwise hold its connection and a growing buffer.
    "max_body_seconds": Option(
        float,
        30.0,
        Interval(0, closed="right"),
        panel=BATCHING,
        help="Seconds a request's body may take to arrive after its headers (408 past it).",
    ),
    # the batching engine again, in --help's order
    "label_cache_size": _COUNT.but(
        default=4096,
        help="Embedding models: label-description embeddings kept (in bf16, as many fp32 ones again for the recheck).",
    ),
    "threads": _COUNT.but(allow_none=True, help="torch threads of the model thread; default: one per core."),
    "protect_all": Option(
        bool,
        False,
        flags=("--protect-all",),
        help="With --api-key: /metrics, the docs and /openapi.json need the key too; only /health and "
        "/health/ready stay open.",
    ),
    "drain_timeout": Option(
        float,
        10.0,
        Interval(0),
        help="On SIGTERM, after --shutdown-delay: seconds to finish requests in flight and queued before stopping.",
    ),
    "shutdown_delay": Option(
        float,
        0.0,
        Interval(0),
        help="On SIGTERM: seconds to go on serving (with /health/ready 503 and 'Connection: close') "
        "before the drain, while a load balancer stops sending here (Kubernetes: the preStop "
        "window).",
    ),
    "access_log": Option(bool, True, help="Log every request.", flags=("--access-log/--no-access-log",)),
    "log_format": Option(
        str,
        "text",
        Choices(("text", "json"), meaning="log format"),
        help="text: uvicorn's access log; json: one JSON line per request on stderr (time, method, "
        "path, status, latency_ms, request_id, trace_id).",
    ),
}
"""Every ``zstc serve`` setting, declared once, by parameter name (in ``--help``'s order)."""


def _check(settings: object) -> None:
    """The fields of a settings dataclass checked against their :data:`SERVE_OPTIONS`."""
    values = asdict(settings)  # type: ignore[call-overload]  # a dataclass instance
    check_options(values, {name: SERVE_OPTIONS[name] for name in values}, context="zstc serve")


@dataclass(frozen=True)
class EngineConfig:
    """How the engine batches and how much it queues (the ``zstc serve`` options of the same names). Embedding models
    keep ``label_cache_size`` label-description embeddings (least recently used dropped first), in bf16 as many fp32
    ones again, for the recheck (:class:`zstc.server.engine.EmbeddingBackend`); a single request larger than
    ``max_batch_pairs`` is a batch of its own."""

    max_batch_pairs: int = SERVE_OPTIONS["max_batch_pairs"].default
    max_wait_ms: float = SERVE_OPTIONS["max_wait_ms"].default
    max_queued_pairs: int = SERVE_OPTIONS["max_queued_pairs"].default
    label_cache_size: int = SERVE_OPTIONS["label_cache_size"].default
    threads: int | None = SERVE_OPTIONS["threads"].default
    """torch intra-op threads of the model thread; None: torch's default (one per core)."""

    def __post_init__(self) -> None:
        _check(self)


@dataclass(frozen=True)
class Limits:
    """Published (``GET /info``) and enforced per request; past one the answer is 413 (408 for ``max_body_seconds``)."""

    max_texts: int = SERVE_OPTIONS["max_texts"].default
    max_labels: int = SERVE_OPTIONS["max_labels"].default
    max_chars: int = SERVE_OPTIONS["max_chars"].default
    max_request_pairs: int = SERVE_OPTIONS["max_request_pairs"].default
    max_body_bytes: int = SERVE_OPTIONS["max_body_bytes"].default
    max_body_seconds: float = SERVE_OPTIONS["max_body_seconds"].default

    def __post_init__(self) -> None:
        _check(self)


@dataclass(frozen=True)
class ServeSettings:
    """How ``zstc serve`` runs: request limits, the batching engine's settings, authentication and draining."""

    limits: Limits = field(default_factory=Limits)
    engine: EngineConfig = field(default_factory=EngineConfig)
    api_key: str | None = SERVE_OPTIONS["api_key"].default
    """Bearer token required by every endpoint except /health, /health/ready, /metrics, the docs and the playground page."""
    drain_timeout: float = SERVE_OPTIONS["drain_timeout"].default
    """On SIGTERM, after ``shutdown_delay``: seconds to finish requests in flight and queued before stopping (uvicorn's
    graceful shutdown)."""
    protect_all: bool = SERVE_OPTIONS["protect_all"].default
    """With ``api_key``: /metrics, the docs and /openapi.json need the key too (only the health probes stay open)."""
    cors_allow_origins: tuple[str, ...] = ()
    """Origins a browser may call the API from (CORS); none by default."""
    shutdown_delay: float = SERVE_OPTIONS["shutdown_delay"].default
    """On SIGTERM: seconds to go on serving, unready, before the drain (see :mod:`zstc.server.lifecycle`)."""

    def __post_init__(self) -> None:
        checked = ("drain_timeout", "shutdown_delay")
        check_options(
            {name: getattr(self, name) for name in checked},
            {name: SERVE_OPTIONS[name] for name in checked},
            context="zstc serve",
        )
        if self.protect_all and self.api_key is None:
            raise OptionError(
                "protect_all needs an api_key (--api-key or ZSTC_API_KEY): without one nothing is protected",
                "protect_all",
            )
        if (
            self.api_key is not None and not self.api_key.strip()
        ):  # an empty ZSTC_API_KEY would serve without authentication
            raise OptionError(
                "api_key is empty: give a key, or leave --api-key and ZSTC_API_KEY unset to serve without one",
                "api_key",
            )
        # A header carries bytes and the Gate compares stripped text: a key with surrounding whitespace (a newline
        # read from a file), a control character or a non-ASCII one (curl sends UTF-8, requests latin-1) would
        # turn every request away with a 401 that no client can fix.
        if self.api_key is not None and not (
            self.api_key == self.api_key.strip() and self.api_key.isascii() and self.api_key.isprintable()
        ):
            raise OptionError(
                "api_key must be printable ASCII without leading or trailing whitespace, as an "
                "'Authorization: Bearer' header carries it",
                "api_key",
            )
