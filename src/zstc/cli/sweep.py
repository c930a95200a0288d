"""``zstc sweep``: several models over BTZSC datasets, each (model, dataset) once, locally or on Ray."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

from zstc.cli.root import app
from zstc.cli.verbosity import wrote
from zstc.cli.options import typer_option
from zstc.validation import OPTIONS
from zstc.cli.options import DataOption, data_location
from zstc.cli.options import (
    BatchSize,
    Bf16,
    Device,
    Hypotheses,
    MaxLength,
    PrecisionFp32,
    ScorerOptions,
    Template,
    TrustRemoteCode,
)
from zstc.validation import check_hypotheses_template

console = Console(stderr=True)


@app.command()
def sweep(
    models: Annotated[
        str,
        typer.Option(
            "--models",
            help="Comma-separated models (hub ids, paper short names or local folders), each model once under one name.",
        ),
    ],
    data: DataOption = None,
    tasks: Annotated[
        Optional[str],
        typer.Option(
            help="Comma-separated datasets, a task family, 'all', or 'available' (every dataset found in --data); default: available for a directory, all for hub."
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="Folder for one summary per model (<model>.json, as `zstc bench` writes it) and its details.",
        ),
    ] = Path("sweep"),
    engine: Annotated[
        str, typer.Option(help="'local' (this process, one model at a time) or 'ray' (an actor per model).")
    ] = "local",
    address: Annotated[
        Optional[str],
        typer.Option(
            help="--engine ray: the Ray cluster to join, e.g. 'auto' or 'ray://head:10001' (default: a local Ray)."
        ),
    ] = None,
    gpus_per_model: Annotated[float, typer.Option(help="--engine ray: GPUs each model's actor reserves.")] = 0.0,
    cpus_per_model: Annotated[float, typer.Option(help="--engine ray: CPUs each model's actor reserves.")] = 1.0,
    max_retries: Annotated[
        int,
        typer_option(
            OPTIONS["max_retries"].but(
                help="--engine ray: restarts of a dead worker (its unfinished units are re-run)."
            )
        ),
    ] = 3,
    max_samples: Annotated[
        Optional[int],
        typer_option(
            OPTIONS["max_samples"].but(help="Score a sample of at most N texts per dataset (see --sampling).")
        ),
    ] = None,
    sampling: Annotated[
        str,
        typer.Option(
            help="How --max-samples draws: 'stratified' (seeded, per class), 'paper' (the texts the paper scored) or 'harness' (the public harness's draw), as in `zstc bench`."
        ),
    ] = "stratified",
    seed: Annotated[int, typer.Option(help="Seed of the stratified sample.")] = 0,
    unlabelled: Annotated[str, typer.Option(help="'paper' or 'exclude' (see `zstc bench --help`).")] = "paper",
    fresh: Annotated[bool, typer.Option(help="Recompute every unit instead of reusing finished ones.")] = False,
    hypotheses: Hypotheses = "dataset",
    template: Template = None,
    *,
    batch_size: BatchSize = None,
    precision: PrecisionFp32 = None,
    bf16: Bf16 = None,
    device: Device = None,
    max_length: MaxLength = None,
    trust_remote_code: TrustRemoteCode = None,
) -> None:
    """Score several models on several datasets, each (model, dataset) unit once.

    Finished units (details folder or result cache) are skipped, each model is loaded once per worker, and each
    model's summary is written exactly as `zstc bench` writes it."""
    scoring = ScorerOptions.of(locals(), "fp32")  # first: the scorer flags among the parameters
    from zstc.benchmark.catalog import resolve_task_names
    from zstc.benchmark.runner import BenchConfig
    from zstc.benchmark.tasks import UNLABELLED_POLICIES, check_sampling
    from zstc.io import check_output_dir
    from zstc.scale.planner import ENGINES
    from zstc.validation import check_choice, check_labels, check_options

    check_choice("unlabelled", unlabelled, UNLABELLED_POLICIES)
    check_sampling(sampling, max_samples)
    check_choice("engine", engine, ENGINES)
    check_options({"gpus_per_model": gpus_per_model, "cpus_per_model": cpus_per_model, "seed": seed})  # before planning
    check_hypotheses_template(hypotheses, template)
    check_output_dir(out)  # before any work: an existing file, a missing parent folder
    names = check_labels(models.split(","), what="models", allow_single=True)
    data = data_location(data)
    template_config = BenchConfig(
        model=names[0],
        tasks=resolve_task_names(tasks, data),
        data=data,
        unlabelled=unlabelled,
        max_samples=max_samples,
        sampling=sampling,
        seed=seed,
        overwrite="always" if fresh else "only-missing",
        hypotheses=hypotheses,
        template=template,
        scorer_options=scoring.kwargs(),
    )
    created = not out.exists()
    try:
        summaries = _plan_and_run(
            template_config, names, out, engine, address, gpus_per_model, cpus_per_model, max_retries
        )
    except BaseException:
        if created:  # a sweep stopped before any unit finished (a Ray cluster not found) leaves no empty folder behind
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    for model, summary in summaries.items():
        overall = summary["results"]["overall"]
        console.print(
            f"{model}: macro-F1 {overall['macro_f1']:.4f} over {len(summary['results']['by_dataset'])} datasets"
        )
    wrote(f"{len(summaries)} summaries to {out}/")


def _report(kind: str, payload: Any) -> None:
    """Progress of the sweep's units; --quiet keeps only the per-model results and errors."""
    from zstc.cli.verbosity import note, say

    if kind == "done":
        say(f"  {payload.dataset}: macro-F1 {payload.metrics['macro_f1']:.4f} ({payload.wall_time_s:.1f} s)")
    elif kind == "note":
        note(str(payload))


def _plan_and_run(
    template: Any,
    names: list[str],
    out: Path,
    engine: str,
    address: str | None,
    gpus_per_model: float,
    cpus_per_model: float,
    max_retries: int,
) -> dict[str, dict[str, Any]]:
    """Plan the sweep into ``out`` and run it, holding the folder's lock: two sweeps on one folder computed every unit
    twice, each summary written over the other's; the second is refused at once, naming the live one."""
    from zstc.cli.verbosity import say
    from zstc.output import folder_lock
    from zstc.scale.planner import plan_sweep, run_sweep

    with folder_lock(out) as folder_made:
        plan = plan_sweep(template, names, out, on_event=_report)
        folder_made()
        say(
            f"{plan.units} units: {plan.units - len(plan.pending)} finished already, "
            f"{len(plan.pending)} to compute ({engine})"
        )
        return run_sweep(
            plan,
            engine=engine,
            address=address,
            gpus_per_model=gpus_per_model,
            cpus_per_model=cpus_per_model,
            max_retries=max_retries,
            on_event=_report,
        )
