"""The generative families' prompts, exactly as BTZSC states them (PROTOCOL.md section 2).

They are benchmark definitions, not style: a changed byte changes the published numbers, so they live here
as constants, are filled in with :meth:`str.format` (which never interprets braces inside the values), and
are tested against the literal strings of the protocol.
"""

from __future__ import annotations

import string

from zstc.models.registry import BTZSC_INSTRUCTION

YESNO_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
    "<Instruct>: {instruction}\n<Query>: {text}\n<Document>: {label}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)
"""Qwen3-Reranker's prompt; ``{text}`` is the query, ``{label}`` the label description (the document)."""

YESNO_INSTRUCTION = BTZSC_INSTRUCTION
"""The instruction BTZSC gives yes/no rerankers for classification."""

YESNO_NLI_INSTRUCTION = "Given a piece of text, retrieve the passage that entails the text"
"""The instruction of the paper's NLI probe for yes/no rerankers."""

YESNO_ANSWERS: tuple[str, str] = ("yes", "no")
"""The two answer tokens; the score is the softmax probability of the first."""

LLM_INSTRUCTIONS = (
    "You are a text classifier.\n"
    "You will be given a text and several mutually exclusive options.\n"
    "Each option is prefixed by a single letter (e.g. A, b, ...).\n"
    "Your task is to choose the single best option.\n\n"
    "IMPORTANT:\n"
    "- Answer with EXACTLY ONE LETTER used to prefix the options.\n"
    "- Do NOT output any words, punctuation, or explanation.\n\n"
    "TEXT:\n{text}\n\n"
    "OPTIONS:\n{options}"
)
"""The question part of the paper's multiple-choice prompt (appendix C.3): the user turn in a chat."""

LLM_ANSWER_START = "Answer: The correct option is letter"
"""How the answer begins; in a chat it opens the assistant turn, so the next token is the option symbol."""

LLM_PLAIN_TEMPLATE = LLM_INSTRUCTIONS + "\n\n" + LLM_ANSWER_START
"""The whole prompt for models without a chat template, byte for byte the paper's."""

LLM_OPTION_LINE = "{symbol}) {label}"
"""One line of ``{options}``."""

LLM_HARNESS_TEMPLATE = (
    "You are a text classifier.\n"
    "You will be given a text and several mutually exclusive options.\n"
    "Each option is prefixed by a single letter (e.g. A, b, γ, ...).\n"
    "Your task is to choose the single best option.\n\n"
    "IMPORTANT:\n"
    "- Answer with EXACTLY ONE LETTER used to prefix the options.\n"
    "- Do NOT output any words, punctuation, or explanation.\n\n"
    "TEXT:\n{text}\n\n"
    "OPTIONS:\n{options}\n\n"
    "Answer: The correct option is letter "
)
"""The public BTZSC harness's LLM prompt (``btzsc`` package, ``src/btzsc/models/llm.py``, ``LLMModel``), the
whole string its model reads: no chat template, tokenized with the tokenizer's own special tokens. It is
the paper's :data:`LLM_PLAIN_TEMPLATE` but for two things: "(e.g. A, b, γ, ...)" and a space after "letter".
``{options}`` is :func:`llm_options` of :data:`HARNESS_OPTION_SYMBOLS` and the sorted labels."""

HARNESS_OPTION_SYMBOLS: tuple[str, ...] = (
    *string.ascii_uppercase,
    *string.ascii_lowercase,
    *"αβγδεζηθικλμνξοπρστυφχψω",
    *"ΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩ",
)
"""The harness's option symbols, in its order (100; more labels are an error there). Unlike
:data:`zstc.scorers.llm.OPTION_SYMBOL_POOL` they include look-alikes: l beside I, Greek ο beside Latin o
(from 67 labels), Α beside A (from 77). Each is looked up alone, ``tokenizer(symbol, add_special_tokens=False)``,
and must be one token: the model is read for the symbol with no space before it, after the prompt's final space."""


def yesno_prompt(text: str, label: str, instruction: str = YESNO_INSTRUCTION) -> str:
    """The paper's yes/no reranker prompt for one (text, label) pair, byte for byte."""
    return YESNO_TEMPLATE.format(instruction=instruction, text=text, label=label)


def llm_options(symbols: list[str], labels: list[str]) -> str:
    """The ``{options}`` block of the LLM prompt: one ``A) label`` line per label, in order."""
    return "\n".join(LLM_OPTION_LINE.format(symbol=s, label=label) for s, label in zip(symbols, labels, strict=True))
