"""Commands for Yin et al. (2019)'s setting: ``template-robustness``, ``calibrate`` and ``unseen``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from zstc.cli.root import app
from zstc.cli.verbosity import wrote
from zstc.cli.options import typer_option
from zstc.validation import OPTIONS, Interval
from zstc.cli.options import data_location
from zstc.cli.options import (
    BatchSize,
    Bf16,
    Device,
    EntailmentIndex,
    Family,
    Hypotheses,
    MaxLength,
    Model,
    Pooling,
    PrecisionFp32,
    PromptStyle,
    RecheckMargin,
    ScoreType,
    ScorerOptions,
    Template,
    TrustRemoteCode,
)
from zstc.validation import check_hypotheses_template


Data = Annotated[
    str, typer.Option(help="A directory of dataset files, 'hub' for btzsc/btzsc, or 'sample' (the packaged sample).")
]
Task = Annotated[str, typer.Option(help="One BTZSC dataset.")]
MaxSamples = Annotated[
    Optional[int], typer_option(OPTIONS["max_samples"].but(help="Use a stratified sample of at most N texts."))
]
CALIBRATION_SAMPLES = OPTIONS["max_samples"].but(
    constraint=Interval(3),
    help="Use a stratified sample of at most N texts; N >= 3 (2 to fit on, 1 to test on), and the part fitted on (--dev-fraction) needs at least 2 texts of 2 classes.",
)
"""calibrate's --max-samples: three texts at least, two to fit on (one fits nothing: the temperature runs to its
bound) and one to test on."""
CalibrationSamples = Annotated[Optional[int], typer_option(CALIBRATION_SAMPLES)]
Seed = Annotated[int, typer.Option(help="Seed of samples and splits.")]
Out = Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the report as JSON here.")]


def _scorer(model: str, family: str | None, scoring: ScorerOptions, **override: Any) -> Any:
    from zstc.scorers import make_scorer

    return make_scorer(model, family, **scoring.kwargs(**override))


def _load(task: str, data: str, max_samples: int | None, seed: int, unlabelled: str = "exclude") -> Any:
    from zstc.benchmark.data import load_btzsc_sample

    return load_btzsc_sample(task, data, max_samples=max_samples, seed=seed, unlabelled=unlabelled)[0]


def _check_before_work(
    task: str,
    out: Path | None,
    data: str,
    options: dict[str, Any],
    rules: dict[str, Any] | None = None,
    *,
    more_data: tuple[str, ...] = (),
) -> str:
    """Everything checkable without the model, before it loads: --task names one dataset (not a family), option
    ranges (``rules`` adds or narrows :data:`zstc.validation.OPTIONS`) and the --out path, which may not be
    any file in ``data`` or in the other data folders read (``more_data``: unseen's --train-data). Returns where
    ``data`` is (``sample`` named), said in one line."""
    from zstc.benchmark.catalog import data_directory, one_dataset
    from zstc.benchmark.data import data_folder_files
    from zstc.io import check_output_path
    from zstc.validation import OPTIONS, check_options

    one_dataset(task)
    check_options(options, {**OPTIONS, **(rules or {})})
    data = data_location(data)
    for folder in (data, *more_data):  # a missing folder is said as such
        if folder != "hub":
            data_directory(folder)
    if out is not None:
        check_output_path(out, inputs=data_folder_files(data, *more_data))
    return data


def _write(report: dict[str, Any], out: Path | None, scorer: Any) -> None:
    from zstc.runs.files import write_json

    # The scorer's facts (precision and device among them): the same numbers need the same settings.
    report.setdefault("scorer", scorer.describe())
    if out is not None:
        write_json(out, report)
        wrote(str(out))


@app.command("template-robustness")
def template_robustness(
    model: Model,
    data: Data,
    task: Task,
    template: Annotated[
        Optional[list[str]],
        typer.Option("--template", help="A template to try (repeatable); default: Yin's three and three common ones."),
    ] = None,
    hypotheses: Annotated[str, typer.Option(help="Label filler: 'name', 'definition' or 'both'.")] = "name",
    max_samples: MaxSamples = None,
    seed: Seed = 0,
    out: Out = None,
    family: Family = None,
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
    trust_remote_code: TrustRemoteCode = None,
) -> None:
    """Macro-F1 of one model on one dataset under several hypothesis templates.

    Best, worst, mean and spread over the templates."""
    scoring = ScorerOptions.of(locals(), "fp32")  # first: the scorer flags among the parameters
    from zstc.runs.identity import data_sha256
    from zstc.hypotheses.variants import ENSEMBLE_MEMBERS
    from zstc.validation import check_choice, check_distinct, check_template
    from zstc.yin.robustness import DEFAULT_ROBUSTNESS_TEMPLATES, template_robustness as measure

    for given in template or []:
        check_template(given, what="--template")
    if template:  # a template given twice would count twice in the mean and the standard deviation
        check_distinct(template, "template", parameter="template")
    check_choice("hypotheses", hypotheses, ENSEMBLE_MEMBERS)  # before the model loads: each template needs a filler
    data = _check_before_work(task, out, data, {"max_samples": max_samples, "seed": seed})
    scorer = _scorer(model, family, scoring)
    loaded = _load(task, data, max_samples, seed)
    report = measure(scorer, loaded, template or list(DEFAULT_ROBUSTNESS_TEMPLATES), variant=hypotheses)
    report = {
        "model": model,
        "scorer": scorer.describe(),
        "settings": {
            "task": task,
            "data": data,
            "data_sha256": data_sha256(loaded),
            "hypotheses": hypotheses,
            "max_samples": max_samples,
            "seed": seed,
        },
        **report,
    }
    table = Table(title=f"{model} on {task} ({len(loaded)} texts): macro-F1 by template")
    table.add_column("template")
    table.add_column("example hypothesis")
    table.add_column("macro-F1", justify="right")
    for row in sorted(report["templates"], key=lambda row: -row["macro_f1"]):
        table.add_row(row["template"], row["example"], f"{row['macro_f1']:.4f}")
    table.caption = (
        f"best {report['best']:.4f}  worst {report['worst']:.4f}  mean {report['mean']:.4f}  "
        f"spread {report['spread']:.4f}  std {report['std']:.4f}"
    )
    Console().print(table)
    _print_notes(report["notes"])
    _write(report, out, scorer)


def _print_notes(notes: list[str]) -> None:
    from zstc.cli.verbosity import note

    for message in notes:
        note(message)


@app.command()
def calibrate(
    model: Model,
    data: Data,
    task: Task,
    method: Annotated[
        str, typer.Option(help="'temperature' (single-label softmax) or 'platt' (per-label sigmoid).")
    ] = "temperature",
    dev_fraction: Annotated[
        float,
        typer_option(
            OPTIONS["dev_fraction"].but(
                help="Share of the texts (stratified) used to fit (at least 2 texts of 2 classes); the rest is the test set."
            )
        ),
    ] = 0.5,
    hypotheses: Hypotheses = "dataset",
    template: Template = None,
    max_samples: CalibrationSamples = None,
    seed: Seed = 0,
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out",
            "-o",
            help="Write the calibration file here (JSON: the fitted parameters, model and settings, ECE and Brier); `classify --calibration F` and `serve --calibration F` use it.",
        ),
    ] = None,
    family: Family = None,
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
    trust_remote_code: TrustRemoteCode = None,
) -> None:
    """Fit temperature or Platt scaling on a labelled dataset (a calibration file).

    Fits on a dev part of the dataset; ECE and Brier score before and after on the rest.

    The --out file is a calibration file: `classify --calibration F` uses its temperature for single-label
    probabilities (or its Platt scaling for multi-label ones)."""
    scoring = ScorerOptions.of(locals(), "fp32")  # first: the scorer flags among the parameters
    import numpy as np

    from zstc.probabilities import as_logits, calibration_record, score_scale
    from zstc.yin.calibration import calibrate as fit_and_report
    from zstc.hypotheses.variants import make_hypothesis_provider, score_hypotheses
    from zstc.policy import score_type_of
    from zstc.runs.identity import data_sha256
    from zstc.benchmark.tasks import stratified_sample
    from zstc.errors import DataError
    from zstc.validation import Choices, Option, check_template
    from zstc.probabilities import METHODS

    check_hypotheses_template(hypotheses, template)
    if template is not None:
        check_template(template, what="--template")
    OPTIONS["hypotheses"].check("hypotheses", hypotheses)
    data = _check_before_work(
        task,
        out,
        data,
        {"method": method, "max_samples": max_samples, "dev_fraction": dev_fraction, "seed": seed},
        {
            "method": Option(str, constraint=Choices(METHODS)),
            "max_samples": CALIBRATION_SAMPLES,
        },
    )
    loaded = _load(task, data, max_samples, seed)
    dev = stratified_sample(loaded, max(1, round(dev_fraction * len(loaded))), seed)
    test = loaded.subset(np.setdiff1d(np.arange(len(loaded)), _positions(loaded, dev)))
    if len(dev) == 0 or len(test) == 0:
        raise DataError(
            f"{task}: {len(loaded)} texts leave {len(dev)} to fit and {len(test)} to test on; calibration needs both"
        )
    # One text (or one class) fits nothing: the temperature ran to its bound of 100, silently.
    dev_classes = len(np.unique(dev.gold[dev.gold >= 0]))
    if len(dev) < 2 or dev_classes < 2:
        raise DataError(
            f"{task}: the dev part (--max-samples {max_samples}, --dev-fraction {dev_fraction:g}) has {len(dev)} "
            f"text(s) of {dev_classes} class(es); fitting needs at least 2 texts of 2 classes: raise "
            "--max-samples or --dev-fraction"
        )
    scorer = _scorer(model, family, scoring)
    descriptions = make_hypothesis_provider(hypotheses, template)(loaded)
    scores = score_hypotheses(scorer, [*dev.texts, *test.texts], descriptions)
    kind = score_type_of(scorer)
    if method == "temperature":  # fitted on the same logit view that classify's probabilities use
        scores = as_logits(scores, score_scale(scorer.family, kind))
    report = fit_and_report(scores[: len(dev)], dev.gold, scores[len(dev) :], test.gold, method=method, score_type=kind)
    report["notes"] = [*descriptions.notes, *report["notes"]]  # how the hypotheses were built, then the fit's
    report = calibration_record(
        report,
        model=model,
        family=scorer.family,
        score_type=kind,
        settings={
            "task": task,
            "data": data,
            "data_sha256": data_sha256(loaded),
            "dev_fraction": dev_fraction,
            "hypotheses": hypotheses,
            "template": template,
            "max_samples": max_samples,
            "seed": seed,
            "scorer": scorer.describe(),
        },
    )
    table = Table(
        title=f"{method} scaling of {model} on {task}: fitted on {report['n_dev']} texts, tested on {report['n_test']}"
    )
    for column in ("", "ECE", "Brier"):
        table.add_column(column, justify="right" if column else "left")
    for phase in ("before", "after"):
        table.add_row(phase, f"{report[phase]['ece']:.4f}", f"{report[phase]['brier']:.4f}")
    table.caption = ", ".join(f"{name} {value:.4g}" for name, value in report["parameters"].items())
    Console().print(table)
    _print_notes(report["notes"])
    _write(report, out, scorer)


def _positions(task: Any, part: Any) -> Any:
    """Positions in ``task`` of the texts of ``part`` (a sample of it), via their source rows."""
    import numpy as np

    return np.flatnonzero(np.isin(task.source_index, part.source_index))


@app.command()
def unseen(
    model: Model,
    data: Data,
    train_data: Annotated[
        str,
        typer.Option(
            help="Directory with the dataset's training split (e.g. ../shared/data/btzsc-train); not the test data, and not 'hub', which publishes only test splits."
        ),
    ],
    task: Task = "banking77",
    finetune: Annotated[
        bool,
        typer.Option(
            "--finetune/--no-finetune",
            help="Fine-tune an NLI model per label half (label-partially-unseen); without it only label-fully-unseen is evaluated.",
        ),
    ] = True,
    base_model: Annotated[
        Optional[str], typer.Option(help="Model the fine-tuning starts from; default: --model.")
    ] = None,
    alpha: Annotated[
        float,
        typer.Option(help="Harsh rule: a seen label beats an unseen one only by more than this probability margin."),
    ] = 0.05,
    negatives: Annotated[
        int,
        typer_option(
            OPTIONS["negatives"].but(help="Other seen labels paired with each training text as non-entailment.")
        ),
    ] = 4,
    max_steps: Annotated[Optional[int], typer.Option(help="Cap on fine-tuning steps per label half.")] = None,
    dev_size: Annotated[
        int, typer.Option(help="Balanced dev pairs held out from each half's training pairs (early stopping).")
    ] = 300,
    eval_fraction: Annotated[
        float,
        typer_option(
            OPTIONS["eval_fraction"].but(
                help="Evaluate on the dev pairs every this fraction of the fine-tuning steps; early stopping waits 10 evaluations."
            )
        ),
    ] = 0.05,
    work_dir: Annotated[Path, typer.Option(help="Training pairs and fine-tuned models go here.")] = Path("unseen-work"),
    hypotheses: Hypotheses = "dataset",
    template: Template = None,
    max_samples: MaxSamples = None,
    max_train_samples: Annotated[
        Optional[int],
        typer_option(OPTIONS["max_train_samples"].but(help="Use a stratified sample of at most N training texts.")),
    ] = None,
    seed: Seed = 0,
    out: Out = None,
    family: Family = None,
    *,
    pooling: Pooling = None,
    score_type: ScoreType = None,
    batch_size: BatchSize = None,
    precision: PrecisionFp32 = None,
    bf16: Bf16 = None,
    device: Device = None,
    max_length: MaxLength = None,
    trust_remote_code: TrustRemoteCode = None,
) -> None:
    """Yin et al.'s label-partially-unseen experiment: F1 of seen and unseen labels.

    Label-fully-unseen vs label-partially-unseen (Yin et al. 2019): F1 of the seen and the unseen half of the
    labels."""
    scoring = ScorerOptions.of(locals(), "fp32")  # first: the scorer flags among the parameters
    from zstc.benchmark.data import HUB_DATASET, data_folder_files, load_btzsc_task
    from zstc.runs.identity import data_sha256
    from zstc.benchmark.tasks import stratified_sample
    from zstc.cli.verbosity import say, show_progress
    from zstc.errors import OptionError
    from zstc.hypotheses.variants import VARIANTS, make_hypothesis_provider
    from zstc.io import check_output_dir
    from zstc.validation import check_choice, check_template
    from zstc.yin.unseen import (
        UnseenConfig,
        check_training_data,
        finetune_on_seen,
        finetune_precision,
        label_halves,
        run_unseen,
    )

    check_hypotheses_template(hypotheses, template)
    if template is not None:
        check_template(template, what="--template")
    # One hypothesis per label: the fine-tuning pairs hold one, so the ensemble (three averaged) is no choice here.
    check_choice("hypotheses", hypotheses, tuple(v for v in VARIANTS if v != "ensemble"))
    data = _check_before_work(
        task,
        out,
        data,
        {
            "alpha": alpha,
            "negatives": negatives,
            "max_steps": max_steps,
            "dev_size": dev_size,
            "eval_fraction": eval_fraction,
            "max_samples": max_samples,
            "max_train_samples": max_train_samples,
            "seed": seed,
        },
        more_data=(train_data,),
    )
    if train_data == "hub":
        raise OptionError(
            f"train_data hub: {HUB_DATASET} publishes only test splits, so the model would be fine-tuned on the "
            "texts it is tested on; give a folder with the dataset's training split (e.g. "
            "../shared/data/btzsc-train)",
            "train_data",
        )
    if finetune:  # its pairs files may not replace a file of --data or --train-data either
        check_output_dir(
            work_dir,
            option="--work-dir",
            inputs=data_folder_files(data, train_data),
            files=[split.pairs_file for split in label_halves(2)],
        )
    scorer = _scorer(model, family, scoring)  # checks the scorer options; the model loads when it first scores
    # The whole test and training sets before their samples: training data that is (or largely holds) the test data
    # is refused before the model loads.
    full_test, _ = load_btzsc_task(task, data, unlabelled="exclude")
    full_train, _ = load_btzsc_task(task, train_data, unlabelled="exclude")
    shared = check_training_data(full_test, full_train)
    if shared:
        _print_notes(
            [f"{shared} of the {len(full_test)} test texts are also in --train-data (whitespace and case ignored)"]
        )
    test = stratified_sample(full_test, max_samples, seed)
    train = stratified_sample(full_train, max_train_samples, seed)
    built = make_hypothesis_provider(hypotheses, template)(test)
    _print_notes(built.notes)  # before the scoring, as bench says them
    descriptions = list(built)
    config = UnseenConfig(alpha=alpha, negatives_per_text=negatives, seed=seed, work_dir=work_dir)
    runtime = {"device": scoring.get("device"), "precision": scoring.precision}  # where and at what precision it trains

    def finetuned(split: Any, pairs_path: Path) -> Any:
        folder = finetune_on_seen(
            pairs_path,
            base_model or model,
            work_dir / f"model-{pairs_path.stem}",
            seed=seed,
            max_steps=max_steps,
            dev_size=dev_size,
            eval_fraction=eval_fraction,
            **runtime,
            progress=show_progress(),
            log=say,
        )  # on stderr, and none of it under --quiet
        # Probabilities: the harsh rule's margin is a difference of entailment probabilities.
        return _scorer(folder, "nli", scoring, only=("batch_size", "device"), score_type="prob")

    report = run_unseen(test, train, descriptions, scorer, config, finetuned if finetune else None, log=say)
    report["model"] = model
    report["notes"] = built.notes
    # What else determines the numbers: the samples, the hypotheses, the data's content and the fine-tuning.
    report["settings"] = {
        "task": task,
        "data": data,
        "data_sha256": data_sha256(test),
        "train_data": train_data,
        "train_data_sha256": data_sha256(train),
        "test_texts_in_train_data": shared,
        "hypotheses": hypotheses,
        "template": template,
        "max_samples": max_samples,
        "max_train_samples": max_train_samples,
        "seed": seed,
        "finetune": finetune,
        **(
            {
                "base_model": base_model or model,
                "max_steps": max_steps,
                "dev_size": dev_size,
                "eval_fraction": eval_fraction,
                "finetune_precision": finetune_precision(runtime),
            }
            if finetune
            else {}
        ),
    }
    _print_unseen(report)
    _write(report, out, scorer)


def _print_unseen(report: dict[str, Any]) -> None:
    table = Table(title=f"{report['dataset']}: {report['n_test']} test texts, labels split in two halves")
    for column in (
        "setting",
        "split",
        "seen F1 (w)",
        "unseen F1 (w)",
        "seen F1 (macro)",
        "unseen F1 (macro)",
        "macro-F1",
        "seen share",
    ):
        table.add_column(column, justify="left" if column in ("setting", "split") else "right")
    for setting in ("fully_unseen", "partially_unseen"):
        if not report.get(setting):
            continue
        for row in [*report[setting]["splits"], {"split": "mean", **report[setting]["mean"]}]:
            table.add_row(
                setting.replace("_", "-"),
                row["split"],
                f"{row['seen_weighted_f1']:.4f}",
                f"{row['unseen_weighted_f1']:.4f}",
                f"{row['seen_macro_f1']:.4f}",
                f"{row['unseen_macro_f1']:.4f}",
                f"{row['macro_f1']:.4f}",
                f"{row['predicted_seen_share']:.3f}" if "predicted_seen_share" in row else "",
            )
    Console(width=140).print(table)
