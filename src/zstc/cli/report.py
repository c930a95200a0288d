"""``zstc report``, ``zstc export``, ``zstc validate`` and ``zstc schema``: turn result files into things people read
and share, and describe them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional, TextIO

import typer
from rich.console import Console

from zstc.cli.root import app
from zstc.cli.verbosity import wrote
from zstc.cli.options import typer_option
from zstc.validation import OPTIONS

console = Console(stderr=True)


@app.command()
def report(
    results: Annotated[
        list[Path],
        typer.Argument(
            help="Result files written by `zstc bench`, each once (their <stem>.details/ folders add statistics and confusion matrices)."
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Directory for index.html, report.md, tables/ and figures/ (an earlier report there is replaced; tables/ or figures/ folders of anything else are refused).",
        ),
    ] = Path("report"),
    paper: Annotated[
        bool,
        typer.Option(
            "--paper/--no-paper",
            help="Include the paper's published numbers: its 38 models in tables and figures, each run against the paper's number for the same model, and the Kendall tau rankings made from them (--no-paper: only your runs).",
        ),
    ] = True,
    bootstrap: Annotated[
        int, typer_option(OPTIONS["bootstrap"].but(help="Bootstrap draws for the 95% confidence intervals."))
    ] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap draws.")] = 0,
    confusion: Annotated[
        bool, typer.Option("--confusion/--no-confusion", help="A confusion matrix per run and dataset.")
    ] = True,
) -> None:
    """Compare bench runs with each other and the paper: tables, figures, one HTML page.

    The paper's Table 2, per-dataset tables, figures (speed vs accuracy, scaling, heatmap, confusion matrices),
    bootstrap intervals, McNemar and Kendall tau, as Markdown, CSV, PNG/SVG and one self-contained index.html."""
    from zstc.cli.verbosity import note
    from zstc.reports.build import build_report
    from zstc.validation import check_options

    check_options({"seed": seed})
    written = build_report(
        list[str | Path](results), out, include_paper=paper, draws=bootstrap, seed=seed, confusion_matrices=confusion
    )
    for message in written.notes:
        note(message)
    console.print(
        f"wrote {written.index} ({len(written.tables)} tables, {len(written.figures)} figures; Markdown and CSV in {out / 'tables'})"
    )


@app.command()
def export(
    leaderboard: Annotated[
        Path,
        typer.Option(
            "--leaderboard",
            help="A result file written by `zstc bench`, exported as a public leaderboard file (schema 1.0).",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="The leaderboard JSON file to write.")],
) -> None:
    """Write a bench result in the public BTZSC leaderboard schema 1.0.

    Then check it as `zstc validate` does."""
    from zstc.benchmark.leaderboard import validate_leaderboard, write_leaderboard
    from zstc.benchmark.store import load_summary
    from zstc.errors import DataError
    from zstc.io import check_output_path

    check_output_path(out, inputs=[leaderboard])
    summary = load_summary(leaderboard)  # its errors name the file already
    try:
        content = write_leaderboard(summary, out)
    except DataError as error:  # what export finds wrong names a field of the result, not which result file
        raise DataError(f"{leaderboard}: {error}") from None
    wrote(str(out))
    problems = validate_leaderboard(content)
    if problems:  # written as asked, but not an entry the leaderboard takes: exit 1, as validate says of it
        console.print(f"[yellow]{len(problems)} problem(s)[/] keep it from being a complete leaderboard entry:")
        _print_problems(problems)
        raise typer.Exit(1)


@app.command()
def validate(file: Annotated[Path, typer.Argument(help="A leaderboard JSON file (schema 1.0).")]) -> None:
    """Check a leaderboard file; list every problem and exit 1 if any.

    Schema 1.0, all 22 datasets and 4 task families, metrics in [0, 1], averages consistent with the per-dataset
    numbers, no partial or sampled run, BTZSC's own hypotheses and unlabelled policy."""
    from zstc.benchmark.leaderboard import validate_file

    problems = validate_file(file)
    if not problems:
        print(f"{file}: valid leaderboard file (schema 1.0)")
        return
    print(f"{file}: {len(problems)} problem(s)")
    _print_problems(problems, stream=sys.stdout)
    raise typer.Exit(1)


@app.command()
def schema(
    name: Annotated[
        str, typer.Argument(help="result (a dataset's details file), summary (the bench --out file) or leaderboard.")
    ],
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Write the schema here instead of printing it.")
    ] = None,
) -> None:
    """Print the JSON schema of a file zstc writes or reads (also published in docs/schemas/)."""
    import json

    from zstc.benchmark.leaderboard import json_schema
    from zstc.io import atomic_write, check_output_path

    text = json.dumps(json_schema(name), indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        check_output_path(out)  # a missing folder was a FileNotFoundError traceback
        with atomic_write(out) as handle:  # as every file zstc writes: the old one or the whole new one
            handle.write(text)
        wrote(str(out))


def _print_problems(problems: list[str], stream: TextIO | None = None) -> None:
    for problem in problems:
        print(f"  - {problem}", file=stream or sys.stderr)
