"""What the generative families share: a causal LM read at its next-token logits.

Yes/no rerankers and instruction-tuned LLMs both build a prompt, run a decoder-only model over it and read
the logits of a few answer tokens at the last position. This module holds that common part: loading the
model and tokenizer, fitting a prompt into the model's length by cutting only the text, left padding with
explicit position ids (so a sequence's scores do not depend on the padding its batch needed), and finding
the token a model would emit for an answer string.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from zstc.errors import ModelError
from zstc.models.loading import load_error, model_source
from zstc.models.registry import ModelSpec
from zstc.scorers.base import TorchScorer
from zstc.scorers.runtime import Precision

_UNBOUNDED = 1_000_000
"""Tokenizers without a known limit report a huge sentinel (1e30); anything above this is not a limit."""


class CausalLMScorer(TorchScorer):
    """Base class of the generative scorers: a causal LM and its tokenizer, loaded on first use."""

    def __init__(
        self,
        spec: ModelSpec,
        *,
        device: str | None = None,
        precision: Precision = "fp32",
        batch_size: int = 16,
        max_length: int | None = None,
    ) -> None:
        super().__init__(spec, device=device, precision=precision, batch_size=batch_size, max_length=max_length)
        self._model: Any = None
        self._tokenizer: Any = None
        self._truncated = 0

    # -- loading --------------------------------------------------------------------------------------

    def _load(self) -> tuple[Any, Any]:
        """The model and tokenizer; weights are loaded in bf16 when bf16 is on (an 8B model in fp32 is 32 GB)."""
        if self._model is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            source = model_source(self.spec)
            try:
                tokenizer = AutoTokenizer.from_pretrained(source)
                model = AutoModelForCausalLM.from_pretrained(
                    source, dtype=torch.bfloat16 if self.precision == "bf16" else torch.float32
                )
            except Exception as error:
                raise load_error(self.spec, error) from None
            model.to(self.device).eval()
            if self.max_length is None:
                self.max_length = model_max_length(self.spec, tokenizer, model.config)
            self._tokenizer = tokenizer
            self._on_load(tokenizer)  # before the model is kept: a model it rejects is not "loaded"
            self._count_parameters(model)
            self._model = model
        return self._model, self._tokenizer

    def _on_load(self, tokenizer: Any) -> None:
        """Hook for what a family derives once from the tokenizer (answer token ids, option symbols)."""

    @property
    def pad_id(self) -> int:
        # Any id works: padded positions are masked out. Many causal tokenizers have no pad token.
        tokenizer = self._tokenizer
        for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
            if candidate is not None:
                return int(candidate)
        return 0

    # -- tokens ---------------------------------------------------------------------------------------

    def _ids(self, text: str, *, special: bool = False) -> list[int]:
        return list(self._tokenizer(text, add_special_tokens=special)["input_ids"])

    def _fit_text(self, text: str, tokenize: Callable[[str], list[list[int]]]) -> list[list[int]]:
        """``tokenize(text)``: the token ids of the prompt(s) built around ``text``, with the text cut at its
        end just enough that the longest prompt fits in ``max_length``.

        Only the text is ever cut: the instruction, label descriptions, options and answer suffix are the
        benchmark's definition.
        """
        assert self.max_length is not None
        prompts = tokenize(text)
        excess = max(len(ids) for ids in prompts) - self.max_length
        if excess <= 0:
            return prompts
        text_ids = self._ids(text)
        keep = len(text_ids) - excess
        while keep > 0:
            # Re-measure after decoding: token boundaries at the cut may shift the count by a token or two.
            prompts = tokenize(self._tokenizer.decode(text_ids[:keep]))
            excess = max(len(ids) for ids in prompts) - self.max_length
            if excess <= 0:
                self._truncated += 1
                return prompts
            keep -= excess
        raise ModelError(
            f"the prompt around the text is longer than {self.spec.model_id}'s {self.max_length} tokens on its own "
            "(label descriptions and instructions are never cut): use fewer or shorter labels, or a larger --max-length"
        )

    def _start_notes(self) -> None:
        self.notes = []
        self._truncated = 0

    def _finish_notes(self, n_texts: int) -> None:
        if self._truncated:
            self._note(f"{self._truncated} of {n_texts} texts exceed {self.max_length} tokens with their prompt and were truncated")

    def _text_batches(self, texts: Sequence[str]) -> Iterator[list[int]]:
        """Indices of ``texts`` in batches of ``batch_size``, similar lengths together (less padding)."""
        return length_batches([len(text) for text in texts], self.batch_size)

    # -- forward passes -------------------------------------------------------------------------------

    def _answer_logits(self, sequences: Sequence[list[int]], answer_ids: list[int]) -> torch.Tensor:
        """Logits of ``answer_ids`` after each sequence, shape ``(len(sequences), len(answer_ids))``, fp32."""
        input_ids, attention_mask = left_pad(sequences, self.pad_id)
        return self._forward_answer(input_ids, attention_mask, positions(attention_mask), answer_ids)

    def _forward_answer(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        answer_ids: list[int],
        past_key_values: Any = None,
    ) -> torch.Tensor:
        """One forward pass; ``attention_mask`` covers the past and the new tokens. Left padding keeps every
        sequence's last real token at the last position, so only that position's logits are computed."""
        model = self._model
        output = model(
            input_ids=input_ids.to(self.device),
            attention_mask=attention_mask.to(self.device),
            position_ids=position_ids.to(self.device),
            past_key_values=past_key_values,
            use_cache=past_key_values is not None,
            logits_to_keep=1,
        )
        return output.logits[:, -1, answer_ids].float().cpu()


def model_max_length(spec: ModelSpec, tokenizer: Any, config: Any) -> int:
    """The model's own token limit: the smaller of what its tokenizer and its position embeddings allow."""
    limits = [
        n for n in (getattr(tokenizer, "model_max_length", None), getattr(config, "max_position_embeddings", None))
        if isinstance(n, int) and 0 < n < _UNBOUNDED
    ]
    if not limits:
        raise ModelError(f"{spec.model_id} does not state its maximum input length: pass --max-length")
    return min(limits)


def next_token_id(tokenizer: Any, context: str, continuation: str) -> int | None:
    """The token a model emits to write ``continuation`` right after ``context``, or ``None`` if that takes
    more than one token.

    Checking in context rather than alone decides the spacing question for every tokenizer alike: after
    "letter", BPE tokenizers write " A" and SentencePiece ones "▁A", and a tokenizer that splits " 2" into
    a space and a digit makes "2" unusable as a one-token answer.
    """
    before = tokenizer(context, add_special_tokens=False)["input_ids"]
    after = tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
    if len(after) == len(before) + 1 and after[: len(before)] == before:
        return int(after[-1])
    return None


def left_pad(sequences: Sequence[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)``, padded on the left so every sequence ends at the last position."""
    width = max(len(s) for s in sequences)
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        if sequence:
            input_ids[row, width - len(sequence):] = torch.tensor(sequence, dtype=torch.long)
            attention_mask[row, width - len(sequence):] = 1
    return input_ids, attention_mask


def positions(attention_mask: torch.Tensor, start: torch.Tensor | int = 0) -> torch.Tensor:
    """Position ids that count real tokens only, from ``start`` (per row): padding shifts nothing.

    Rotary models would otherwise see a left-padded sequence at other absolute positions than the same
    sequence alone, which changes its scores slightly with the batch it happens to be in.
    """
    offset = start.unsqueeze(-1) if isinstance(start, torch.Tensor) else start
    return (attention_mask.cumsum(-1) - 1).clamp(min=0) + offset


def length_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices in batches of similar length (longest first), so little compute goes to padding."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]
