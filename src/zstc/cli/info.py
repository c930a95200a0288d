"""``zstc tasks``, ``zstc models`` and ``zstc dataset-similarity``: what zstc knows, and what is found on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from zstc.cli.root import CommandGroup, app
from zstc.cli.options import typer_option
from zstc.validation import OPTIONS
from zstc.cli.options import Family as FamilyOption
from zstc.cli.options import (
    EntailmentIndex,
    Instruction,
    MaxLength,
    Pooling,
    PromptStyle,
    ScorerOptions,
    ScoreType,
    TrustRemoteCode,
    cli_message,
)
from zstc.cli.verbosity import quiet, wrote

if TYPE_CHECKING:
    from zstc.benchmark.similarity import DatasetSimilarity


def count_texts(path: Path, n_labels: int) -> int:
    """Texts in a dataset file without parsing it: JSONL lines, CSV records, Parquet rows from the footer.
    A paired file (one row per text and candidate label, a ``hypothesis`` column) holds rows / labels texts.
    Blank lines are not texts (the readers skip them); a file that cannot be read is a :class:`DataError`."""
    import csv

    from zstc.errors import DataError
    from zstc.io import utf8_lines

    suffix = path.suffix
    try:
        if suffix == ".jsonl":
            with path.open("rb") as handle:
                lines = [line for line in handle if line.strip()]
            paired = bool(lines) and b'"hypothesis"' in lines[0]
            rows = len(lines)
        elif suffix == ".csv":
            with path.open("rb") as handle:
                reader = csv.reader(utf8_lines(handle, str(path)))
                header = next(reader, [])
                rows = sum(1 for row in reader if row)  # a blank line is [] (csv.DictReader skips it too)
            paired = "hypothesis" in header
        else:
            import pyarrow.parquet as pq

            metadata = pq.ParquetFile(path)
            rows, paired = metadata.metadata.num_rows, "hypothesis" in metadata.schema_arrow.names
    except DataError:
        raise
    except Exception as error:  # OSError, csv.Error, pyarrow's several types for a damaged file
        raise DataError(f"{path}: cannot be read ({type(error).__name__}: {error})") from None
    return rows // n_labels if paired else rows


@app.command()
def tasks(
    family: Annotated[Optional[str], typer.Option(help="Only this task family.")] = None,
    data: Annotated[
        Optional[Path],
        typer.Option(
            help="Directory of dataset files to look in, or 'sample' (the packaged sample); default: as `zstc bench` finds one ($ZSTC_DATA, what `zstc data pull` stored, shared/data/btzsc)."
        ),
    ] = None,
) -> None:
    """List the 22 BTZSC datasets and how many of their texts are found locally.

    Family, domain, labels, and how many texts are found locally, where."""
    from zstc.benchmark.catalog import HUB, catalog, data_directory, data_source, families, local_task_file
    from zstc.errors import UnknownNameError, did_you_mean

    groups = families()
    if family is not None and family not in groups:
        raise UnknownNameError(
            f"unknown task family {family!r}{did_you_mean(family, groups)}; expected one of {', '.join(groups)}"
        )
    source = data_source(data)
    on_hub = (
        source is not None and source.location == HUB
    )  # --data hub: no folder to look in ("hub: no such directory")
    directory = Path(source.location) if source is not None and not on_hub else None
    if data is not None and directory is not None:
        data_directory(directory)
    table = Table(title="BTZSC tasks" + (f" (files looked for in {directory})" if directory else ""))
    for column in ("dataset", "family", "domain", "labels", "no hypothesis", "texts here", "file"):
        table.add_column(
            column,
            no_wrap=column in ("dataset", "file"),
            justify="right" if column in ("labels", "no hypothesis", "texts here") else "left",
        )
    found = 0
    for spec in catalog().values():
        if family is not None and spec.family != family:
            continue
        path = local_task_file(directory, spec.name) if directory else None
        found += path is not None
        texts = f"{count_texts(path, len(spec.labels)):,}" if path else ""
        table.add_row(
            spec.name,
            spec.family,
            spec.domain,
            str(len(spec.labels)),
            str(len(spec.labels_without_hypothesis) or ""),
            texts,
            path.name if path else "hub only",
        )
    console = Console(width=max(Console().width, 130))
    console.print(table)
    if quiet():  # --quiet: the table only, without the count and the hint below it
        return
    where = (
        f"in {directory}"
        if directory
        else "locally (--data hub reads them from the hub)"
        if on_hub
        else "locally (no data directory found; give --data)"
    )
    console.print(
        f"{found} found {where}; `zstc bench --data DIR --tasks available` runs them; "
        "the others: `zstc data pull` fetches them once, --data hub reads them at run time.",
        style="dim",
    )


models_app = typer.Typer(
    cls=CommandGroup,
    help="List registered models: family, paper name, size, and whether they run offline here.\n\n"
    "`zstc models check MODEL` says what zstc would do with a model.",
)
app.add_typer(models_app, name="models")


@models_app.callback(invoke_without_command=True)
def models(
    ctx: typer.Context, family: Annotated[Optional[str], typer.Option(help="Only this model family.")] = None
) -> None:
    """List registered models: family, paper name, size, and whether they run offline here."""
    if ctx.invoked_subcommand is not None:
        return
    from zstc.models.families import get_family
    from zstc.models.registry import registered_models

    if family is not None:
        get_family(family)  # an unknown family is refused with a "did you mean"
    table = Table("model", "family", "paper name", "params (M)", "offline", title="Registered models")
    for spec in registered_models():
        if family is None or spec.family == family:
            offline = "yes" if spec.available_offline() else ""
            params = f"{spec.params_millions:g}" if spec.params_millions else ""
            table.add_row(spec.model_id, spec.family, spec.paper_name or "", params, offline)
    Console(width=max(Console().width, 120)).print(table)
    if not quiet():  # a hint, not a result
        Console().print("Any other hub model or local folder works with --family.", style="dim")


@models_app.command("check")
def check(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Hub id, paper short name or local folder.")],
    family: FamilyOption = None,
    text: Annotated[
        str, typer.Option(help="The sample text whose input is shown.")
    ] = "The quarterly profit rose by 20 percent.",
    labels: Annotated[
        str,
        typer.Option(
            "--labels",
            "-l",
            help="Comma-separated sample labels (the first is paired with the text; an LLM lists all).",
        ),
    ] = "positive,negative",
    pooling: Pooling = None,
    score_type: ScoreType = None,
    entailment_index: EntailmentIndex = None,
    prompt_style: PromptStyle = None,
    max_length: MaxLength = None,
    trust_remote_code: TrustRemoteCode = None,
    instruction: Instruction = None,
) -> None:
    """What zstc will do with MODEL, read from its config and tokenizer only.

    No weights are read: family and why, pooling, prefixes or instruction, score rule, entailment index, max
    length, the input for a sample text and label, and anything it cannot handle (then the exit status is 1)."""
    scoring = ScorerOptions.of(locals(), "fp32")  # first: the scorer flags among the parameters
    from zstc.cli.options import split_labels
    from zstc.scorers.check import check_model

    report = check_model(model, family, text=text, labels=split_labels(labels), **scoring.kwargs())
    print(report.model)
    width = max(len(name) for name, _ in report.facts)
    for name, value in report.facts:
        print(f"  {name.ljust(width)}  {value}")
    for problem in report.problems:
        print(f"  cannot: {cli_message(problem)}")
    if report.problems:
        raise typer.Exit(1)


@app.command("dataset-similarity")
def dataset_similarity(
    data: Annotated[
        Optional[str], typer.Option(help="A directory of dataset files, or 'hub'; default: as `zstc tasks` finds one.")
    ] = None,
    tasks: Annotated[
        Optional[str],
        typer.Option(
            help="Comma-separated datasets, a task family, 'all', or 'available' (every dataset found in --data); default: available for a directory, all for hub."
        ),
    ] = None,
    max_samples: Annotated[
        Optional[int],
        typer_option(
            OPTIONS["max_samples"].but(
                help="Read a sample of at most N texts per dataset (see --sampling); default: every text."
            )
        ),
    ] = None,
    sampling: Annotated[
        str, typer.Option(help="How --max-samples draws, as in `zstc bench`: 'stratified', 'paper' or 'harness'.")
    ] = "stratified",
    seed: Annotated[int, typer.Option(help="Seed of the stratified sample.")] = 0,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Also write the matrix as CSV here.")] = None,
    figure: Annotated[
        Optional[Path], typer.Option(help="Also draw the matrix as a heatmap here (.png or .svg).")
    ] = None,
) -> None:
    """How alike the datasets' texts are: the paper's dataset similarity analysis.

    Weighted Jaccard similarity of the token distributions of every pair of datasets: each dataset's most
    similar one, the most similar pairs, and the whole matrix."""
    from zstc.benchmark.catalog import resolve_task_names
    from zstc.benchmark.catalog import data_directory
    from zstc.benchmark.data import data_folder_files, find_task_file, load_btzsc_sample
    from zstc.benchmark.similarity import check_dataset_count, dataset_similarity as compute
    from zstc.benchmark.tasks import check_sampling
    from zstc.cli.options import data_location
    from zstc.errors import OptionError
    from zstc.io import check_output_path
    from zstc.reports.figures import FIGURE_FORMATS
    from zstc.validation import check_options

    check_options({"max_samples": max_samples, "seed": seed})
    check_sampling(sampling, max_samples)
    data = data_location(data)
    local = data != "hub"
    if local:
        data_directory(data)  # a missing folder is said as such, not as "no dataset files in it"
    names = resolve_task_names(tasks, data)
    check_dataset_count(len(names))  # before reading any text
    if local:  # every dataset file is found before the first is read
        for name in names:
            find_task_file(Path(data), name)
    # Every file in --data, not only the datasets compared: the others are data too.
    inputs = data_folder_files(data)
    for path, option in ((out, "--out"), (figure, "--figure")):
        if path is not None:
            check_output_path(path, inputs=inputs, option=option)
    if figure is not None and figure.suffix.lower() not in FIGURE_FORMATS:
        raise OptionError(f"--figure {figure}: expected a path ending in {' or '.join(FIGURE_FORMATS)}", "figure")
    if out is not None and figure is not None and out.resolve() == figure.resolve():
        raise OptionError("--out and --figure name the same file; give two paths", "out")
    texts: dict[str, list[str]] = {}
    for name in names:
        task, _, _ = load_btzsc_sample(name, data, max_samples=max_samples, seed=seed, sampling=sampling)
        texts[name] = task.texts
    similarity = compute(texts)
    _print_similarity(similarity)
    if out is not None:
        _write_similarity_csv(similarity, out)
        wrote(str(out))
    if figure is not None:
        from zstc.reports import figures

        figures.write_figure(figures.dataset_similarity(similarity), figure)
        wrote(str(figure))


def _print_similarity(similarity: DatasetSimilarity) -> None:
    console = Console(width=max(Console().width, 120))
    nearest = Table(
        "dataset",
        "texts",
        "distinct tokens",
        "most similar",
        "similarity",
        title="Weighted Jaccard similarity of token distributions",
    )
    for name in similarity.datasets:
        other, value = similarity.most_similar(name)
        nearest.add_row(name, f"{similarity.texts[name]:,}", f"{similarity.vocabulary[name]:,}", other, f"{value:.3f}")
    console.print(nearest)
    if len(similarity.datasets) <= 8:  # a wider matrix does not fit a terminal: --out and --figure hold it
        matrix = Table("", *similarity.datasets, title="all pairs")
        for name, row in zip(similarity.datasets, similarity.matrix):
            matrix.add_row(name, *(f"{value:.3f}" for value in row))
        console.print(matrix)
    else:
        pairs = Table("first", "second", "similarity", title="the 10 most similar pairs (--out or --figure: all)")
        for first, second, value in similarity.pairs()[:10]:
            pairs.add_row(first, second, f"{value:.3f}")
        console.print(pairs)


def _write_similarity_csv(similarity: DatasetSimilarity, path: Path) -> None:
    import csv

    from zstc.io import atomic_write

    with atomic_write(path) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["dataset", *similarity.datasets])
        for name, row in zip(similarity.datasets, similarity.matrix):
            writer.writerow([name, *(f"{value:.6f}" for value in row)])
