"""Instruction-tuned LLMs: one multiple-choice prompt per text, read at the option symbols' logits.

The paper's prompt (PROTOCOL.md section 2) lists every label description as an option prefixed by a
symbol and ends with "Answer: The correct option is letter"; the score of each label is the softmax, over
the option symbols only, of the next-token logits. With a chat template the question is the user turn and
the answer's beginning opens the assistant turn, so the model's very next token is its choice.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm.auto import tqdm

from zstc.errors import ModelError
from zstc.scorers.base import LoadedModel, ScoreResult, empty_scores
from zstc.scorers.runtime import inference_context
from zstc.scorers.causal import CausalLMScorer, next_token_id
from zstc.scorers.prompts import LLM_ANSWER_START, LLM_INSTRUCTIONS, LLM_PLAIN_TEMPLATE, llm_options

OPTION_SYMBOL_POOL: tuple[str, ...] = (
    *string.ascii_uppercase,
    *(c for c in string.ascii_lowercase if c not in "lo"),  # l ~ I ~ 1, o ~ O ~ 0
    *"23456789",  # 0 ~ O, 1 ~ l
    *"βγδεζθλξπσφψω",  # Greek small letters unlike any Latin one (not α ~ a, ι ~ i, κ ~ k, ν ~ v, ρ ~ p, ...)
    *"ΓΔΘΛΞΠΣΦΨΩ",  # Greek capitals unlike any Latin one (not Α ~ A, Β ~ B, Η ~ H, ...)
    *"#$%&*+=?@~^<>",  # not ( ) (option syntax), - (the prompt's bullets), | (~ l), . , : ; ' " (hard to see)
)
"""Option symbols in order of preference, all visually distinct, as the paper's "A, b, ..." suggests:
letters first; a model uses the first ``n`` that its tokenizer writes as one token (72 for banking77)."""


Symbols = list[tuple[str, int]]
"""The option symbols a model can answer with in one token, with that token, found when the model loads."""


class LLMScorer(CausalLMScorer[Symbols]):
    """Instruction-tuned LLMs: one prompt per text listing every label as a lettered option (the paper's
    appendix C.3), one forward pass, softmax over the option symbols' final-position logits."""

    family: ClassVar[str] = "llm"
    SCORING_VERSION: ClassVar[str] = "1"
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""

    def describe(self) -> dict[str, Any]:
        facts = super().describe()
        if self._loaded is not None:
            facts["prompt_format"] = "chat template" if self._uses_chat(self._loaded) else "plain"
        return facts

    def _facts(self, tokenizer: Any) -> Symbols:
        return option_symbols(tokenizer)

    @staticmethod
    def _uses_chat(loaded: LoadedModel[Symbols]) -> bool:
        return bool(getattr(loaded.tokenizer, "chat_template", None))

    # -- prompts --------------------------------------------------------------------------------------

    def symbols_for(self, n_labels: int) -> Symbols:
        """The first ``n_labels`` option symbols with their token ids."""
        symbols = self.loaded.facts
        if n_labels > len(symbols):
            raise ModelError(
                f"{self.spec.model_id} has {n_labels} labels to choose from but its tokenizer writes only "
                f"{len(symbols)} distinct option symbols as single tokens: use at most {len(symbols)} labels"
            )
        return symbols[:n_labels]

    def prompt(self, text: str, labels: Sequence[str]) -> str:
        """The exact string the model reads for ``text`` (its chat template applied, if it has one)."""
        loaded = self.loaded
        symbols = [symbol for symbol, _ in self.symbols_for(len(labels))]
        options = llm_options(symbols, list(labels))
        if not self._uses_chat(loaded):
            return LLM_PLAIN_TEMPLATE.format(text=text, options=options)
        question = LLM_INSTRUCTIONS.format(text=text, options=options)
        # enable_thinking=False: templates of reasoning models (Qwen3) otherwise open the answer with a
        # thinking block instead of the letter; templates without that switch ignore the variable.
        with loaded.tokenizer_lock:
            opening = loaded.tokenizer.apply_chat_template(
                [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True, enable_thinking=False
            )
        return str(opening) + LLM_ANSWER_START

    def _prompt_ids(self, text: str, labels: Sequence[str]) -> list[int]:
        # A rendered chat template already contains the special tokens (BOS and turn markers).
        loaded = self.loaded
        return self._ids(loaded, self.prompt(text, labels), special=not self._uses_chat(loaded))

    # -- scoring --------------------------------------------------------------------------------------

    def score_with_notes(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> ScoreResult:
        loaded = self.loaded
        scores = empty_scores(len(texts), len(labels))
        symbol_ids = [token for _, token in self.symbols_for(len(labels))]
        truncated = 0
        with inference_context(self.device, self.precision), tqdm(total=len(texts), disable=not show_progress) as bar:
            for batch in self._text_batches(texts):
                fitted = [self._fit(loaded, texts[i], lambda t: [self._prompt_ids(t, labels)]) for i in batch]
                truncated += sum(cut for _, cut in fitted)
                logits = self._answer_logits(loaded, [prompts[0] for prompts, _ in fitted], symbol_ids)
                scores[batch] = torch.softmax(logits, dim=-1).numpy()
                bar.update(len(batch))
        return ScoreResult(scores, self._truncation_notes(loaded, truncated, len(texts)))


def option_symbols(tokenizer: Any) -> list[tuple[str, int]]:
    """The symbols of :data:`OPTION_SYMBOL_POOL` that the model can answer with in one token, with that token.

    The token is the one the model would write right after the answer's beginning ("... letter" + " A"),
    so the logit read is the logit of exactly that continuation.
    """
    unknown = getattr(tokenizer, "unk_token_id", None)
    found: list[tuple[str, int]] = []
    seen: set[int] = set()
    for symbol in OPTION_SYMBOL_POOL:
        token = next_token_id(tokenizer, LLM_ANSWER_START, " " + symbol)
        if token is not None and token != unknown and token not in seen:
            found.append((symbol, token))
            seen.add(token)
    return found
