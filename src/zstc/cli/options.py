"""Options shared by several commands, declared once so they read the same everywhere."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from zstc.api import DEFAULT_MODEL

Model = Annotated[str, typer.Option("--model", "-m", help="Hub id, paper short name or local folder (see `zstc models`).")]
ModelWithDefault = Annotated[str, typer.Option("--model", "-m", help="Hub id, paper short name or local folder (see `zstc models`).")]
Family = Annotated[
    Optional[str],
    typer.Option("--family", "-f", help="embedding, encoder, nli, reranker, yesno or llm; read from the registry when omitted."),
]
Pooling = Annotated[Optional[str], typer.Option(help="Embedding models: 'native' (the model's own config) or 'cls' (the paper's computation).")]
ScoreType = Annotated[
    Optional[str],
    typer.Option("--score-type", help="NLI models: 'logodds' (the paper's default), 'logit' (the public harness) or 'prob'."),
]
EntailmentIndex = Annotated[Optional[int], typer.Option(help="NLI models: the output index of entailment, when id2label does not say.")]
BatchSize = Annotated[Optional[int], typer.Option(help="Texts (or pairs) per forward pass.")]
_PRECISION_HELP = "fp32, bf16 (autocast) or auto (bf16 where the hardware runs it fast: CUDA, AMX or AVX512-BF16)"
PrecisionFp32 = Annotated[Optional[str], typer.Option("--precision", help=f"{_PRECISION_HELP}; default: fp32 (benchmark numbers are the same on every machine).")]
PrecisionAuto = Annotated[Optional[str], typer.Option("--precision", help=f"{_PRECISION_HELP}; default: auto.")]
Bf16 = Annotated[Optional[bool], typer.Option("--bf16/--no-bf16", help="Aliases of --precision bf16 and --precision fp32.")]
Device = Annotated[Optional[str], typer.Option(help="cpu, cuda, cuda:1, ...; default: CUDA when present.")]
Shortlist = Annotated[
    Optional[str],
    typer.Option(help="Cascade: a bi-encoder keeps each text's top K labels and only those are scored by --model; "
                 "'K' (shortlister all-MiniLM-L6-v2) or 'MODEL:K'. Unlisted labels rank below every shortlisted one."),
]
MaxLength = Annotated[Optional[int], typer.Option(help="Token limit per input; default: the model's own. Only texts are truncated.")]

# Yin et al. (2019): hypothesis variants and multi-label decisions (bench and classify).
Hypotheses = Annotated[
    str,
    typer.Option(help="How labels become hypotheses: 'dataset' (the dataset's own / as given), 'name', 'definition' "
                 "(WordNet), 'both', or 'ensemble' (the three averaged)."),
]
Template = Annotated[
    Optional[str],
    typer.Option(help="Turns a label into its hypothesis, e.g. 'This text is about {}.'; default: the aspect's "
                 "(topic 'This text is about {}.', emotion 'This text expresses {}.', situation 'The people there need {}.')."),
]
MultiLabel = Annotated[bool, typer.Option("--multi-label", help="Every label whose score passes its threshold; 'none' when no label does.")]
Threshold = Annotated[Optional[float], typer.Option(help="Multi-label threshold; default: the score type's (see `zstc.multilabel`).")]
LabelThresholds = Annotated[
    Optional[list[str]],
    typer.Option("--label-threshold", help="Multi-label threshold for one label, LABEL=NUMBER; repeatable."),
]

DEFAULT = DEFAULT_MODEL


def requested_precision(precision: str | None, bf16: bool | None, default: str) -> str:
    """What the user asked for with ``--precision`` or its aliases ``--bf16/--no-bf16``, else the command's default."""
    from zstc.errors import UnknownNameError

    alias = None if bf16 is None else ("bf16" if bf16 else "fp32")
    if precision is not None and alias is not None and precision != alias:
        raise UnknownNameError(f"--precision {precision} contradicts --{'' if bf16 else 'no-'}bf16; give one of them")
    return precision or alias or default


def scorer_options(**given: Any) -> dict[str, Any]:
    """The scorer keyword arguments the user actually set (unset options take the family's defaults), with
    ``precision`` (when given) resolved to fp32 or bf16 for the device: once per run, here. A ``shortlist``
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
        return resolved_options(options.pop("precision"), options)
    return options
