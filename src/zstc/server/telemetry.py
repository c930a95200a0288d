"""Prometheus metrics of the service (``GET /metrics``), with prometheus-client.

The names follow text-embeddings-inference's ``te_*`` metrics (request count, failures by reason, queue
size, batch size and tokens, queue and inference time), under a ``zstc_`` prefix, with the batch measured
in (text, label) pairs because that is the unit of work here. Each app gets its own registry, so several
apps in one process (tests) do not clash.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client import CONTENT_TYPE_LATEST

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_PAIRS = (1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
_TOKENS = (64, 256, 1024, 4096, 16384, 65536, 262144)


class Telemetry:
    """The service's metrics; ``render()`` is the body of ``GET /metrics``."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        # The process (memory, CPU seconds, open files, start time) and Python (version, garbage collection), as
        # prometheus_client's default registry has them; registered here, so that each app has its own.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        r = self.registry
        self.requests = Counter("zstc_requests", "Requests received, by endpoint.", ["endpoint"], registry=r)
        self.successes = Counter(
            "zstc_request_successes", "Requests answered with 2xx, by endpoint.", ["endpoint"], registry=r
        )
        self.failures = Counter(
            "zstc_request_failures",
            "Requests not answered with 2xx, by endpoint and reason "
            "(validation, too_large, timeout, overloaded, unhealthy, unauthorized, cancelled, backend).",
            ["endpoint", "reason"],
            registry=r,
        )
        self.latency = Histogram(
            "zstc_request_duration_seconds",
            "Time from request to response, by endpoint.",
            ["endpoint"],
            buckets=_SECONDS,
            registry=r,
        )
        self.queue_time = Histogram(
            "zstc_queue_duration_seconds",
            "Time a request waited before its batch started.",
            buckets=_SECONDS,
            registry=r,
        )
        self.inference_time = Histogram(
            "zstc_inference_duration_seconds", "Model time of one batch.", buckets=_SECONDS, registry=r
        )
        self.queued_pairs = Gauge("zstc_queue_pairs", "(text, label) pairs waiting for the model.", registry=r)
        self.queued_requests = Gauge("zstc_queue_requests", "Requests waiting for the model.", registry=r)
        self.running_pairs = Gauge(
            "zstc_running_pairs",
            "(text, label) pairs of the batch the model is running "
            "(with zstc_queue_pairs, what --max-queued-pairs bounds).",
            registry=r,
        )
        self.running_requests = Gauge(
            "zstc_running_requests", "Requests in the batch the model is running.", registry=r
        )
        self.batch_pairs = Histogram("zstc_batch_pairs", "(text, label) pairs per batch.", buckets=_PAIRS, registry=r)
        self.batch_requests = Histogram(
            "zstc_batch_requests", "Requests per batch.", buckets=(1, 2, 4, 8, 16, 32, 64, 128), registry=r
        )
        self.batch_tokens = Histogram(
            "zstc_batch_tokens",
            "Tokens per batch: its texts and label descriptions as tokenized (with their prefixes; without "
            "special tokens, and before truncation), a cross-encoder's text once per label, an embedding model's cached "
            "descriptions not at all, plus what bf16's fp32 recheck read again. Cross-encoders and embedding models only.",
            buckets=_TOKENS,
            registry=r,
        )
        self.label_cache = Counter(
            "zstc_label_cache", "Label-embedding cache lookups (embedding models), by result.", ["result"], registry=r
        )

    def render(self) -> bytes:
        """The metrics in the Prometheus text format (``GET /metrics``)."""
        return generate_latest(self.registry)
