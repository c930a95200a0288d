"""One record per model family: every fact zstc keeps about a family, in one place.

A :class:`Family` names its scorer class (imported only when a model of the family is scored), the type
of score it produces (which sets the default multi-label threshold), the public leaderboard's
``model_type``, its colour in report figures, the options its scorer takes with their constraints, a
description, and its defaults: the temperature of ``--scores probs``, a measured multi-label threshold and
whether that rule has a relative margin, whether its scores are a distribution over the labels, whether its
grid may be flattened into pairs, whether one prompt lists all of a text's labels, and whether a text is read inside
a prompt. There are no per-family tables elsewhere: every module that needs a fact reads the record
(:func:`get_family`, :func:`find_family`, :func:`families`), so a family registered by a user has every fact at once.

Adding a family is one scorer module plus one ``register_family(Family(...))`` call. This module imports
nothing heavy (no torch), so the registry and the CLI can read it at import time.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from zstc.errors import UnknownNameError
from zstc.validation import OPTIONS, Choices, Interval, Option, check_options


DEFAULT_MAX_PAIRS = 64
"""Cross-encoders: pairs per forward pass at most (``batch_size``)."""
DEFAULT_MAX_BATCH_TOKENS = 4096
"""Cross-encoders: padded tokens per forward pass at most: long pairs get smaller batches (8 of 512 tokens),
short pairs larger ones. Larger passes on a CPU spill their activations out of the CPU's caches and run slower
(docs/performance.md has the measurements). A GPU wants larger passes: see :data:`GPU_MAX_PAIRS`."""
GPU_MAX_PAIRS = 1024
GPU_MAX_BATCH_TOKENS = 65536
"""Cross-encoders on a GPU: pairs and padded tokens per forward pass at most, when ``batch_size`` and
``max_batch_tokens`` are not given. A small model is bound by kernel launches and padding work, not arithmetic,
in small passes; larger ones were no faster (docs/performance.md)."""


GPU_LENGTH_STEP = 32
"""On a GPU, each pass is padded to a multiple of this many tokens (never past the model's limit). Every new
(pairs, length) shape costs the GPU libraries a first-time search, and the memory they keep for it: a server,
whose passes come in every shape, grew in memory and ran its first passes of each shape slowly (docs/performance.md
has the numbers). The padding is masked out, so scores move by float noise only; it costs arithmetic a large model would feel on short pairs,
which is why a CPU (no such search, and compute-bound) pads to the longest pair only."""


class PassShape(NamedTuple):
    """A cross-encoder's forward passes on one type of device: ``max_pairs`` and ``max_batch_tokens`` when
    ``batch_size`` and ``max_batch_tokens`` are not given, and the step its lengths are padded in."""

    max_pairs: int
    max_batch_tokens: int
    length_step: int


def pass_shape(device_type: str) -> PassShape:
    """The one place that says how a GPU's passes differ from a CPU's (:data:`GPU_MAX_PAIRS`,
    :data:`GPU_LENGTH_STEP`; :data:`DEFAULT_MAX_PAIRS` on a CPU)."""
    if device_type == "cuda":
        return PassShape(GPU_MAX_PAIRS, GPU_MAX_BATCH_TOKENS, GPU_LENGTH_STEP)
    return PassShape(DEFAULT_MAX_PAIRS, DEFAULT_MAX_BATCH_TOKENS, 1)


@dataclass(frozen=True)
class Family:
    """Everything zstc knows about one model family."""

    name: str
    scorer: str | type
    """``"module:Class"`` of the scorer (imported on first use), or the class itself."""
    score_type: str | None
    """What the scores are (``cosine``, ``logodds``, ``logit``, ``prob``); ``None`` when no fixed multi-label
    threshold suits them. A scorer with a ``score_type`` option reports its own choice instead."""
    model_type: str
    """The public BTZSC leaderboard's ``model_type`` for models of this family."""
    colour: str
    """Colour of the family in report figures (a matplotlib colour)."""
    options: Mapping[str, Option] = field(default_factory=dict)
    """The keyword options the scorer takes, with their types, ranges and defaults."""
    description: str = ""
    score_rule: str = ""
    """What one score is, in a line (PROTOCOL.md section 2): what ``zstc models check`` says of the family."""
    temperature: float = 1.0
    """Temperature of ``--scores probs`` when no calibration file is given (T in softmax(s / T), the scores read
    as logits by :func:`zstc.probabilities.score_scale`); 1 leaves them on that scale."""
    threshold: float | None = None
    """Measured default multi-label threshold for the family's own score type; ``None``: the score type's rough
    rule (:data:`zstc.policy.DEFAULT_THRESHOLDS`)."""
    relative_margin: bool = False
    """Whether the default multi-label rule also asks a label to be near the text's best one
    (:func:`zstc.policy.default_margin`)."""
    distribution: bool = False
    """Whether the scores are a distribution over the text's labels (they sum to 1): read as logits by their log,
    whatever score type the scorer reports (:func:`zstc.probabilities.score_scale`)."""
    flattens_to_pairs: bool = False
    """Whether the scorer's texts x labels grid may be flattened into aligned (text, label) pairs
    (:func:`zstc.scorers.cascade.flattens_to_pairs`): ``score_pairs`` scores each pair exactly as the grid does."""
    labels_in_one_prompt: bool = False
    """Whether one prompt per text lists every label scored with it, so that a label's score depends on which other
    labels are scored beside it: a shortlist of K labels is a different prompt from the full run's
    (:func:`zstc.scorers.cascade.labels_in_one_prompt`). Not :attr:`distribution`, which says what the scores are."""
    text_in_prompt: bool = False
    """Whether the model reads each text inside a prompt (instructions, label descriptions, an answer's beginning) that
    takes its share of the token limit, so that a text is cut when it and its prompt exceed the limit: what the notes
    naming a cut text say, the library's ("with their prompt") as ``zstc serve``'s."""
    auto_bf16_on_cpu: bool = True
    """Whether ``--precision auto`` picks bf16 for this family on a CPU with fast bf16 (:func:`zstc.scorers.runtime.resolve_precision`):
    False where the fp32 recheck of bf16's near decisions eats bf16's gain there (docs/performance-embedding.md)."""

    def scorer_class(self) -> type:
        """The scorer class, imported from its ``module:Class`` on first use."""
        if isinstance(self.scorer, type):
            return self.scorer
        module_name, _, class_name = self.scorer.partition(":")
        cls: type = getattr(importlib.import_module(module_name), class_name)
        return cls

    @property
    def scoring_version(self) -> str:
        """Version of the family's scoring math: its scorer class's ``SCORING_VERSION`` (``""`` for a class
        that declares none). Part of result fingerprints, so results of older math are not reused."""
        return str(getattr(self.scorer_class(), "SCORING_VERSION", ""))

    def check_options(self, values: Mapping[str, Any], model_id: str | None = None) -> dict[str, Any]:
        """Every option of this family: the given value, checked, or its default (see :func:`check_options`)."""
        target = f"{self.name} models" + (f" ({model_id})" if model_id else "")
        return check_options(values, self.options, context=target)


_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> Family:
    """Add (or replace) a family; every table derived from the records sees it at once."""
    _FAMILIES[family.name] = family
    return family


def unregister_family(name: str) -> None:
    """Remove a family (a plugin unloading, a test cleaning up); unknown names are ignored."""
    _FAMILIES.pop(name, None)


def get_family(name: str) -> Family:
    """The registered family of this name; an unknown name is an error with a "did you mean"."""
    try:
        return _FAMILIES[name]
    except KeyError:
        from zstc.errors import did_you_mean

        raise UnknownNameError(
            f"unknown family {name!r}{did_you_mean(name, _FAMILIES)}; expected one of {', '.join(_FAMILIES)}"
        ) from None


def families() -> list[Family]:
    """Every registered family, in registration order."""
    return list(_FAMILIES.values())


def family_names() -> tuple[str, ...]:
    """The registered family names, in registration order (a family registered later is in the next call's)."""
    return tuple(_FAMILIES)


def find_family(name: object) -> Family | None:
    """The registered family of this name, or None for any other value (an unknown or missing family)."""
    return _FAMILIES.get(name) if isinstance(name, str) else None


# -- the options scorers take: each declared once --------------------------------------------------------------

DEFAULT_RECHECK_MARGIN = 0.1
"""Scorers in bf16 (cross-encoders, yes/no judges, LLMs): labels within this margin of their text's best score are
rescored in fp32, so that bf16 makes fp32's decisions (zstc.scorers.recheck). It must exceed twice bf16's largest
error, and widens by itself when the rechecked pairs show more; the measurements behind it: docs/precision.md."""
DEFAULT_COSINE_RECHECK_MARGIN = 0.01
"""The embedding families' :data:`DEFAULT_RECHECK_MARGIN`, on cosines: a text with a cosine within this of a decision
(its best label's, or its multi-label cut) is embedded again in fp32. It must exceed twice bf16's largest cosine
error, and widens by itself where bf16 errs more; the measurements behind it (``benchmarks/bf16_agreement.py
--family embedding``): docs/precision.md."""
EMBEDDING_BACKENDS: tuple[str, ...] = ("torch", "onnxruntime")
"""What runs an embedding model's transformer: torch, or ONNX Runtime fp32 on it exported with ``torch.onnx`` (the
``onnx`` extra; the same tokenizer and pooling; docs/performance-embedding.md)."""


POOLINGS: tuple[str, ...] = ("native", "cls")
NLI_SCORE_TYPES: tuple[str, ...] = ("logodds", "logit", "prob")
LLM_PROMPT_STYLES: tuple[str, ...] = ("paper", "harness")
"""The LLM family's prompts: the paper's appendix C.3 (the default) or the public BTZSC harness's, exactly as its
code builds it (:mod:`zstc.scorers.llm`)."""
YESNO_QUERIES: tuple[str, ...] = ("text", "label")
"""Which side of a (text, label) pair a yes/no reranker's prompt reads as its <Query> (the other is its <Document>)."""

_PRECISION_HELP = "fp32, bf16 (autocast) or auto (bf16 where the hardware runs it fast: CUDA, AMX or AVX512-BF16)"

SCORER_OPTIONS: dict[str, Option] = {
    # Choices without a meaning: "unknown pooling" would read "unknown --pooling" on the command line.
    "pooling": Option(
        str,
        "native",
        Choices(POOLINGS),
        help="Embedding models: 'native' (the model's own config) or 'cls' (the paper's computation).",
    ),
    "score_type": Option(
        str,
        "logodds",
        Choices(NLI_SCORE_TYPES, meaning="score type"),
        flags=("--score-type",),
        help="NLI models: 'logodds' (the paper's default), 'logit' (the public harness) or 'prob'.",
    ),
    "entailment_index": Option(
        int,
        None,
        Interval(0),
        allow_none=True,
        help="NLI models: the output index of entailment, when id2label does not say.",
    ),
    "prompt_style": Option(
        str,
        "paper",
        Choices(LLM_PROMPT_STYLES),
        help="LLM models: 'paper' (appendix C.3 through the chat template, labels in their order; the default) or "
        "'harness' (the public BTZSC harness's code exactly: its plain prompt, labels sorted, its 100 symbols).",
    ),
    "batch_size": OPTIONS["batch_size"].but(
        allow_none=True,
        help=f"Texts (or pairs) per forward pass; default: the family's (cross-encoders: {DEFAULT_MAX_PAIRS} pairs on "
        f"a CPU, {GPU_MAX_PAIRS:,} on a GPU; embedding models: 64 texts, 16 under ONNX Runtime).",
    ),
    # fp32 or bf16 once a scorer is built (zstc.scorers.runtime.resolve_precision turns 'auto' into one of them).
    "precision": Option(
        str,
        "fp32",
        flags=("--precision",),
        help=f"{_PRECISION_HELP}; default: fp32 (benchmark numbers are the same on every machine).",
    ),
    "device": OPTIONS["device"],
    "max_length": OPTIONS["max_length"],
    "recheck_margin": Option(
        float,
        DEFAULT_RECHECK_MARGIN,
        Interval(0),
        help="bf16 runs: scores within this margin of a text's best score (multi-label: of their label's "
        f"threshold) are rescored in fp32, so decisions are fp32's. Default {DEFAULT_RECHECK_MARGIN:g} "
        f"({DEFAULT_COSINE_RECHECK_MARGIN:g} for embedding and encoder cosines, whose texts are embedded again) "
        "(widens by itself when bf16 errs more); 0: off (yesno and llm then load their weights in bf16). "
        "Unused in fp32.",
    ),
    "backend": Option(
        str,
        "torch",
        Choices(EMBEDDING_BACKENDS, meaning="backend"),
        help="Embedding models: 'torch' or 'onnxruntime' (ONNX Runtime fp32, about twice as fast on a CPU, its near "
        "decisions rechecked by torch fp32; needs the onnx extra). Default: with --precision auto on a CPU, "
        "onnxruntime where installed, else torch; otherwise torch.",
    ),
    "trust_remote_code": Option(
        bool,
        False,
        flags=("--trust-remote-code",),
        help="Run modelling code the model's own files ship (its config's auto_map; gte-base/large-en-v1.5 need it). "
        "Off by default: such a model is refused.",
    ),
    "instruction": Option(
        str,
        None,
        allow_none=True,
        help="Yes/no rerankers: the prompt's <Instruct> line; default: BTZSC's (nli-probe: the paper's NLI probe "
        "instruction).",
    ),
    "shortlist": Option(
        str,
        None,
        allow_none=True,
        help="Cascade: a bi-encoder keeps each text's top K labels and only those are scored by --model; 'K' "
        "(shortlister all-MiniLM-L6-v2) or 'MODEL:K'. Unlisted labels rank below every shortlisted one.",
    ),
    # Options with no flag of their own: the library's and the service's.
    "max_batch_tokens": Option(
        int,
        None,
        Interval(1),
        allow_none=True,
        help=f"padded tokens per forward pass at most; None: {DEFAULT_MAX_BATCH_TOKENS:,} on a CPU, "
        f"{GPU_MAX_BATCH_TOKENS:,} on a GPU",
    ),
    "prefix_cache": Option(
        bool, True, help="run each text's shared prompt prefix once (False: every pair's whole prompt)"
    ),
    "query": Option(
        str,
        "text",
        Choices(YESNO_QUERIES),
        help="which side fills the prompt's <Query>: 'text' (BTZSC's; a pair's first member) or 'label' (the label "
        "description, or a pair's second member; the text then fills <Document>); either way only the text is "
        "ever cut",
    ),
}
"""Every keyword option of a scorer (and of the cascade around one, ``shortlist``), each declared once: type,
constraint, default, help and flag. A family takes some of them (:func:`family_options`), with its own default where it
has one; the CLI's flags are made from the same records (:mod:`zstc.cli.options`). The cascade's ``shortlist`` is taken
by :func:`zstc.scorers.make_scorer`, not by a family."""

AUTO_PRECISION = SCORER_OPTIONS["precision"].but(default="auto", help=f"{_PRECISION_HELP}; default: auto.")
"""``precision`` where a command's default is auto (those that classify; the benchmark's is fp32)."""
COSINE_RECHECK_MARGIN = SCORER_OPTIONS["recheck_margin"].but(default=DEFAULT_COSINE_RECHECK_MARGIN)
"""The embedding families' ``recheck_margin``: texts with a cosine within it of a decision are embedded again."""


def family_options(batch_size: int | None, *names: str, **own: Option) -> dict[str, Option]:
    """The options of a scorer that runs a torch model: ``names`` (of :data:`SCORER_OPTIONS`) and ``own`` (a family's
    own version of one) first, then device, precision, batch size (its default ``batch_size``; ``None``: the scorer's
    own, by device as cross-encoders pass :func:`pass_shape`, by backend for embedding models), max length and
    trust_remote_code."""
    torch = ("device", "precision", "batch_size", "max_length", "trust_remote_code")
    chosen = {**{name: SCORER_OPTIONS[name] for name in names}, **own, **{name: SCORER_OPTIONS[name] for name in torch}}
    if batch_size is not None:
        chosen["batch_size"] = chosen["batch_size"].but(default=batch_size, allow_none=False)
    return chosen


register_family(
    Family(
        "embedding",
        "zstc.scorers.embedding:EmbeddingScorer",
        "cosine",
        "embedding",
        "#1f77b4",
        family_options(None, "pooling", "backend", recheck_margin=COSINE_RECHECK_MARGIN),
        "Embedding models: cosine similarity of text and label-description embeddings.",
        score_rule="cosine of the text's and the label's embeddings",
        temperature=0.061,  # all-MiniLM-L6-v2 (native pooling): scripts/measure_defaults.py, see docs/classify.md
        threshold=0.0,  # all-MiniLM-L6-v2 cosines: scripts/measure_defaults.py (2% of clear texts "none"), see docs/classify.md
        # A cosine's level says little about a label on its own (a clear review is about as close to "negative" as to
        # "positive" in absolute terms, and both pass any cut that keeps clear texts from "none"), while its distance to
        # the best label's does. Measured: scripts/measure_label_defaults.py.
        relative_margin=True,
        auto_bf16_on_cpu=False,  # a rechecked text is embedded again whole: docs/performance-embedding.md
    )
)
register_family(
    Family(
        "encoder",
        "zstc.scorers.embedding:EncoderScorer",
        "cosine",
        "embedding",
        "#7f7f7f",
        family_options(None, "backend", recheck_margin=COSINE_RECHECK_MARGIN),
        "Base encoders (no sentence-embedding training): final-layer [CLS] cosine, as the paper scores them.",
        score_rule="cosine of the final-layer [CLS] vectors of text and label",
        temperature=0.0465,  # all-MiniLM-L6-v2's encoder, [CLS] cosines: scripts/measure_defaults.py
        threshold=0.65,  # all-MiniLM-L6-v2's encoder, [CLS] cosines: same script
        auto_bf16_on_cpu=False,  # as the embedding family's
    )
)
register_family(
    Family(
        "nli",
        "zstc.scorers.nli:NliScorer",
        "logodds",
        "nli",
        "#d62728",
        family_options(None, "score_type", "entailment_index", "max_batch_tokens", "recheck_margin"),
        "NLI cross-encoders: premise = text, hypothesis = label description, score = how strongly it is entailed.",
        score_rule="entailment output: log-odds against the other outputs (score_type logodds), the logit alone for one output",
        temperature=1.0,  # not measured (no NLI model ships offline): log-odds are already on a logit scale
        flattens_to_pairs=True,  # each pair truncated on its own, as in a texts x labels run
    )
)
register_family(
    Family(
        "reranker",
        "zstc.scorers.reranker:RerankerScorer",
        "logit",
        "reranker",
        "#2ca02c",
        family_options(None, "max_batch_tokens", "recheck_margin"),
        "Cross-encoder rerankers: query = text, document = label description, score = relevance.",
        score_rule="the relevance logit (text as query, label as document)",
        temperature=1.0,  # not measured (no reranker ships offline): relevance logits
        flattens_to_pairs=True,  # each pair truncated on its own, as in a texts x labels run
    )
)
register_family(
    Family(
        "yesno",
        "zstc.scorers.yesno:YesNoScorer",
        "prob",
        "reranker",
        "#9467bd",
        family_options(16, "instruction", "prefix_cache", "query", "recheck_margin"),
        "Generative yes/no rerankers: p(yes) after a judge prompt per (text, label description).",
        score_rule="p(yes) = softmax(yes, no) at the prompt's last position",
        temperature=1.0,  # logit(p(yes)) per label, as the model gives it
        # Not flattened into pairs although they score pairs (the NLI probe): their grid cuts a text once for its longest
        # label, so a flattened grid would score a long text differently; they are scored grid by grid.
        flattens_to_pairs=False,
        text_in_prompt=True,  # the judge prompt: system turn, instruction, label description
    )
)
register_family(
    Family(
        "llm",
        "zstc.scorers.llm:LLMScorer",
        None,
        "llm",
        "#ff7f0e",
        family_options(8, "prompt_style", "recheck_margin"),
        "Instruction-tuned LLMs: one multiple-choice prompt per text, read at the option symbols' logits.",
        score_rule="softmax over the option symbols' logits at the prompt's last position",
        temperature=1.0,  # the model's own distribution over the options, unchanged
        distribution=True,  # probabilities over the options (they sum to 1), so no fixed multi-label cut suits them
        labels_in_one_prompt=True,  # the multiple-choice prompt lists the text's options
        text_in_prompt=True,  # the multiple-choice prompt: instructions, options, the answer's beginning
    )
)
