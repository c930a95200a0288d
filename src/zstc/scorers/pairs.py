"""Cross-encoders: score (first, second) sequence pairs in one forward pass each, batched across texts.

NLI models (premise = text, hypothesis = label description) and rerankers (query = text, document = label
description) run the same way; they differ only in how a row of output logits becomes one score, which is
what their subclasses of :class:`CrossEncoderScorer` define.

Why this is fast (and transformers' zero-shot pipeline is not): the pipeline tokenizes every (text, label)
pair from scratch and by default runs one pair per forward pass. Here

* every distinct text and every label description is tokenized once, and pairs are assembled from the
  token ids with the tokenizer's own special-token layout (:class:`PairTemplate`);
* only the first sequence (the text) is truncated, never the hypothesis, exactly as the tokenizer's
  ``truncation="only_first"`` would;
* all pairs of a run are sorted by length, longest first, and cut into batches that respect both a pair
  count and a budget of padded tokens, so batches carry almost no padding and the largest one comes first
  (an out-of-memory error happens at once, not an hour in);
* padded tensors exist for one batch at a time: memory is bounded by the batch, not by texts x labels.

In bf16 a cross-encoder rechecks in fp32 the pairs whose decision bf16's rounding could change (near ties of
their text's best, or near their multi-label threshold), so that its decisions are fp32's
(:mod:`zstc.scorers.recheck` has the rule and its proof; :meth:`CrossEncoderScorer._recheck` the rescoring;
docs/precision.md the measurements).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from zstc.errors import DescriptionTooLongError, ModelError
from zstc.models.loading import load_error, model_source, pinned, remote_code
from zstc.scorers.base import (
    Capabilities,
    LoadedModel,
    ScoreResult,
    TorchScorer,
    add_note,
    check_pair_arguments,
    count_parameters,
    token_limit,
)
from zstc.scorers.batching import longest_first, token_budget_batches
from zstc.models.families import DEFAULT_MAX_BATCH_TOKENS, DEFAULT_MAX_PAIRS, pass_shape
from zstc.scorers.recheck import label_cuts
from zstc.scorers.runtime import Precision, inference_context

__all__ = [
    "DEFAULT_MAX_BATCH_TOKENS",
    "DEFAULT_MAX_PAIRS",
    "CrossEncoderScorer",
    "PairTemplate",
    "plan_pairs",
    "token_budget_batches",
]


# -- assembling pairs from token ids -----------------------------------------------------------------------


@dataclass(frozen=True)
class PairTemplate:
    """Where a tokenizer puts its special tokens around a pair: ``prefix A middle B suffix``.

    Read once from the tokenizer itself (by encoding a pair of known sequences), so a pair assembled here
    has exactly the ids and token types ``tokenizer(first, second)`` would give: ``[CLS] A [SEP] B [SEP]``
    for BERT, ``<s> A </s></s> B </s>`` for RoBERTa and BART, whatever a new model uses.
    """

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    prefix_types: tuple[int, ...]
    middle_types: tuple[int, ...]
    suffix_types: tuple[int, ...]
    first_type: int
    second_type: int

    @property
    def n_special(self) -> int:
        """Special tokens the template adds around a pair."""
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> PairTemplate:
        """The layout ``tokenizer`` gives a pair; :class:`ModelError` when its pair encoding does not reproduce
        the two sequences' own tokens."""
        first = tokenizer("first", add_special_tokens=False)["input_ids"]
        second = tokenizer("second", add_special_tokens=False)["input_ids"]
        encoded = tokenizer("first", "second", return_special_tokens_mask=True, return_token_type_ids=True)
        ids, special = encoded["input_ids"], encoded["special_tokens_mask"]
        types = encoded.get("token_type_ids") or [0] * len(ids)
        content = [position for position, is_special in enumerate(special) if not is_special]
        if [ids[p] for p in content] != first + second:
            raise ModelError(
                f"cannot read the pair layout of tokenizer {type(tokenizer).__name__}: encoding a pair does not "
                "reproduce its two sequences' own tokens"
            )
        first_end, second_start = content[len(first) - 1] + 1, content[len(first)]
        regions = (slice(0, content[0]), slice(first_end, second_start), slice(content[-1] + 1, len(ids)))
        prefix, middle, suffix = (tuple(ids[region]) for region in regions)
        prefix_types, middle_types, suffix_types = (tuple(types[region]) for region in regions)
        return cls(
            prefix, middle, suffix, prefix_types, middle_types, suffix_types, types[content[0]], types[content[-1]]
        )

    def assemble(self, first: Sequence[int], second: Sequence[int]) -> tuple[list[int], list[int]]:
        """Input ids and token type ids of one pair (``first`` already truncated to fit)."""
        ids = [*self.prefix, *first, *self.middle, *second, *self.suffix]
        types = [
            *self.prefix_types,
            *[self.first_type] * len(first),
            *self.middle_types,
            *[self.second_type] * len(second),
            *self.suffix_types,
        ]
        return ids, types


@dataclass(frozen=True)
class Padding:
    """How the model's tokenizer pads a batch (its pad token, pad token type and side), done with numpy.

    The same tensors as ``transformers.DataCollatorWithPadding`` (``tokenizer.pad`` with ``padding="longest"``),
    which loops over the rows in Python and took most of a small cross-encoder's scoring time on a GPU
    (docs/performance.md); this takes a few percent of that. Tested equal to it.
    """

    pad_id: int
    pad_type_id: int
    left: bool
    token_types: bool
    """Whether the model takes ``token_type_ids`` (it is among the tokenizer's ``model_input_names``)."""
    step: int = 1
    """Pads to a multiple of this many tokens (``pad_to_multiple_of``; see :data:`GPU_LENGTH_STEP`)..."""
    limit: int | None = None
    """... but never past this many (the model's token limit)."""

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, *, step: int = 1, limit: int | None = None) -> Padding:
        """How ``tokenizer`` pads; :class:`ModelError` when it has no padding token."""
        if tokenizer.pad_token_id is None:
            raise ModelError(
                f"the tokenizer ({type(tokenizer).__name__}) has no padding token, so pairs of different "
                "lengths cannot share a forward pass; a cross-encoder's tokenizer needs one"
            )
        return cls(
            int(tokenizer.pad_token_id),
            int(getattr(tokenizer, "pad_token_type_id", 0) or 0),
            getattr(tokenizer, "padding_side", "right") == "left",
            "token_type_ids" in tokenizer.model_input_names,
            step,
            limit,
        )

    def pad(self, rows: Sequence[tuple[list[int], list[int]]]) -> dict[str, torch.Tensor]:
        """``input_ids``, ``attention_mask`` (and ``token_type_ids``) of ``rows`` (ids, token types), padded to the longest."""
        longest = max((len(ids) for ids, _ in rows), default=0)
        width = max(longest, min(-(-longest // self.step) * self.step, self.limit or longest))
        ids = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        types = np.full((len(rows), width), self.pad_type_id, dtype=np.int64) if self.token_types else None
        for i, (row_ids, row_types) in enumerate(rows):
            span = slice(width - len(row_ids), width) if self.left else slice(0, len(row_ids))
            ids[i, span] = row_ids
            mask[i, span] = 1
            if types is not None:
                types[i, span] = row_types
        inputs = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}
        if types is not None:
            inputs["token_type_ids"] = torch.from_numpy(types)
        return inputs


# -- planning batches ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairBatch:
    """One forward pass: the pairs it holds (``firsts[i]`` with ``seconds[i]``) and its model inputs."""

    firsts: np.ndarray
    seconds: np.ndarray
    inputs: dict[str, torch.Tensor]

    def __len__(self) -> int:
        return len(self.firsts)


@dataclass
class PairPlan:
    """All pairs of one run, tokenized once per distinct sequence, sorted and cut into batches."""

    template: PairTemplate
    first_ids: list[list[int]]
    second_ids: list[list[int]]
    firsts: np.ndarray
    """Index into ``first_ids`` of each pair, in batch order (longest pair first)."""
    seconds: np.ndarray
    first_lengths: np.ndarray
    """Tokens of the (truncated) first sequence in each pair, in batch order."""
    bounds: list[tuple[int, int]]
    """``[start, stop)`` of each batch in the pair order."""
    padding: Padding
    truncated_firsts: np.ndarray
    """Indices of the first sequences cut short in at least one of their pairs."""

    @property
    def n_pairs(self) -> int:
        """Pairs in the plan."""
        return len(self.firsts)

    def cut_pairs(self) -> set[tuple[int, int]]:
        """The ``(first index, second index)`` pairs whose first sequence was cut to fit: pair by pair, since the same
        first sequence fits beside a short second sequence and not beside a long one."""
        full = np.array([len(ids) for ids in self.first_ids], dtype=np.int64)
        cut = self.first_lengths < full[self.firsts]
        return set(zip(self.firsts[cut].tolist(), self.seconds[cut].tolist()))

    def batches(self) -> Iterator[PairBatch]:
        """The forward passes of the plan, longest first, each padded when it is reached."""
        for start, stop in self.bounds:
            yield self._batch(start, stop)

    def _batch(self, start: int, stop: int) -> PairBatch:
        firsts, seconds = self.firsts[start:stop], self.seconds[start:stop]
        rows = [
            self.template.assemble(self.first_ids[f][:length], self.second_ids[s])
            for f, s, length in zip(firsts, seconds, self.first_lengths[start:stop])
        ]
        return PairBatch(firsts, seconds, self.padding.pad(rows))


def plan_pairs(
    tokenizer: Any,
    first_texts: Sequence[str],
    second_texts: Sequence[str],
    *,
    max_length: int,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
    max_pairs: int = DEFAULT_MAX_PAIRS,
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    length_step: int = 1,
    user_limit: bool = False,
) -> PairPlan:
    """Tokenize each sequence once and order the pairs into batches.

    ``pairs`` are ``(first_index, second_index)`` arrays; by default every first with every second (a
    texts x labels run). ``first_texts`` should be distinct (the caller maps duplicates onto one entry).
    The second sequence is never truncated: one that leaves no room for a first sequence within
    ``max_length`` is an error, not a silently shortened hypothesis. ``length_step``: each pass is padded to a
    multiple of it (at most ``max_length``), as on a GPU (:data:`zstc.models.families.GPU_LENGTH_STEP`).
    ``user_limit``: ``max_length`` is the user's, not the model's own (an error then names it as the cause).
    """
    template = PairTemplate.from_tokenizer(tokenizer)
    # No first sequence can keep more than max_length tokens, so tokenizing beyond that is wasted work
    # (and would trigger transformers' "sequence too long" warning); cutting there still lets us see
    # which ones are truncated, since every pair has fewer than max_length tokens of room for them.
    first_ids = _token_ids(tokenizer, first_texts, max_length=max_length)
    second_ids = _token_ids(tokenizer, second_texts, max_length=None)
    second_lengths = np.array([len(ids) for ids in second_ids], dtype=np.int64)
    room = max_length - template.n_special - second_lengths
    if len(room) and room.min() < 1:
        longest = int(np.argmin(room))
        raise DescriptionTooLongError.of(
            second_texts[longest],
            max_length,
            model="the model",
            user_limit=user_limit,
            length=int(second_lengths[longest]),
        )
    if pairs is None:
        firsts, seconds = (grid.ravel() for grid in np.indices((len(first_ids), len(second_ids))))
    else:
        firsts, seconds = (np.asarray(index, dtype=np.int64) for index in pairs)
    full_lengths = np.array([len(ids) for ids in first_ids], dtype=np.int64)
    first_lengths = np.minimum(full_lengths[firsts], room[seconds])
    truncated = np.unique(firsts[first_lengths < full_lengths[firsts]])
    lengths = first_lengths + second_lengths[seconds] + template.n_special
    order = longest_first(lengths)
    firsts, seconds, first_lengths, lengths = firsts[order], seconds[order], first_lengths[order], lengths[order]
    return PairPlan(
        template=template,
        first_ids=first_ids,
        second_ids=second_ids,
        firsts=firsts,
        seconds=seconds,
        first_lengths=first_lengths,
        bounds=token_budget_batches(lengths, max_pairs=max_pairs, max_batch_tokens=max_batch_tokens),
        padding=Padding.from_tokenizer(tokenizer, step=length_step, limit=max_length),
        truncated_firsts=truncated,
    )


def _token_ids(tokenizer: Any, texts: Sequence[str], *, max_length: int | None) -> list[list[int]]:
    if not texts:
        return []
    truncation = {"truncation": True, "max_length": max_length} if max_length is not None else {}
    ids: list[list[int]] = tokenizer(list(texts), add_special_tokens=False, **truncation)["input_ids"]
    return ids


# -- reading the model's outputs ---------------------------------------------------------------------------


def output_column(
    id2label: Mapping[int, str],
    *,
    names: frozenset[str],
    meaning: str,
    model_id: str,
    index: int | None = None,
    label: str | None = None,
    how_to_choose: str = "",
    parameters: tuple[str, ...] = (),
) -> int:
    """The output column that means ``meaning`` (entailment, relevance), read from the model's ``id2label``.

    An explicit ``index`` wins, then an explicit ``label`` name (the registry's, for checkpoints whose names
    say nothing, like ``LABEL_0..2``), then a single output, then the one label whose name, ignoring case, is
    in ``names``. Anything else is an error: transformers' pipeline falls back to the last column with
    only a warning, and a wrong column gives confident nonsense.
    """
    described = ", ".join(f"{i}: {name!r}" for i, name in sorted(id2label.items()))
    if index is not None:
        if not 0 <= index < len(id2label):
            raise ModelError(
                f"output index {index} is out of range: {model_id} has {len(id2label)} outputs ({described})"
            )
        return index
    if label is not None:
        matches = [i for i, name in sorted(id2label.items()) if name.casefold() == label.casefold()]
        if not matches:
            raise ModelError(
                f"{model_id}: the registry names its {meaning} output {label!r}, but its outputs are {described}"
            )
        return matches[0]
    if len(id2label) == 1:
        return next(iter(id2label))
    matches = [i for i, name in sorted(id2label.items()) if name.casefold() in names]
    if len(matches) == 1:
        return matches[0]
    raise ModelError(
        f"cannot tell which output of {model_id} is {meaning}: its id2label is {{{described}}}{how_to_choose}",
        parameters=parameters,
    )


def log_odds(logits: torch.Tensor, column: int) -> torch.Tensor:
    """``l[column] - logsumexp(l[others])``: the log-odds of ``column`` under the softmax over all outputs
    (for a single output, the logit itself, which is already a log-odds under a sigmoid)."""
    if logits.shape[-1] == 1:
        return logits[:, 0]
    others = torch.cat([logits[:, :column], logits[:, column + 1 :]], dim=-1)
    return logits[:, column] - torch.logsumexp(others, dim=-1)


RECHECK_MAX_PAIRS = 16
"""Pairs per fp32 pass of a small recheck. Rechecked pairs are few and of every length, so the passes are cut
small to keep their padding small (docs/performance.md). A recheck of more than 16 passes' worth uses the scorer's
own."""
# -- the scorer ---------------------------------------------------------------------------------------------


_RawModel = tuple[Any, Any, dict[int, str], int | None]
"""What a loader returns: model, tokenizer, id2label, the model's position limit (if it has one)."""


@dataclass(frozen=True)
class OutputColumn:
    """The output column a cross-encoder's score is read from, as resolved from the model's ``id2label``."""

    index: int
    name: str


class CrossEncoderScorer(TorchScorer[OutputColumn]):
    """Shared loading, batching and bookkeeping of NLI models and rerankers.

    A subclass says which output column is its positive one (:meth:`_resolve_outputs`, called once when the
    model loads) and how a batch of logits becomes scores (:meth:`_scores_from_logits`).
    """

    family: ClassVar[str] = ""
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        notes=True, pair_scoring=True, rechecks=True, twin=True, read_apart=True
    )
    """Takes multi-label thresholds (``score_with_notes(..., thresholds=)``) and, in bf16, rechecks the pairs near them."""

    def __init__(self, spec: Any, **options: Any) -> None:
        super().__init__(spec, **options)
        shape = pass_shape(self.device.type)  # larger passes on a GPU, where small ones leave it idle
        self.batch_size = self.options["batch_size"] or shape.max_pairs
        self.max_batch_tokens: int = self.options["max_batch_tokens"] or shape.max_batch_tokens
        self.length_step = shape.length_step

    def describe(self) -> dict[str, Any]:
        """The base description, plus the token budget of a forward pass."""
        return {**super().describe(), "max_batch_tokens": self.max_batch_tokens}

    # -- loading --------------------------------------------------------------------------------------

    def _load_model(self) -> LoadedModel[OutputColumn]:
        code = remote_code(self.spec, self.options["trust_remote_code"])  # refused before the hub is asked
        source = model_source(self.spec)
        model, tokenizer, id2label, position_limit = _load_zstc_model(source, self.device) or self._load_transformers(
            source, code
        )
        model.eval()
        column = self._resolve_outputs(id2label)
        limit = token_limit(self.spec, self.max_length, tokenizer, position_limit)
        return LoadedModel(model, tokenizer, limit, count_parameters(model), column)

    def _load_transformers(self, source: str, code: dict[str, Any]) -> _RawModel:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        try:
            pin = pinned(source)  # a hub model at the commit its fingerprint names
            tokenizer = AutoTokenizer.from_pretrained(source, **pin, **code)
            model, info = AutoModelForSequenceClassification.from_pretrained(
                source, output_loading_info=True, **pin, **code
            )
        except Exception as error:
            raise load_error(self.spec, error) from None
        # transformers puts a randomly initialised head on a plain encoder with only a warning; its scores
        # would be noise, so that is an error here (score such a model with family "encoder" instead).
        backbone = model.base_model_prefix + "."
        missing_head = sorted(key for key in info.get("missing_keys", ()) if not key.startswith(backbone))
        if missing_head:
            raise ModelError(
                f"{self.spec.model_id} has no trained {self.family} head: its checkpoint lacks "
                f"{', '.join(missing_head[:3])}, which transformers would initialise at random"
            )
        config = model.config
        id2label = {int(index): str(name) for index, name in config.id2label.items()}
        if len(id2label) != config.num_labels:  # a config with num_labels but no names
            id2label = {index: f"LABEL_{index}" for index in range(config.num_labels)}
        return model.to(self.device), tokenizer, id2label, getattr(config, "max_position_embeddings", None)

    def _resolve_outputs(self, id2label: dict[int, str]) -> OutputColumn:
        """Decide which output column to read, from the model's label names; raise when that is unclear."""
        raise NotImplementedError

    def _scores_from_logits(self, logits: torch.Tensor, column: OutputColumn) -> torch.Tensor:
        """``(batch, n_outputs)`` float32 logits -> ``(batch,)`` scores, higher = more likely."""
        raise NotImplementedError

    # -- scoring --------------------------------------------------------------------------------------

    def score_with_notes(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        *,
        show_progress: bool = False,
        thresholds: Sequence[float] | np.ndarray | None = None,
    ) -> ScoreResult:
        """Score every text against every label description: a ``(len(texts), len(labels))`` float32 matrix.

        ``thresholds`` (one per label, in this scorer's scores) says that the caller decides by cuts (multi-label):
        bf16 then rechecks the pairs near their label's cut rather than the near ties of each text's best.
        """
        cuts = label_cuts(thresholds, len(labels))
        loaded = self.loaded
        distinct, row_of_text = _distinct(self.spec.format_query(text) for text in texts)
        documents = [self.spec.format_document(label) for label in labels]
        plan = self._plan(loaded, distinct, documents, pairs=None)
        matrix = np.zeros((len(distinct), len(documents)), dtype=np.float32)
        for batch, scores in self._run(loaded, plan, show_progress):
            matrix[batch.firsts, batch.seconds] = scores
        truncated = np.flatnonzero(np.isin(row_of_text, plan.truncated_firsts))
        notes = self._truncation_notes(loaded, len(truncated), len(texts), "texts")
        rows, columns = (grid.ravel() for grid in np.indices(matrix.shape))
        rechecked, recheck_notes = self._recheck_pairs(
            loaded,
            distinct,
            documents,
            rows,
            columns,
            matrix.ravel(),
            groups=rows,
            cuts=None if cuts is None else cuts[columns],
        )
        return ScoreResult(
            rechecked.reshape(matrix.shape)[row_of_text], notes + recheck_notes, truncated=tuple(truncated.tolist())
        )

    def score_pairs(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        *,
        groups: Sequence[int] | np.ndarray | None = None,
        cuts: Sequence[float] | np.ndarray | None = None,
        show_progress: bool = False,
    ) -> np.ndarray:
        """Score aligned pairs (``firsts[i]`` with ``seconds[i]``, e.g. premise and hypothesis): float32, one per pair.

        ``groups[i]`` names the decision pair ``i`` competes in (a service request's text among its labels), for
        bf16's recheck of near ties; by default the pairs that share their first sequence compete. ``cuts[i]``, when
        not ``nan``, is the threshold pair ``i`` is decided by instead (multi-label): bf16 rechecks it when near that.
        """
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
        """:meth:`score_pairs`'s scores with the notes of the call (premises truncated, pairs rescored in fp32)."""
        pair_cuts = check_pair_arguments(firsts, seconds, groups, cuts)
        loaded = self.loaded
        distinct_firsts, first_index = _distinct(firsts)
        distinct_seconds, second_index = _distinct(seconds)
        plan = self._plan(loaded, distinct_firsts, distinct_seconds, pairs=(first_index, second_index))
        # Pairs are deduplicated too: the same (premise, hypothesis) twice is scored once.
        lookup = self._scores_by_pair(loaded, plan, show_progress)
        notes = self._truncation_notes(
            loaded, np.isin(first_index, plan.truncated_firsts).sum(), len(firsts), "premises (first sequences)"
        )
        cut = plan.cut_pairs()
        truncated = tuple(i for i, pair in enumerate(zip(first_index.tolist(), second_index.tolist())) if pair in cut)
        scores = np.array([lookup[pair] for pair in zip(first_index.tolist(), second_index.tolist())], dtype=np.float32)
        competing = first_index if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
        record: list[np.ndarray] = []
        scores, recheck_notes = self._recheck_pairs(
            loaded, distinct_firsts, distinct_seconds, first_index, second_index, scores, competing, pair_cuts, record
        )
        rescored = tuple(np.unique(np.concatenate(record)).tolist()) if record else ()
        return ScoreResult(scores, notes + recheck_notes, truncated=truncated, rescored=rescored)

    def _recheck_pairs(
        self,
        loaded: LoadedModel[OutputColumn],
        firsts: list[str],
        seconds: list[str],
        first_index: np.ndarray,
        second_index: np.ndarray,
        scores: np.ndarray,
        groups: np.ndarray,
        cuts: np.ndarray | None = None,
        record: list[np.ndarray] | None = None,
    ) -> tuple[np.ndarray, list[str]]:
        """:meth:`_recheck` of the pairs ``(firsts[first_index], seconds[second_index])``, rescored as they were
        planned (only the distinct ones, in passes no larger than :data:`RECHECK_MAX_PAIRS` when they are few);
        ``record`` receives the positions rescored."""

        def rescore(todo: np.ndarray) -> np.ndarray:
            pairs = _unique_pairs(first_index[todo], second_index[todo])
            small = len(pairs[0]) <= 16 * RECHECK_MAX_PAIRS
            plan = self._plan(
                loaded,
                firsts,
                seconds,
                pairs=pairs,
                max_pairs=min(self.batch_size, RECHECK_MAX_PAIRS) if small else None,
            )
            fp32 = self._scores_by_pair(loaded, plan, show_progress=False, precision="fp32")
            return np.array(
                [fp32[pair] for pair in zip(first_index[todo].tolist(), second_index[todo].tolist())], dtype=np.float32
            )

        return self._recheck(scores, groups, cuts, rescore, record)

    def _plan(
        self,
        loaded: LoadedModel[OutputColumn],
        firsts: list[str],
        seconds: list[str],
        pairs: tuple[np.ndarray, np.ndarray] | None,
        max_pairs: int | None = None,
    ) -> PairPlan:
        if pairs is not None:
            pairs = _unique_pairs(*pairs)
        with loaded.tokenizer_lock:
            return plan_pairs(
                loaded.tokenizer,
                firsts,
                seconds,
                max_length=self.limit(loaded),
                pairs=pairs,
                max_pairs=max_pairs or self.batch_size,
                max_batch_tokens=self.max_batch_tokens,
                length_step=self.length_step,
                user_limit=self.max_length is not None,
            )

    def _scores_by_pair(
        self, loaded: LoadedModel[OutputColumn], plan: PairPlan, show_progress: bool, precision: Precision | None = None
    ) -> dict[tuple[int, int], float]:
        """``{(first index, second index): score}`` for every pair of the plan."""
        lookup: dict[tuple[int, int], float] = {}
        for batch, scores in self._run(loaded, plan, show_progress, precision):
            lookup.update(zip(zip(batch.firsts.tolist(), batch.seconds.tolist()), scores.tolist()))
        return lookup

    def _run(
        self,
        loaded: LoadedModel[OutputColumn],
        plan: PairPlan,
        show_progress: bool,
        precision: Precision | None = None,
        read: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> Iterator[tuple[PairBatch, np.ndarray]]:
        """Each batch of the plan with its scores, in the scorer's precision (or ``precision``: the recheck's fp32);
        ``read`` turns a batch's fp32 logits into what is yielded instead of the scores."""
        from tqdm.auto import tqdm

        # Reading each pass back before padding the next costs nothing measurable: on an H100, queueing the next
        # pass first (inputs from pinned memory) ran 0.88x to 1.06x as fast (MiniLM NLI, passes of 64 to 2,048; docs/performance.md, "On a GPU").
        with tqdm(total=plan.n_pairs, unit="pair", disable=not show_progress, leave=False) as progress:
            for batch in plan.batches():
                inputs = {name: tensor.to(self.device) for name, tensor in batch.inputs.items()}
                with inference_context(self.device, precision or self.precision):
                    logits = loaded.model(**inputs).logits
                fp32 = logits.float()
                scores = read(fp32) if read is not None else self._scores_from_logits(fp32, loaded.facts)
                yield batch, scores.cpu().numpy().astype(np.float32)
                progress.update(len(batch))

    def _truncation_notes(self, loaded: LoadedModel[OutputColumn], truncated: int, total: int, what: str) -> list[str]:
        notes: list[str] = []
        if truncated:
            add_note(
                notes,
                f"{truncated} of {total} {what} exceed the room left by the label description "
                f"within {self.limit(loaded)} tokens and were truncated (label descriptions never are)",
            )
        return notes


def _distinct(items: Sequence[str] | Iterator[str]) -> tuple[list[str], np.ndarray]:
    """Distinct items in first-seen order, and each item's index among them."""
    position: dict[str, int] = {}
    index = [position.setdefault(item, len(position)) for item in items]
    return list(position), np.array(index, dtype=np.int64)


def _unique_pairs(firsts: np.ndarray, seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    unique = np.unique(np.stack([firsts, seconds], axis=1), axis=0) if len(firsts) else np.zeros((0, 2), np.int64)
    return unique[:, 0], unique[:, 1]


def _load_zstc_model(source: str, device: torch.device) -> _RawModel | None:
    """A folder written by ``zstc train-nli`` (its own head, not a transformers class), or ``None``."""
    try:
        from zstc.models.nli_head import is_zstc_nli_model, load_zstc_nli_model
    except ModuleNotFoundError as error:
        if error.name != "zstc.models.nli_head":
            raise
        if (Path(source) / "zstc_training.json").exists():  # would otherwise load with a random head
            raise ModelError(
                f"{source} was written by `zstc train-nli`, which this installation of zstc cannot load"
            ) from None
        return None
    if not is_zstc_nli_model(source):
        return None
    model, tokenizer, id2label = load_zstc_nli_model(source, device)
    backbone_config = getattr(getattr(model, "backbone", None), "config", None)
    return model, tokenizer, id2label, getattr(backbone_config, "max_position_embeddings", None)
