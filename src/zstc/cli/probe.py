"""``zstc nli-probe``: AUROC of a model's entailment score (a cross-encoder's or yes/no reranker's score of the pair, a
bi-encoder's cosine of premise and hypothesis) on NLI test sets, beside the paper's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from zstc.cli.root import app
from zstc.cli.options import typer_option
from zstc.validation import OPTIONS
from zstc.cli.options import (
    BatchSize,
    Bf16,
    Device,
    EntailmentIndex,
    Instruction,
    MaxLength,
    Model,
    Pooling,
    PrecisionFp32,
    ScorerOptions,
    ScoreType,
    TrustRemoteCode,
)

console = Console(stderr=True)


@app.command("nli-probe")
def nli_probe(
    model: Model,
    data: Annotated[
        Path, typer.Option(help="A folder of NLI test files (premise, hypothesis, label), e.g. ../shared/data/nli.")
    ],
    max_samples: Annotated[
        Optional[int],
        typer_option(OPTIONS["max_samples"].but(help="Score a seeded random sample of at most N pairs per set.")),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the sample.")] = 0,
    out: Annotated[
        Optional[Path],
        typer.Option("--out", "-o", help="Also write the results as JSON here (never a file in --data)."),
    ] = None,
    family: Annotated[
        Optional[str],
        typer.Option(
            "--family",
            "-f",
            help="nli, reranker, yesno, embedding or encoder (llm is refused: no published rule scores one pair with it); default: the registry's, else nli.",
        ),
    ] = None,
    query: Annotated[
        Optional[str],
        typer.Option(
            help="Yes/no rerankers: which side of each pair fills the prompt's <Query>, 'hypothesis' (the instruction's "
            "literal reading; the default) or 'premise' (as in classification); the paper does not say which it used."
        ),
    ] = None,
    *,
    pooling: Pooling = None,
    score_type: ScoreType = None,
    entailment_index: EntailmentIndex = None,
    batch_size: BatchSize = None,
    precision: PrecisionFp32 = None,
    bf16: Bf16 = None,
    device: Device = None,
    max_length: MaxLength = None,
    instruction: Instruction = None,
    trust_remote_code: TrustRemoteCode = None,
) -> None:
    """AUROC of a model's entailment score on NLI test sets, as the paper's roc_scores.csv.

    AUROC of the entailment score (entailment vs. neutral and contradiction) on every NLI test file in --data, in
    the columns of the paper's roc_scores.csv, with the paper's row when it has the model.

    Cross-encoders score each pair; embedding models and base encoders score it by the cosine of the premise's
    embedding (as a text, with the model's query prefix) and the hypothesis's (as a label description), as in
    BTZSC: the paper's all-MiniLM-L6-v2 row needs --pooling cls. Yes/no rerankers are prompted with the paper's
    NLI instruction unless --instruction gives another. LLMs are not probed (the paper states no rule for one
    pair)."""
    scoring = ScorerOptions.of(locals(), "fp32")  # first: the scorer flags among the parameters
    from zstc.benchmark.data import data_folder_files
    from zstc.benchmark.nli_probe import find_nli_sets, probe_family, probe_options, run_probe
    from zstc.runs.files import write_json
    from zstc.scorers import make_scorer
    from zstc.cli.verbosity import show_progress, wrote
    from zstc.io import check_output_path
    from zstc.validation import check_options

    check_options({"seed": seed})
    sets = find_nli_sets(data)  # before loading the model: a wrong folder fails at once
    if out is not None:
        # Every data file in --data, not only the sets probed: the training files it skips are data too.
        check_output_path(out, inputs=data_folder_files(data))
    probed = probe_family(model, family)
    scorer = make_scorer(model, probed, **probe_options(probed, scoring.kwargs(), query))
    summary = run_probe(
        scorer, sets, max_samples=max_samples, seed=seed, on_event=_report_event, show_progress=show_progress()
    )
    print_probe(summary)
    if out is not None:
        write_json(out, summary)
        wrote(str(out))


def _report_event(kind: str, payload: Any) -> None:
    from zstc.cli.verbosity import quiet

    if quiet():  # --quiet: the AUROC table and errors only, as bench
        return
    if kind == "start":
        console.print(f"[bold]{payload.name}[/]: {len(payload)} pairs from {payload.path.name}")
    elif kind == "done":
        name, result = payload
        console.print(f"  AUROC {result['auroc']:.4f}")
        for note in result["notes"]:
            console.print(f"  [dim]note: {note}[/]")


def print_probe(summary: dict[str, Any]) -> None:
    """Print an NLI probe summary: AUROC per set, beside the paper's where published."""
    from zstc.benchmark.nli_probe import PAPER_COLUMNS

    sets = summary["sets"]
    paper = (summary.get("paper") or {}).get("auroc") or {}
    model = summary["model"]
    layout = summary["evaluation"]
    # The model and how its numbers were made, on lines of their own above and below the table: in its title or
    # caption rich wrapped them to the width of a three-column table, mid-word. A yes/no reranker's numbers depend on which side was its
    # <Query>, which the paper's rows do not say.
    how = [
        f"score: {model.get('score_type') or _family_score_type(model.get('family'))}"
        + (f", pooling {model['pooling']}" if model.get("pooling") else ""),
        f"{model.get('precision')}, {model.get('device')}",
    ]
    if "query" in layout:
        how.append(f"<Query> {layout['query']}, <Document> {layout['document']}")
    if "instruction" in layout:
        how.append(f"instruction: {layout['instruction']}")
    if paper and summary["paper"].get("differences"):
        how.append(f"not run as the paper's row: {'; '.join(summary['paper']['differences'])}")
    table = Table()
    for column in ("set", "pairs", "AUROC"):
        table.add_column(column, justify="left" if column == "set" else "right")
    if paper:
        table.add_column(f"paper ({summary['paper']['model']})", justify="right")
        table.add_column("delta", justify="right")
    names = list(sets) + [column for column in PAPER_COLUMNS if column in paper and column not in sets]
    for name in names:
        result = sets.get(name)
        cells = [name, str(result["pairs"]) if result else "", f"{result['auroc']:.4f}" if result else "no data"]
        if paper:
            published = paper.get(name)
            cells.append(f"{published:.4f}" if published is not None else "")
            cells.append(f"{result['auroc'] - published:+.4f}" if result and published is not None else "")
        table.add_row(*cells)
    out = Console()
    out.print(escape(f"{model['name']}: NLI AUROC"), style="bold")
    out.print(table)
    for line in how:
        out.print(escape(line), style="dim")


def _family_score_type(family: str | None) -> str:
    """What a family's scores are, for a model whose description has no ``score_type`` of its own."""
    from zstc.errors import UnknownNameError
    from zstc.models.families import get_family

    try:
        return get_family(family or "").score_type or "score"
    except UnknownNameError:
        return "score"
