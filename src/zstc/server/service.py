"""What every route of the service shares: the served model, its decision policy, the batching engine, the settings
and the limits (one :class:`Service`, kept on ``app.state`` and fetched by :func:`service_of`, as vLLM's routes fetch
their engine), and the steps of answering a request: checking its sizes, describing its labels, queueing its work and
telling it what the model cut.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from fastapi import Request

from zstc.api import Classifier, check_labels_read_apart, label_hypotheses
from zstc.errors import LabelError, NonFiniteScoresError, OptionError, ZstcError
from zstc.hypotheses.variants import HypothesisSet
from zstc.models.families import find_family
from zstc.policy import DecisionPolicy
from zstc.scorers.cascade import flattens_to_pairs
from zstc.server.engine import BatchingEngine, ScoreJob, Unavailable
from zstc.server.statuses import ServiceError
from zstc.server.settings import ServeSettings
from zstc.server.telemetry import Telemetry
from zstc.validation import check_distinct_descriptions

logger = logging.getLogger("zstc.server")


class Service:
    """The served model and everything a route needs to answer with it."""

    def __init__(
        self, classifier: Classifier | Any, settings: ServeSettings, telemetry: Telemetry | None = None
    ) -> None:
        scorer = classifier.scorer if isinstance(classifier, Classifier) else classifier
        if isinstance(classifier, Classifier) and classifier.hypotheses != "dataset":
            # Requests describe their labels (descriptions, a template, or the classifier's template); the service
            # has no per-request hypotheses choice, so a Classifier built for another one would be ignored silently.
            raise OptionError(
                f"hypotheses={classifier.hypotheses!r} is not served: the service describes labels by each request's "
                "descriptions or template; build the Classifier with hypotheses='dataset'",
                "hypotheses",
            )
        self.settings, self.limits, self.scorer = settings, settings.limits, scorer
        # Decisions and probabilities are the library's (zstc.policy), with the classifier's calibration.
        self.probability_model = classifier if isinstance(classifier, Classifier) else Classifier(scorer, template=None)
        self.policy = self.probability_model.policy
        # A Platt calibration is for multi-label requests (single-label probabilities refuse it); single-label ones get
        # the family's temperature, as without a file (zstc serve says so when it starts).
        self.single_label_policy = self.policy if self.policy.platt() is None else DecisionPolicy.for_scorer(scorer)
        self.telemetry = telemetry or Telemetry()
        self.engine = BatchingEngine(scorer, settings.engine, self.telemetry)
        self.score_type = self.policy.score_type
        self.model_id, self.family = scorer.spec.model_id, scorer.family

    def single_label_probabilities(self, row: np.ndarray) -> np.ndarray:
        """One text's single-label probabilities (a softmax at the family's or the calibration's temperature)."""
        matrix = np.asarray(row, dtype=np.float64)[None, :]
        scored = self.probability_model.scored(matrix)
        return self.single_label_policy.single_label_probabilities(matrix, scored)[0]

    # -- limits -------------------------------------------------------------------------------------------------

    def check_size(self, what: str, count: int, limit: str) -> None:
        """``count`` of ``what`` within the limit named ``limit`` (documents are held to max_labels: the message names it)."""
        if count > getattr(self.limits, limit):
            raise ServiceError(
                "too_large",
                f"{count} {what} in one request; the limit is {getattr(self.limits, limit)} ({limit} in GET /info)",
            )

    def check_chars(self, what: str, strings: Sequence[str]) -> None:
        """Each of ``strings`` (``text``: "text 3 has ...") within ``max_chars``."""
        for i, string in enumerate(strings):
            if len(string) > self.limits.max_chars:
                raise ServiceError(
                    "too_large",
                    f"{what} {i + 1} has {len(string)} characters; the limit is {self.limits.max_chars} (GET /info)",
                )

    def check_field_chars(self, field: str, string: str) -> None:
        """One string field (``template``) within ``max_chars``."""
        if len(string) > self.limits.max_chars:
            raise ServiceError(
                "too_large", f"{field} has {len(string)} characters; the limit is {self.limits.max_chars} (GET /info)"
            )

    def check_pairs(self, pairs: int) -> None:
        """A request's (text, description) pairs within ``max_request_pairs`` and what the queue can ever hold."""
        limits, engine = self.limits, self.settings.engine
        if pairs > min(limits.max_request_pairs, engine.max_queued_pairs):
            limit = (
                f"max_request_pairs is {limits.max_request_pairs}"
                if limits.max_request_pairs <= engine.max_queued_pairs
                else f"max_queued_pairs is {engine.max_queued_pairs}, so a larger request could never be queued"
            )
            raise ServiceError(
                "too_large",
                f"{pairs} (text, label description) pairs in one request (a label scored with "
                f"several descriptions counts each); {limit} (GET /info)",
            )

    # -- labels -------------------------------------------------------------------------------------------------

    async def label_descriptions(
        self, label_sets: list[tuple[list[str], list[str] | None, str | None]]
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
            self.check_chars("label description", flat[-1])
            distinct[(tuple(names), flat[-1])] = (names, described)

        def read_apart() -> None:
            for names, described in distinct.values():
                check_labels_read_apart(self.scorer, names, described)

        await asyncio.to_thread(read_apart)
        return flat, counts

    # -- the engine -----------------------------------------------------------------------------------------------

    async def score(
        self,
        request: Request,
        texts: list[str],
        descriptions: list[tuple[str, ...]],
        cuts: list[tuple[float, ...] | None] | None = None,
        margins: list[tuple[float, ...] | None] | None = None,
        variants: list[int] | None = None,
        *,
        pipeline: bool = False,
    ) -> tuple[list[np.ndarray], ScoreJob]:
        """Queue ``texts`` (each with its descriptions, ``variants[i]`` per label, variant after variant) and wait for
        their rows: one score per label (the mean of its variants), or the error the request gets (the engine's
        :class:`~zstc.server.engine.Overloaded` and :class:`~zstc.server.engine.Unavailable` are answered by
        :mod:`zstc.server.statuses`). ``pipeline``: each row is the label's transformers-pipeline logits instead
        (:meth:`zstc.server.engine.BatchingEngine.submit`)."""
        self.check_pairs(sum(len(d) for d in descriptions))
        engine = self.engine
        job = engine.submit(texts, descriptions, cuts, margins, variants, pipeline=pipeline)
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
            raise ServiceError("validation", "the client closed the connection", status=499)
        try:
            rows = job.future.result()
        except NonFiniteScoresError as error:  # the model's fault, not the request's
            logger.error("scoring failed: %s", error)
            raise ServiceError("backend", "the model produced a non-finite score") from None
        except (ZstcError, Unavailable):
            raise
        except Exception as error:
            logger.exception("scoring failed", exc_info=error)
            raise ServiceError("backend", f"the model failed: {type(error).__name__}") from None
        return rows, job

    def request_notes(self, job: ScoreJob, subject: str = "text") -> list[str]:
        """What ``job``'s request is told of its own inputs: its texts the model cut to its token limit, by position
        (``subject`` 1, 2, ...; "the query" for rerank's one), in the library's words.

        Of what the scorer notes, only truncation is told, and per request: the engine scores the requests of a batch
        in one call, whose notes mix them, so each request's truncated texts come from the positions the scorer reports
        (ScoreJob.truncated). The rest is not the request's: bf16's fp32 recheck counts the pairs of the whole batch and
        makes decisions fp32's (nothing for the client to act on); "prefix cache not used" and a shortlist's prompt
        are facts of the model and its settings (GET /info), the same for every request. A text is cut as the family
        reads it (behind a shortlist, the main model's): beside a label description (cross-encoders), inside a prompt
        (the generative families), or alone."""
        if not job.truncated:
            return []
        cut_with_label = flattens_to_pairs(self.family)
        one = len(job.truncated) == 1
        if subject == "query":
            which = "the query"
        else:
            numbers = [str(i + 1) for i in job.truncated]
            which = f"{subject} {numbers[0]}" if one else f"{subject}s {', '.join(numbers[:-1])} and {numbers[-1]}"
        limit = self.scorer.describe().get(
            "max_length"
        )  # the limit in force, once the model is loaded (it is: it scored)
        within = (
            f"the room left by the label description within {limit} tokens" if cut_with_label else f"{limit} tokens"
        )
        record = find_family(self.family)
        if record is not None and record.text_in_prompt:  # "with its prompt", as the library says "with their prompt"
            within += f" with {'its' if one else 'their'} prompt"
        # A cascade's positions are its shortlister's too: one with a lower limit cuts texts the model reads whole.
        shortlister = self.engine.backend.shortlister_max_length()
        if isinstance(shortlister, int) and isinstance(limit, int) and shortlister < limit:
            within += f", or the shortlister's {shortlister} tokens,"
        return [
            f"{which} {'exceeds' if one else 'exceed'} {within} and {'was' if one else 'were'} truncated"
            + (" (label descriptions never are)" if cut_with_label else "")
        ]


def service_of(request: Request) -> Service:
    """The service the request's app serves (``app.state.service``)."""
    service: Service = request.app.state.service
    return service


def timing_headers(job: ScoreJob, started: float) -> dict[str, str]:
    """TEI's timing headers, in milliseconds."""
    return {
        "x-queue-time": f"{job.queue_s * 1000:.1f}",
        "x-inference-time": f"{job.inference_s * 1000:.1f}",
        "x-total-time": f"{(time.perf_counter() - started) * 1000:.1f}",
    }


def notes_header(notes: list[str]) -> dict[str, str]:
    """The notes of a request whose body another ecosystem fixes (Hugging Face, rerank): a JSON list of strings
    in the ``x-zstc-notes`` header (ASCII: non-ASCII characters are JSON escapes), absent when there are none."""
    return {"x-zstc-notes": json.dumps(notes, ensure_ascii=True)} if notes else {}


async def _client_gone(request: Request) -> None:
    """Return once the client has disconnected (the body is already read, so the next message is the disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
