"""``zstc demo``: the offline default model on a few texts, then a quick benchmark on whatever data is found."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from zstc.cli.root import app

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


def find_data() -> Path | None:
    """BTZSC files (see :func:`zstc.benchmark.catalog.default_data_dir`), when they hold the demo's first dataset."""
    from zstc.benchmark.catalog import default_data_dir

    found = default_data_dir()
    return found if found is not None and (found / "financialphrasebank.jsonl").exists() else None


@app.command()
def demo(
    data: Annotated[Optional[Path], typer.Option(help="BTZSC data directory; searched for when omitted.")] = None,
    max_samples: Annotated[int, typer.Option(help="Texts per dataset in the quick benchmark.")] = 200,
    out: Annotated[Path, typer.Option(help="Where the demo benchmark writes its results (runs/ is created for the default).")] = DEMO_OUT,
) -> None:
    """Classify five example texts with the offline default model, then benchmark it on the data found."""
    from zstc.api import Classifier
    from zstc.defaults import DEFAULT_MODEL
    from zstc.benchmark.runner import Bench, BenchConfig
    from zstc.benchmark.catalog import resolve_task_names
    from zstc.cli.bench import print_summary
    from zstc.cli.verbosity import note
    from zstc.io import check_output_path
    from zstc.validation import check_options

    check_options({"max_samples": max_samples})  # bench's rule, before the model loads
    if out == DEMO_OUT:
        DEMO_OUT.parent.mkdir(exist_ok=True)
    check_output_path(out)  # bench's rule too, before the example classification rather than after it
    data = data or find_data()
    bench = None
    if data is not None:  # a --data without the demo's datasets fails now too, not after the example classification
        config = BenchConfig(model=DEFAULT_MODEL, tasks=resolve_task_names(DEMO_TASKS), data=str(data),
                             scorer_options={"pooling": "cls"}, max_samples=max_samples, out=out)
        bench = Bench(config, show_progress=False)
        bench.validate()
    console = Console()
    console.rule(f"classify with {DEFAULT_MODEL}")
    classifier = Classifier(DEFAULT_MODEL, template="This text is about {}.")
    table = Table("text", "label", "score")
    for prediction in classifier.predict(EXAMPLES, EXAMPLE_LABELS):
        table.add_row(prediction.text, prediction.label, f"{prediction.scores[prediction.label]:.3f}")
    console.print(table)

    if bench is None:
        note("no BTZSC data found (set ZSTC_DATA or pass --data); skipping the benchmark")
        return
    console.rule(f"benchmark on {data} ({max_samples} texts per dataset, the paper's [CLS] pooling)")
    print_summary(bench.run())
