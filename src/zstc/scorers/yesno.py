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
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm.auto import tqdm

from zstc.errors import ModelError
from zstc.models.registry import ModelSpec
from zstc.runtime import inference_context
from zstc.scorers.causal import CausalLMScorer, left_pad, length_batches, positions
from zstc.scorers.prompts import YESNO_ANSWERS, YESNO_INSTRUCTION, yesno_prompt

TokenIds = list[int]


class YesNoScorer(CausalLMScorer):
    family: ClassVar[str] = "yesno"

    def __init__(
        self,
        spec: ModelSpec,
        *,
        instruction: str = YESNO_INSTRUCTION,
        prefix_cache: bool = True,
        device: str | None = None,
        bf16: bool | None = None,
        batch_size: int = 16,
        max_length: int | None = None,
    ) -> None:
        """``batch_size`` counts (text, label) pairs per forward pass; ``prefix_cache=False`` runs every
        pair's full prompt (the reference computation, and the baseline of ``benchmarks/prefix_cache.py``)."""
        super().__init__(spec, device=device, bf16=bf16, batch_size=batch_size, max_length=max_length)
        self.instruction = instruction
        self.prefix_cache = prefix_cache
        self._answer_ids: list[int] = []

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "instruction": self.instruction, "prefix_cache": self.prefix_cache}

    def _on_load(self, tokenizer: Any) -> None:
        # Looked up as the words alone, as Qwen3-Reranker's reference code does: in context the prompt's final
        # "\n\n" would tokenize differently once followed by a word, which says nothing about the answer token.
        self._answer_ids = []
        for answer in YESNO_ANSWERS:
            ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
            if len(ids) != 1:
                raise ModelError(
                    f"{self.spec.model_id}'s tokenizer writes {answer!r} as {len(ids)} tokens; "
                    "a yes/no reranker must answer in a single token"
                )
            self._answer_ids.append(int(ids[0]))

    # -- prompts --------------------------------------------------------------------------------------

    def _pair_prompts(self, text: str, labels: Sequence[str]) -> list[TokenIds]:
        """The token ids of every label's prompt for ``text``, the text cut so the longest one fits."""

        def tokenize(candidate: str) -> list[TokenIds]:
            prompts = [yesno_prompt(candidate, label, self.instruction) for label in labels]
            return [list(ids) for ids in self._tokenizer(prompts, add_special_tokens=False)["input_ids"]]

        return self._fit_text(text, tokenize)

    # -- scoring --------------------------------------------------------------------------------------

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        self._load()
        self._start_notes()
        prompts = [self._pair_prompts(text, labels) for text in texts]
        n_pairs = len(texts) * len(labels)
        with inference_context(self.device, self.bf16), tqdm(total=n_pairs, unit="pair", disable=not show_progress) as bar:
            run = self._cached_logits if self.prefix_cache else self._full_logits
            logits = run(prompts, bar)
        self._finish_notes(len(texts))
        return torch.softmax(logits, dim=-1)[..., 0].numpy().astype(np.float32)

    def _full_logits(self, prompts: list[list[TokenIds]], bar: tqdm) -> torch.Tensor:
        """(yes, no) logits of every pair from its whole prompt, pairs batched across texts."""
        n_labels = len(prompts[0])
        pairs = [(t, j) for t in range(len(prompts)) for j in range(n_labels)]
        logits = torch.empty(len(prompts), n_labels, 2)
        for batch in length_batches([len(prompts[t][j]) for t, j in pairs], self.batch_size):
            batch_pairs = [pairs[k] for k in batch]
            out = self._answer_logits([prompts[t][j] for t, j in batch_pairs], self._answer_ids)
            for (t, j), row in zip(batch_pairs, out):
                logits[t, j] = row
            bar.update(len(batch))
        return logits

    def _cached_logits(self, prompts: list[list[TokenIds]], bar: tqdm) -> torch.Tensor:
        """(yes, no) logits of every pair, running each text's shared prefix once.

        Per batch of texts: one forward pass over their prefixes, then their (text, label) continuations in
        batches of ``batch_size`` pairs, each starting from its text's prefix states.
        """
        n_labels = len(prompts[0])
        logits = torch.empty(len(prompts), n_labels, 2)
        shared = [shared_prefix_length(text_prompts) for text_prompts in prompts]
        for text_batch in length_batches(shared, self.batch_size):
            prefixes = self._run_prefixes([prompts[t][0][: shared[t]] for t in text_batch])
            pairs = [(row, j) for row in range(len(text_batch)) for j in range(n_labels)]
            for start in range(0, len(pairs), self.batch_size):
                chunk = pairs[start:start + self.batch_size]
                continuations = [prompts[text_batch[row]][j][shared[text_batch[row]]:] for row, j in chunk]
                out = self._continue(prefixes, [row for row, _ in chunk], continuations)
                for (row, j), values in zip(chunk, out):
                    logits[text_batch[row], j] = values
                bar.update(len(chunk))
        return logits

    def _run_prefixes(self, prefixes: list[TokenIds]) -> PrefixStates:
        from transformers import DynamicCache

        input_ids, attention_mask = left_pad(prefixes, self.pad_id)
        cache = DynamicCache(config=self._model.config)
        self._forward_answer(input_ids, attention_mask, positions(attention_mask), self._answer_ids, cache)
        return PrefixStates(
            states=[(layer.keys, layer.values) for layer in cache.layers],
            attention_mask=attention_mask,
            lengths=torch.tensor([len(p) for p in prefixes]),
        )

    def _continue(self, prefixes: PrefixStates, rows: list[int], continuations: list[TokenIds]) -> torch.Tensor:
        """(yes, no) logits of each continuation after the prefix of its row, continuations left-padded.

        The padding sits between prefix and continuation; it is masked, and position ids count on from
        each prefix's real length, so a pair's result is that of its prompt alone.
        """
        index = torch.tensor(rows)
        input_ids, attention_mask = left_pad(continuations, self.pad_id)
        return self._forward_answer(
            input_ids,
            torch.cat([prefixes.attention_mask[index], attention_mask], dim=-1),
            positions(attention_mask, start=prefixes.lengths[index]),
            self._answer_ids,
            prefixes.cache_for(index, self._model.config),
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
