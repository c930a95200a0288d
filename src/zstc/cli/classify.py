"""``zstc classify``: label the user's own texts with the user's own labels."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from zstc.cli import app
from zstc.cli.options import DEFAULT, SCORER_PARAMETERS, Family, Model, ScorerOptions, with_scorer_options
from zstc.cli.options import Hypotheses, LabelThresholds, MultiLabel, Threshold


@app.command()
@with_scorer_options(*SCORER_PARAMETERS, "shortlist", precision="auto")
def classify(
    input: Annotated[str, typer.Argument(help="A .jsonl, .csv, .parquet or .txt file of texts, or '-' for stdin (one text per line).")],
    labels: Annotated[Optional[str], typer.Option("--labels", "-l", help="Comma-separated labels.")] = None,
    labels_file: Annotated[Optional[Path], typer.Option(help="Labels, one per line (label<TAB>description), or JSON {label: description}.")] = None,
    template: Annotated[Optional[str], typer.Option(help="Turns a label into its description, e.g. 'This text is about {}.'")] = None,
    text_column: Annotated[str, typer.Option(help="Column holding the text in CSV/JSONL/Parquet input.")] = "text",
    hypotheses: Hypotheses = "dataset",
    multi_label: MultiLabel = False,
    threshold: Threshold = None,
    label_threshold: LabelThresholds = None,
    fit_thresholds: Annotated[Optional[Path], typer.Option(help="Multi-label: fit the threshold on this labelled file (text plus label: one label, 'none', or a JSON list of labels) instead of using the default; --label-threshold still overrides it per label.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write JSONL here instead of stdout.")] = None,
    model: Model = DEFAULT,
    family: Family = None,
    *,
    scoring: ScorerOptions,
) -> None:
    """Print one JSON line per text: the predicted label (or, with --multi-label, every label that passes
    the threshold, or "none") and the score of every label."""
    from zstc.api import Classifier, label_hypotheses
    from zstc.errors import LabelError
    from zstc.io import read_label_descriptions, read_label_sets, read_texts
    from zstc.multilabel import parse_label_thresholds
    from zstc.validation import check_labels

    from zstc.io import check_output_path

    if out is not None:  # before anything is read or loaded: an output that is an input would destroy it
        check_output_path(out, inputs=[input, labels_file, fit_thresholds])
    if (labels is None) == (labels_file is None):
        raise LabelError("give the labels with exactly one of --labels or --labels-file")
    if labels is not None:
        names = check_labels(labels.split(",") if labels.strip() else [], allow_single=multi_label)
        given = names
    else:
        mapping = read_label_descriptions(labels_file)  # type: ignore[arg-type]  # set: exactly one of the two is given
        names, given = list(mapping), list(mapping.values())
    descriptions = label_hypotheses(names, hypotheses=hypotheses, template=template, descriptions=given)
    if (threshold is not None or label_threshold or fit_thresholds) and not multi_label:
        raise LabelError("--threshold, --label-threshold and --fit-thresholds apply to --multi-label classification")
    if threshold is not None and fit_thresholds:
        raise LabelError("give either --threshold or --fit-thresholds, not both")
    texts = read_texts(input, text_column=text_column)
    options = scoring.kwargs()
    classifier = Classifier(model, family=family, **options)
    notes: list[str] = []
    if multi_label:
        per_label = parse_label_thresholds(label_threshold or [], names)
        if fit_thresholds:
            dev_texts, dev_gold = read_label_sets(fit_thresholds, text_column=text_column)
            # One global cut: per-label cuts fitted on the few texts a user labels overfit them badly.
            threshold, _ = classifier.fit_thresholds(dev_texts, dev_gold, names, descriptions)
            print(f"note: threshold {threshold:.4g} fitted on {len(dev_texts)} texts of {fit_thresholds}", file=sys.stderr)
        predictions = classifier.predict_multi_label(texts, names, descriptions, threshold=threshold, per_label=per_label, notes=notes)
        rows = [{"text": p.text, "labels": p.labels, "scores": p.scores} for p in predictions]
    else:
        rows = [{"text": p.text, "label": p.label, "scores": p.scores} for p in classifier.predict(texts, names, descriptions, notes=notes)]
    for note in [*getattr(descriptions, "notes", []), *notes]:
        print(f"note: {note}", file=sys.stderr)
    handle = out.open("w", encoding="utf-8") if out else sys.stdout
    try:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if out:
            handle.close()
