"""``zstc serve``'s settings and their defaults: request limits, the batching engine's, authentication and
draining. Their one home, read by the server and by the command's flags (``zstc serve --help`` shows these
defaults); this module imports neither FastAPI nor the model code, so the CLI reads it without the serve extra."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from zstc.errors import OptionError


@dataclass(frozen=True)
class EngineConfig:
    """How the engine batches and how much it queues (the ``zstc serve`` options of the same names)."""

    max_batch_pairs: int = 1024
    """(text, label) pairs per batch at most; a single larger request is a batch of its own."""
    max_wait_ms: float = 5.0
    """How long a batch may wait for more requests after its first one, when the model is idle."""
    max_queued_pairs: int = 32768
    """Pairs waiting or running at most; past it a request is refused with 429 and Retry-After."""
    label_cache_size: int = 4096
    """Embedding models: label-description embeddings kept (least recently used dropped first); in bf16 as many fp32
    ones again, for the recheck (:class:`zstc.server.engine.EmbeddingBackend`)."""
    threads: int | None = None
    """torch intra-op threads of the model thread; None: torch's default (one per core)."""

    def __post_init__(self) -> None:
        from zstc.validation import OptionSpec, check_options

        check_options(asdict(self), {
            "max_batch_pairs": OptionSpec(int, low=1), "max_queued_pairs": OptionSpec(int, low=1),
            "label_cache_size": OptionSpec(int, low=1), "max_wait_ms": OptionSpec(float, low=0),
            "threads": OptionSpec(int, low=1, allow_none=True),
        }, context="zstc serve")


@dataclass(frozen=True)
class Limits:
    """Published (``GET /info``) and enforced per request; past one the answer is 413."""

    max_texts: int = 128
    max_labels: int = 128
    max_chars: int = 10_000
    """Characters per text, label, description or rerank document."""
    max_request_pairs: int = 8192
    """(text, label) pairs per request."""
    max_body_bytes: int = 2_000_000
    """TEI's default ``--payload-limit``."""
    max_body_seconds: float = 30.0
    """How long a request's body may take to arrive once its headers have (408 past it): a client that stalls or
    trickles its body would otherwise hold its connection and a growing buffer for as long as it likes."""

    def __post_init__(self) -> None:
        from zstc.validation import OptionSpec, check_options

        specs = {name: OptionSpec(int, low=1) for name in asdict(self)}
        specs["max_body_seconds"] = OptionSpec(float, low=0, low_inclusive=False)
        check_options(asdict(self), specs, context="zstc serve")


@dataclass(frozen=True)
class ServeSettings:
    """How ``zstc serve`` runs: request limits, the batching engine's settings, authentication and draining."""

    limits: Limits = field(default_factory=Limits)
    engine: EngineConfig = field(default_factory=EngineConfig)
    api_key: str | None = None
    """Bearer token required by every endpoint except /health, /health/ready, /metrics, the docs and the playground page."""
    drain_timeout: float = 10.0
    """On SIGTERM, after ``shutdown_delay``: seconds to finish requests in flight and queued before stopping (uvicorn's
    graceful shutdown)."""
    protect_all: bool = False
    """With ``api_key``: /metrics, the docs and /openapi.json need the key too (only the health probes stay open)."""
    cors_allow_origins: tuple[str, ...] = ()
    """Origins a browser may call the API from (CORS); none by default."""
    shutdown_delay: float = 0.0
    """On SIGTERM: seconds to go on serving, unready, before the drain (see :mod:`zstc.server.lifecycle`)."""

    def __post_init__(self) -> None:
        from zstc.validation import OptionSpec, check_options

        check_options({"drain_timeout": self.drain_timeout, "shutdown_delay": self.shutdown_delay},
                      {"drain_timeout": OptionSpec(float, low=0), "shutdown_delay": OptionSpec(float, low=0)}, context="zstc serve")
        if self.protect_all and self.api_key is None:
            raise OptionError("protect_all needs an api_key (--api-key or ZSTC_API_KEY): without one nothing is "
                              "protected", "protect_all")
        if self.api_key is not None and not self.api_key.strip():  # an empty ZSTC_API_KEY would serve without authentication
            raise OptionError("api_key is empty: give a key, or leave --api-key and ZSTC_API_KEY unset to serve without one", "api_key")
        # A header carries bytes and the Gate compares stripped text: a key with surrounding whitespace (a newline
        # read from a file), a control character or a non-ASCII one (curl sends UTF-8, requests latin-1) would
        # turn every request away with a 401 that no client can fix.
        if self.api_key is not None and not (self.api_key == self.api_key.strip() and self.api_key.isascii() and self.api_key.isprintable()):
            raise OptionError("api_key must be printable ASCII without leading or trailing whitespace, as an "
                              "'Authorization: Bearer' header carries it", "api_key")
