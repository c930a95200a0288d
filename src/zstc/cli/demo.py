"""``zstc demo``: the offline default model on a few texts, then a quick benchmark on whatever data is found."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from zstc.cli.root import app

if TYPE_CHECKING:
    from zstc.benchmark.catalog import DataSource

EXAMPLES: list[str] = [
    "The central bank raised interest rates by half a point to fight inflation.",
    "Manchester United came back from two goals down to win in extra time.",
    "The new phone's battery lasts two full days and the camera is superb.",
    "Researchers sequenced the genome of a 40,000-year-old woolly mammoth.",
    "Parliament passed the bill after a heated late-night debate.",
]
EXAMPLE_LABELS: list[str] = ["economy", "sports", "technology", "science", "politics"]
DEMO_TASKS = "financialphrasebank,rottentomatoes,banking77,agnews"
DEMO_OUT = Path("runs/demo.json")
"""The demo's own default output; its folder is created (``make demo`` on a fresh clone has no ``runs/``)."""


def find_data(data: Path | None) -> DataSource:
    """Where the demo benchmarks: ``--data``, else where every command looks
    (:func:`zstc.benchmark.catalog.data_source`) when that holds the demo's first dataset, else the packaged sample,
    so the demo runs on a machine with nothing else."""
    from zstc.benchmark.catalog import SAMPLE, data_source, local_task_file

    found = data_source(data)
    if data is None and (
        found is None or found.location == "hub" or local_task_file(found.location, DEMO_TASKS.split(",")[0]) is None
    ):
        found = data_source(SAMPLE)
    assert found is not None  # an explicit --data, or the sample, is always a source
    return found


@app.command()
def demo(
    data: Annotated[
        Optional[Path],
        typer.Option(
            help="BTZSC data directory; default: where every command looks (see `zstc data`), else the packaged sample."
        ),
    ] = None,
    max_samples: Annotated[int, typer.Option(help="Texts per dataset in the quick benchmark.")] = 200,
    out: Annotated[
        Path, typer.Option(help="Where the demo benchmark writes its results (runs/ is created for the default).")
    ] = DEMO_OUT,
) -> None:
    """Classify five example texts with the offline default model, then benchmark it.

    The quick benchmark runs on the data every command finds (see `zstc data`), else on the packaged sample."""
    from zstc.api import Classifier
    from zstc.defaults import DEFAULT_MODEL
    from zstc.benchmark.runner import Bench, BenchConfig
    from zstc.benchmark.catalog import available_tasks, resolve_task_names, sample_dir
    from zstc.cli.bench import print_summary
    from zstc.cli.options import announce
    from zstc.cli.verbosity import note
    from zstc.io import check_output_path
    from zstc.validation import check_options

    check_options({"max_samples": max_samples})  # bench's rule, before the model loads
    if out == DEMO_OUT:
        DEMO_OUT.parent.mkdir(exist_ok=True)
    check_output_path(out)  # bench's rule too, before the example classification rather than after it
    source = find_data(data)
    sample = source.location == str(sample_dir())
    # On the packaged sample, its datasets; elsewhere the demo's four. A --data without them fails now, not after the
    # example classification.
    names = available_tasks(source.location) if sample else resolve_task_names(DEMO_TASKS)
    config = BenchConfig(
        model=DEFAULT_MODEL,
        tasks=names,
        data=source.location,
        scorer_options={"pooling": "cls"},
        max_samples=max_samples,
        out=out,
    )
    bench = Bench(config, show_progress=False)
    bench.validate()
    announce(source)
    console = Console()
    console.rule(f"classify with {DEFAULT_MODEL}")
    classifier = Classifier(DEFAULT_MODEL, template="This text is about {}.")
    table = Table("text", "label", "score")
    for prediction in classifier.predict(EXAMPLES, EXAMPLE_LABELS):
        table.add_row(prediction.text, prediction.label, f"{prediction.scores[prediction.label]:.3f}")
    console.print(table)

    console.rule(f"benchmark on {source.location} ({max_samples} texts per dataset, the paper's [CLS] pooling)")
    if sample:
        note(
            "this is zstc's packaged sample (a few hundred texts of the datasets whose licences allow shipping "
            "them), not the paper's protocol: its delta to the paper is not a reproduction; `zstc data pull` gets "
            "the full data"
        )
    print_summary(bench.run())
