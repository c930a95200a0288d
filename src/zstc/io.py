"""Read a user's files: texts, labelled texts and label descriptions (JSONL, CSV/TSV, Parquet, .txt, stdin).

Every malformed input raises :class:`zstc.errors.DataError` naming the file, the row and the reason.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from zstc.errors import DataError
from zstc.validation import check_labels

GROUPED_SUFFIXES: tuple[str, ...] = (".jsonl", ".csv", ".parquet")

Record = dict[str, Any]

def read_records(path: str | Path) -> Iterator[tuple[int, Record]]:
    """Yield ``(row_number, record)`` from a JSONL, CSV/TSV or Parquet file; row numbers are 1-based lines."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a file")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        yield from _read_jsonl(path)
    elif suffix in (".csv", ".tsv"):
        yield from _read_csv(path, delimiter="\t" if suffix == ".tsv" else ",")
    elif suffix == ".parquet":
        yield from _read_parquet(path)
    else:
        raise DataError(f"{path}: unsupported file type {suffix!r}; expected .jsonl, .csv, .tsv or .parquet")


def _read_jsonl(path: Path) -> Iterator[tuple[int, Record]]:
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(f"{path}:{line_number}: malformed JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise DataError(f"{path}:{line_number}: expected a JSON object, got {type(record).__name__}")
            yield line_number, record


def _read_csv(path: Path, delimiter: str) -> Iterator[tuple[int, Record]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        if reader.fieldnames is None:
            raise DataError(f"{path}: empty file, expected a header row")
        for record in reader:
            if None in record:  # more fields than the header has
                raise DataError(f"{path}:{reader.line_num}: more fields than the header's {len(reader.fieldnames)}")
            yield reader.line_num, record


def _read_parquet(path: Path) -> Iterator[tuple[int, Record]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{path}: reading Parquet needs pyarrow: pip install 'zstc[parquet]'") from None
    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises several types for corrupt files
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    row = 0
    # Batch by batch: a file of millions of rows is never held in memory at once.
    for batch in parquet.iter_batches(batch_size=4096):
        for record in batch.to_pylist():
            row += 1
            yield row, record


def check_output_path(path: str | Path, *, inputs: Iterable[str | Path] = (), option: str = "--out") -> Path:
    """Refuse an output path that would overwrite one of the ``inputs``, names a directory, or lies in a
    folder that does not exist; before any work is done, so a mistake costs nothing."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{option} {path}: is a directory, expected a file")
    if not path.parent.is_dir():
        raise DataError(f"{option} {path}: the folder {path.parent} does not exist")
    for source in inputs:
        if str(source) != "-" and Path(source).exists() and Path(source).resolve() == path.resolve():
            raise DataError(f"{option} {path}: is the input file; writing it would destroy the input")
    return path


def text_of(record: Record, where: str, column: str = "text") -> str:
    if column not in record:
        raise DataError(f"{where}: no {column!r} field (fields: {', '.join(map(str, record))})")
    text = record[column]
    if not isinstance(text, str):
        raise DataError(f"{where}: {column!r} is {type(text).__name__}, expected a string")
    if not text.strip():
        raise DataError(f"{where}: empty text")
    return text


def read_texts(source: str | Path, *, text_column: str = "text") -> list[str]:
    """Texts to classify: a JSONL/CSV/Parquet file with a text column, a .txt file, or ``-`` (stdin), one per line."""
    if str(source) == "-":
        return _plain_lines(sys.stdin, "<stdin>")
    path = Path(source)
    if path.suffix.lower() == ".txt":
        if not path.exists():
            raise DataError(f"{path}: no such file")
        with path.open(encoding="utf-8") as handle:
            return _plain_lines(handle, str(path))
    texts = [text_of(record, f"{path}:{row}", text_column) for row, record in read_records(path)]
    if not texts:
        raise DataError(f"{path}: no texts")
    return texts


def read_label_sets(path: str | Path, *, text_column: str = "text", label_column: str = "label") -> tuple[list[str], list[list[str]]]:
    """Labelled texts for fitting multi-label thresholds: each row's text and its labels. The label column
    holds one label name, ``"none"``, or (JSONL/Parquet) a list of label names."""
    texts: list[str] = []
    label_sets: list[list[str]] = []
    for row, record in read_records(path):
        where = f"{path}:{row}"
        texts.append(text_of(record, where, text_column))
        value = record.get(label_column)
        if isinstance(value, str) and value.strip():
            label_sets.append([value.strip()])
        elif isinstance(value, list) and all(isinstance(name, str) for name in value):
            label_sets.append([name.strip() for name in value])
        else:
            raise DataError(f"{where}: expected column {label_column!r} to hold a label, 'none' or a list of labels, found {value!r}")
    if not texts:
        raise DataError(f"{path}: no labelled texts")
    return texts, label_sets


def _plain_lines(lines: Iterable[str], source: str) -> list[str]:
    texts = [line.rstrip("\n") for line in lines]
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise DataError(f"{source}: no texts")
    return texts


def read_label_descriptions(path: str | Path) -> dict[str, str]:
    """Labels and their descriptions from a file.

    ``.json``: an object ``{label: description}`` or a list of labels; otherwise one label per line,
    optionally ``label<TAB>description``. A label without a description is described by its own name.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.suffix.lower() == ".json":
        try:
            content = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise DataError(f"{path}: malformed JSON ({error.msg}, line {error.lineno})") from None
        if isinstance(content, list):
            pairs = [(str(label), str(label)) for label in content]
        elif isinstance(content, dict):
            pairs = [(str(label), str(description)) for label, description in content.items()]
        else:
            raise DataError(f"{path}: expected a JSON object {{label: description}} or a list of labels")
    else:
        pairs = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            label, _, description = line.partition("\t")
            pairs.append((label.strip(), description.strip() or label.strip()))
    labels = check_labels([label for label, _ in pairs], what=f"labels in {path}")
    return dict(zip(labels, (description for _, description in pairs)))
