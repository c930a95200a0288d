"""``zstc bench``: evaluate one model on BTZSC datasets and compare with the paper."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from zstc.cli.root import app
from zstc.cli.options import typer_option
from zstc.validation import OPTIONS
from zstc.cli.options import (
    BatchSize,
    Bf16,
    Device,
    EntailmentIndex,
    Family,
    MaxLength,
    Model,
    Pooling,
    PrecisionFp32,
    PromptStyle,
    RecheckMargin,
    Backend,
    TrustRemoteCode,
    ScoreType,
    ScorerOptions,
    Shortlist,
)
from zstc.cli.options import Hypotheses, MultiLabel, Template, Threshold
from zstc.cli.options import DataOption, data_location

console = Console(stderr=True)


@app.command()
def bench(
    model: Model,
    data: DataOption = None,
    tasks: Annotated[
        Optional[str],
        typer.Option(
            help="Comma-separated datasets, a task family, 'all', or 'available' (every dataset found in --data); default: available for a directory, all for hub."
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Summary JSON; per-dataset details go to <stem>.details/.")
    ] = Path("results.json"),
    family: Family = None,
    max_samples: Annotated[
        Optional[int],
        typer_option(
            OPTIONS["max_samples"].but(help="Score a sample of at most N texts per dataset (see --sampling).")
        ),
    ] = None,
    sampling: Annotated[
        str,
        typer.Option(
            help="How --max-samples draws: 'stratified' (seeded, per class), 'paper' (the texts the paper scored: the public harness's draw, texts 0 and 1 plus random.Random(0), but rottentomatoes whole) or 'harness' (the harness's draw on every dataset)."
        ),
    ] = "stratified",
    seed: Annotated[int, typer.Option(help="Seed of the stratified sample.")] = 0,
    unlabelled: Annotated[
        str,
        typer.Option(
            help="Texts whose gold class has no hypothesis: 'paper' (count as class 0, like the public harness) or 'exclude'."
        ),
    ] = "paper",
    overwrite: Annotated[
        str,
        typer.Option(
            help="Results already in <stem>.details/: 'only-missing' (reuse those of these settings, from there or the result cache, compute the rest, refuse other settings'), 'always' (recompute all, replacing them) or 'never' (compute nothing)."
        ),
    ] = "only-missing",
    fresh: Annotated[bool, typer.Option(help="Same as --overwrite always.")] = False,
    cache: Annotated[
        bool,
        typer.Option(
            "--cache/--no-cache", help="Reuse and fill the shared result cache ($ZSTC_CACHE/results; see `zstc cache`)."
        ),
    ] = True,
    hypotheses: Hypotheses = "dataset",
    template: Template = None,
    multi_label: MultiLabel = False,
    threshold: Threshold = None,
    adapt: Annotated[
        str,
        typer.Option(
            help="Decide each dataset's texts as one corpus, never reading its gold labels: 'none' (each text alone, the paper's protocol), 'balance', 'centre', 'em' or 'em-map' (see docs/adaptation.md); part of the run's identity and shown in the table's title."
        ),
    ] = "none",
    *,
    pooling: Pooling = None,
    score_type: ScoreType = None,
    entailment_index: EntailmentIndex = None,
    prompt_style: PromptStyle = None,
    batch_size: BatchSize = None,
    precision: PrecisionFp32 = None,
    bf16: Bf16 = None,
    device: Device = None,
    max_length: MaxLength = None,
    recheck_margin: RecheckMargin = None,
    backend: Backend = None,
    trust_remote_code: TrustRemoteCode = None,
    shortlist: Shortlist = None,
) -> None:
    """Score BTZSC datasets with one model, beside the paper's published numbers.

    Macro-F1, accuracy, macro-precision and macro-recall per dataset, family and overall means, side by side with
    the paper's published numbers."""
    scoring = ScorerOptions.of(locals(), "fp32")  # first: the scorer flags among the parameters
    from zstc.benchmark.runner import Bench, BenchConfig
    from zstc.benchmark.catalog import resolve_task_names
    from zstc.benchmark.tasks import UNLABELLED_POLICIES

    from zstc.errors import Terminated
    from zstc.policy import check_multi_label_options
    from zstc.validation import check_choice, check_options

    check_choice("unlabelled", unlabelled, UNLABELLED_POLICIES)  # --sampling and the template rule: Bench.validate's
    check_options({"threshold": threshold, "max_samples": max_samples, "seed": seed})
    check_multi_label_options(multi_label, threshold=threshold)  # as classify: said, not ignored
    if fresh and overwrite == "never":  # --fresh won, silently: everything was recomputed
        from zstc.errors import OptionError

        raise OptionError("--fresh (the same as --overwrite always) contradicts --overwrite never; give one of them")
    data = data_location(data)
    config = BenchConfig(
        model=model,
        family=family,
        tasks=resolve_task_names(tasks, data),
        data=data,
        scorer_options=scoring.kwargs(),
        unlabelled=unlabelled,
        max_samples=max_samples,
        sampling=sampling,
        seed=seed,
        out=out,
        overwrite="always" if fresh else overwrite,
        hypotheses=hypotheses,
        template=template,
        multi_label=multi_label,
        threshold=threshold,
        cache=cache,
        adapt=adapt,
    )
    from zstc.cli.verbosity import show_progress, wrote

    runner = Bench(config, on_event=_report_event, show_progress=show_progress())
    try:
        summary = runner.run()
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (zstc.errors.Terminated)
        how = "terminated" if isinstance(stop, Terminated) else "interrupted"
        console.print(
            f"[yellow]{how}[/]: finished datasets are saved in {runner.store.directory}; run the same command again to resume"
        )
        raise
    print_summary(summary)
    if "multi_label" in summary:
        print_multi_label(summary["multi_label"])
    wrote(f"{out} and {runner.store.directory}/")


def _report_event(kind: str, payload: Any) -> None:
    from zstc.benchmark.runner import current_software, software_difference
    from zstc.cli.verbosity import quiet

    if quiet():  # --quiet: the summary table and errors only
        return
    if kind == "start":
        console.print(f"[bold]{payload.name}[/]: {len(payload)} texts x {len(payload.hypotheses)} labels")
    elif kind == "damaged":
        console.print(f"[yellow]{payload.path}: damaged ({payload.reason}), recomputing it[/]")
    elif kind == "orphan":
        console.print(f"[dim]removed {payload}, left by a run that was killed while writing[/]")
    elif kind == "reused":
        console.print(f"[dim]{payload.dataset}: reusing a finished result (details folder or result cache)[/]")
        other_code = software_difference(payload.software, current_software())
        if other_code:  # said when reused, and in the summary's notes
            console.print(f"  [dim]note: {other_code}[/]")
    elif kind == "note":
        console.print(f"[yellow]note[/]: {payload}")
    elif kind == "done":
        console.print(
            f"  macro-F1 {payload.metrics['macro_f1']:.4f}  accuracy {payload.metrics['accuracy']:.4f}  ({payload.wall_time_s:.1f} s)"
        )
        for note in payload.notes:
            console.print(f"  [dim]note: {note}[/]")


def print_summary(summary: dict[str, Any]) -> None:
    """Print a run summary: one row per dataset (beside the paper's macro-F1 where published), the task
    families' means and the overall row."""
    from zstc.reports.rows import protocol_differences, sample_differences

    results = summary["results"]
    paper = summary.get("paper", {}).get("macro_f1", {})
    other_texts = sample_differences(summary) if paper else {}  # marked: its delta is not the model's alone
    model = summary["model"]
    adapted = (summary.get("evaluation", {}).get("run_identity") or {}).get("adapt")
    how = f"; decisions adapted to each dataset: {adapted}" if adapted else ""
    table = Table(
        title=f"{model['name']} on BTZSC ({model.get('precision', 'precision unknown')}, {model.get('device', 'device unknown')}{how})",
        show_footer=False,
    )
    for column in ("dataset", "family", "texts", "macro-F1", "accuracy", "macro-P", "macro-R"):
        table.add_column(column, justify="left" if column in ("dataset", "family") else "right")
    if paper:
        table.add_column("paper F1", justify="right")
        table.add_column("delta", justify="right")
    for name, row in results["by_dataset"].items():
        cells = [
            name,
            _family_of(name),
            str(row["n_texts"]),
            f"{row['macro_f1']:.4f}",
            f"{row['accuracy']:.4f}",
            f"{row['macro_precision']:.4f}",
            f"{row['macro_recall']:.4f}",
        ]
        if paper:
            published = paper.get(name)
            mark = "*" if name in other_texts else ""
            cells += (
                [f"{published:.4f}", f"{row['macro_f1'] - published:+.4f}{mark}"] if published is not None else ["", ""]
            )
        table.add_row(*cells)
    for family, row in results["by_task"].items():
        table.add_row(
            f"[italic]{family} mean[/]",
            "",
            "",
            f"{row['macro_f1']:.4f} ({row['macro_f1_std']:.3f})",
            f"{row['accuracy']:.4f}",
            "",
            "",
        )
    overall = results["overall"]
    table.add_row(
        "[bold]overall[/]",
        "",
        "",
        f"[bold]{overall['macro_f1']:.4f}[/] ({overall['macro_f1_std']:.3f})",
        f"{overall['accuracy']:.4f}",
        "",
        "",
    )
    differences = protocol_differences(summary) if paper else []
    if differences:  # the report says the same beside its comparison
        table.caption = (
            ("* not the texts the paper scored. " if other_texts else "") + f"Compared with the paper's "
            f"{summary['paper'].get('model')} but not run by its protocol: {'; '.join(differences)}."
        )
    Console(width=max(Console().width, 120)).print(table)


def print_multi_label(report: dict[str, Any]) -> None:
    """Print the multi-label view of a run (threshold decisions, "none" when no label passes), one row per dataset."""
    margin = f", within {report['margin']:.4g} of the text's best" if report.get("margin") is not None else ""
    table = Table(
        title=f"multi-label decisions (threshold {report['threshold']:g}{margin}; 'none' when no label passes)"
    )
    for column in ("dataset", "weighted F1", "micro F1", "macro F1", "none predicted", "none gold"):
        table.add_column(column, justify="left" if column == "dataset" else "right")
    for name, row in report["by_dataset"].items():
        table.add_row(
            name,
            f"{row['weighted_f1']:.4f}",
            f"{row['micro_f1']:.4f}",
            f"{row['macro_f1']:.4f}",
            str(row["none_predicted"]),
            str(row["none_gold"]),
        )
    Console(width=max(Console().width, 120)).print(table)


def _family_of(dataset: str) -> str:
    from zstc.benchmark.catalog import catalog

    spec = catalog().get(dataset)
    return spec.family if spec else ""
