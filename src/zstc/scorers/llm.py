"""Instruction-tuned LLMs: one multiple-choice prompt per text, read at the option symbols' logits.

The paper's prompt (PROTOCOL.md section 2) lists every label description as an option prefixed by a
symbol and ends with "Answer: The correct option is letter"; the score of each label is the softmax, over
the option symbols only, of the next-token logits. With a chat template the question is the user turn and
the answer's beginning opens the assistant turn, so the model's very next token is its choice.

``prompt_style="harness"`` does instead exactly what the public BTZSC harness's code does (``btzsc``,
``src/btzsc/models/llm.py``), so that its numbers can be reproduced: its own prompt string with no chat
template (:data:`~zstc.scorers.prompts.LLM_HARNESS_TEMPLATE`, tokenized with the tokenizer's special tokens),
the distinct labels sorted before they are listed, its 100 symbols (:data:`~zstc.scorers.prompts.HARNESS_OPTION_SYMBOLS`)
read as the symbol alone after the prompt's final space, and each caller's label scored by the option of its
sorted place. One thing stays zstc's: only the text is ever cut to fit the model (the harness cuts the end
of the prompt, its options and answer suffix, which leaves nothing meaningful to read).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from tqdm.auto import tqdm

from zstc.errors import LabelError, ModelError, quoted
from zstc.models.registry import ModelSpec
from zstc.scorers.base import Capabilities, LoadedModel, ScoreResult
from zstc.scorers.recheck import label_cuts
from zstc.scorers.runtime import Precision, inference_context
from zstc.scorers.causal import CausalLMScorer, next_token_id
from zstc.scorers.prompts import (
    HARNESS_OPTION_SYMBOLS,
    LLM_ANSWER_START,
    LLM_HARNESS_TEMPLATE,
    LLM_INSTRUCTIONS,
    LLM_PLAIN_TEMPLATE,
    llm_options,
)

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
    SCORING_VERSION: ClassVar[str] = (
        "3"  # 2: bf16 is autocast over fp32 weights and rechecks near ties in fp32; 3: and near multi-label cuts
    )
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(notes=True, rechecks=True, twin=True, read_apart=True)
    """Takes multi-label thresholds (``score_with_notes(..., thresholds=)``) and, in bf16, rescores in fp32 the texts
    with an option near its cut."""

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.prompt_style: str = self.options["prompt_style"]
        """``paper`` (appendix C.3, the default) or ``harness`` (the public harness's code); read at each call."""

    @property
    def _harness(self) -> bool:
        return self.prompt_style == "harness"

    def describe(self) -> dict[str, Any]:
        """The base description, plus the prompt style and, once loaded, the prompt's format (chat template or plain)."""
        facts = {**super().describe(), "prompt_style": self.prompt_style}
        if self._loaded is not None:
            facts["prompt_format"] = "chat template" if self._uses_chat(self._loaded) else "plain"
        return facts

    def _facts(self, tokenizer: Any) -> Symbols:
        return option_symbols(tokenizer)

    def _uses_chat(self, loaded: LoadedModel[Symbols]) -> bool:
        # The harness never applies a chat template.
        return not self._harness and bool(getattr(loaded.tokenizer, "chat_template", None))

    # -- prompts --------------------------------------------------------------------------------------

    def symbols_for(self, n_labels: int) -> Symbols:
        """The first ``n_labels`` option symbols with their token ids (for ``n_labels`` options, i.e. distinct
        labels in the harness's style)."""
        if self._harness:
            return self._harness_symbols(n_labels)
        symbols = self.loaded.facts
        if n_labels > len(symbols):
            raise ModelError(
                f"{self.spec.model_id} has {n_labels} labels to choose from but its tokenizer writes only "
                f"{len(symbols)} distinct option symbols as single tokens: use at most {len(symbols)} labels"
            )
        return symbols[:n_labels]

    def _harness_symbols(self, n_labels: int) -> Symbols:
        """The harness's first ``n_labels`` symbols, each with its token as the harness finds it: the symbol
        alone, which must be one token (the harness's ValueErrors, here with what to do about them)."""
        if n_labels > len(HARNESS_OPTION_SYMBOLS):
            raise ModelError(
                f"too many labels for prompt_style 'harness': {n_labels} distinct labels, and the harness has "
                f"{len(HARNESS_OPTION_SYMBOLS)} option symbols: use at most {len(HARNESS_OPTION_SYMBOLS)} labels",
                parameters=("prompt_style",),
            )
        loaded = self.loaded
        symbols: Symbols = []
        for position, symbol in enumerate(HARNESS_OPTION_SYMBOLS[:n_labels], start=1):
            ids = self._ids(loaded, symbol)
            if len(ids) != 1:
                raise ModelError(
                    f"option symbol {symbol!r} (symbol {position} of the harness's {len(HARNESS_OPTION_SYMBOLS)}, used from "
                    f"{position} distinct labels on) is {len(ids)} tokens for {self.spec.model_id}'s tokenizer, and the "
                    f"harness requires single-token symbols: with prompt_style 'harness' this model takes at most "
                    f"{position - 1} distinct labels",
                    parameters=("prompt_style",),
                )
            symbols.append((symbol, ids[0]))
        return symbols

    def listed(self, labels: Sequence[str]) -> tuple[list[str], list[int]]:
        """The labels as the prompt lists them, and for each of ``labels`` the option that scores it: the
        labels as given ('paper'), or the distinct labels sorted, as the harness lists them (a label given
        twice is one option, scored in both columns)."""
        if not self._harness:
            return list(labels), list(range(len(labels)))
        options = sorted(set(labels))
        option_of = {label: j for j, label in enumerate(options)}
        return options, [option_of[label] for label in labels]

    def prompt(self, text: str, labels: Sequence[str]) -> str:
        """The exact string the model reads for ``text`` (its chat template applied, if it has one and the
        style is 'paper'); with 'harness', ``labels`` are listed as :meth:`listed` says."""
        options = self.listed(labels)[0]
        return self._render(text, llm_options([symbol for symbol, _ in self.symbols_for(len(options))], options))

    def _render(self, text: str, listing: str) -> str:
        """The prompt for ``text`` with ``listing``, the ``{options}`` block (the same for every text of a call:
        built once, with the symbols resolved once, not at each text or truncation step)."""
        loaded = self.loaded
        if self._harness:
            return LLM_HARNESS_TEMPLATE.format(text=text, options=listing)
        if not self._uses_chat(loaded):
            return LLM_PLAIN_TEMPLATE.format(text=text, options=listing)
        question = LLM_INSTRUCTIONS.format(text=text, options=listing)
        # enable_thinking=False: templates of reasoning models (Qwen3) otherwise open the answer with a
        # thinking block instead of the letter; templates without that switch ignore the variable.
        with loaded.tokenizer_lock:
            opening = loaded.tokenizer.apply_chat_template(
                [{"role": "user", "content": question}],
                tokenize=False,
                add_generation_prompt=True,
                enable_thinking=False,
            )
        return str(opening) + LLM_ANSWER_START

    def _prompt_ids(self, text: str, listing: str) -> list[int]:
        """The token ids of the prompt for ``text`` with the ``{options}`` block ``listing``."""
        # A rendered chat template already contains the special tokens (BOS and turn markers); the plain
        # prompts take the tokenizer's own, as the harness's `tokenizer(prompts)` does.
        loaded = self.loaded
        return self._ids(loaded, self._render(text, listing), special=not self._uses_chat(loaded))

    # -- scoring --------------------------------------------------------------------------------------

    def score_with_notes(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        *,
        show_progress: bool = False,
        thresholds: Sequence[float] | np.ndarray | None = None,
    ) -> ScoreResult:
        """Each text's probability of each label's option: a ``(len(texts), len(labels))`` float32 matrix.

        ``thresholds`` (one per label, a probability) says that the caller decides by cuts (multi-label): bf16 then
        rescores the texts with an option near its label's cut, rather than those with a near tie for their best.
        """
        cuts = label_cuts(thresholds, len(labels))
        options, columns = self.listed(labels)
        if len(options) < 2:  # a multi-label call, one candidate label (the HF shape), /rerank of one document
            raise LabelError(
                f"an LLM picks one of the labels listed, and its scores are a distribution over them: one label "
                f"({quoted(options[0]) if options else 'none'}) would always score 1; give two or more"
            )
        loaded = self.loaded
        symbols = self.symbols_for(len(options))
        symbol_ids = [token for _, token in symbols]
        listing = llm_options([symbol for symbol, _ in symbols], options)
        logits, truncated = self._option_logits(loaded, texts, listing, symbol_ids, show_progress)
        # In bf16, the texts whose best options are near ties run again in fp32, whole (one pass reads all options).
        rows = np.repeat(np.arange(len(texts)), len(options))

        def rescore(todo: np.ndarray) -> np.ndarray:
            again = np.unique(rows[todo])
            logits[again] = self._option_logits(
                loaded, [texts[i] for i in again], listing, symbol_ids, False, precision="fp32"
            )[0]
            return torch.log_softmax(logits, dim=-1).numpy().ravel()[todo]

        log_probabilities = torch.log_softmax(logits, dim=-1).numpy().ravel()
        notes = self._recheck(
            log_probabilities,
            rows,
            _log_option_cuts(cuts, columns, len(options), len(texts)),
            rescore,
            whole_groups=True,
            unit="texts",
        )[1]
        # The softmax over the symbols' logits is the harness's too: its softmax over the whole
        # vocabulary, renormalised over the symbols' columns, is the same function (and cannot underflow).
        scores = torch.softmax(logits, dim=-1).numpy()[:, columns].astype(np.float32)
        return ScoreResult(
            scores, notes + self._truncation_notes(loaded, len(truncated), len(texts)), truncated=truncated
        )

    def _option_logits(
        self,
        loaded: LoadedModel[Symbols],
        texts: Sequence[str],
        listing: str,
        symbol_ids: list[int],
        show_progress: bool,
        precision: Precision | None = None,
    ) -> tuple[torch.Tensor, tuple[int, ...]]:
        """The option symbols' logits after each text's prompt, ``(len(texts), len(symbol_ids))`` float32, and the
        positions in ``texts`` of those cut to fit (:attr:`ScoreResult.truncated`; the recheck, which reads again texts
        the first pass told of, drops them); in the scorer's precision, or ``precision`` (the recheck's fp32)."""
        logits = torch.empty(len(texts), len(symbol_ids))
        truncated: list[int] = []
        with (
            inference_context(self.device, precision or self.precision),
            tqdm(total=len(texts), disable=not show_progress) as bar,
        ):
            for batch in self._text_batches(texts):
                fitted = [self._fit(loaded, texts[i], lambda t: [self._prompt_ids(t, listing)]) for i in batch]
                truncated += [i for i, (_, cut) in zip(batch, fitted) if cut]
                logits[batch] = self._answer_logits(loaded, [prompts[0] for prompts, _ in fitted], symbol_ids)
                bar.update(len(batch))
        return logits, tuple(sorted(truncated))  # batched by length: back in the texts' order


def _log_option_cuts(cuts: np.ndarray | None, columns: Sequence[int], options: int, texts: int) -> np.ndarray | None:
    """Each label's cut (a probability) at its option, on the log scale the recheck compares (``log t``; 0 is
    ``-inf``, near no score), for every (text, option) position in order; ``None`` (argmax decisions) stays ``None``.
    A label listed twice (the harness lists it once) is one option, with the cut of its last column."""
    if cuts is None:
        return None
    by_option = np.full(options, np.nan)
    by_option[list(columns)] = cuts
    with np.errstate(divide="ignore"):
        return np.tile(np.where(np.isnan(by_option), np.nan, np.log(np.clip(by_option, 0.0, 1.0))), texts)


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
