"""``zstc serve``: the HTTP service (needs the ``serve`` extra: fastapi, uvicorn, prometheus-client)."""

from __future__ import annotations

import logging
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from zstc.cli.root import app
from zstc.cli.options import (
    DEFAULT,
    BatchSize,
    Bf16,
    Device,
    EntailmentIndex,
    Family,
    MaxLength,
    Model,
    Pooling,
    PrecisionAuto,
    PromptStyle,
    RecheckMargin,
    Backend,
    TrustRemoteCode,
    ScorerOptions,
    ScoreType,
    Shortlist,
    typer_option,
)
from zstc.errors import Terminated
from zstc.server.settings import SERVE_OPTIONS as _SERVE
from zstc.server.settings import EngineConfig, Limits, ServeSettings


@app.command()
def serve(
    model: Model = DEFAULT,
    family: Family = None,
    *,
    pooling: Pooling = None,
    score_type: ScoreType = None,
    entailment_index: EntailmentIndex = None,
    prompt_style: PromptStyle = None,
    batch_size: BatchSize = None,
    precision: PrecisionAuto = None,
    bf16: Bf16 = None,
    device: Device = None,
    max_length: MaxLength = None,
    recheck_margin: RecheckMargin = None,
    backend: Backend = None,
    trust_remote_code: TrustRemoteCode = None,
    shortlist: Shortlist = None,
    host: Annotated[str, typer_option(_SERVE["host"])] = _SERVE["host"].default,
    port: Annotated[int, typer_option(_SERVE["port"])] = _SERVE["port"].default,
    calibration: Annotated[Optional[Path], typer_option(_SERVE["calibration"])] = _SERVE["calibration"].default,
    api_key: Annotated[Optional[str], typer_option(_SERVE["api_key"])] = _SERVE["api_key"].default,
    max_batch_pairs: Annotated[int, typer_option(_SERVE["max_batch_pairs"])] = _SERVE["max_batch_pairs"].default,
    max_wait_ms: Annotated[float, typer_option(_SERVE["max_wait_ms"])] = _SERVE["max_wait_ms"].default,
    max_queued_pairs: Annotated[int, typer_option(_SERVE["max_queued_pairs"])] = _SERVE["max_queued_pairs"].default,
    max_texts: Annotated[int, typer_option(_SERVE["max_texts"])] = _SERVE["max_texts"].default,
    max_labels: Annotated[int, typer_option(_SERVE["max_labels"])] = _SERVE["max_labels"].default,
    max_chars: Annotated[int, typer_option(_SERVE["max_chars"])] = _SERVE["max_chars"].default,
    max_request_pairs: Annotated[int, typer_option(_SERVE["max_request_pairs"])] = _SERVE["max_request_pairs"].default,
    max_body_bytes: Annotated[int, typer_option(_SERVE["max_body_bytes"])] = _SERVE["max_body_bytes"].default,
    max_body_seconds: Annotated[float, typer_option(_SERVE["max_body_seconds"])] = _SERVE["max_body_seconds"].default,
    label_cache_size: Annotated[int, typer_option(_SERVE["label_cache_size"])] = _SERVE["label_cache_size"].default,
    threads: Annotated[Optional[int], typer_option(_SERVE["threads"])] = _SERVE["threads"].default,
    protect_all: Annotated[bool, typer_option(_SERVE["protect_all"])] = _SERVE["protect_all"].default,
    cors_allow_origin: Annotated[
        Optional[list[str]],
        typer.Option(
            "--cors-allow-origin",
            help="An origin a browser may call the API from (CORS); repeat for several, '*' for any.",
        ),
    ] = None,
    drain_timeout: Annotated[float, typer_option(_SERVE["drain_timeout"])] = _SERVE["drain_timeout"].default,
    shutdown_delay: Annotated[float, typer_option(_SERVE["shutdown_delay"])] = _SERVE["shutdown_delay"].default,
    access_log: Annotated[bool, typer_option(_SERVE["access_log"])] = _SERVE["access_log"].default,
    log_format: Annotated[str, typer_option(_SERVE["log_format"])] = _SERVE["log_format"].default,
) -> None:
    """Serve zero-shot classification and reranking over HTTP.

    POST /classify (zstc and Hugging Face shapes), POST /rerank, GET /health, /health/ready, /info, /metrics, a
    playground at / and the API at /docs."""
    scoring = ScorerOptions.of(locals(), "auto")  # first: the scorer flags among the parameters
    from zstc.errors import ModelError

    try:
        import fastapi  # noqa: F401  # the app's, imported as the model loads: checked here, before the port opens
        import prometheus_client  # noqa: F401
        import uvicorn
    except ImportError as error:
        raise ModelError(
            f"zstc serve needs the serve extra ({error.name} is missing): pip install 'zstc[serve]'"
        ) from None

    # Checked against SERVE_OPTIONS; the CLI's error handler names the flags (--max-batch-pairs).
    settings = ServeSettings(
        limits=Limits(
            max_texts=max_texts,
            max_labels=max_labels,
            max_chars=max_chars,
            max_request_pairs=max_request_pairs,
            max_body_bytes=max_body_bytes,
            max_body_seconds=max_body_seconds,
        ),
        engine=EngineConfig(
            max_batch_pairs=max_batch_pairs,
            max_wait_ms=max_wait_ms,
            max_queued_pairs=max_queued_pairs,
            label_cache_size=label_cache_size,
            threads=threads,
        ),
        api_key=api_key,
        drain_timeout=drain_timeout,
        shutdown_delay=shutdown_delay,
        protect_all=protect_all,
        cors_allow_origins=tuple(cors_allow_origin or ()),
    )
    _check_address(host, port)  # before the model loads: a busy port should not cost a minute of loading
    _SERVE["log_format"].check("log_format", log_format)
    if log_format == "json" and access_log:
        from zstc.server.lifecycle import json_access_log

        json_access_log()
    from zstc.server.lifecycle import Launcher

    def build() -> Any:
        """Load the model (behind the open port: /health answers meanwhile) and build the app."""
        from zstc.api import Classifier
        from zstc.server.app import create_app
        from zstc.server.engine import bound_kernel_caches

        bound_kernel_caches()  # before the first forward pass (the warm-up below), or they are read unbounded
        classifier = Classifier(
            model, family=family, calibration=calibration, **scoring.kwargs(model=model, family=family)
        )
        from zstc.cli.verbosity import note

        for message in classifier.notes:
            note(message)
        if classifier.platt() is not None:  # not ignored without a word: the file is for multi-label requests only
            note(
                f"--calibration {calibration} is a platt calibration: multi-label requests use its probabilities, single-label "
                f"ones the {classifier.family} family's temperature ({classifier.temperature():g})"
            )
        classifier.scores(["warm-up"], ["a", "b"])  # load the model now, so a model that cannot load stops the server
        return create_app(classifier, settings)

    launcher = Launcher(build, model, family)

    class DrainingServer(uvicorn.Server):
        """SIGTERM: unready at once, serving on for --shutdown-delay, then the drain (the engine refuses new work with
        a 503 while uvicorn finishes what is in flight). SIGINT (Ctrl-C): the drain at once."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            delay = settings.shutdown_delay
            if sig == signal.SIGTERM and launcher.shutting_down and not launcher.draining:
                return  # the delay runs already (`timeout` sends its SIGTERM twice: to the process and its group)
            if sig != signal.SIGTERM or launcher.shutting_down or launcher.app is None or delay <= 0:
                launcher.begin_drain()
                super().handle_exit(sig, frame)
                return
            launcher.begin_shutdown()
            logging.getLogger("zstc.server").info(
                "SIGTERM: not ready; serving on for %gs (--shutdown-delay), then draining", delay
            )

            def drain() -> None:
                launcher.begin_drain()
                super(DrainingServer, self).handle_exit(sig, frame)

            timer = threading.Timer(delay, drain)
            timer.daemon = True
            timer.start()

    config = uvicorn.Config(
        launcher,
        host=host,
        port=port,
        timeout_graceful_shutdown=settings.drain_timeout,  # type: ignore[arg-type]  # a float works (asyncio timeout)
        access_log=access_log and log_format == "text",
        log_level="info",
    )
    server = DrainingServer(config)

    def failed() -> None:
        server.should_exit = True

    launcher.on_failure = failed
    try:
        server.run()  # after a SIGTERM/SIGINT, uvicorn re-raises it on its way out
    except KeyboardInterrupt as stop:  # zstc.errors.Terminated for SIGTERM
        terminated = isinstance(stop, Terminated)
        _leave_if_still_working(launcher, signal.SIGTERM if terminated else signal.SIGINT)
        if terminated:  # how a service is told to stop: drained in time (no batch cut off above), that is success
            return
        raise
    if launcher.failure is not None:
        raise launcher.failure
    _leave_if_still_working(launcher, None)


def _leave_if_still_working(launcher: Any, signum: int | None) -> None:
    """End the process at once when a batch outlived the drain, or the model was still loading: an interpreter that
    finalises while a thread is inside torch aborts (see :attr:`zstc.server.engine.BatchingEngine.model_running`)."""
    import os

    from zstc.errors import STOPS

    engine = launcher.engine
    if not (launcher.loading or (engine is not None and engine.model_running)):
        return
    if engine is not None and engine.model_running:
        logging.getLogger("zstc.server").warning(
            "a batch was still running at shutdown; stopping without waiting for it"
        )
    message, status = STOPS[signum] if signum is not None else ("", 0)
    if message:
        print(message, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _check_address(host: str, port: int) -> None:
    from zstc.errors import ZstcError

    if not 0 <= port <= 65535:
        raise ZstcError(f"--port must be between 0 and 65535, got {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise ZstcError(f"cannot listen on {host!r}: {error.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            raise ZstcError(f"cannot listen on {host}:{port}: {error.strerror}") from None
