"""Generative yes/no rerankers (Qwen3-Reranker): ``p_yes`` after a judge prompt per (text, label).

The score of a pair is ``softmax(v_yes, v_no)[yes]`` over the next-token logits of "yes" and "no" after
the exact Qwen3-Reranker prompt (PROTOCOL.md section 2). A naive implementation runs one full prompt per
pair. Here the prompts of one text are identical up to the label (system prompt, instruction, the text
itself), so that shared prefix is run once per text, and its key/value cache is reused by every label's
continuation, the labels batched. Cached and uncached scoring read the very same token sequences; only
the order of floating-point operations differs (agreement to 1e-4 in fp32 is tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np
import torch
from tqdm.auto import tqdm

from zstc.errors import ModelError
from zstc.models.registry import ModelSpec
from zstc.scorers.base import LoadedModel, ScoreResult
from zstc.scorers.runtime import inference_context
from zstc.scorers.batching import length_batches
from zstc.scorers.causal import CausalLMScorer, TokenIds, left_pad, positions
from zstc.scorers.prompts import YESNO_ANSWERS, YESNO_INSTRUCTION, yesno_prompt

AnswerIds = list[int]
"""The token ids of "yes" and "no", read from the tokenizer when the model loads."""


class YesNoScorer(CausalLMScorer[AnswerIds]):
    """Generative yes/no rerankers (Qwen3-Reranker): one prompt per (text, label), scored
    ``p_yes = exp(v_yes) / (exp(v_yes) + exp(v_no))``; by default the prompt up to the label is run once per text
    (``prefix_cache``)."""

    family: ClassVar[str] = "yesno"
    SCORING_VERSION: ClassVar[str] = "1"
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        """``batch_size`` counts (text, label) pairs per forward pass; ``prefix_cache=False`` runs every
        pair's full prompt (the reference computation, and the baseline of ``benchmarks/prefix_cache.py``)."""
        super().__init__(spec, **options)
        self.instruction: str = self.options["instruction"] or YESNO_INSTRUCTION
        self.prefix_cache: bool = self.options["prefix_cache"]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "instruction": self.instruction, "prefix_cache": self.prefix_cache}

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

    def _fitted_prompts(self, loaded: LoadedModel[AnswerIds], text: str, labels: Sequence[str]) -> tuple[list[TokenIds], bool]:
        """The token ids of every label's prompt for ``text``, the text cut so the longest one fits; and
        whether it was cut."""

        def tokenize(candidate: str) -> list[TokenIds]:
            prompts = [yesno_prompt(candidate, label, self.instruction) for label in labels]
            return [list(ids) for ids in loaded.tokenizer(prompts, add_special_tokens=False)["input_ids"]]

        return self._fit(loaded, text, tokenize)

    def _pair_prompts(self, text: str, labels: Sequence[str]) -> list[TokenIds]:
        return self._fitted_prompts(self.loaded, text, labels)[0]

    # -- scoring --------------------------------------------------------------------------------------

    def score_with_notes(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> ScoreResult:
        loaded = self.loaded
        notes: list[str] = []
        logits = torch.empty(len(texts), len(labels), 2)
        share_prefix = self.prefix_cache and self._prefix_states_suffice()
        if self.prefix_cache and not share_prefix:
            notes.append("prefix cache not used: this model's layers keep more state than keys and values "
                         "(sliding-window or recurrent attention), so every pair ran its whole prompt")
        truncated = 0
        with (
            inference_context(self.device, self.precision),
            tqdm(total=len(texts) * len(labels), unit="pair", disable=not show_progress) as bar,
        ):
            # Texts are tokenized batch by batch: all pairs' token ids at once would take GBs for a full dataset.
            for batch in self._text_batches(texts):
                fitted = [self._fitted_prompts(loaded, texts[i], labels) for i in batch]
                truncated += sum(cut for _, cut in fitted)
                logits[batch] = self._pair_logits(loaded, [prompts for prompts, _ in fitted], bar, share_prefix=share_prefix)
        notes += self._truncation_notes(loaded, truncated, len(texts))
        return ScoreResult(torch.softmax(logits, dim=-1)[..., 0].numpy().astype(np.float32), notes)

    def _pair_logits(self, loaded: LoadedModel[AnswerIds], prompts: list[list[TokenIds]], bar: tqdm, *, share_prefix: bool) -> torch.Tensor:
        """(yes, no) logits of every (text, label) pair, shape ``(texts, labels, 2)``.

        With ``share_prefix``, one forward pass runs all the texts' shared prefixes, and each pair then runs
        only the rest of its prompt (its label and the suffix) from its text's prefix states; without it,
        each pair runs its whole prompt. Either way, pairs of similar length are batched together.
        """
        shared = [shared_prefix_length(p) if share_prefix else 0 for p in prompts]
        prefixes = self._run_prefixes(loaded, [p[0][:n] for p, n in zip(prompts, shared)]) if share_prefix else None
        pairs = [(t, j) for t, text_prompts in enumerate(prompts) for j in range(len(text_prompts))]
        logits = torch.empty(len(prompts), len(prompts[0]), 2)
        for batch in length_batches([len(prompts[t][j]) - shared[t] for t, j in pairs], self.batch_size):
            chunk = [pairs[k] for k in batch]
            rests = [prompts[t][j][shared[t]:] for t, j in chunk]
            if prefixes is None:
                out = self._answer_logits(loaded, rests, loaded.facts)
            else:
                out = self._continue(loaded, prefixes, [t for t, _ in chunk], rests)
            for pair, values in zip(chunk, out):
                logits[pair] = values
            bar.update(len(chunk))
        return logits

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

    def _continue(self, loaded: LoadedModel[AnswerIds], prefixes: PrefixStates, rows: list[int], continuations: list[TokenIds]) -> torch.Tensor:
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
