"""Options shared by several commands, declared once so they read the same everywhere."""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Annotated, Any, Optional, TypeVar

import typer

from zstc.defaults import DEFAULT_MODEL
from zstc.errors import ZstcError
from zstc.scorers.families import DEFAULT_COSINE_RECHECK_MARGIN, DEFAULT_MAX_PAIRS, DEFAULT_RECHECK_MARGIN, GPU_MAX_PAIRS, FamilyNames  # no torch: start-up stays fast

Model = Annotated[str, typer.Option("--model", "-m", help="Hub id, paper short name or local folder (see `zstc models`).")]
Family = Annotated[
    Optional[str],
    typer.Option("--family", "-f", help=f"{', '.join(FamilyNames())}; read from the registry when omitted."),
]
Pooling = Annotated[Optional[str], typer.Option(help="Embedding models: 'native' (the model's own config) or 'cls' (the paper's computation).")]
ScoreType = Annotated[
    Optional[str],
    typer.Option("--score-type", help="NLI models: 'logodds' (the paper's default), 'logit' (the public harness) or 'prob'."),
]
EntailmentIndex = Annotated[Optional[int], typer.Option(help="NLI models: the output index of entailment, when id2label does not say.")]
PromptStyle = Annotated[
    Optional[str],
    typer.Option(help="LLM models: 'paper' (appendix C.3 through the chat template, labels in their order; the default) or "
                 "'harness' (the public BTZSC harness's code exactly: its plain prompt, labels sorted, its 100 symbols)."),
]
BatchSize = Annotated[Optional[int], typer.Option(help=f"Texts (or pairs) per forward pass; default: the family's (cross-encoders: {DEFAULT_MAX_PAIRS} pairs on a CPU, {GPU_MAX_PAIRS:,} on a GPU).")]
_PRECISION_HELP = "fp32, bf16 (autocast) or auto (bf16 where the hardware runs it fast: CUDA, AMX or AVX512-BF16)"
PrecisionFp32 = Annotated[Optional[str], typer.Option("--precision", help=f"{_PRECISION_HELP}; default: fp32 (benchmark numbers are the same on every machine).")]
PrecisionAuto = Annotated[Optional[str], typer.Option("--precision", help=f"{_PRECISION_HELP}; default: auto.")]
Bf16 = Annotated[Optional[bool], typer.Option("--bf16/--no-bf16", help="Aliases of --precision bf16 and --precision fp32.")]
Device = Annotated[Optional[str], typer.Option(help="cpu, cuda, cuda:1, ...; default: CUDA when present.")]
Backend = Annotated[Optional[str], typer.Option(help="Embedding models: 'torch' (the default) or 'onnxruntime' (ONNX Runtime "
                                                     "fp32, about twice as fast on a CPU; needs the onnx extra).")]
Shortlist = Annotated[
    Optional[str],
    typer.Option(help="Cascade: a bi-encoder keeps each text's top K labels and only those are scored by --model; "
                 "'K' (shortlister all-MiniLM-L6-v2) or 'MODEL:K'. Unlisted labels rank below every shortlisted one."),
]
MaxLength = Annotated[Optional[int], typer.Option(help="Token limit per input; default: the model's own. Only texts are truncated.")]
Instruction = Annotated[
    Optional[str],
    typer.Option(help="Yes/no rerankers: the prompt's <Instruct> line; default: BTZSC's (nli-probe: the paper's NLI probe instruction)."),
]
RecheckMargin = Annotated[
    Optional[float],
    typer.Option(help="bf16 runs: scores within this margin of a text's best score "
                 f"(multi-label: of their label's threshold) are rescored in fp32, so decisions are fp32's. Default {DEFAULT_RECHECK_MARGIN:g} "
                 f"({DEFAULT_COSINE_RECHECK_MARGIN:g} for embedding and encoder cosines, whose texts are embedded again) "
                 "(widens by itself when bf16 errs more); 0: off (yesno and llm then load their weights in bf16). "
                 "Unused in fp32."),
]

# Yin et al. (2019): hypothesis variants and multi-label decisions (bench and classify).
Hypotheses = Annotated[
    str,
    typer.Option(help="How labels become hypotheses: 'dataset' (the dataset's own / as given), 'name', 'definition' "
                 "(WordNet), 'both', or 'ensemble' (the three averaged)."),
]
Template = Annotated[
    Optional[str],
    typer.Option(help="Turns a label into its hypothesis, e.g. 'This text is about {}.'; default: the aspect's "
                 "(Yin et al.'s, as PROTOCOL.md writes them: topic 'this text is about {}', emotion 'this text expresses {}', "
                 "situation 'the people there need {}'); '{}' fills in the bare name, definition or both. "
                 "Not with --hypotheses dataset, whose hypotheses are the dataset's own."),
]
MultiLabel = Annotated[bool, typer.Option("--multi-label", help="Every label whose score passes its threshold; 'none' when no label does.")]
Threshold = Annotated[Optional[float], typer.Option(help="Multi-label threshold, a plain cut for every label; default: the family's "
                                                   "measured cut (embedding models: with the margin rule), else the score type's (see `zstc.multilabel`).")]
LabelThresholds = Annotated[
    Optional[list[str]],
    typer.Option("--label-threshold", help="Multi-label threshold for one label, LABEL=NUMBER (a plain cut for that label; the others keep theirs); repeatable."),
]

DEFAULT = DEFAULT_MODEL


def requested_precision(precision: str | None, bf16: bool | None, default: str) -> str:
    """What the user asked for with ``--precision`` or its aliases ``--bf16/--no-bf16``, else the command's default."""
    from zstc.errors import UnknownNameError

    alias = None if bf16 is None else ("bf16" if bf16 else "fp32")
    if precision is not None and alias is not None and precision != alias:
        raise UnknownNameError(f"--precision {precision} contradicts --{'' if bf16 else 'no-'}bf16; give one of them")
    return precision or alias or default


def scorer_options(model_family: str | None = None, **given: Any) -> dict[str, Any]:
    """The scorer keyword arguments the user actually set (unset options take the family's defaults), with
    ``precision`` (when given) resolved to fp32 or bf16 for the device and the model's family (``auto`` is
    family-aware: :func:`zstc.scorers.runtime.resolve_precision`): once per run, here. A ``shortlist``
    is recorded in its canonical ``MODEL:K`` form, so ``8`` and ``all-MiniLM-L6-v2:8`` are one setting (one
    fingerprint)."""
    from zstc.scorers.runtime import resolved_options
    from zstc.validation import OPTION_RULES, check_options

    options = {name: value for name, value in given.items() if value is not None}
    # Ranges of the options zstc's rule table knows (batch size, max length, device), before any model loads.
    check_options({name: value for name, value in options.items() if name in OPTION_RULES})
    if "shortlist" in options:
        from zstc.scorers.cascade import parse_shortlist

        shortlist = parse_shortlist(options["shortlist"])
        options["shortlist"] = shortlist.canonical if shortlist is not None else None
    if "precision" in options:
        return resolved_options(options.pop("precision"), options, model_family)
    return options


FLAGS: dict[str, str] = {"label_thresholds": "--label-threshold", "descriptions": "--labels-file descriptions"}
"""Parameter names whose flag is not simply ``--`` plus the name with dashes (label descriptions come from a
``--labels-file``)."""


def flag(parameter: str) -> str:
    """The command-line flag of a Python parameter: ``batch_size`` -> ``--batch-size``."""
    return FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


def cli_message(error: ZstcError) -> str:
    """The error's message with the parameters it names written as the flags a CLI user typed."""
    if not error.parameters:
        return str(error)
    # A value the message quotes (Python's repr, as ``quoted`` writes it) is the user's own text, kept as typed:
    # a template "the template: {} {}" is not "the --template: {} {}". An apostrophe after a letter is prose.
    names = "|".join(re.escape(parameter) for parameter in sorted(error.parameters, key=len, reverse=True))
    pattern = re.compile(rf"""(?<!\w)'(?:[^'\\]|\\.)*'|(?<!\w)"(?:[^"\\]|\\.)*"|(?<![\w-])(?:{names})(?![\w-])""")
    return pattern.sub(lambda match: match[0] if match[0][0] in "'\"" else flag(match[0]), str(error))


# -- the scorer options, as one bundle --------------------------------------------------------------------

SCORER_OPTIONS: dict[str, Any] = {
    "pooling": Pooling,
    "score_type": ScoreType,
    "entailment_index": EntailmentIndex,
    "prompt_style": PromptStyle,
    "batch_size": BatchSize,
    "precision": None,  # PrecisionFp32 or PrecisionAuto, by the command's default
    "bf16": Bf16,
    "device": Device,
    "max_length": MaxLength,
    "recheck_margin": RecheckMargin,
    "backend": Backend,
    "instruction": Instruction,
    "shortlist": Shortlist,
}
"""The scorer options a command can take, in the order ``--help`` lists them."""

SCORER_PARAMETERS: tuple[str, ...] = tuple(name for name in SCORER_OPTIONS if name not in ("shortlist", "instruction"))
"""The options of the scorer itself that every scoring command takes (the cascade's ``shortlist`` is a command's
choice on top; ``instruction`` is taken only where a command names it: ``nli-probe``, whose default differs)."""


@dataclass(frozen=True)
class ScorerOptions:
    """The scorer options of one command line: what the user set (``None``: left to the family's default)."""

    given: dict[str, Any]
    default_precision: str = "fp32"

    def get(self, name: str) -> Any:
        """The value given for option ``name`` (None: not given, so the family's default applies)."""
        return self.given.get(name)

    @property
    def precision(self) -> str:
        """``--precision`` or its ``--bf16/--no-bf16`` alias, else the command's default (not yet resolved)."""
        return requested_precision(self.given.get("precision"), self.given.get("bf16"), self.default_precision)

    def kwargs(self, only: Collection[str] | None = None, *, model: str | None = None, family: str | None = None,
               **override: Any) -> dict[str, Any]:
        """Keyword arguments for :func:`zstc.scorers.make_scorer`: the options set (those named in ``only``,
        when given), ``override`` on top, and the precision resolved for the device and, for ``auto``, for the
        family of ``model`` (``family``: the user's ``--family``) when given."""
        given = {name: value for name, value in self.given.items()
                 if name not in ("precision", "bf16") and (only is None or name in only)}
        model_family = None
        if model is not None and self.precision == "auto":
            from zstc.models.registry import get_model_spec

            model_family = get_model_spec(model, family).family
        return scorer_options(model_family, **{**given, **override, "precision": self.precision})


F = TypeVar("F", bound=Callable[..., Any])


def with_scorer_options(*names: str, precision: str = "fp32") -> Callable[[F], F]:
    """Give a command the scorer options ``names`` (default: all of :data:`SCORER_OPTIONS`) as flags, and
    hand them to it as one ``scoring: ScorerOptions`` argument instead of one parameter each.

    ``precision`` is the command's default (``fp32`` for benchmark numbers, ``auto`` for classifying);
    ``--bf16/--no-bf16`` come with ``--precision``. The flags stand in ``--help`` where the command declares
    ``scoring`` (keyword-only, after ``*``), so a command keeps the order its users know.
    """
    chosen = list(names or SCORER_PARAMETERS)
    if "precision" in chosen and "bf16" not in chosen:
        chosen.append("bf16")
    chosen = [name for name in SCORER_OPTIONS if name in chosen]
    annotations = {
        name: (PrecisionAuto if precision == "auto" else PrecisionFp32) if name == "precision" else SCORER_OPTIONS[name]
        for name in chosen
    }

    def decorate(command: F) -> F:
        signature = inspect.signature(command)
        if "scoring" not in signature.parameters:
            raise TypeError(f"{command.__name__} takes the scorer options as `scoring: ScorerOptions` (keyword-only)")
        # Typer reads the annotations from the signature: give it objects, not the module's strings.
        hints = typing.get_type_hints(command, include_extras=True)
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotations[name]) for name in chosen]
        # Typer passes every option by keyword: all keyword-only, so the added flags may stand anywhere.
        parameters: list[inspect.Parameter] = []
        for name, parameter in signature.parameters.items():
            if name == "scoring":
                parameters += added
            else:
                parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(name, parameter.annotation)))

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in chosen}
            return command(**kwargs, scoring=ScorerOptions(given, precision))

        wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {
            **{name: value for name, value in hints.items() if name != "scoring"},
            **annotations,
        }
        return wrapper  # type: ignore[return-value]

    return decorate
