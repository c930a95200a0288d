"""``zstc classify``: label the user's own texts with the user's own labels."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from zstc.cli import app
from zstc.cli.options import DEFAULT, BatchSize, Bf16, Device, EntailmentIndex, Family, MaxLength, Model, Pooling, ScoreType, scorer_options


@app.command()
def classify(
    input: Annotated[str, typer.Argument(help="A .jsonl, .csv, .parquet or .txt file of texts, or '-' for stdin (one text per line).")],
    labels: Annotated[Optional[str], typer.Option("--labels", "-l", help="Comma-separated labels.")] = None,
    labels_file: Annotated[Optional[Path], typer.Option(help="Labels, one per line (label<TAB>description), or JSON {label: description}.")] = None,
    template: Annotated[Optional[str], typer.Option(help="Turns a label into its description, e.g. 'This text is about {}.'")] = None,
    text_column: Annotated[str, typer.Option(help="Column holding the text in CSV/JSONL/Parquet input.")] = "text",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write JSONL here instead of stdout.")] = None,
    model: Model = DEFAULT,
    family: Family = None,
    pooling: Pooling = None,
    score_type: ScoreType = None,
    entailment_index: EntailmentIndex = None,
    batch_size: BatchSize = None,
    bf16: Bf16 = None,
    device: Device = None,
    max_length: MaxLength = None,
) -> None:
    """Print one JSON line per text: the predicted label and the score of every label."""
    from zstc.api import Classifier, describe_labels
    from zstc.errors import LabelError
    from zstc.loaders import read_label_descriptions, read_texts
    from zstc.validation import check_labels

    if (labels is None) == (labels_file is None):
        raise LabelError("give the labels with exactly one of --labels or --labels-file")
    if labels is not None:
        names = check_labels(labels.split(",") if labels.strip() else [])
        descriptions = describe_labels(names, template)
    else:
        mapping = read_label_descriptions(labels_file)
        names = list(mapping)
        descriptions = describe_labels(list(mapping.values()), template)
    texts = read_texts(input, text_column=text_column)
    options = scorer_options(pooling=pooling, score_type=score_type, entailment_index=entailment_index, batch_size=batch_size, bf16=bf16, device=device, max_length=max_length)
    classifier = Classifier(model, family=family, **options)
    predictions = classifier.predict(texts, names, descriptions)
    for note in getattr(classifier.scorer, "notes", []):
        print(f"note: {note}", file=sys.stderr)
    handle = out.open("w", encoding="utf-8") if out else sys.stdout
    try:
        for p in predictions:
            handle.write(json.dumps({"text": p.text, "label": p.label, "scores": p.scores}, ensure_ascii=False) + "\n")
    finally:
        if out:
            handle.close()
