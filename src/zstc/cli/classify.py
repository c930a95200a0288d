"""``zstc classify``: label the user's own texts with the user's own labels.

The input is read, scored and written a chunk at a time (memory bounded by ``--chunk-size``, not by the
file); written to ``--out`` it is resumable after a kill (see :mod:`zstc.output`).
"""

from __future__ import annotations

import hashlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from zstc.cli.root import app
from zstc.cli.options import typer_option
from zstc.validation import OPTIONS
from zstc.errors import DataError
from zstc.io import TEXT_SUFFIXES, suffix_list, unsupported_type
from zstc.cli.options import (
    DEFAULT,
    BatchSize,
    Bf16,
    Device,
    EntailmentIndex,
    Family,
    MaxLength,
    Model,
    Pooling,
    PrecisionAuto,
    PromptStyle,
    RecheckMargin,
    Backend,
    TrustRemoteCode,
    ScoreType,
    ScorerOptions,
    Shortlist,
)
from zstc.cli.options import Hypotheses, LabelThresholds, MultiLabel, Threshold, split_labels
from zstc.cli.verbosity import note, wrote

if TYPE_CHECKING:
    from zstc.probabilities import Calibration


@app.command()
def classify(
    inputs: Annotated[
        list[str],
        typer.Argument(
            metavar="INPUT",
            help=f"A file of texts ({suffix_list(TEXT_SUFFIXES)}; .ndjson and .json are JSON Lines, .txt one text per line), or '-' for stdin (one text per line); with --engine ray, files or folders of .jsonl/.csv/.parquet.",
        ),
    ],
    labels: Annotated[
        Optional[str],
        typer.Option(
            "--labels",
            "-l",
            help="Comma-separated labels; double-quote one that holds a comma: '\"Food, drink\",Travel'.",
        ),
    ] = None,
    labels_file: Annotated[
        Optional[Path],
        typer.Option(
            help="Labels, one per line (label<TAB>description; every non-blank line is a label, a leading # included), or JSON {label: description}."
        ),
    ] = None,
    template: Annotated[
        Optional[str],
        typer.Option(
            help="Turns a label into its description, e.g. 'This text is about {}.'; default 'This is {}.' for label names (descriptions from --labels-file are used as written: refused with them; polarity labels positive/negative/neutral get five short opinions each, see docs/classify.md); '{}' uses the labels as they are (with --hypotheses name/definition/both/ensemble: the bare name, definition or both; their default is 'this text is about {}')."
        ),
    ] = None,
    text_column: Annotated[str, typer.Option(help="Column holding the text in CSV/JSONL/Parquet input.")] = "text",
    hypotheses: Hypotheses = "dataset",
    multi_label: MultiLabel = False,
    threshold: Threshold = None,
    label_threshold: LabelThresholds = None,
    fit_thresholds: Annotated[
        Optional[Path],
        typer.Option(
            help="Multi-label: fit the threshold on this labelled file (text plus label: one label, 'none', or a JSON list of labels) instead of using the default; --label-threshold still overrides it per label."
        ),
    ] = None,
    out: Annotated[
        Optional[Path],
        typer.Option(
            "--out",
            "-o",
            help="Write here instead of stdout (JSONL); the format follows the extension (.jsonl, .csv, .parquet). Resumable: run the same command again after an interrupt. A file already there is replaced when the run completes (said at the start).",
        ),
    ] = None,
    format_: Annotated[
        Optional[str], typer.Option("--format", help="jsonl, csv or parquet, whatever the --out extension says.")
    ] = None,
    chunk_size: Annotated[
        int,
        typer_option(
            OPTIONS["chunk_size"].but(
                help="Texts read, scored and written at a time; memory grows with this, not with the input."
            )
        ),
    ] = 1000,
    keep_columns: Annotated[
        str, typer.Option(help="Input columns copied into each output row: 'all', 'none' or a comma-separated list.")
    ] = "all",
    skip_empty: Annotated[
        bool,
        typer.Option(
            "--skip-empty",
            help="An empty text (blank, only whitespace or invisible characters, or null) gets a row with no label instead of stopping with an error; a row without the text column is still an error.",
        ),
    ] = False,
    engine: Annotated[
        str,
        typer.Option(
            help="'local' (this process) or 'ray' (a pool of Ray scorer actors; writes Parquet files into the --out folder)."
        ),
    ] = "local",
    address: Annotated[
        Optional[str], typer.Option(help="--engine ray: the Ray cluster to join (default: start a local one).")
    ] = None,
    actors: Annotated[
        int, typer_option(OPTIONS["actors"].but(help="--engine ray: scorer actors (each loads the model once)."))
    ] = 1,
    cpus_per_actor: Annotated[float, typer.Option(help="--engine ray: CPUs each scorer actor reserves.")] = 1.0,
    gpus_per_actor: Annotated[float, typer.Option(help="--engine ray: GPUs each scorer actor reserves.")] = 0.0,
    scores: Annotated[
        Optional[str],
        typer.Option(
            "--scores",
            help="'probs': probabilities (single-label: softmax over the labels at the family's measured temperature, or the --calibration file's); 'raw': the model's own scores. Default: probs for single-label, raw for multi-label (probs with a Platt --calibration).",
        ),
    ] = None,
    calibration: Annotated[
        Optional[Path],
        typer.Option(
            "--calibration",
            help="A file written by `zstc calibrate --out`: its temperature (or, multi-label, its Platt scaling) turns scores into probabilities.",
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait", help="When another zstc run is writing --out, wait for it to finish instead of stopping."
        ),
    ] = False,
    adapt: Annotated[
        str,
        typer.Option(
            help="Single-label: decide the texts as one corpus, correcting the model's bias toward some labels from the scores of the whole input (read twice: a file, not stdin): 'none' (each text alone), 'balance' (assumes the labels are about equally frequent in the input), 'centre', 'em' or 'em-map'; see docs/adaptation.md."
        ),
    ] = "none",
    adapt_sample: Annotated[
        Optional[int],
        typer_option(
            OPTIONS["adapt_sample"].but(
                help="--adapt: estimate from the first N texts of the input instead of all of them."
            )
        ),
    ] = None,
    model: Model = DEFAULT,
    family: Family = None,
    *,
    pooling: Pooling = None,
    score_type: ScoreType = None,
    entailment_index: EntailmentIndex = None,
    prompt_style: PromptStyle = None,
    batch_size: BatchSize = None,
    precision: PrecisionAuto = None,
    bf16: Bf16 = None,
    device: Device = None,
    max_length: MaxLength = None,
    recheck_margin: RecheckMargin = None,
    backend: Backend = None,
    trust_remote_code: TrustRemoteCode = None,
    shortlist: Shortlist = None,
) -> None:
    """Label your own texts with your own labels: one output row per input row.

    Each row has the input's columns, the predicted label (or, with --multi-label, every label that passes the
    threshold, or "none") and the score of every label. JSONL on stdout, or --out FILE (.jsonl, .csv, .parquet),
    written a chunk at a time and resumable after an interrupt."""
    scoring = ScorerOptions.of(locals(), "auto")  # first: the scorer flags among the parameters
    from zstc.api import Classifier, check_labels_read_apart, label_hypotheses
    from zstc.cli.verbosity import show_progress
    from zstc.defaults import DEFAULT_TEMPLATE
    from zstc.errors import LabelError
    from zstc.runs.identity import fingerprint, weights_identity
    from zstc.scorers.base import merge_batch_notes
    from zstc.errors import UnknownNameError
    from zstc.io import check_output_path, is_special_file, read_label_descriptions, read_label_sets, write_target
    from zstc.policy import check_multi_label_options, default_rule_applies, parse_label_thresholds
    from zstc.models.registry import get_model_spec
    from zstc.output import FORMATS, LABELLING_VERSION, ChunkLabeller, ResumableWriter, StdoutWriter, check_not_locked
    from zstc.output import companion_paths, output_format
    from zstc.models.families import get_family
    from zstc.scale.planner import ENGINES
    from zstc.validation import check_choice, check_distinct_descriptions, check_labels, check_options, is_blank

    if (labels is None) == (labels_file is None):
        raise LabelError("give the labels with exactly one of --labels or --labels-file")
    if labels is not None:
        names = check_labels(split_labels(labels) if not is_blank(labels) else [], allow_single=multi_label)
        given = names
    else:
        mapping = read_label_descriptions(labels_file, allow_single=multi_label)  # type: ignore[arg-type]  # set: exactly one of the two is given
        names, given = list(mapping), list(mapping.values())
    if template is None and given == names and hypotheses == "dataset":  # label names: the measured default template
        template = DEFAULT_TEMPLATE
    descriptions = label_hypotheses(
        names,
        hypotheses=hypotheses,
        template=None if template == "{}" and hypotheses == "dataset" else template,
        descriptions=given,
    )  # "{}" with Yin's variants: the bare filler, as in bench
    check_multi_label_options(
        multi_label, threshold=threshold, label_thresholds=label_threshold, fit_thresholds=fit_thresholds
    )
    if threshold is not None and fit_thresholds:
        raise LabelError("give either --threshold or --fit-thresholds, not both")
    options = scoring.kwargs(model=model, family=family)
    per_label = parse_label_thresholds(label_threshold or [], names) if multi_label else {}
    labeller = ChunkLabeller(
        names=names,
        descriptions=descriptions,
        text_column=text_column,
        keep_columns=_kept_columns(keep_columns),
        multi_label=multi_label,
        threshold=threshold,
        per_label=per_label,
        skip_empty=skip_empty,
        scores=scores,
    )
    check_choice("engine", engine, ENGINES)
    check_options({"chunk_size": chunk_size})
    _check_adapt(
        adapt,
        adapt_sample,
        multi_label=multi_label,
        shortlist=options.get("shortlist") is not None,
        engine=engine,
        inputs=inputs,
    )
    ray_only = {
        "--address": address is not None,
        "--actors": actors != 1,
        "--cpus-per-actor": cpus_per_actor != 1.0,
        "--gpus-per-actor": gpus_per_actor != 0.0,
    }
    if engine == "local" and any(ray_only.values()):  # said, not ignored: the user expected them to do something
        given = [flag for flag, is_given in ray_only.items() if is_given]
        raise LabelError(
            f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to --engine ray; this run uses --engine local"
        )
    if engine == "local" and len(inputs) > 1:
        raise DataError(f"one input at a time ({len(inputs)} given); --engine ray takes several files or folders")
    input = inputs[0]
    if out is not None and str(out) == "-":  # stdout, as for the input (it wrote a file named "-")
        out = None
    if engine == "ray":
        if out is None:
            raise DataError("--engine ray writes Parquet files into a folder: give --out FOLDER")
        if format_ is not None and format_.lower() != "parquet":  # said, not ignored
            raise DataError(f"--format {format_}: --engine ray writes Parquet files only; leave --format out")
        if out.suffix.lower() in FORMATS and not out.is_dir():  # out.jsonl would become a folder of that name
            raise DataError(
                f"--out {out}: --engine ray writes a folder of Parquet files (one per input), and this names "
                "a file: give a folder"
            )
        # Needs no model, so said before Ray starts: the actors would say it after the output folder exists.
        check_distinct_descriptions(names, descriptions)
        fmt, source = "parquet", None
    else:
        fmt = output_format(out, format_)
        if out is not None:
            # Before anything is read or loaded: an output that is an input would destroy it.
            check_output_path(
                out, inputs=[input, labels_file, fit_thresholds, calibration], beside=companion_paths(out)
            )
            if not is_special_file(out) and not wait:  # a live run on this output: said now, not after the model loads
                check_not_locked(write_target(out))
        source = _open_input(input, text_column)  # a missing or unreadable input fails here, before any model loads
        first = source.first()
        if first is not None:  # a misnamed --text-column or --keep-columns, or a text that is no string, too
            labeller.checked([first])
            labeller.kept(first[1])
    # The Ray engine loads the model in its actors; here only to fit a threshold.
    if engine == "ray" and calibration is not None:
        raise UnknownNameError("--calibration is not available with --engine ray yet: run classify --engine local")
    loaded_calibration = None
    if calibration is not None:
        # The embedding family's default multi-label rule is the one multi-label use of a temperature (its margin).
        margin_rule = (
            get_family(get_model_spec(model, family).family).relative_margin
            and not fit_thresholds
            and default_rule_applies(threshold, names, per_label)
        )  # a label without a cut of its own keeps the rule
        loaded_calibration = _calibration_for(
            calibration, multi_label=multi_label, scores=scores, margin_rule=margin_rule
        )
    classifier = (
        Classifier(model, family=family, template=None, calibration=loaded_calibration, **options)
        if engine == "local" or (multi_label and fit_thresholds)
        else None
    )
    for message in classifier.notes if classifier is not None else ():
        note(message)
    if (
        classifier is not None
    ):  # before any output is opened (a refused run leaves no partial file); Ray's actors check theirs
        check_distinct_descriptions(names, descriptions)
        check_labels_read_apart(classifier.scorer, names, descriptions)
        if multi_label:  # on probabilities (a Platt file's, or the model's own) a cut lies in [0, 1]
            classifier.policy.check_thresholds(threshold, per_label, per_label_parameter="label_thresholds")
    # Estimated from the whole input (or its first --adapt-sample texts) before any row is written; on Ray by the actors.
    if adapt != "none" and engine == "local":
        labeller.adaptation = _adaptation(source, labeller, classifier, chunk_size, adapt, adapt_sample)  # type: ignore[arg-type]  # local engine
    if multi_label and fit_thresholds:
        dev_texts, dev_gold = read_label_sets(fit_thresholds, text_column=text_column, labels=names)
        # One global cut: per-label cuts fitted on the few texts a user labels overfit them badly.
        labeller.threshold, _ = classifier.fit_thresholds(dev_texts, dev_gold, names, descriptions)  # type: ignore[union-attr]  # built when fitting
        note(f"threshold {labeller.threshold:.4g} fitted on {len(dev_texts)} texts of {fit_thresholds}")
    spec = get_model_spec(model, family)
    versions = {"scoring": get_family(spec.family).scoring_version, "labelling": LABELLING_VERSION}
    # The calibration by what it holds, not where: its fitted parameters turn scores into the probabilities written.
    calibrated = (
        None
        if loaded_calibration is None
        else {"method": loaded_calibration.method, "parameters": loaded_calibration.parameters}
    )
    # The weights by their content (hub revision, or a local folder's hash), the --shortlist model's too: a folder
    # retrained in place keeps its name. Only a run that can resume needs them (a folder is hashed once, then its files' hashes are cached).
    resumable = out is not None and not is_special_file(out)
    weights = weights_identity(spec, options.get("shortlist")) if resumable else {"model_revision": None}
    # The chunk size stays in the settings, as the batch size does: both decide which texts share a forward pass,
    # and with them the padding and the kernels' summation order, so written digits (docs/precision.md), and a
    # resumed file is to be byte-equal to an uninterrupted one.
    common = {"format": fmt, "chunk_size": chunk_size, "versions": versions, "calibration": calibrated, **weights}
    if engine == "ray":
        from zstc.scale.ray_classify import classify_with_ray

        assert out is not None  # --engine ray without --out is refused above
        # Each input's adaptation is estimated in the actors from that input's scores: its method (and sample) name it,
        # as the input's sha256 and these settings determine its offsets.
        adapting = {"adapt": {"method": adapt, "sample": adapt_sample}} if adapt != "none" else {}
        settings = fingerprint(
            {
                "model": model,
                "family": family,
                "options": options,
                "labeller": _describe(labeller),
                **adapting,
                **common,
            }
        )
        written = classify_with_ray(
            inputs,
            out,
            labeller,
            model=model,
            family=family,
            options=options,
            settings=settings,
            chunk_size=chunk_size,
            address=address,
            actors=actors,
            cpus_per_actor=cpus_per_actor,
            gpus_per_actor=gpus_per_actor,
            on_note=note,
            notes=getattr(descriptions, "notes", []),
            adapt=adapt,
            adapt_sample=adapt_sample,
        )
        wrote(f"{written} predictions to {out}")  # what it wrote is a result: --quiet keeps it, as bench's
        return
    if out is None:
        writer: Any = StdoutWriter(fmt, sys.stdout)
    elif is_special_file(out):  # /dev/stdout, a FIFO: written as a stream, never replaced by a file renamed over it
        writer = StdoutWriter(fmt, _open_stream(out), name=str(out))
    else:
        identity = _identity(source.sha256, classifier, labeller, spec, options, common)  # type: ignore[union-attr]  # local engine: opened
        writer = ResumableWriter(write_target(out), fmt, identity, on_note=note, wait=wait)
    try:
        written, scorer_notes = _run_chunks(source, writer, labeller, classifier, chunk_size)  # type: ignore[arg-type]  # local engine: opened
    finally:
        writer.close()  # the output's lock, if it holds one (its partial state stays, to resume)
    notes = [*getattr(descriptions, "notes", []), *merge_batch_notes(scorer_notes)]
    for message in notes:
        note(message)
    # The file written is a result, which --quiet keeps (as bench and export keep theirs); a pipeline reading stdout
    # gets only the records (show_progress: a terminal, and not --quiet).
    if out is not None or show_progress():
        wrote(f"{written} predictions to {out if out is not None else 'stdout'}")


def _identity(
    input_sha256: str | None, classifier: Any, labeller: Any, spec: Any, options: dict[str, Any], common: dict[str, Any]
) -> dict[str, Any]:
    """What a resumed run must share with the interrupted one (see :class:`zstc.output.ResumableWriter`): the input
    and a fingerprint of the settings as they take effect, not as they were spelled. The model by its registry id
    (``all-MiniLM-L6-v2`` is ``sentence-transformers/all-MiniLM-L6-v2``), its family as resolved, every option of
    the family with its default filled in, each as the scorer resolved it (a cross-encoder's batch size by device,
    a yes/no judge's instruction), and the decision rule as the classifier applies it: ``--batch-size 64`` where 64
    is the default, ``--device cpu`` where the default is the CPU, ``--scores probs`` in single-label, a
    ``--threshold`` equal to the default cut (outside the embedding family, whose default also asks for a margin)
    are the same run, and resume. The precision and the device as resolved on this machine (never "auto") are
    readable in the marker too: a resume where auto means the other precision, or another device (a GPU that was
    busy or hidden, another GPU model), starts over instead of mixing rows whose numbers differ."""
    from zstc.runs.identity import fingerprint
    from zstc.scorers.cascade import CascadeScorer

    scorer = classifier.scorer
    # The model's options as its scorer resolved them (precision "auto" as chosen here, ...): a cascade's are its main
    # scorer's; a plugin family's scorer may keep none, and then they are the options as given.
    main = scorer.main if isinstance(scorer, CascadeScorer) else scorer
    given = getattr(main, "options", None)
    resolved = (
        {name: getattr(main, name, value) for name, value in given.items()}
        if isinstance(given, dict)
        else dict(options)
    )
    device = _device(scorer)
    if device is not None:
        resolved["device"] = device
    resolved["shortlist"] = options.get("shortlist")  # already canonical (scorer_options), not a family option
    described = _describe(labeller)
    if labeller.multi_label:  # as Classifier.predict_multi_label decides
        described["scores"] = labeller.scores or ("probs" if classifier.platt() is not None else "raw")
        described["margin"] = classifier.policy.multi_label(
            labeller.names, labeller.threshold, labeller.per_label
        ).margin
        described["threshold"] = classifier.default_threshold() if labeller.threshold is None else labeller.threshold
    else:
        described["scores"] = labeller.scores or "probs"
    settings = fingerprint(
        {"model": spec.model_id, "family": spec.family, "options": resolved, "labeller": described, **common}
    )
    return {
        "input_sha256": input_sha256,
        "settings": settings,
        "precision": resolved.get("precision", options.get("precision")),
        "device": device,
    }


def _check_adapt(
    adapt: str, sample: int | None, *, multi_label: bool, shortlist: bool, engine: str, inputs: list[str]
) -> None:
    """Refuse what ``--adapt`` cannot do, before anything is read or loaded: multi-label, an input read once (stdin, a
    FIFO: the estimate reads the input before its rows are decided; the Ray engine reads files only),
    ``--adapt-sample`` alone."""
    from zstc.adapt import check_adapt_options
    from zstc.errors import OptionError

    check_adapt_options(adapt, multi_label=multi_label, shortlist=shortlist)
    if adapt == "none":
        if sample is not None:
            raise OptionError(
                "--adapt-sample applies to --adapt: give a method, or leave --adapt-sample out", "adapt_sample"
            )
        return
    if engine == "local" and (inputs[0] == "-" or not Path(inputs[0]).is_file()):
        raise OptionError(
            f"--adapt {adapt} reads the input twice (the estimate, then the decisions): give a file, not "
            f"{'stdin' if inputs[0] == '-' else inputs[0]}",
            "adapt",
        )


def _adaptation(
    source: _Input, labeller: Any, classifier: Any, chunk_size: int, method: str, sample: int | None
) -> Any:
    """``method``'s adaptation estimated from the scores of the input's texts (its first ``sample`` ones), scored a
    chunk at a time as the decisions will be."""
    matrices, seen = [], 0
    rows = source.rows()
    while (sample is None or seen < sample) and (chunk := list(itertools.islice(rows, chunk_size))):
        matrices.append(labeller.sample_scores(classifier, chunk, None if sample is None else sample - seen))
        seen += len(matrices[-1])
    adaptation = labeller.adaptation_of(classifier, matrices, method, "the input")
    note(labeller.adaptation_note(adaptation))
    return adaptation


def _device(scorer: Any) -> str | None:
    """The device ``scorer`` computes on, by its kind (:func:`zstc.scorers.runtime.device_kind`); None for a scorer
    that names none (a plugin family's without torch)."""
    import torch

    from zstc.scorers.runtime import device_kind

    device = getattr(scorer, "device", None)
    return device_kind(device) if isinstance(device, torch.device) else None if device is None else str(device)


def _open_stream(path: Path) -> Any:
    from zstc.io import write_failed

    try:
        return path.open("w", encoding="utf-8")
    except OSError as error:
        raise write_failed(path, error) from None


def _calibration_for(path: Path, *, multi_label: bool, scores: str | None, margin_rule: bool) -> Calibration:
    """The calibration file, refused where this run would not use it (said, not ignored): a temperature sets
    single-label probabilities (and the margin of the embedding family's default multi-label rule,
    ``margin_rule``), a Platt calibration multi-label probabilities; neither changes a single-label
    ``--scores raw``."""
    from zstc.errors import OptionError
    from zstc.probabilities import load_calibration

    calibration = load_calibration(path)
    if multi_label and calibration.method != "platt" and not margin_rule:
        raise OptionError(
            f"--calibration {path} is a {calibration.method} calibration, for single-label probabilities "
            "(in --multi-label it sets only the embedding family's default margin, not used here); "
            "--multi-label needs a Platt calibration (zstc calibrate --method platt)"
        )
    if not multi_label and calibration.method != "temperature":
        raise OptionError(
            f"--calibration {path} is a {calibration.method} calibration, for --multi-label; "
            "single-label probabilities need a temperature (zstc calibrate --method temperature)"
        )
    if not multi_label and scores == "raw":
        raise OptionError(
            "--calibration changes single-label probabilities only, and --scores raw writes the model's "
            "own scores: drop one of them"
        )
    return calibration


def _kept_columns(value: str) -> list[str] | None:
    if value.strip().lower() == "all":
        return None
    if value.strip().lower() == "none":
        return []
    return [name.strip() for name in value.split(",") if name.strip()]


def _describe(labeller: Any) -> dict[str, Any]:
    """Everything about the labelling that changes an output row (the fingerprint's input)."""
    from dataclasses import fields

    described = {
        f.name: getattr(labeller, f.name) for f in fields(labeller) if f.name not in ("descriptions", "adaptation")
    }
    if labeller.adaptation is not None:  # absent without --adapt: the settings of earlier runs stay theirs
        described["adaptation"] = labeller.adaptation.record()
    described["descriptions"] = [str(d) for d in labeller.descriptions]
    described["description_variants"] = getattr(labeller.descriptions, "variants", None)
    return described


_STREAM_SUFFIXES = ("", *(suffix for suffix in TEXT_SUFFIXES if suffix != ".parquet"))  # not .parquet: its reader seeks
"""What a streamed input (a FIFO, /dev/stdin) may be named: no suffix is text, one per line, as stdin is."""


class _Input:
    """The input's rows as ``(where, record)``, its sha256 (None for stdin and other streams) and, when cheap,
    its row count."""

    def __init__(self, source: str, text_column: str) -> None:
        self.source, self.text_column = source, text_column
        self.sha256: str | None = None
        self.total: int | None = None
        if source == "-":
            return
        path = Path(source)
        if not path.exists():
            raise DataError(f"{path}: no such file")
        if path.is_dir():
            raise DataError(f"{path}: is a directory, expected a file")
        if (
            not path.is_file()
        ):  # a FIFO, /dev/stdin, <(cmd): its rows can be read once only, as they stream (like stdin's)
            if path.suffix.lower() not in _STREAM_SUFFIXES:  # refused now, not after the model loads
                raise DataError(
                    f"{path}: unsupported type {path.suffix.lower()!r} for a stream; expected {suffix_list(_STREAM_SUFFIXES[1:])} "
                    "(Parquet needs a file), or no suffix: text, one per line"
                )
            return
        if path.suffix.lower() not in TEXT_SUFFIXES:  # refused now, not after the model loads
            raise unsupported_type(path, TEXT_SUFFIXES)
        digest, lines = hashlib.sha256(), 0
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
                lines += block.count(b"\n")
        self.sha256 = digest.hexdigest()
        suffix = path.suffix.lower()
        if suffix in (".txt", ".jsonl", ".ndjson"):
            self.total = lines
        elif suffix == ".parquet":
            try:
                import pyarrow.parquet as pq

                self.total = pq.ParquetFile(path).metadata.num_rows
            except Exception:  # an unreadable file is reported when it is read
                self.total = None
        # Malformed input, unsupported types and empty files fail now, not after the model loads. A readable Parquet
        # file's footer counts its rows exactly: reading its first row converted a whole batch (up to 4,096 rows, every
        # column: ~2 ms per 1,000 rows), which the run then converted again.
        counted = self.total if suffix == ".parquet" else None
        if counted == 0 or (counted is None and next(iter(self.rows()), None) is None):
            raise DataError(f"{path}: no texts")

    def first(self) -> tuple[str, dict[str, Any]] | None:
        """The first row, read on its own (a Parquet file converts that row, not a batch); None for stdin and other
        streams, whose rows can be read once only, and for an empty file."""
        if self.sha256 is None:
            return None
        if Path(self.source).suffix.lower() == ".parquet":
            from zstc.io import read_records

            return next(
                ((f"{self.source}:{row}", record) for row, record in read_records(self.source, parquet_batch=1)), None
            )
        return next(iter(self.rows()), None)

    def rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        # Text, one per line: stdin, a .txt file, and a stream with no suffix (/dev/stdin, <(cmd)) as stdin is.
        if (
            self.source == "-"
            or Path(self.source).suffix.lower() == ".txt"
            or (Path(self.source).suffix == "" and self.sha256 is None)
        ):
            return self._lines()
        from zstc.io import read_records

        return ((f"{self.source}:{row}", record) for row, record in read_records(self.source))

    def _lines(self) -> Iterator[tuple[str, dict[str, Any]]]:
        # Every line is a row: a blank line is an empty text (an error, or a row without label under --skip-empty).
        # Bytes decoded by zstc.io.utf8_lines: a BOM is dropped, anything not UTF-8 is an error naming its offset.
        from zstc.io import utf8_lines

        if self.source == "-":
            stdin = getattr(sys.stdin, "buffer", None)
            lines = utf8_lines(stdin, "<stdin>") if stdin is not None else sys.stdin
            for number, line in enumerate(lines, start=1):
                yield f"<stdin>:{number}", {self.text_column: line.rstrip("\r\n")}
            return
        with open(self.source, "rb") as handle:
            for number, line in enumerate(utf8_lines(handle, self.source), start=1):
                yield f"{self.source}:{number}", {self.text_column: line.rstrip("\r\n")}


def _open_input(source: str, text_column: str) -> _Input:
    return _Input(source, text_column)


def _resume_stream(
    rows: Iterator[tuple[str, dict[str, Any]]], writer: Any, chunk_size: int, source: str
) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """Resume from an input read once (stdin, a FIFO), which has no checksum to compare: read again the chunks
    the interrupted run finished, keep the predictions of those whose rows are unchanged (their digests) and
    cut the output back to them. Returns the first chunk not kept (to be scored) and the rows kept."""
    from zstc.output import input_digest

    recorded, kept = writer.chunk_inputs, 0
    chunk = list(itertools.islice(rows, chunk_size))
    while kept < len(recorded) and chunk and input_digest(record for _, record in chunk) == recorded[kept]:
        kept += 1
        chunk = list(itertools.islice(rows, chunk_size))
    finished = writer.resumed_rows
    writer.keep(kept)
    if writer.resumed_rows < finished:
        name = "<stdin>" if source == "-" else source
        note(
            f"{name} is not the interrupted run's input from row {writer.resumed_rows + 1} on: "
            f"{writer.resumed_rows} of its {finished} predictions are kept, the rest are made again"
        )
    return chunk, writer.resumed_rows


def _run_chunks(
    source: _Input, writer: Any, labeller: Any, classifier: Any, chunk_size: int
) -> tuple[int, list[list[str]]]:
    """Score and write ``source`` a chunk at a time after the rows ``writer`` already holds; returns the row
    count and the scorer's notes of each chunk."""
    from tqdm.auto import tqdm

    from zstc.output import input_digest

    rows = source.rows()
    done = writer.resumed_rows
    pending: list[tuple[str, dict[str, Any]]] = []
    if done and source.sha256 is not None:  # the same file (its checksum is the marker's)
        for _ in itertools.islice(rows, done):  # rows a previous run finished: read past, never re-scored
            pass
    elif done:
        pending, done = _resume_stream(rows, writer, chunk_size, source.source)
    progress = tqdm(
        total=source.total,
        initial=done,
        unit=" texts",
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        dynamic_ncols=True,
        desc="classify",
    )
    notes: list[list[str]] = []
    with progress:
        while chunk := pending or list(itertools.islice(rows, chunk_size)):
            pending, chunk_notes = [], list[str]()
            # A file is checked whole by its sha256 on resume; only a stream's chunks need their own digests.
            digest = input_digest(record for _, record in chunk) if source.sha256 is None else None
            writer.write_chunk(
                labeller.rows(classifier, chunk, chunk_notes, getattr(writer, "check_chunk", None)), digest
            )
            notes.append(chunk_notes)
            done += len(chunk)
            progress.update(len(chunk))
    if done == 0:  # a stream with no rows (a file without any is refused before the writer is made)
        writer.discard()
        raise DataError(f"{source.source if source.source != '-' else '<stdin>'}: no texts")
    writer.finish()
    return done, notes
