"""The batching engine: requests queue on the event loop, one worker forms batches across them, one thread runs the model.

How it works, and where each idea comes from:

* **One model thread.** Every model call runs in a single dedicated (daemon) thread, never in FastAPI's
  thread pool, so a scorer is never called from two threads at once and need not be thread-safe; the event
  loop stays free to parse and answer requests while the model computes.
* **Batches across requests, by a budget of (text, label) pairs.** A request of 3 texts x 10 labels is 30
  pairs. The worker takes queued requests, oldest first, until the batch holds ``max_batch_pairs`` (a request
  larger than the budget gets a batch of its own). This is Ray Serve's ``@serve.batch(max_batch_size,
  batch_wait_timeout_s)``: a batch closes when it is full or when ``max_wait_ms`` have passed since its first
  request, whichever comes first. Requests that arrive while the model is busy simply wait and are taken
  together as soon as it is free, as infinity and text-embeddings-inference (TEI) do ("dynamic batching").
  Within a batch, the scorer still cuts forward passes by its own token budget (TEI's ``--max-batch-tokens``;
  :mod:`zstc.scorers.pairs`).
* **What a batch shares.** Cross-encoders (NLI, rerankers) score the flattened pairs of all requests in one
  :meth:`score_pairs` call, sorted by length across requests, each distinct text and label tokenized once.
  Embedding models encode the texts of all requests together and keep label-description embeddings in a
  bounded LRU cache, so a label set seen before costs nothing; in bf16, each request's texts with a near decision
  are embedded again in fp32 (with fp32 label embeddings, cached apart), as the library does. Other families
  (yes/no, LLM) are called once per distinct label set in the batch, with all texts that share it; the yes/no
  scorer keeps its shared-prefix cache. Behind ``--shortlist``, each text's labels are shortlisted by the bi-encoder and the
  shortlisted pairs of all requests go to the cross-encoder in one run. Labels with several descriptions (polarity
  labels) are averaged after the batch's run, in the model thread; in bf16 the averages of the whole batch are then
  rechecked together, on the average, as the library rechecks one call's (:meth:`Backend.answer`).
* **Backpressure counted in pairs.** TEI caps in-flight work (``--max-concurrent-requests``) and answers 429
  ``{"error_type": "overloaded"}`` past it; Ray Serve's ``max_queued_requests`` answers 503 or 429 with
  ``Retry-After``. Here the cap is ``max_queued_pairs`` of work waiting or running, because a request of
  64 x 64 pairs is not the same load as one of 1 x 2. :meth:`BatchingEngine.submit` raises :class:`Overloaded`
  with a Retry-After estimated from the measured pairs per second.
* **A request that fails fails alone.** When a batch raises, each of its requests is run again on its own,
  so one request's bad input (a label description too long for the model) never fails its neighbours.
* **Cancelled work is dropped.** A request whose client went away is removed from the queue; if its batch is
  already running, its rows are discarded.
* **Freed memory goes back to the system.** Every batch has another shape, so its activations (hundreds of
  MB for a full batch) are freed into glibc's heap in pieces that the next batch's tensors do not fit, and RSS
  grows without end. When the model thread has no call waiting it runs ``malloc_trim(0)``, which returns the
  free pages in milliseconds.
* **Kernel caches are bounded.** Under bf16 autocast on a CPU, every new matrix shape gets oneDNN kernels,
  kept in two caches of 1,024 entries each (oneDNN's primitive cache and ideep's, read from
  ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` and ``LRU_CACHE_CAPACITY``); a server sees a new shape in nearly every
  batch, so RSS climbs for a thousand batches. The engine sets both to :data:`KERNEL_CACHE_CAPACITY` unless the
  environment already does: one forward pass has a handful of matrix shapes, so a small cache still serves every
  layer, and a kernel rebuilt on a miss computes the same numbers. The variables are read once, at the process's
  first oneDNN kernel, which is why ``zstc serve`` sets them before it loads the model and the engine when it is
  built, before its warm-up pass (too late, for the shared cache, if the process ran a bf16 forward pass earlier).

What each of these saved, measured: docs/performance.md.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from zstc.errors import NonFiniteScoresError
from zstc.hypotheses.variants import recheck_means, rechecks_average
from zstc.scorers.base import (
    LruCache,
    ScoreResult,
    capabilities,
    check_finite_scores,
    rechecks_thresholds,
    score_with_notes,
)
from zstc.scorers.recheck import pair_cuts
from zstc.server.settings import EngineConfig


logger = logging.getLogger("zstc.server")

EngineState = Literal["loading", "ready", "draining", "stopped", "failed"]


class Overloaded(Exception):
    """The queue holds as much work as it may; retry after ``retry_after`` seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Unavailable(Exception):
    """The engine takes no work: the model is loading, failed to load, or the server is shutting down."""


@dataclass(eq=False)
class ScoreJob:
    """One request's work: its texts, each with its label descriptions (as ``Classifier.scores`` takes them)."""

    texts: list[str]
    label_sets: list[tuple[str, ...]]
    future: asyncio.Future[list[np.ndarray]]
    thresholds: list[tuple[float, ...] | None]
    """Per text: its multi-label cut per label, for bf16's recheck of the scores near it (None: argmax)."""
    margins: list[tuple[float, ...] | None]
    """Per text: the embedding family's default-rule margin per label (``nan``: a label with a cut of its own;
    None: no margin rule), for bf16's recheck of the texts near their best minus it."""
    variants: list[int] = field(default_factory=list)
    """Per text: how many descriptions each of its labels has (zstc's polarity labels: several, variant after variant,
    :func:`zstc.api.describe_labels`), whose scores are averaged into one per label; empty: one each."""
    pairs: int = 0
    enqueued: float = field(default_factory=time.perf_counter)
    started: float | None = None
    inference_s: float = 0.0
    cancelled: bool = False
    truncated: tuple[int, ...] = ()
    """Once scored: the positions of this job's texts that the model cut to its token limit (what the request's
    answer says of them: its neighbours in the batch have their own)."""

    def __post_init__(self) -> None:
        self.pairs = sum(len(labels) for labels in self.label_sets)
        self.variants = self.variants or [1] * len(self.label_sets)

    @property
    def queue_s(self) -> float:
        """Seconds the job waited for the model thread (so far, while it still waits): the ``x-queue-time`` header (in ms) and the queue-time histogram."""
        return (self.started or time.perf_counter()) - self.enqueued


# -- the model thread -------------------------------------------------------------------------------------------


KERNEL_CACHE_CAPACITY = 16
"""Entries in each of oneDNN's kernel caches in a server process (see "Kernel caches" above)."""

KERNEL_CACHE_VARIABLES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")


def bound_kernel_caches(capacity: int = KERNEL_CACHE_CAPACITY) -> dict[str, str]:
    """Bound oneDNN's kernel caches unless the environment sets them; returns the values in force.

    Takes effect only before the process's first oneDNN kernel is built (they are read then, once).
    """
    for name in KERNEL_CACHE_VARIABLES:
        os.environ.setdefault(name, str(capacity))
    return {name: os.environ[name] for name in KERNEL_CACHE_VARIABLES}


def _heap_trimmer() -> Callable[[], object] | None:
    """glibc's ``malloc_trim(0)``, or None where the C library has none (macOS, musl, Windows)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


STOP_GRACE_S = 2.0
"""How long :meth:`BatchingEngine.stop` waits for a model call in progress (a batch that outlived the drain)."""


class ModelThread:
    """A single daemon thread that runs every model call, in order.

    A daemon thread (not a ``ThreadPoolExecutor``, whose threads the interpreter joins at exit) so that a
    forward pass in progress never keeps a stopped server alive.
    """

    def __init__(self, threads: int | None = None) -> None:
        self._calls: queue.SimpleQueue[
            tuple[Callable[..., Any], tuple[Any, ...], concurrent.futures.Future[Any]] | None
        ] = queue.SimpleQueue()
        self._threads = threads
        self._trim_heap = _heap_trimmer()
        self.torch_threads: int | None = None
        """torch's intra-op thread count as seen from inside the model thread."""
        self._thread = threading.Thread(target=self._run, name="zstc-model", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Queue ``fn(*args)`` behind the calls already queued; its future holds the result or the exception."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._calls.put((fn, args, future))
        return future

    def stop(self) -> None:
        """End the thread once the calls queued before this one have run."""
        self._calls.put(None)

    @property
    def running(self) -> bool:
        """Whether the thread still runs (after :meth:`stop`: a model call that has not returned yet)."""
        return self._thread.is_alive()

    def _run(self) -> None:
        import torch

        # torch's intra-op thread count is per thread (OpenMP's is a per-thread setting): set it here, in the
        # thread that runs the model, not in the thread that built the server.
        if self._threads is not None:
            torch.set_num_threads(self._threads)
        self.torch_threads = torch.get_num_threads()
        while (call := self._calls.get()) is not None:
            fn, args, future = call
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as error:  # handed to the waiting coroutine, which decides
                future.set_exception(error)
            if self._trim_heap is not None and self._calls.empty():  # idle: see "Freed memory" above
                self._trim_heap()


# -- backends: how one family scores a batch of jobs ----------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """What one :meth:`Backend.score` call answers: the rows, and what :meth:`Backend.count_tokens` needs to
    know about this call (a backend keeps nothing of a call on itself: a failed batch's jobs are scored again
    one by one, and each call counts only what it read)."""

    rows: list[list[np.ndarray]]
    """Per job, one float32 row per text: from :meth:`Backend.score`, its descriptions' scores in their order; from
    :meth:`Backend.answer`, its labels' (the mean of their variants)."""
    encoded: tuple[str, ...] = ()
    """Embedding models: the label descriptions (as the model reads them) this call encoded, the ones not
    found in the label cache; the others cost the model nothing."""
    truncated: tuple[tuple[int, ...], ...] = ()
    """Per job, the positions of its texts the model cut to its token limit (:attr:`ScoreResult.truncated`, taken
    apart by job); empty for a scorer that does not say which (a user's own object that fills no
    :attr:`ScoreResult.truncated`)."""
    reread: tuple[str, ...] = ()
    """bf16: the strings (as the model reads them) its fp32 recheck read again, once per reading: each rescored pair's
    text and description (cross-encoders), each text embedded again and each description whose fp32 embedding was not
    cached (embedding models). The batch-tokens metric counts them with the first pass."""


Decision = tuple[tuple[float, ...] | None, tuple[float, ...] | None, bool]
"""How one text's descriptions are decided on in the backend's call: their multi-label cuts and default-rule margins
(one per description, or None) and whether bf16 rechecks them there at all."""


class Backend:
    """Scores a batch of jobs in the model thread: per job, one row of scores per text."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer

    def answer(self, jobs: Sequence[ScoreJob]) -> Scored:
        """What each job is answered: :meth:`score`'s rows, with each text whose labels have several descriptions
        given the mean of its variants (one score per label). Where the scorer rechecks an average on the average
        (:func:`~zstc.hypotheses.variants.rechecks_average`: bf16 with an fp32 twin), as the library does, the means of
        the whole batch go through :func:`~zstc.hypotheses.variants.recheck_means` (by each text's own cuts and
        margins), the texts it picks rescored whole in fp32 (:meth:`score_exactly`) and what they read counted in
        :attr:`Scored.reread`."""
        scored = self.score(jobs)
        rows = [list(job_rows) for job_rows in scored.rows]
        averaged = [(j, i) for j, job in enumerate(jobs) for i, count in enumerate(job.variants) if count > 1]
        for j, i in averaged:
            rows[j][i] = _variant_mean(rows[j][i], jobs[j].variants[i])
        if not averaged or not self.averages_apart:
            return replace(scored, rows=rows)
        reread: list[str] = []

        def rescore(which: np.ndarray) -> list[np.ndarray]:
            chosen = [averaged[int(k)] for k in which]
            exact, read = self.score_exactly(
                [jobs[j].texts[i] for j, i in chosen],
                [jobs[j].label_sets[i] for j, i in chosen],
                [jobs[j].variants[i] for j, i in chosen],
            )
            reread.extend(read)
            return [_variant_mean(row, jobs[j].variants[i]) for (j, i), row in zip(chosen, exact)]

        means, _ = recheck_means(
            [rows[j][i] for j, i in averaged],
            [jobs[j].thresholds[i] for j, i in averaged],
            [jobs[j].margins[i] for j, i in averaged],
            self.scorer.recheck_margin,
            rescore,
        )
        for (j, i), mean in zip(averaged, means):
            rows[j][i] = mean
        return replace(scored, rows=rows, reread=scored.reread + tuple(reread))

    @property
    def averages_apart(self) -> bool:
        """Whether :meth:`answer` rechecks averages of description variants on the average, so that :meth:`score`
        leaves their descriptions without a recheck of their own (paid twice, and on no variant's decision)."""
        return rechecks_average(self.scorer)

    def decisions(self, jobs: Sequence[ScoreJob]) -> list[Decision]:
        """Per text of the batch (every job's, in order), how :meth:`score` has its descriptions decided on: a text with
        one description per label by its cuts and margins; an average of variants not at all where :meth:`answer`
        rechecks the average, else by its descriptions' near ties (fp32 rechecks nothing; a cascade, which has no fp32
        twin, rechecks each variant's, scored apart by :class:`MatrixBackend` as the library's cascade scores them)."""
        apart = self.averages_apart
        return [
            (job.thresholds[i], job.margins[i], True) if count == 1 else (None, None, not apart)
            for job in jobs
            for i, count in enumerate(job.variants)
        ]

    def score(self, jobs: Sequence[ScoreJob]) -> Scored:
        """Per job, one float32 row per text (:attr:`Scored.rows`: one score per description, variant after variant),
        with what the call read."""
        raise NotImplementedError

    def score_exactly(
        self, texts: list[str], label_sets: list[tuple[str, ...]], variants: list[int]
    ) -> tuple[list[np.ndarray], tuple[str, ...]]:
        """Each text's fp32 row against its own descriptions (``variants[i]`` per label, each variant scored apart as
        :meth:`MatrixBackend.score` scores them), by the scorer's fp32 twin (which shares its model), and what it read
        for :attr:`Scored.reread` (nothing here: a backend that counts tokens says)."""
        exact = self.scorer.twin(precision="fp32")
        parts = _variant_parts(label_sets, variants)
        pieces = [[np.empty(0, np.float32)] * count for count in variants]
        for labels, which in _positions_by([labels for _, _, labels in parts]).items():
            for q, row in zip(which, score_with_notes(exact, [texts[parts[q][0]] for q in which], list(labels)).scores):
                pieces[parts[q][0]][parts[q][1]] = row
        return [np.concatenate(row) for row in pieces], ()

    def count_tokens(self, jobs: Sequence[ScoreJob], scored: Scored) -> int | None:
        """Tokens the model read for these jobs in the call that answered ``scored`` (for the batch-tokens
        metric), or None when unknown."""
        return None

    def _loaded_model(self) -> Any:
        """The scorer's loaded model (its ``tokenizer`` and ``tokenizer_lock``), or None for a scorer without one."""
        try:
            loaded = self.scorer.loaded
        except Exception:  # a scorer without one; the metric is then left out
            return None
        return loaded if hasattr(loaded, "tokenizer") and hasattr(loaded, "tokenizer_lock") else None

    def _formatted(self, jobs: Sequence[ScoreJob]) -> tuple[list[str], list[tuple[str, ...]]]:
        """The jobs' texts and label descriptions as the model reads them (:meth:`_format`)."""
        return self._format(
            [text for job in jobs for text in job.texts], [labels for job in jobs for labels in job.label_sets]
        )

    def _format(
        self, texts: Sequence[str], label_sets: Sequence[tuple[str, ...]]
    ) -> tuple[list[str], list[tuple[str, ...]]]:
        """Texts and label descriptions as the model reads them (the registry's query/document prefixes)."""
        spec = self.scorer.spec
        return [spec.format_query(text) for text in texts], [
            tuple(spec.format_document(d) for d in labels) for labels in label_sets
        ]


@dataclass(frozen=True)
class Call:
    """One ``score`` call of a :class:`MatrixBackend`: texts sharing their labels, multi-label cuts and margins."""

    texts: list[str]
    labels: list[str]
    cuts: tuple[float, ...] | None
    """One multi-label cut per label (:attr:`ScoreJob.thresholds`), or None."""
    margins: tuple[float, ...] | None
    """One default-rule margin per label (:attr:`ScoreJob.margins`), or None."""
    recheck: bool = True
    """Whether bf16 rechecks this call's decisions (not an average of variants, rechecked on the average: :meth:`Backend.answer`)."""


def _variant_mean(row: np.ndarray, variants: int) -> np.ndarray:
    """A row of descriptions, variant after variant -> one score per label, the mean of its variants (float32)."""
    return row.reshape(variants, -1).mean(axis=0)


def _variant_parts(
    label_sets: Sequence[tuple[str, ...]], variants: Sequence[int]
) -> list[tuple[int, int, tuple[str, ...]]]:
    """Each label set's variants (its descriptions, variant after variant) as ``(position, variant, descriptions)``."""
    return [
        (p, k, labels[k * len(labels) // count : (k + 1) * len(labels) // count])
        for p, (labels, count) in enumerate(zip(label_sets, variants))
        for k in range(count)
    ]


def _positions_by(keys: Sequence[Any]) -> dict[Any, list[int]]:
    """Each distinct key (first seen first) -> the positions holding it."""
    positions: dict[Any, list[int]] = {}
    for position, key in enumerate(keys):
        positions.setdefault(key, []).append(position)
    return positions


def _split_rows(jobs: Sequence[ScoreJob], rows: list[np.ndarray]) -> list[list[np.ndarray]]:
    per_job, start = [], 0
    for job in jobs:
        per_job.append(rows[start : start + len(job.texts)])
        start += len(job.texts)
    return per_job


def _truncated_per_job(jobs: Sequence[ScoreJob], flat: set[int]) -> tuple[tuple[int, ...], ...]:
    """Positions in the batch's flattened texts (every job's, in order) -> per job, the positions within its own."""
    per_job, start = [], 0
    for job in jobs:
        per_job.append(tuple(i for i in range(len(job.texts)) if start + i in flat))
        start += len(job.texts)
    return tuple(per_job)


class PairBackend(Backend):
    """Cross-encoders: every (text, description) pair of every job, scored in one ``score_pairs`` call."""

    def score(self, jobs: Sequence[ScoreJob]) -> Scored:
        """Every (text, description) pair of the batch's jobs in one ``score_pairs`` run, split back into each job's rows."""
        texts, label_sets = self._formatted(jobs)
        firsts = [text for text, labels in zip(texts, label_sets) for _ in labels]
        seconds = [label for labels in label_sets for label in labels]
        # Each text of each request is one decision among its own labels (bf16 rechecks its near ties in fp32),
        # even when another request sent the same text with other labels; a multi-label text's pairs are
        # decided by their cuts instead (bf16 rechecks the pairs near them).
        counts = [len(labels) for labels in label_sets]
        decisions = self.decisions(jobs)
        owners = np.repeat(np.arange(len(label_sets)), counts)
        # A text whose average is rechecked after the batch (Backend.answer): each of its pairs a group of its own,
        # a decision of one, which no recheck picks (never a near tie, never among the closest calls).
        groups = owners.copy()
        alone = np.repeat(np.array([not decided for _, _, decided in decisions], dtype=bool), counts)
        groups[alone] = len(label_sets) + np.arange(int(alone.sum()))
        cuts = pair_cuts([cut for cut, _, _ in decisions], counts)
        given = {"groups": groups, **({"cuts": cuts} if cuts is not None else {})}
        result = self.scorer.score_pairs_with_notes(
            firsts, seconds, **given
        )  # PairBackend: a scorer declaring pair_scoring
        scores = result.scores
        bounds = np.cumsum([0, *counts])
        # A text is truncated for its request when any of its own pairs was (another request may pair the same text
        # with a longer description, which leaves it less room).
        truncated = {int(owners[pair]) for pair in result.truncated}
        rescored = dict.fromkeys(
            (firsts[pair], seconds[pair]) for pair in result.rescored
        )  # a pair twice is rescored once
        return Scored(
            _split_rows(jobs, [scores[bounds[i] : bounds[i + 1]] for i in range(len(label_sets))]),
            truncated=_truncated_per_job(jobs, truncated),
            reread=tuple(s for pair in rescored for s in pair),
        )

    def score_exactly(
        self, texts: list[str], label_sets: list[tuple[str, ...]], variants: list[int]
    ) -> tuple[list[np.ndarray], tuple[str, ...]]:
        """:meth:`Backend.score_exactly` (a pair's score is its own, whatever the variants): every text's pairs in one
        ``score_pairs`` run of the fp32 twin; what it read is each distinct pair's text and description, as the model
        reads them."""
        formatted, described = self._format(texts, label_sets)
        firsts = [text for text, labels in zip(formatted, described) for _ in labels]
        seconds = [label for labels in described for label in labels]
        scores = self.scorer.twin(precision="fp32").score_pairs(firsts, seconds)
        bounds = np.cumsum([0, *(len(labels) for labels in described)])
        return (
            [scores[bounds[i] : bounds[i + 1]] for i in range(len(texts))],
            tuple(s for pair in dict.fromkeys(zip(firsts, seconds)) for s in pair),
        )

    def count_tokens(self, jobs: Sequence[ScoreJob], scored: Scored) -> int | None:
        """Tokens the batch's pairs hold: each text once per label, plus each description, and bf16's rescored pairs
        again (None before the model loads)."""
        loaded = self._loaded_model()
        if loaded is None:
            return None
        texts, label_sets = self._formatted(jobs)
        length = _token_lengths(loaded, [*texts, *(d for labels in label_sets for d in labels), *scored.reread])
        return sum(
            length[text] * len(labels) + sum(length[d] for d in labels) for text, labels in zip(texts, label_sets)
        ) + sum(length[s] for s in scored.reread)


class MatrixBackend(Backend):
    """Any scorer: one ``score(texts, labels)`` call per distinct label set (per variant of one), with every text that has it."""

    def score(self, jobs: Sequence[ScoreJob]) -> Scored:
        """The batch's texts grouped by label set (and multi-label cuts where the scorer uses them), one score call per group."""
        flat_texts = [text for job in jobs for text in job.texts]
        variants = [count for job in jobs for count in job.variants]
        decisions = self.decisions(jobs)
        # A label set's variants (polarity labels) are scored apart, one call each, as the library scores them: an LLM
        # lists one variant's options in its prompt (a distribution over them), a cascade shortlists among one variant's.
        parts = _variant_parts([labels for job in jobs for labels in job.label_sets], variants)
        # Multi-label cuts and margins split a call only for a scorer that uses them (an embedding model; a
        # cross-encoder behind a shortlist).
        uses_cuts = rechecks_thresholds(self.scorer)
        groups = _positions_by(
            [(labels, *(decisions[p] if uses_cuts else (None, None, decisions[p][2]))) for p, _, labels in parts]
        )
        results, encoded, reread = self._score_calls(
            [
                Call([flat_texts[parts[q][0]] for q in which], list(labels), cut, margin, decided)
                for (labels, cut, margin, decided), which in groups.items()
            ]
        )
        pieces = [[np.empty(0, np.float32)] * count for count in variants]
        truncated: set[int] = set()
        for which, result in zip(groups.values(), results):
            for q, row in zip(which, result.scores):
                pieces[parts[q][0]][parts[q][1]] = row
            truncated.update(parts[which[row]][0] for row in result.truncated)
        return Scored(
            _split_rows(jobs, [np.concatenate(row) for row in pieces]),
            encoded,
            truncated=_truncated_per_job(jobs, truncated),
            reread=reread,
        )

    def _score_calls(self, calls: list[Call]) -> tuple[list[ScoreResult], tuple[str, ...], tuple[str, ...]]:
        """One result per call (its matrix, and the rows it truncated), the label descriptions encoded apart from a
        cache (:attr:`Scored.encoded`) and what bf16's recheck read again (:attr:`Scored.reread`): only the embedding
        backend knows the last two."""
        plain = self.scorer.twin(recheck_margin=0.0) if not all(call.recheck for call in calls) else self.scorer
        return (
            [
                score_with_notes(
                    self.scorer if call.recheck else plain,
                    call.texts,
                    call.labels,
                    thresholds=call.cuts,
                    margins=call.margins,
                )
                for call in calls
            ],
            (),
            (),
        )


class CascadeBackend(MatrixBackend):
    """A scorer behind a shortlist (``--shortlist``): each text's labels shortlisted by the bi-encoder, then
    the shortlisted pairs of every request of the batch scored in one run of the cross-encoder
    (:meth:`zstc.scorers.cascade.CascadeScorer.score_requests`); other families run per label set."""

    def _score_calls(self, calls: list[Call]) -> tuple[list[ScoreResult], tuple[str, ...], tuple[str, ...]]:
        # Margins reach an embedding main scorer (the default rule is its family's); a cross-encoder takes cuts only.
        results = self.scorer.score_requests(
            [(call.texts, call.labels) for call in calls],
            thresholds=[call.cuts for call in calls],
            margins=[call.margins for call in calls],
        )
        return list(results), (), ()


class EmbeddingBackend(MatrixBackend):
    """Embedding models: the texts of all jobs encoded in one run, and each label set's embeddings taken from a
    bounded LRU cache of one embedding per label description, so that a label set is free once each of its
    descriptions has been seen, whatever set they came in
    (:meth:`zstc.scorers.embedding.EmbeddingScorer.score_requests`)."""

    def __init__(self, scorer: Any, cache_size: int, on_lookup: Callable[[int, int], None] | None = None) -> None:
        super().__init__(scorer)
        self.label_cache: LruCache[Any] = LruCache(cache_size)
        self.fp32_label_cache: LruCache[Any] = LruCache(cache_size)
        """bf16's recheck: the fp32 embeddings of the descriptions of the texts it embeds again (filled only then)."""
        self._on_lookup = on_lookup

    def _score_calls(self, calls: list[Call]) -> tuple[list[ScoreResult], tuple[str, ...], tuple[str, ...]]:
        spec = self.scorer.spec
        described = dict.fromkeys(spec.format_document(label) for call in calls for label in call.labels)
        encoded = tuple(d for d in described if d not in self.label_cache)  # this call's: returned, never kept
        fp32_uncached = [d for d in described if d not in self.fp32_label_cache]
        hits, misses = self.label_cache.hits, self.label_cache.misses
        # Each call is a request's decision: in bf16 its texts near one are embedded again in fp32, as
        # Classifier.predict and predict_multi_label do, so the service decides as they do at the same precision.
        results = self.scorer.score_requests(
            [(call.texts, call.labels) for call in calls],
            label_cache=self.label_cache,
            recheck=[call.recheck for call in calls],
            thresholds=[call.cuts for call in calls],
            margins=[call.margins for call in calls],
            fp32_label_cache=self.fp32_label_cache,
        )
        if self._on_lookup is not None:  # only the model thread uses this cache, so the differences are this batch's
            self._on_lookup(self.label_cache.hits - hits, self.label_cache.misses - misses)
        # bf16's recheck: each call's rescored texts embedded again, and the descriptions it found no fp32 embedding for
        # (only this thread fills that cache, so those now in it were encoded by this call).
        reread = [spec.format_query(call.texts[row]) for call, result in zip(calls, results) for row in result.rescored]
        reread += [d for d in fp32_uncached if d in self.fp32_label_cache]
        return list(results), encoded, tuple(reread)

    def score_exactly(
        self, texts: list[str], label_sets: list[tuple[str, ...]], variants: list[int]
    ) -> tuple[list[np.ndarray], tuple[str, ...]]:
        """:meth:`Backend.score_exactly` (a cosine is its pair's own, whatever the variants): the texts embedded in one
        fp32 run of the twin, their descriptions' fp32 embeddings from the recheck's cache (filled as it misses); what
        it read is the texts and the descriptions it found no fp32 embedding for."""
        formatted, described = self._format(texts, label_sets)
        uncached = [
            d for d in dict.fromkeys(d for labels in described for d in labels) if d not in self.fp32_label_cache
        ]
        results = self.scorer.twin(precision="fp32").score_requests(
            list(zip(([text] for text in texts), label_sets)), label_cache=self.fp32_label_cache
        )
        return [result.scores[0] for result in results], (*formatted, *uncached)

    def count_tokens(self, jobs: Sequence[ScoreJob], scored: Scored) -> int | None:
        """Tokens encoded for the batch: its texts, the descriptions not found in the label cache, and what bf16's recheck
        embedded again (None before the model loads)."""
        loaded = self._loaded_model()
        if loaded is None:
            return None
        texts, _ = self._formatted(jobs)
        # The distinct texts are encoded once; label descriptions are read only when the call found them uncached; what
        # bf16's recheck embedded again counts each time.
        reread = _token_lengths(loaded, list(scored.reread))
        return (
            sum(_token_lengths(loaded, texts).values())
            + sum(_token_lengths(loaded, list(scored.encoded)).values())
            + sum(reread[s] for s in scored.reread)
        )


def _token_lengths(loaded: Any, strings: list[str]) -> dict[str, int]:
    """Each distinct string's token count, by ``loaded``'s tokenizer under its lock: the labels' read-apart check
    uses it from request threads while this runs on the model thread."""
    distinct = list(dict.fromkeys(strings))
    if not distinct:
        return {}
    with loaded.tokenizer_lock:
        ids = loaded.tokenizer(distinct, add_special_tokens=False)["input_ids"]
    return {s: len(i) for s, i in zip(distinct, ids)}


def backend_for(scorer: Any, config: EngineConfig, on_lookup: Callable[[int, int], None] | None = None) -> Backend:
    """The backend that batches best for this scorer's family."""
    from zstc.scorers.cascade import CascadeScorer, flattens_to_pairs

    # By what the scorer declares (`capabilities`), never by probing its attributes. Pairs only for the families whose
    # pair scores are their grid's (a yes/no reranker scores pairs too, but cuts a long text otherwise than its grid,
    # which Classifier.predict gives).
    offered = capabilities(scorer)
    if isinstance(scorer, CascadeScorer):
        return CascadeBackend(scorer)
    if offered.pair_scoring and flattens_to_pairs(getattr(scorer, "family", None)):
        return PairBackend(scorer)
    if offered.request_batching:
        return EmbeddingBackend(scorer, config.label_cache_size, on_lookup)
    return MatrixBackend(scorer)


# -- the engine ----------------------------------------------------------------------------------------------------


class BatchingEngine:
    """An asyncio front (submit, cancel, drain) to one model thread that scores batches formed across requests.

    Create it, call :meth:`start` from the running event loop, :meth:`submit` jobs and await their
    futures, and :meth:`stop` at shutdown. ``telemetry`` (a :class:`zstc.server.telemetry.Telemetry`) is
    optional.
    """

    def __init__(self, scorer: Any, config: EngineConfig | None = None, telemetry: Any = None) -> None:
        self.kernel_caches = bound_kernel_caches()  # before the warm-up's first forward pass: see "Kernel caches"
        self.scorer = scorer
        self.config = config or EngineConfig()
        self.telemetry = telemetry
        self.backend = backend_for(scorer, self.config, self._count_cache_lookups if telemetry is not None else None)
        self.state: EngineState = "loading"
        self.failure: str | None = None
        self._pending: collections.deque[ScoreJob] = collections.deque()
        self._running: list[ScoreJob] = []
        """The batch in the model thread (or the last one, all answered)."""
        self._pending_pairs = 0
        self._running_pairs = 0
        self._pairs_per_second: float | None = None
        self._wakeup: asyncio.Event | None = None
        self._thread: ModelThread | None = None
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the model thread and the batching worker, and warm up (a tiny forward pass) in the background."""
        self._wakeup = asyncio.Event()
        self._thread = ModelThread(self.config.threads)
        self._tasks = [asyncio.create_task(self._warm_up()), asyncio.create_task(self._run())]

    @property
    def torch_threads(self) -> int | None:
        """The torch threads of the scoring thread (None before it starts)."""
        return self._thread.torch_threads if self._thread else None

    async def _warm_up(self) -> None:
        assert self._thread is not None
        job = ScoreJob(["warm-up"], [("a", "b")], asyncio.get_running_loop().create_future(), [None], [None])
        try:
            await asyncio.wrap_future(self._thread.submit(self.backend.answer, [job]))
        except Exception as error:
            self.state, self.failure = "failed", f"{type(error).__name__}: {error}"
            logger.error("the model failed its warm-up forward pass: %s", self.failure)
            return
        if self.state == "loading":
            self.state = "ready"

    def begin_drain(self) -> None:
        """Take no new work; what is queued still runs (SIGTERM)."""
        if self.state in ("loading", "ready"):
            self.state = "draining"

    async def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Stop the worker and the model thread; requests still queued, or in a batch still running, get
        :class:`Unavailable`. Waits up to ``grace`` seconds for a model call in progress to return (see
        :attr:`model_running`)."""
        self.state = "stopped"
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for job in [*self._running, *self._pending]:
            if not job.future.done():
                job.future.set_exception(Unavailable("the server is shutting down"))
        self._pending.clear()
        self._pending_pairs = 0
        if self._thread is not None:
            self._thread.stop()
            deadline = time.monotonic() + grace
            while self._thread.running and time.monotonic() < deadline:
                await asyncio.sleep(0.02)

    @property
    def model_running(self) -> bool:
        """Whether a model call is still in progress after :meth:`stop`. The process must then end with
        ``os._exit``: an interpreter that finalises while the model thread is inside torch aborts (the thread
        is killed on its way back to Python, "terminate called without an active exception", exit 134)."""
        return self._thread is not None and self._thread.running

    # -- admission ------------------------------------------------------------------------------------------

    @property
    def queued_pairs(self) -> int:
        """Pairs waiting or running: what ``max_queued_pairs`` bounds."""
        return self._pending_pairs + self._running_pairs

    def submit(
        self,
        texts: list[str],
        label_sets: list[tuple[str, ...]],
        thresholds: list[tuple[float, ...] | None] | None = None,
        margins: list[tuple[float, ...] | None] | None = None,
        variants: list[int] | None = None,
    ) -> ScoreJob:
        """Queue one request's work, or raise :class:`Unavailable` / :class:`Overloaded`; ``thresholds`` and
        ``margins`` are each text's multi-label cuts and default-rule margins (one per label), ``variants`` how many
        descriptions each of its labels has (see :class:`ScoreJob`). The job's rows hold one score per label."""
        if self.state != "ready":
            raise Unavailable(self.unavailable_reason())
        job = ScoreJob(
            texts,
            label_sets,
            asyncio.get_running_loop().create_future(),
            thresholds or [None] * len(label_sets),
            margins or [None] * len(label_sets),
            variants or [],
        )
        if self.queued_pairs + job.pairs > self.config.max_queued_pairs:
            raise Overloaded(
                f"the server is at capacity: {self.queued_pairs} (text, label) pairs are queued or running, this request "
                f"adds {job.pairs}, the limit is {self.config.max_queued_pairs}; retry later",
                self.retry_after(),
            )
        assert self._wakeup is not None
        self._pending.append(job)
        self._pending_pairs += job.pairs
        self._record_queue()
        self._wakeup.set()
        return job

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)`` on the model thread, between batches (the Hugging Face shape's pipeline numbers for NLI
        models, :meth:`zstc.scorers.nli.NliScorer.pipeline_logits`); :class:`Unavailable` unless ready."""
        if self.state != "ready" or self._thread is None:
            raise Unavailable(self.unavailable_reason())
        return await asyncio.wrap_future(self._thread.submit(fn, *args))

    def unavailable_reason(self) -> str:
        """Why the engine takes no work in its present state (the message of a 503)."""
        return {
            "loading": "the model is loading",
            "draining": "the server is shutting down",
            "stopped": "the server is shutting down",
            "failed": f"the model failed to load: {self.failure}",
        }.get(self.state, "the server is not ready")

    def retry_after(self) -> int:
        """Seconds until the queued work is likely done, from the measured throughput (1 to 60); before any batch has
        been timed, how long the running one has taken so far (it takes at least that long again, as a guess)."""
        if not self._pairs_per_second:
            started = [job.started for job in self._running if job.started is not None] if self._running_pairs else []
            return int(min(60, max(1, math.ceil(time.perf_counter() - min(started))))) if started else 1
        return int(min(60, max(1, math.ceil(self.queued_pairs / self._pairs_per_second))))

    def cancel(self, job: ScoreJob) -> None:
        """The client went away: drop the job if it still waits; if its batch runs, its rows are discarded."""
        job.cancelled = True
        if job.started is None:
            try:
                self._pending.remove(job)
            except ValueError:
                pass
            else:
                self._pending_pairs -= job.pairs
                self._record_queue()
        if not job.future.done():
            job.future.cancel()

    # -- the worker -----------------------------------------------------------------------------------------

    async def _run(self) -> None:
        assert self._wakeup is not None
        while True:
            while not self._pending:
                self._wakeup.clear()
                await self._wakeup.wait()
            # Ray Serve's rule: the batch closes when full or when the oldest request has waited max_wait.
            deadline = self._pending[0].enqueued + self.config.max_wait_ms / 1000
            while self._pending_pairs < self.config.max_batch_pairs:
                remaining = deadline - time.perf_counter()
                if remaining <= 0:
                    break
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), remaining)
                except TimeoutError:
                    break
            batch = self._take_batch()
            if batch:
                try:
                    await self._execute(batch)
                finally:
                    self._running_pairs = 0
                    self._record_queue()

    def _take_batch(self) -> list[ScoreJob]:
        batch: list[ScoreJob] = []
        pairs = 0
        while self._pending:
            job = self._pending[0]
            if batch and pairs + job.pairs > self.config.max_batch_pairs:
                break
            self._pending.popleft()
            self._pending_pairs -= job.pairs
            if job.cancelled or job.future.done():
                continue
            batch.append(job)
            pairs += job.pairs
        self._running, self._running_pairs = batch, pairs
        self._record_queue()
        return batch

    async def _execute(self, batch: list[ScoreJob]) -> None:
        assert self._thread is not None
        started = time.perf_counter()
        for job in batch:
            job.started = started
        answered: list[
            tuple[list[ScoreJob], Scored]
        ] = []  # each call that answered, with its jobs: the batch-tokens metric's
        try:
            scored: Scored = await asyncio.wrap_future(self._thread.submit(self.backend.answer, batch))
            results: list[list[np.ndarray] | BaseException] = list(scored.rows)
            answered.append((batch, scored))
            for job, truncated in zip(batch, scored.truncated):
                job.truncated = truncated
        except Exception as error:
            if len(batch) == 1:
                results = [error]
            else:  # find the request that failed: each alone, so the others still get their rows
                results = []
                for job in batch:
                    if job.future.done():  # cancelled while the batch ran: its rows would be discarded
                        results.append(asyncio.CancelledError())
                        continue
                    try:
                        alone: Scored = await asyncio.wrap_future(self._thread.submit(self.backend.answer, [job]))
                        results.extend(alone.rows)
                        answered.append(([job], alone))
                        job.truncated = alone.truncated[0] if alone.truncated else ()
                    except Exception as single_error:
                        results.append(single_error)
        elapsed = time.perf_counter() - started
        pairs = sum(job.pairs for job in batch)
        self._pairs_per_second = (
            pairs / max(elapsed, 1e-6)
            if self._pairs_per_second is None
            else (0.8 * self._pairs_per_second + 0.2 * pairs / max(elapsed, 1e-6))
        )
        for job, result in zip(batch, results):
            job.inference_s = elapsed
            if job.future.done():  # cancelled while its batch ran
                continue
            if not isinstance(result, BaseException):
                try:  # the pair, embedding and cascade backends score without score_with_notes, which checks
                    check_finite_scores(np.concatenate(result))
                except NonFiniteScoresError as error:
                    result = error
            if isinstance(result, BaseException):
                job.future.set_exception(result)
            else:
                job.future.set_result(result)
        if self.telemetry is not None:
            self.telemetry.inference_time.observe(elapsed)
            self.telemetry.batch_pairs.observe(pairs)
            self.telemetry.batch_requests.observe(len(batch))
            for job in batch:
                self.telemetry.queue_time.observe(job.queue_s)
            self._record_tokens(answered)

    def _record_tokens(self, answered: list[tuple[list[ScoreJob], Scored]]) -> None:
        # Counted in the model thread (the tokenizer is the scorer's), queued behind the batch without being
        # awaited: the worker forms the next batch meanwhile. prometheus-client metrics are thread-safe.
        # A batch that failed counts what its calls that answered read (its jobs run again one by one); a call
        # that raised is left out, since how far it read is unknown, and a batch none of whose calls answered is not observed.
        assert self._thread is not None
        if not answered:
            return

        def count() -> int | None:
            counts = [self.backend.count_tokens(jobs, scored) for jobs, scored in answered]
            return None if None in counts else sum(c for c in counts if c is not None)

        def observe(future: concurrent.futures.Future[int | None]) -> None:
            if not future.cancelled() and future.exception() is None and future.result() is not None:
                self.telemetry.batch_tokens.observe(future.result())

        self._thread.submit(count).add_done_callback(observe)

    def _record_queue(self) -> None:
        if self.telemetry is not None:
            self.telemetry.queued_pairs.set(self._pending_pairs)
            self.telemetry.queued_requests.set(len(self._pending))
            # The batch the model runs counts against --max-queued-pairs too: without it, 429s came with an empty queue.
            self.telemetry.running_pairs.set(self._running_pairs)
            self.telemetry.running_requests.set(len(self._running) if self._running_pairs else 0)

    def _count_cache_lookups(self, hits: int, misses: int) -> None:
        self.telemetry.label_cache.labels(result="hit").inc(hits)
        self.telemetry.label_cache.labels(result="miss").inc(misses)
