"""``zstc train-nli``: train an NLI cross-encoder with the BTZSC paper's recipe (PROTOCOL.md section 5)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from zstc.cli.root import app
from zstc.cli.options import Bf16, PrecisionFp32, requested_precision, Device, MaxLength


@app.command("train-nli")
def train_nli(
    backbone: Annotated[str, typer.Option(help="Encoder to start from: hub id, registered name or local folder.")],
    data: Annotated[
        Path,
        typer.Option(
            help="Training pairs: JSONL/CSV/Parquet with premise, hypothesis, label (entailment|neutral|contradiction)."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Folder for the trained model (and its checkpoint while training).")
    ],
    variant: Annotated[
        str, typer.Option(help="'triplet' (3-way cross-entropy) or 'binary' (entailment vs not, BCE).")
    ] = "triplet",
    dev: Annotated[
        Optional[Path], typer.Option(help="Dev pairs; default: a balanced set held out from --data.")
    ] = None,
    dev_size: Annotated[int, typer.Option(help="Pairs in the balanced dev set.")] = 300,
    epochs: Annotated[float, typer.Option(help="Epochs (at most 3 in the paper); fractions allowed.")] = 3.0,
    max_steps: Annotated[
        Optional[int], typer.Option(help="Cap on optimizer steps; the schedule spans the capped run.")
    ] = None,
    max_minutes: Annotated[
        Optional[float], typer.Option(help="Wall-clock budget; when spent, training stops and saves the best weights.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for the dev hold-out, batch order and initialization.")] = 42,
    batch_size: Annotated[int, typer.Option(help="Pairs per step.")] = 32,
    backbone_lr: Annotated[
        Optional[float], typer.Option(help="Backbone learning rate; default by backbone size.")
    ] = None,
    head_lr: Annotated[Optional[float], typer.Option(help="Head learning rate; default by backbone size.")] = None,
    patience: Annotated[int, typer.Option(help="Stop after this many evaluations without a lower dev loss.")] = 10,
    eval_fraction: Annotated[float, typer.Option(help="Evaluate every this fraction of the steps.")] = 0.01,
    max_length: MaxLength = None,
    precision: PrecisionFp32 = None,
    bf16: Bf16 = None,
    device: Device = None,
    progress: Annotated[
        Optional[bool],
        typer.Option(
            "--progress/--no-progress", help="Show a progress bar; default: when stderr is a terminal, unless --quiet."
        ),
    ] = None,
) -> None:
    """Train an NLI cross-encoder; an interrupted run continues when the same command is run again."""
    from zstc.io import check_output_dir
    from zstc.models.registry import get_model_spec
    from zstc.validation import check_options

    # Before the backbone loads, a step is taken, or even the training libraries are imported (seconds):
    # a bad option or --out must not cost a training run.
    check_options(
        {
            "dev_size": dev_size,
            "epochs": epochs,
            "max_steps": max_steps,
            "max_minutes": max_minutes,
            "batch_size": batch_size,
            "backbone_lr": backbone_lr,
            "head_lr": head_lr,
            "patience": patience,
            "eval_fraction": eval_fraction,
            "max_length": max_length,
            "device": device,
            "seed": seed,
        }
    )
    check_output_dir(out, inputs=[data, dev])
    get_model_spec(backbone, family="encoder", parameter="backbone")  # an empty name, before the data is read
    from zstc.training import TrainConfig
    from zstc.training import train_nli as run_training

    config = TrainConfig(
        backbone=backbone,
        data=str(data),
        out=str(out),
        variant=variant,
        dev=str(dev) if dev else None,
        dev_size=dev_size,
        epochs=epochs,
        max_steps=max_steps,
        max_minutes=max_minutes,
        seed=seed,
        batch_size=batch_size,
        backbone_lr=backbone_lr,
        head_lr=head_lr,
        patience=patience,
        eval_fraction=eval_fraction,
        max_length=max_length,
        precision=requested_precision(precision, bf16, "fp32"),
        device=device,
    )
    from zstc.cli.verbosity import say, show_progress

    if progress is None:  # zstc's rule for its own bars: only on a terminal (a log file gets no bar)
        progress = show_progress()
    # --quiet keeps the saved model's line and an interruption's way to continue, not the progress lines.
    run_training(config, progress=progress, log=lambda line: typer.echo(line, err=True), progress_log=say)
