"""What the generative families share: a causal LM read at its next-token logits.

Yes/no rerankers and instruction-tuned LLMs both build a prompt, run a decoder-only model over it and read
the logits of a few answer tokens at the last position. This module holds that common part: loading the
model and tokenizer, fitting a prompt into the model's length by cutting only the text, left padding with
explicit position ids (so a sequence's scores do not depend on the padding its batch needed), and finding
the token a model would emit for an answer string.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, TypeVar

import torch

from zstc.errors import ModelError
from zstc.models.loading import load_error, model_source, pinned, remote_code
from zstc.scorers.base import LoadedModel, TorchScorer, count_parameters, token_limit
from zstc.scorers.batching import length_batches

F = TypeVar("F")
TokenIds = list[int]

__all__ = ["CausalLMScorer", "left_pad", "length_batches", "next_token_id", "positions"]


class CausalLMScorer(TorchScorer[F]):
    """Base class of the generative scorers: a causal LM and its tokenizer, loaded on first use.

    A subclass derives what it needs from the tokenizer once, at load time (:meth:`_facts`: answer token
    ids, option symbols); it is kept on the loaded model, never on the scorer.
    """

    def describe(self) -> dict[str, Any]:
        """The base description, plus the weights' dtype in bf16 (fp32 weights under autocast, or bf16 weights without the recheck)."""
        return {**super().describe(), **({"weights": self.weights_dtype} if self.precision == "bf16" else {})}

    @property
    def weights_dtype(self) -> str:
        """``bf16`` when the model runs in bf16 and nothing is rechecked (``recheck_margin`` 0), else ``fp32``: the
        recheck rescores in fp32, which needs the fp32 weights, so bf16 is then autocast over them."""
        return "bf16" if self.precision == "bf16" and self.recheck_margin <= 0 else "fp32"

    # -- loading --------------------------------------------------------------------------------------

    def _load_model(self) -> LoadedModel[F]:
        """The model and tokenizer, the weights in :attr:`weights_dtype`: bf16 weights take half the memory (an 8B
        model in fp32 is 32 GB), and ``recheck_margin=0`` asks for them."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        code = remote_code(self.spec, self.options["trust_remote_code"])  # refused before the hub is asked
        source = model_source(self.spec)
        try:
            pin = pinned(source)  # a hub model at the commit its fingerprint names
            tokenizer = AutoTokenizer.from_pretrained(source, **pin, **code)
            model: Any = AutoModelForCausalLM.from_pretrained(
                source, **pin, **code, dtype=torch.bfloat16 if self.weights_dtype == "bf16" else torch.float32
            )
        except Exception as error:
            raise load_error(self.spec, error) from None
        model.to(self.device).eval()
        limit = token_limit(
            self.spec, self.max_length, tokenizer, getattr(model.config, "max_position_embeddings", None)
        )
        facts = self._facts(tokenizer)  # may reject the model: then nothing is kept
        return LoadedModel(model, tokenizer, limit, count_parameters(model), facts)

    def _facts(self, tokenizer: Any) -> F:
        """What a family derives once from the tokenizer (answer token ids, option symbols)."""
        raise NotImplementedError

    def _label_inputs(self, labels: Sequence[str]) -> list[str] | None:
        """None: a generative family's labels are read inside its prompt, which each family builds its own way (the
        yes/no judge says what its prompt is; an LLM lists every label as an option with its own symbol, so no
        two read alike)."""
        return None

    @staticmethod
    def pad_id(loaded: LoadedModel[Any]) -> int:
        """The id padded positions get: the tokenizer's pad token, else its end-of-sequence token, else 0."""
        # Any id works: padded positions are masked out. Many causal tokenizers have no pad token.
        tokenizer = loaded.tokenizer
        for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id):
            if candidate is not None:
                return int(candidate)
        return 0

    # -- tokens ---------------------------------------------------------------------------------------

    @staticmethod
    def _ids(loaded: LoadedModel[Any], text: str, *, special: bool = False) -> TokenIds:
        with loaded.tokenizer_lock:
            return list(loaded.tokenizer(text, add_special_tokens=special)["input_ids"])

    def _fit(
        self, loaded: LoadedModel[F], text: str, tokenize: Callable[[str], list[TokenIds]]
    ) -> tuple[list[TokenIds], bool]:
        """``tokenize(text)``: the token ids of the prompt(s) built around ``text``, with the text cut at its
        end just enough that the longest prompt fits in the token limit; and whether it was cut.

        Only the text is ever cut: the instruction, label descriptions, options and answer suffix are the
        benchmark's definition.
        """
        limit = self.limit(loaded)
        with loaded.tokenizer_lock:
            prompts = tokenize(text)
            excess = max(len(ids) for ids in prompts) - limit
            if excess <= 0:
                return prompts, False
            text_ids = self._ids(loaded, text)
            keep = len(text_ids) - excess
            while keep > 0:
                # Re-measure after decoding: token boundaries at the cut may shift the count by a token or two.
                prompts = tokenize(loaded.tokenizer.decode(text_ids[:keep]))
                excess = max(len(ids) for ids in prompts) - limit
                if excess <= 0:
                    return prompts, True
                keep -= excess
        raise ModelError(
            f"the prompt around the text is longer than {self.spec.model_id}'s {limit} tokens on its own "
            "(label descriptions and instructions are never cut): use fewer or shorter labels, or a larger max_length",
            parameters=("max_length",),
        )

    def _truncation_notes(self, loaded: LoadedModel[F], truncated: int, n_texts: int) -> list[str]:
        if not truncated:
            return []
        return [
            f"{truncated} of {n_texts} texts exceed {self.limit(loaded)} tokens with their prompt and were truncated"
        ]

    def _text_batches(self, texts: Sequence[str]) -> list[list[int]]:
        """Indices of ``texts`` in batches of ``batch_size``, similar lengths together (less padding)."""
        return length_batches([len(text) for text in texts], self.batch_size)

    # -- forward passes -------------------------------------------------------------------------------

    def _answer_logits(
        self, loaded: LoadedModel[F], sequences: Sequence[TokenIds], answer_ids: list[int]
    ) -> torch.Tensor:
        """Logits of ``answer_ids`` after each sequence, shape ``(len(sequences), len(answer_ids))``, fp32."""
        input_ids, attention_mask = left_pad(sequences, self.pad_id(loaded))
        return self._forward_answer(loaded, input_ids, attention_mask, positions(attention_mask), answer_ids)

    def _forward_answer(
        self,
        loaded: LoadedModel[F],
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        answer_ids: list[int],
        past_key_values: Any = None,
    ) -> torch.Tensor:
        """One forward pass; ``attention_mask`` covers the past and the new tokens. Left padding keeps every
        sequence's last real token at the last position, so only that position's logits are computed."""
        output = loaded.model(
            input_ids=input_ids.to(self.device),
            attention_mask=attention_mask.to(self.device),
            position_ids=position_ids.to(self.device),
            use_cache=past_key_values is not None,
            logits_to_keep=1,
            **{cache_keyword(loaded.model.__class__): past_key_values},
        )
        logits: torch.Tensor = output.logits[:, -1, answer_ids].float().cpu()
        return logits


@cache
def cache_keyword(model_class: Any) -> str:
    """The name of the key/value-cache argument of ``model_class.forward``: ``cache`` from transformers 5.24, which
    still takes ``past_key_values`` but warns on every call that it goes in 5.40; ``past_key_values`` before."""
    # inspect.signature follows the deprecation decorator's __wrapped__ to the forward it wraps.
    return "cache" if "cache" in inspect.signature(model_class.forward).parameters else "past_key_values"


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


def left_pad(sequences: Sequence[TokenIds], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)``, padded on the left so every sequence ends at the last position."""
    from torch.nn.utils.rnn import pad_sequence

    ids = [torch.tensor(sequence, dtype=torch.long) for sequence in sequences]
    input_ids = pad_sequence(ids, batch_first=True, padding_value=pad_id, padding_side="left")
    attention_mask = pad_sequence(
        [torch.ones_like(row) for row in ids], batch_first=True, padding_value=0, padding_side="left"
    )
    return input_ids, attention_mask


def positions(attention_mask: torch.Tensor, start: torch.Tensor | int = 0) -> torch.Tensor:
    """Position ids that count real tokens only, from ``start`` (per row): padding shifts nothing.

    Rotary models would otherwise see a left-padded sequence at other absolute positions than the same
    sequence alone, which changes its scores slightly with the batch it happens to be in.
    """
    offset = start.unsqueeze(-1) if isinstance(start, torch.Tensor) else start
    return (attention_mask.cumsum(-1) - 1).clamp(min=0) + offset
