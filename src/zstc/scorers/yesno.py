"""Generative yes/no rerankers (Qwen3-Reranker): ``p_yes`` after a judge prompt per (text, label).

The score of a pair is ``softmax(v_yes, v_no)[yes]`` over the next-token logits of "yes" and "no" after
the exact Qwen3-Reranker prompt (PROTOCOL.md section 2). A naive implementation runs one full prompt per
pair. Here the prompts of one text are identical up to the label (system prompt, instruction, the text
itself), so that shared prefix is run once per text, and its key/value cache is reused by every label's
continuation, the labels batched. Cached and uncached scoring read the very same token sequences; only
the order of floating-point operations differs (agreement to 1e-4 in fp32 is tested).

Aligned pairs (:meth:`YesNoScorer.score_pairs`, the NLI probe's premise-hypothesis pairs) are one prompt each,
the text fitted to that pair's prompt alone, so a pair's score is that of a one-text, one-label grid whatever
else is in the call. Pairs that share their text still share its prefix; a text with a single prompt runs it
whole (its prefix would leave a one-token continuation: two passes for the work of one).

In bf16 the pairs whose decision bf16's rounding could change (their log-odds ``v_yes - v_no`` near their text's
best, or near their threshold's) are scored again in fp32, so decisions are fp32's (:mod:`zstc.scorers.recheck`).
A small judge needs it: SmolLM2-135M scored 100 AG News texts x 4 labels with 0.74 argmax agreement between bf16
alone and fp32 (its labels' ``p_yes`` lie a median 0.005 apart). The weights then stay fp32 (bf16 is autocast over
them); ``recheck_margin=0`` loads them in bf16 instead, with bf16's own decisions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, cast

import numpy as np
import torch
from tqdm.auto import tqdm

from zstc.errors import ModelError, OptionError
from zstc.models.registry import ModelSpec
from zstc.scorers.base import Capabilities, LoadedModel, ScoreResult, check_pair_arguments
from zstc.scorers.recheck import label_cuts, logit_cuts
from zstc.scorers.runtime import Precision, inference_context
from zstc.scorers.batching import length_batches
from zstc.scorers.causal import CausalLMScorer, TokenIds, left_pad, positions
from zstc.scorers.prompts import YESNO_ANSWERS, YESNO_INSTRUCTION, yesno_prompt
from zstc.validation import is_blank

AnswerIds = list[int]
"""The token ids of "yes" and "no", read from the tokenizer when the model loads."""


class YesNoScorer(CausalLMScorer[AnswerIds]):
    """Generative yes/no rerankers (Qwen3-Reranker): one prompt per (text, label), scored
    ``p_yes = exp(v_yes) / (exp(v_yes) + exp(v_no))``; by default the prompt up to the label is run once per text
    (``prefix_cache``)."""

    family: ClassVar[str] = "yesno"
    SCORING_VERSION: ClassVar[str] = (
        "2"  # 2: bf16 is autocast over fp32 weights and rechecks near ties and cuts in fp32
    )
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(
        notes=True, pair_scoring=True, rechecks=True, twin=True, read_apart=True
    )
    """Takes multi-label thresholds (``score_with_notes(..., thresholds=)``) and, in bf16, rechecks the pairs near them."""

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        """``batch_size`` counts (text, label) pairs per forward pass; ``prefix_cache=False`` runs every
        pair's full prompt (the reference computation, and the baseline of ``benchmarks/prefix_cache.py``)."""
        super().__init__(spec, **options)
        given = self.options["instruction"]
        if given is not None and is_blank(given):  # "" read as "the default" ran another prompt than the one asked for
            raise OptionError(
                "instruction is empty: leave it out for the default (BTZSC's; nli-probe's: the paper's NLI "
                "probe instruction)",
                "instruction",
            )
        self.instruction: str = given or YESNO_INSTRUCTION
        self.prefix_cache: bool = self.options["prefix_cache"]
        self.query: str = self.options["query"]
        """Which side fills the prompt's <Query>: ``text`` (BTZSC's) or ``label`` (see :meth:`prompt`)."""

    def describe(self) -> dict[str, Any]:
        """The base description, plus the judge's instruction, whether the prefix cache is on and which side fills the query."""
        return {
            **super().describe(),
            "instruction": self.instruction,
            "prefix_cache": self.prefix_cache,
            "query": self.query,
        }

    def _facts(self, tokenizer: Any) -> AnswerIds:
        # Looked up as the words alone, as Qwen3-Reranker's reference code does: in context the prompt's final
        # "\n\n" would tokenize differently once followed by a word, which says nothing about the answer token.
        answer_ids = []
        for answer in YESNO_ANSWERS:
            ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
            if len(ids) != 1:
                raise ModelError(
                    f"{self.spec.model_id}'s tokenizer writes {answer!r} as {len(ids)} tokens; "
                    "a yes/no reranker must answer in a single token"
                )
            answer_ids.append(int(ids[0]))
        return answer_ids

    # -- prompts --------------------------------------------------------------------------------------

    def prompt(self, text: str, label: str) -> str:
        """The judge prompt of one (text, label) pair (or a pair's first and second member), byte for byte:
        the text fills <Query> and the label <Document>, or the other way round with ``query="label"``."""
        query, document = (text, label) if self.query == "text" else (label, text)
        return yesno_prompt(query, document, self.instruction)

    def _label_inputs(self, labels: Sequence[str]) -> list[str]:
        """Each label's judge prompt around one text (the empty one: the text is the same for every label and never
        next to it), so that labels whose prompts are the very same tokens are found."""
        return [self.prompt("", label) for label in labels]

    def _fitted_prompts(
        self, loaded: LoadedModel[AnswerIds], text: str, labels: Sequence[str]
    ) -> tuple[list[TokenIds], bool]:
        """The token ids of every label's prompt for ``text``, the text cut so the longest one fits; and
        whether it was cut. The text is cut wherever it stands in the prompt (<Query> or <Document>)."""

        def tokenize(candidate: str) -> list[TokenIds]:
            prompts = [self.prompt(candidate, label) for label in labels]
            return [list(ids) for ids in loaded.tokenizer(prompts, add_special_tokens=False)["input_ids"]]

        return self._fit(loaded, text, tokenize)

    def _pair_prompts(self, text: str, labels: Sequence[str]) -> list[TokenIds]:
        return self._fitted_prompts(self.loaded, text, labels)[0]

    # -- scoring --------------------------------------------------------------------------------------

    def score_with_notes(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        *,
        show_progress: bool = False,
        thresholds: Sequence[float] | np.ndarray | None = None,
    ) -> ScoreResult:
        """``p_yes`` of every (text, label) prompt: a ``(len(texts), len(labels))`` float32 matrix.

        ``thresholds`` (one ``p_yes`` cut per label) says that the caller decides by cuts (multi-label): bf16 then
        rechecks the pairs near their label's cut rather than the near ties of each text's best."""
        cuts = label_cuts(thresholds, len(labels))
        loaded = self.loaded

        def prompts_of(i: int) -> TextPrompts:  # every label's prompt, each reading the text as cut for the longest
            prompts, cut = self._fitted_prompts(loaded, texts[i], labels)
            return TextPrompts(prompts, (cut,) * len(prompts))

        per_text, cut, notes = self._text_logits(
            loaded, [len(text) for text in texts], prompts_of, len(texts) * len(labels), show_progress
        )
        logits = torch.stack(per_text).reshape(-1, 2) if per_text else torch.empty(0, 2)
        rows, columns = (grid.ravel() for grid in np.indices((len(texts), len(labels))))

        def rescored_prompts(todo: np.ndarray) -> list[tuple[TokenIds, int]]:  # fitted and split as in the grid
            fitted = {
                row: self._fitted_prompts(loaded, texts[row], labels)[0] for row in np.unique(rows[todo]).tolist()
            }
            shares = self._shares_prefix()
            split = {row: run_prefix_length(prompts, shares) for row, prompts in fitted.items()}
            return [
                (fitted[row][column], split[row]) for row, column in zip(rows[todo].tolist(), columns[todo].tolist())
            ]

        notes += self._recheck_pairs(
            loaded, logits, rows, None if cuts is None else cuts[columns], rescored_prompts, text_of=rows
        )
        truncated = tuple(
            i for i, flags in enumerate(cut) if any(flags)
        )  # the first pass's: a recheck cuts nothing anew
        notes += self._truncation_notes(loaded, len(truncated), len(texts))
        return ScoreResult(p_yes(logits).reshape(len(texts), len(labels)), notes, truncated=truncated)

    def score_pairs(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        *,
        groups: Sequence[int] | np.ndarray | None = None,
        cuts: Sequence[float] | np.ndarray | None = None,
        show_progress: bool = False,
    ) -> np.ndarray:
        """``p_yes`` of each aligned pair's prompt (``firsts[i]`` the text, ``seconds[i]`` the label: an NLI
        probe's premise and hypothesis), float32, one per pair. ``groups[i]`` names the decision pair ``i`` competes
        in (by default the pairs that share their first member) and ``cuts[i]``, when not ``nan``, the ``p_yes``
        threshold it is decided by instead: bf16 rechecks the pairs near them in fp32."""
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
        """:meth:`score_pairs`'s scores with the notes of the call (first members truncated, prefix cache not used,
        pairs rescored in fp32).

        Each pair's prompt is fitted on its own, only its first member cut (wherever :attr:`query` puts it),
        so its score is ``score_with_notes([first], [second])``'s; pairs that share a first member share its
        prompt prefix (``prefix_cache``)."""
        pair_cuts = check_pair_arguments(firsts, seconds, groups, cuts)
        loaded = self.loaded
        members: dict[str, list[int]] = {}
        for i, first in enumerate(firsts):
            members.setdefault(first, []).append(i)
        distinct = list(members)

        def fitted(first: str) -> list[tuple[list[TokenIds], bool]]:  # one prompt per pair of this first member
            return [self._fitted_prompts(loaded, first, [seconds[i]]) for i in members[first]]

        def prompts_of(t: int) -> TextPrompts:  # each pair's prompt, cut or not on its own
            prompts = fitted(distinct[t])
            return TextPrompts([ids[0] for ids, _ in prompts], tuple(cut for _, cut in prompts))

        per_text, cut, notes = self._text_logits(
            loaded, [len(first) for first in distinct], prompts_of, len(firsts), show_progress
        )
        logits = torch.empty(len(firsts), 2)
        was_cut = np.zeros(len(firsts), dtype=bool)
        for first, values, flags in zip(distinct, per_text, cut):
            logits[members[first]] = values
            was_cut[members[first]] = flags
        first_index = np.empty(len(firsts), dtype=np.int64)
        for t, first in enumerate(distinct):
            first_index[members[first]] = t
        competing = first_index if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1].ravel()

        def rescored_prompts(todo: np.ndarray) -> list[tuple[TokenIds, int]]:  # fitted and split as in the run
            wanted = np.flatnonzero(todo).tolist()
            again = {first: [ids[0] for ids, _ in fitted(first)] for first in {firsts[k] for k in wanted}}
            shares = self._shares_prefix()
            split = {first: run_prefix_length(prompts, shares) for first, prompts in again.items()}
            slot = {k: j for first in again for j, k in enumerate(members[first])}
            return [(again[firsts[k]][slot[k]], split[firsts[k]]) for k in wanted]

        notes += self._recheck_pairs(loaded, logits, competing, pair_cuts, rescored_prompts, text_of=first_index)
        truncated = tuple(np.flatnonzero(was_cut).tolist())  # the first pass's: a recheck cuts nothing anew
        notes += self._truncation_notes(loaded, len(truncated), len(firsts))
        return ScoreResult(p_yes(logits), notes, truncated=truncated)

    def _recheck_pairs(
        self,
        loaded: LoadedModel[AnswerIds],
        logits: torch.Tensor,
        groups: np.ndarray,
        cuts: np.ndarray | None,
        prompts_of: Callable[[np.ndarray], list[tuple[TokenIds, int]]],
        *,
        text_of: np.ndarray,
    ) -> list[str]:
        """In bf16, replace in ``logits`` (one (yes, no) row per pair) those of the pairs whose decision bf16 could
        change by their fp32 logits, and return the notes saying how many; in fp32, nothing.

        The decision space is the log-odds ``v_yes - v_no`` (``p_yes`` is their sigmoid: the same order), and the
        ``p_yes`` cuts are compared there through their logit (:func:`~zstc.scorers.recheck.logit_cuts`).
        ``prompts_of(todo)``: the token ids of the prompts of the pairs of the mask ``todo``, in their order, each with
        the length of the prefix its text's run shared (:func:`run_prefix_length`), so that a pair rescored alone reads
        the same two passes as in an fp32 run of the whole call; ``text_of``: each pair's text."""

        def rescore(todo: np.ndarray) -> np.ndarray:
            positions, prompts = np.flatnonzero(todo), prompts_of(todo)
            by_text: dict[int, list[int]] = {}
            for k, text in enumerate(text_of[positions].tolist()):
                by_text.setdefault(text, []).append(k)
            picked = list(by_text.values())
            per_text, _, _ = self._text_logits(
                loaded,
                [len(prompts[ks[0]][0]) for ks in picked],
                lambda t: TextPrompts([prompts[k][0] for k in picked[t]], prefix=prompts[picked[t][0]][1]),
                len(prompts),
                False,
                precision="fp32",
            )
            for ks, values in zip(picked, per_text):
                logits[positions[ks]] = values
            return _log_odds(logits[positions])

        return self._recheck(_log_odds(logits), groups, logit_cuts(cuts), rescore)[1]

    def _text_logits(
        self,
        loaded: LoadedModel[AnswerIds],
        sizes: Sequence[int],
        prompts_of: Callable[[int], TextPrompts],
        total: int,
        show_progress: bool,
        precision: Precision | None = None,
    ) -> tuple[list[torch.Tensor], list[tuple[bool, ...]], list[str]]:
        """For each text (``sizes[i]``: text ``i``'s length, to batch similar ones together), the (yes, no) logits of
        its prompts, shape ``(prompts, 2)``; which of its prompts read it cut (:attr:`TextPrompts.cut`); and the call's
        notes (prefix cache not used). ``prompts_of(i)``: text ``i``'s prompts (:class:`TextPrompts`: token ids, which
        read the text cut, and where a recheck splits them); ``total``: all the prompts, for the progress bar;
        ``precision``: the recheck's fp32, else the scorer's."""
        share_prefix = self._shares_prefix()
        notes: list[str] = []
        if self.prefix_cache and not share_prefix:
            notes.append(
                "prefix cache not used: this model's layers keep more state than keys and values "
                "(sliding-window or recurrent attention), so every pair ran its whole prompt"
            )
        per_text: list[torch.Tensor] = [torch.empty(0, 2)] * len(sizes)
        cut: list[tuple[bool, ...]] = [()] * len(sizes)
        with (
            inference_context(self.device, precision or self.precision),
            tqdm(total=total, unit="pair", disable=not show_progress) as bar,
        ):
            # Texts are tokenized batch by batch: all pairs' token ids at once would take GBs for a full dataset.
            for batch in length_batches(sizes, self.batch_size):
                fitted = [prompts_of(i) for i in batch]
                logits, start = self._pair_logits(loaded, fitted, bar, share_prefix=share_prefix), 0
                for i, text in zip(batch, fitted):
                    per_text[i], start = logits[start : start + len(text.prompts)], start + len(text.prompts)
                    cut[i] = text.cut
        return per_text, cut, notes

    def _pair_logits(
        self, loaded: LoadedModel[AnswerIds], texts: list[TextPrompts], bar: tqdm, *, share_prefix: bool
    ) -> torch.Tensor:
        """(yes, no) logits of every prompt of every text, shape ``(prompts, 2)``, text by text (texts may have
        different numbers of prompts).

        With ``share_prefix``, one forward pass runs the shared prefixes of all the texts that have several
        prompts, and each of their prompts then runs only the rest (its label and the suffix) from its text's
        prefix states; a text with a single prompt, or any text without ``share_prefix``, runs its whole
        prompt(s); a text whose :attr:`TextPrompts.prefix` is set is split there (a recheck's, as its run split it).
        Either way, prompts of similar length are batched together; a continuation and a whole prompt never share a
        pass (one reads prefix states, the other none).
        """
        prompts = [text.prompts for text in texts]
        shared = [
            run_prefix_length(text.prompts, share_prefix) if text.prefix is None else text.prefix for text in texts
        ]
        cached = [t for t, n in enumerate(shared) if n]
        prefixes = self._run_prefixes(loaded, [prompts[t][0][: shared[t]] for t in cached]) if cached else None
        row_of = {t: row for row, t in enumerate(cached)}
        pairs = [(t, j) for t, text_prompts in enumerate(prompts) for j in range(len(text_prompts))]
        rests = [prompts[t][j][shared[t] :] for t, j in pairs]
        logits = torch.empty(len(pairs), 2)
        for continued in (True, False):
            todo = [k for k, (t, _) in enumerate(pairs) if (shared[t] > 0) == continued]
            for batch in length_batches([len(rests[k]) for k in todo], self.batch_size):
                chunk = [todo[b] for b in batch]
                if prefixes is not None and continued:
                    logits[chunk] = self._continue(
                        loaded, prefixes, [row_of[pairs[k][0]] for k in chunk], [rests[k] for k in chunk]
                    )
                else:
                    logits[chunk] = self._answer_logits(loaded, [rests[k] for k in chunk], loaded.facts)
                bar.update(len(chunk))
        return logits

    def _shares_prefix(self) -> bool:
        """Whether the prompts of a text share their prefix's states: ``prefix_cache``, and a model whose states can."""
        return self.prefix_cache and self._prefix_states_suffice()

    def _prefix_states_suffice(self) -> bool:
        """Whether a prefix is fully described by its keys and values in every layer (what
        :class:`PrefixStates` copies); a sliding-window layer or a recurrent one keeps other state too."""
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        return all(type(layer) is DynamicLayer for layer in DynamicCache(config=self.loaded.model.config).layers)

    def _run_prefixes(self, loaded: LoadedModel[AnswerIds], prefixes: list[TokenIds]) -> PrefixStates:
        from transformers import DynamicCache

        input_ids, attention_mask = left_pad(prefixes, self.pad_id(loaded))
        cache = DynamicCache(config=loaded.model.config)
        self._forward_answer(loaded, input_ids, attention_mask, positions(attention_mask), loaded.facts, cache)
        return PrefixStates(
            states=[(layer.keys, layer.values) for layer in cast(list[Any], cache.layers)],
            attention_mask=attention_mask,
            lengths=torch.tensor([len(p) for p in prefixes]),
        )

    def _continue(
        self, loaded: LoadedModel[AnswerIds], prefixes: PrefixStates, rows: list[int], continuations: list[TokenIds]
    ) -> torch.Tensor:
        """(yes, no) logits of each continuation after the prefix of its row, continuations left-padded.

        The padding sits between prefix and continuation; it is masked, and position ids count on from
        each prefix's real length, so a pair's result is that of its prompt alone.
        """
        index = torch.tensor(rows)
        input_ids, attention_mask = left_pad(continuations, self.pad_id(loaded))
        return self._forward_answer(
            loaded,
            input_ids,
            torch.cat([prefixes.attention_mask[index], attention_mask], dim=-1),
            positions(attention_mask, start=prefixes.lengths[index]),
            loaded.facts,
            prefixes.cache_for(index, loaded.model.config),
        )


@dataclass
class PrefixStates:
    """The key/value states of a batch of left-padded prompt prefixes, one row per text."""

    states: list[tuple[torch.Tensor, torch.Tensor]]
    """Per layer, keys and values of shape ``(texts, kv_heads, padded_length, head_dim)``."""
    attention_mask: torch.Tensor
    lengths: torch.Tensor
    """Real (unpadded) tokens of each prefix."""

    def cache_for(self, rows: torch.Tensor, config: Any) -> Any:
        """A fresh cache holding the prefix states of ``rows`` (repeated as often as they occur).

        Always a new cache with its own tensors: the model appends the continuation's states to the cache it
        is given, so a cache shared between continuation batches would grow with each of them.
        """
        from transformers import DynamicCache

        index = rows.to(self.states[0][0].device)
        return DynamicCache([(keys[index], values[index]) for keys, values in self.states], config=config)


def _log_odds(logits: torch.Tensor) -> np.ndarray:
    """``v_yes - v_no`` of (yes, no) logits in the last dimension, as float32: the recheck's decision space."""
    return (logits[..., 0] - logits[..., 1]).numpy().astype(np.float32)


def p_yes(logits: torch.Tensor) -> np.ndarray:
    """``exp(v_yes) / (exp(v_yes) + exp(v_no))`` of (yes, no) logits in the last dimension, as float32."""
    return torch.softmax(logits, dim=-1)[..., 0].numpy().astype(np.float32)


class TextPrompts(NamedTuple):
    """One text's prompts, as a scoring pass takes them."""

    prompts: list[TokenIds]
    cut: tuple[bool, ...] = ()
    """For each prompt, whether it reads the text cut to fit (the call's truncation note and
    :attr:`~zstc.scorers.base.ScoreResult.truncated`): every prompt of a grid's text (cut once, for its longest), or
    each aligned pair's own. Empty: none does (a recheck's prompts, which the first pass already told of)."""
    prefix: int | None = None
    """The leading tokens run once for all of them; None: :func:`run_prefix_length`'s. A recheck sets it to the split
    its text's run used, so that a pair rescored alone reads the same two passes."""


def run_prefix_length(prompts: list[TokenIds], share_prefix: bool) -> int:
    """The prefix a text's prompts run once: all they share (:func:`shared_prefix_length`) when prefixes are shared
    and there are several prompts; else 0 (a single prompt runs whole: its prefix would leave a one-token rest)."""
    return shared_prefix_length(prompts) if share_prefix and len(prompts) > 1 else 0


def shared_prefix_length(sequences: Sequence[TokenIds]) -> int:
    """How many leading tokens all ``sequences`` share, leaving each at least one token to run after it.

    Measured on token ids rather than cut at ``{label}`` in the template: the cached and the uncached path
    then read identical tokens whatever the tokenizer does at the boundary, and labels that begin alike
    ("This text is about ...") share their common words too.
    """
    first = sequences[0]
    limit = min(len(s) for s in sequences) - 1
    length = 0
    while length < limit and all(s[length] == first[length] for s in sequences):
        length += 1
    return length
