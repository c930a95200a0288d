"""Embedding models and base encoders: cosine similarity of text and label-description embeddings.

Pooling is ``native`` (the model's own sentence-transformers configuration: mean, CLS, last token, with
or without normalisation) or ``cls`` (final-layer [CLS] vector of the raw encoder, the paper's
computation, which reproduces its all-MiniLM-L6-v2 row). Base encoders are always scored with ``cls``.
Label embeddings are computed once per label set and reused for every batch of texts.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Self, cast

import numpy as np
import torch

from zstc.errors import DescriptionTooLongError, ModelError, OptionError
from zstc.models.loading import load_error, model_source, pinned, remote_code
from zstc.models.registry import ModelSpec
from zstc.scorers.base import (
    Capabilities,
    LoadedModel,
    LruCache,
    ScoreResult,
    TorchScorer,
    check_pair_arguments,
    count_parameters,
    model_max_length,
    token_limit,
)
from zstc.models.families import POOLINGS
from zstc.scorers.ort_backend import ORT_BATCH_SIZE, OrtEncoder, ort_encoder
from zstc.scorers.recheck import RECHECK_PROBES, call_cuts, label_cuts, margin_cuts
from zstc.scorers.runtime import IEEE_MATMUL, Precision, inference_context

Backend = OrtEncoder | None
"""What a loaded embedding model runs its transformer with: ONNX Runtime (``backend="onnxruntime"``), or None: torch."""

LABEL_CACHE_SIZE = 64
"""Label sets whose embeddings are kept (least recently used dropped first): a server answering requests
with ever new label sets must not grow without bound."""

ORT_RECHECK_MARGIN = 1e-5
"""Backend onnxruntime: texts with a cosine within this of a decision (their best label's, a multi-label cut, the default
rule's margin) are embedded again by torch in fp32, so that the decisions are torch fp32's whatever kernels ONNX Runtime
picked on this CPU. ONNX Runtime's cosines were at most 3e-7 off torch's (all-MiniLM-L6-v2, Zen 4: agnews, banking77,
imdb); the recheck needs every error below half the margin, and widens it by itself past three times the largest error
it sees (:func:`zstc.scorers.recheck.recheck_in_fp32`), for the rest of the scorer's life."""
ORT_PROBED_TEXTS = 16
"""Backend onnxruntime: the error is measured on every rechecked text, and besides, until this many texts have been
embedded both ways, on the :data:`~zstc.scorers.recheck.RECHECK_PROBES` closest calls of each call (bf16 probes every
call; ONNX Runtime's error is its kernels', fixed for a machine, and a probe on every call would double a one-text
request's cost and add a few percent to a long text's)."""

TORCH_BATCH_SIZE = 64
"""Texts per forward pass where the user gives no ``batch_size`` and torch runs the model (ONNX Runtime's:
:data:`zstc.scorers.ort_backend.ORT_BATCH_SIZE`)."""

__all__ = ["ORT_RECHECK_MARGIN", "POOLINGS", "TORCH_BATCH_SIZE", "EmbeddingScorer", "EncoderScorer"]


class EmbeddingScorer(TorchScorer[Backend]):
    """Embedding models and base encoders: cosine similarity of the text's and each label's embedding, with
    the model's own query/document prefixes or instruction (PROTOCOL.md section 2). Label embeddings are cached
    per label set."""

    family: ClassVar[str] = "embedding"
    # 2: bf16 embeds the texts with a near decision again in fp32; 3: so does backend onnxruntime (a result of version 2
    # with that backend was ONNX Runtime's alone, whose near ties may differ from torch fp32's)
    SCORING_VERSION: ClassVar[str] = "3"
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        notes=True, pair_scoring=True, request_batching=True, rechecks=True, twin=True, read_apart=True
    )
    """Takes multi-label thresholds and margins (``score_with_notes(..., thresholds=, margins=)``): in bf16, the texts
    with a cosine near them are embedded again in fp32."""

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        # A family without a pooling option (base encoders) is scored the paper's way, [CLS].
        self.pooling: str = self.options.get("pooling", "cls")
        self.backend: str = self.options.get("backend", "torch")
        if self.backend != "torch" and self.precision != "fp32":
            raise OptionError(
                f"backend {self.backend!r} runs fp32 only, got precision {self.precision!r}: give precision fp32, "
                "or backend 'torch' for bf16",
                "backend",
                "precision",
            )
        if self.options["batch_size"] is None:  # the family's default is the backend's
            self.batch_size = ORT_BATCH_SIZE if self.onnxruntime else TORCH_BATCH_SIZE
        self._label_cache: LruCache[torch.Tensor] = LruCache(LABEL_CACHE_SIZE)
        self._fp32_label_cache: LruCache[torch.Tensor] = LruCache(LABEL_CACHE_SIZE)  # the recheck's label side
        # Backend onnxruntime: its largest cosine error against torch fp32 seen so far, and how many texts showed it.
        self._ort_error, self._ort_probed, self._ort_lock = 0.0, 0, threading.Lock()

    @property
    def onnxruntime(self) -> bool:
        """Whether this scorer's texts and labels are embedded by ONNX Runtime (backend onnxruntime, in fp32)."""
        return self.backend == "onnxruntime" and self.precision == "fp32"

    def twin(self, *, precision: Precision | None = None, recheck_margin: float | None = None) -> Self:
        """:meth:`TorchScorer.twin`, its label embeddings cached by precision: an fp32 twin of a bf16 scorer reads and
        fills this scorer's recheck cache (fp32 embeddings), never its bf16 one, and the other way round."""
        twin = super().twin(precision=precision, recheck_margin=recheck_margin)
        if twin.precision != self.precision:
            twin._label_cache, twin._fp32_label_cache = self._fp32_label_cache, self._label_cache
        return twin

    def describe(self) -> dict[str, Any]:
        """The base description, plus the pooling the cosines use (``native`` or ``cls``) and, when not torch, the
        backend that runs the model."""
        return {
            **super().describe(),
            "pooling": self.pooling,
            **({"backend": self.backend} if self.backend != "torch" else {}),
        }

    # -- loading --------------------------------------------------------------------------------------

    def _load_model(self) -> LoadedModel[Backend]:
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

        code = remote_code(self.spec, self.options["trust_remote_code"])  # refused before the hub is asked
        source = model_source(self.spec)
        pin = pinned(source)  # a hub model at the commit its fingerprint names
        try:
            if self.pooling == "native":
                model = SentenceTransformer(source, device=str(self.device), **pin, **code)
            else:
                kwargs = {**pin, **code}
                transformer = Transformer(
                    source, model_kwargs=kwargs, processor_kwargs=dict(kwargs), config_kwargs=dict(kwargs)
                )
                pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="cls")
                model = SentenceTransformer(modules=[transformer, pooling], device=str(self.device))
        except Exception as error:
            raise load_error(self.spec, error) from None
        positions = getattr(
            getattr(getattr(model[0], "auto_model", None), "config", None), "max_position_embeddings", None
        )
        if self.max_length is not None:
            model.max_seq_length = token_limit(self.spec, self.max_length, model.tokenizer, positions)
        elif model.max_seq_length is None:  # no limit in the model's configuration: the tokenizer's, or an error
            model.max_seq_length = model_max_length(self.spec, model.tokenizer)
        model.eval()
        backend = self._ort_encoder(model) if self.backend == "onnxruntime" else None
        return LoadedModel(
            model, _own_copy(model.tokenizer), int(model.max_seq_length), count_parameters(model), backend
        )

    def _ort_encoder(self, model: Any) -> OrtEncoder:
        """The model's transformer in ONNX Runtime; a model torch.onnx cannot export is an error that says so."""
        try:
            return ort_encoder(model)
        except OptionError:
            raise
        except Exception as error:  # torch.onnx's errors have no common class  # noqa: BLE001
            raise ModelError(
                f"{self.spec.model_id} could not be exported for backend 'onnxruntime' ({type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else ''}); use backend 'torch'"
            ) from None

    # -- scoring --------------------------------------------------------------------------------------

    def _encode(
        self,
        loaded: LoadedModel[Backend],
        sentences: list[str],
        show_progress: bool,
        precision: Precision | None = None,
    ) -> torch.Tensor:
        """The sentences' normalised embeddings on this scorer's path (``precision`` None: ONNX Runtime for backend
        onnxruntime), or by torch in ``precision`` when given (a recheck's exact side)."""
        # encode tokenizes inside, with the model's own tokenizer: under the lock that guards it (model_lock where
        # loaded.tokenizer is a copy for the checks, which then never wait for a forward pass).
        lock = loaded.model_lock if loaded.tokenizer is not loaded.model.tokenizer else loaded.tokenizer_lock
        if precision is None and loaded.facts is not None and self.onnxruntime:  # fp32 throughout
            with lock, torch.inference_mode():
                return torch.nn.functional.normalize(loaded.facts(sentences, self.batch_size).float(), dim=-1)
        with lock, inference_context(self.device, precision or self.precision):
            embeddings = loaded.model.encode(
                sentences,
                batch_size=self.batch_size,
                convert_to_tensor=True,
                show_progress_bar=show_progress,
            )
        return torch.nn.functional.normalize(embeddings.float(), dim=-1)

    def _too_long(self, loaded: LoadedModel[Backend], sentences: list[str]) -> list[int]:
        """The positions of the sentences longer than the model's token limit."""
        # Cutting one token past the limit still shows which are too long, without tokenizing whole documents
        # (and without transformers' "longer than the maximum" warning, which the note replaces).
        if not sentences:  # the tokenizer fails on an empty batch
            return []
        with loaded.tokenizer_lock:
            lengths = loaded.tokenizer(
                sentences,
                add_special_tokens=True,
                truncation=True,
                max_length=loaded.max_length + 1,
                return_length=True,
            )["length"]
        return [i for i, length in enumerate(lengths) if length > loaded.max_length]

    def _truncation(self, loaded: LoadedModel[Backend], queries: list[str]) -> tuple[list[str], tuple[int, ...]]:
        """The note on the queries cut to the token limit, and their positions (:attr:`ScoreResult.truncated`)."""
        truncated = tuple(self._too_long(loaded, queries))
        if not truncated:
            return [], ()
        return [
            f"{len(truncated)} of {len(queries)} texts exceed {loaded.max_length} tokens and were truncated"
        ], truncated

    def _label_embeddings(
        self, loaded: LoadedModel[Backend], documents: tuple[str, ...], precision: Precision | None = None
    ) -> torch.Tensor:
        too_long = self._too_long(loaded, list(documents))
        if too_long:
            raise DescriptionTooLongError.of(
                documents[too_long[0]],
                loaded.max_length,
                model=self.spec.model_id,
                user_limit=self.max_length is not None,
            )
        return self._encode(loaded, list(documents), show_progress=False, precision=precision)

    def score_with_notes(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        *,
        show_progress: bool = False,
        thresholds: Sequence[float] | np.ndarray | None = None,
        margins: Sequence[float] | np.ndarray | None = None,
    ) -> ScoreResult:
        """The (texts, labels) cosines of the texts' (query side) and the label descriptions' (document side, cached
        per label set) embeddings, with notes on texts truncated.

        In bf16 the texts with a decision bf16's rounding could change are embedded again in fp32, whole
        (:meth:`_recheck_texts`): near ties of their best label, or with ``thresholds`` (one multi-label cut per
        label) near their cuts, and with ``margins`` (one per label, ``nan`` for none: the embedding family's default
        rule, :func:`zstc.policy.decide`) near their best score minus the margin."""
        loaded = self.loaded
        documents = tuple(self.spec.format_document(label) for label in labels)
        label_embeddings = self._label_cache.get_or_compute(
            documents, lambda: self._label_embeddings(loaded, documents)
        )
        queries = [self.spec.format_query(text) for text in texts]
        if not queries:  # encode([]) gives no (0, dim) matrix to multiply
            return ScoreResult(np.zeros((0, len(labels)), dtype=np.float32), [])
        notes, truncated = self._truncation(loaded, queries)
        text_embeddings = self._encode(loaded, queries, show_progress=show_progress)
        matrix, recheck_notes = self._recheck_texts(
            loaded,
            queries,
            documents,
            cosines(text_embeddings, label_embeddings),
            label_cuts(thresholds, len(labels)),
            label_cuts(margins, len(labels)),
        )
        return ScoreResult(matrix, notes + recheck_notes, truncated=truncated)

    def _recheck_texts(
        self,
        loaded: LoadedModel[Backend],
        queries: list[str],
        documents: tuple[str, ...],
        matrix: np.ndarray,
        cuts: np.ndarray | None,
        margins: np.ndarray | None,
        fp32_labels: Callable[[tuple[str, ...]], torch.Tensor] | None = None,
        record: list[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, list[str]]:
        """:meth:`_recheck` of a (texts, labels) matrix of bf16 cosines: a text with a near decision is embedded again
        in fp32, and so are the labels (once per label set), so its every cosine is fp32's; in fp32, ``matrix`` as it is.
        ``fp32_labels(documents)``: the labels' fp32 embeddings, asked for only when a text is rechecked (default: from
        the scorer's own cache of label sets). ``record`` receives the positions of ``matrix.ravel()`` rescored (of whole rows).

        Backend onnxruntime is rechecked the same way against torch fp32, from :data:`ORT_RECHECK_MARGIN` (or three times
        the largest error seen by this scorer, if more), so its decisions are torch fp32's on any CPU."""
        ort = self.onnxruntime
        if self.precision != "bf16" and not ort:
            return matrix, []
        n_texts, n_labels = matrix.shape
        groups = np.repeat(np.arange(n_texts), n_labels)
        pair_cuts = None if cuts is None else np.tile(cuts, n_texts)
        if margins is not None:
            pair_cuts = margin_cuts(matrix.ravel(), groups, pair_cuts, np.tile(margins, n_texts))

        def rescore(todo: np.ndarray) -> np.ndarray:
            rows = np.unique(groups[todo])
            labels = (
                fp32_labels(documents)
                if fp32_labels is not None
                else self._fp32_label_cache.get_or_compute(
                    documents, lambda: self._label_embeddings(loaded, documents, "fp32")
                )
            )
            exact = np.empty_like(matrix)
            exact[rows] = cosines(self._encode(loaded, [queries[int(i)] for i in rows], False, "fp32"), labels)
            if ort:
                self._ort_seen(float(np.abs(exact[rows] - matrix[rows]).max()), len(rows))
            return exact.ravel()[todo]

        how: dict[str, Any] = {}
        if ort:
            with self._ort_lock:
                how = {
                    "margin": max(ORT_RECHECK_MARGIN, 3 * self._ort_error),
                    "probes": RECHECK_PROBES if self._ort_probed < ORT_PROBED_TEXTS else 0,
                    "fast": "onnxruntime",
                    "exact_name": "torch fp32",
                }
        scores, notes = self._recheck(
            matrix.ravel(), groups, pair_cuts, rescore, record, whole_groups=True, unit="texts", **how
        )
        return scores.reshape(matrix.shape), notes

    def _ort_seen(self, error: float, texts: int) -> None:
        """Backend onnxruntime: ``texts`` texts embedded again by torch, their cosines at most ``error`` off."""
        with self._ort_lock:
            self._ort_error, self._ort_probed = max(self._ort_error, error), self._ort_probed + texts

    def score_pairs(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        *,
        groups: Sequence[int] | np.ndarray | None = None,
        cuts: Sequence[float] | np.ndarray | None = None,
        show_progress: bool = False,
    ) -> np.ndarray:
        """One cosine per pair ``(firsts[i], seconds[i])``: :meth:`score_pairs_with_notes`'s scores."""
        return self.score_pairs_with_notes(
            firsts, seconds, groups=groups, cuts=cuts, show_progress=show_progress
        ).scores

    def score_pairs_with_notes(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        *,
        groups: Sequence[int] | np.ndarray | None = None,
        cuts: Sequence[float] | np.ndarray | None = None,
        show_progress: bool = False,
    ) -> ScoreResult:
        """The cosine of each aligned pair (the NLI probe's premise and hypothesis), embedded as
        :meth:`score_with_notes` embeds a text (``firsts``: the query side, with its prefix or instruction) and a
        label description (``seconds``: the document side, never truncated): pair ``i``'s score is the
        ``(firsts[i], seconds[i])`` cell of ``score(firsts, seconds)``, up to the float noise of other batch
        compositions. ``groups`` and ``cuts`` are checked and change nothing: a cosine is not rescored in fp32."""
        check_pair_arguments(firsts, seconds, groups, cuts)
        if not firsts:
            return ScoreResult(np.zeros(0, dtype=np.float32), [])
        loaded = self.loaded
        queries = [self.spec.format_query(text) for text in firsts]
        documents = [self.spec.format_document(label) for label in seconds]
        # Each distinct sentence embedded once (an NLI set repeats its premises); the pair cache of label sets is
        # not used: a probe's thousands of hypotheses are one label set each.
        distinct_documents = tuple(dict.fromkeys(documents))
        document_rows = dict(zip(distinct_documents, range(len(distinct_documents))))
        document_embeddings = self._label_embeddings(loaded, distinct_documents)
        distinct_queries = list(dict.fromkeys(queries))
        query_rows = dict(zip(distinct_queries, range(len(distinct_queries))))
        notes, truncated = self._truncation(loaded, queries)
        query_embeddings = self._encode(loaded, distinct_queries, show_progress=show_progress)
        left = query_embeddings[[query_rows[query] for query in queries]]
        right = document_embeddings[[document_rows[document] for document in documents]]
        return ScoreResult((left * right).sum(dim=-1).cpu().numpy().astype(np.float32), notes, truncated=truncated)

    def score_requests(
        self,
        requests: Sequence[tuple[Sequence[str], Sequence[str]]],
        *,
        label_cache: LruCache[torch.Tensor] | None = None,
        recheck: bool | Sequence[bool] = False,
        thresholds: Sequence[Sequence[float] | np.ndarray | None] | None = None,
        margins: Sequence[Sequence[float] | np.ndarray | None] | None = None,
        fp32_label_cache: LruCache[torch.Tensor] | None = None,
    ) -> list[ScoreResult]:
        """Several ``(texts, labels)`` calls at once, each with its own labels (a service's batch, a cascade's
        shortlists): the distinct texts of all calls are encoded in one run, and so are the label descriptions
        not yet cached, where one call each would encode a few at a time. Each call gets
        :meth:`score_with_notes`'s result, up to the float noise of other batch compositions.

        ``label_cache``, when given, holds one embedding per label description (a server's, which it bounds and
        whose hits it counts), so a new label set is free once each of its descriptions has been seen, in
        whatever set; without it, the scorer's own cache of whole label sets is used.

        ``recheck`` (one for every call, or one per call): each call is a decision (a service's requests; a cascade's
        shortlists are not; nor is a service's average of description variants, rechecked on the average), so in bf16 its
        texts with a near decision are embedded again in fp32 as :meth:`score_with_notes` does (:meth:`_recheck_texts`),
        by ``thresholds[i]`` and ``margins[i]``, call ``i``'s multi-label cuts and default-rule margins (None: its
        best label). ``fp32_label_cache`` then holds the recheck's fp32 embedding per description, apart from
        ``label_cache``'s bf16 ones (without it, the scorer's own cache of label sets)."""
        loaded = self.loaded
        calls = [
            (
                [self.spec.format_query(text) for text in texts],
                tuple(self.spec.format_document(label) for label in labels),
            )
            for texts, labels in requests
        ]
        cuts, call_margins = call_cuts(thresholds, margins, len(calls))
        rechecks = [recheck] * len(calls) if isinstance(recheck, bool) else list(recheck)
        if len(rechecks) != len(calls):
            raise ValueError(f"{len(rechecks)} recheck flags for {len(calls)} calls")
        distinct = list(dict.fromkeys(query for queries, _ in calls for query in queries))
        row_of = {query: i for i, query in enumerate(distinct)}
        text_embeddings = self._encode(loaded, distinct, show_progress=False) if distinct else None
        sets = [documents for _, documents in calls]
        label_set = (
            self._label_sets_by_description(loaded, sets, label_cache)
            if label_cache is not None
            else self._label_sets_by_set(loaded, sets)
        )
        fp32_labels = (
            None
            if fp32_label_cache is None
            # a recheck's: computed only when a text is rechecked
            else (
                lambda documents: self._label_sets_by_description(loaded, [documents], fp32_label_cache, "fp32")(
                    documents
                )
            )
        )
        results = []
        for (queries, documents), cut, margin, decided in zip(calls, cuts, call_margins, rechecks):
            label_embeddings = label_set(documents)
            if text_embeddings is None or not queries:
                results.append(ScoreResult(np.zeros((len(queries), len(documents)), dtype=np.float32), []))
                continue
            matrix = cosines(text_embeddings[[row_of[query] for query in queries]], label_embeddings)
            notes, truncated = self._truncation(loaded, queries)
            record: list[np.ndarray] = []
            if decided:
                matrix, rechecked = self._recheck_texts(
                    loaded,
                    queries,
                    documents,
                    matrix,
                    label_cuts(cut, len(documents)),
                    label_cuts(margin, len(documents)),
                    fp32_labels,
                    record,
                )
                notes += rechecked
            rescored = (
                tuple(np.unique(np.concatenate(record) // len(documents)).tolist()) if record else ()
            )  # whole rows
            results.append(ScoreResult(matrix, notes, truncated=truncated, rescored=rescored))
        return results

    def _label_sets_by_set(
        self, loaded: LoadedModel[Backend], sets: list[tuple[str, ...]]
    ) -> Callable[[tuple[str, ...]], torch.Tensor]:
        """Label embeddings per label set from the scorer's own cache; the descriptions of every set not
        cached are encoded in one run."""
        uncached = tuple(
            dict.fromkeys(d for documents in sets if documents not in self._label_cache for d in documents)
        )
        fresh = dict(zip(uncached, self._label_embeddings(loaded, uncached))) if uncached else {}

        def encoded(documents: tuple[str, ...]) -> torch.Tensor:
            if all(document in fresh for document in documents):
                return torch.stack([fresh[document] for document in documents])
            return self._label_embeddings(loaded, documents)  # evicted by another thread since: encoded alone

        return lambda documents: self._label_cache.get_or_compute(documents, lambda: encoded(documents))

    def _label_sets_by_description(
        self,
        loaded: LoadedModel[Backend],
        sets: list[tuple[str, ...]],
        cache: LruCache[torch.Tensor],
        precision: Precision | None = None,
    ) -> Callable[[tuple[str, ...]], torch.Tensor]:
        """Label embeddings per label set, from ``cache``'s one embedding per description; the descriptions
        not cached are encoded in one run (in ``precision``: the recheck's fp32, into a cache of its own)."""
        descriptions = list(dict.fromkeys(d for documents in sets for d in documents))
        # Each cached row a copy: a view would keep its whole batch's matrix alive for as long as it stays cached, so
        # a cache bounded in rows grew without bound in bytes (a server's one per description, --label-cache-size).
        by_description = dict(
            zip(
                descriptions,
                cache.get_many(
                    descriptions,
                    lambda missing: [
                        row.clone()
                        for row in self._label_embeddings(loaded, tuple(cast(list[str], missing)), precision)
                    ],
                ),
            )
        )
        return lambda documents: torch.stack([by_description[d] for d in documents])


def _own_copy(tokenizer: Any) -> Any:
    """A copy of the model's tokenizer for everything but ``encode`` (token counts, labels that read alike), so that
    those checks take :attr:`LoadedModel.tokenizer_lock` and not the lock ``encode`` holds for a whole forward pass:
    a server's request with new labels waited, before it was even queued, for the batch running (unseen by its
    queue time, its metrics and its backpressure). The model's own where it cannot be copied."""
    try:
        return copy.deepcopy(tokenizer)
    except Exception:  # a tokenizer that does not copy: shared, with encode under the same lock
        return tokenizer


def cosines(texts: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    """The (texts, labels) cosines of normalised embeddings: an IEEE fp32 product in every precision (the
    embeddings are fp32 by then), whatever the process set torch's matmul precision to (:class:`IeeeMatmul`)."""
    with IEEE_MATMUL.held():
        return (texts @ labels.T).cpu().numpy().astype(np.float32)


class EncoderScorer(EmbeddingScorer):
    """A base encoder (no sentence-embedding training): final-layer [CLS] cosine, as the paper scores them."""

    family: ClassVar[str] = "encoder"
    SCORING_VERSION: ClassVar[str] = "3"  # 2, 3: as the embedding family's
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""
