"""Options shared by several commands, declared once so they read the same everywhere."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from zstc.defaults import DEFAULT_MODEL

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
Bf16 = Annotated[Optional[bool], typer.Option("--bf16/--no-bf16", help="bf16 autocast; default: where the hardware runs it fast.")]
Device = Annotated[Optional[str], typer.Option(help="cpu, cuda, cuda:1, ...; default: CUDA when present.")]
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


def scorer_options(**given: Any) -> dict[str, Any]:
    """The scorer keyword arguments the user actually set (unset options take the family's defaults)."""
    return {name: value for name, value in given.items() if value is not None}
