"""The result store: per-dataset results written as each dataset finishes, and the run summary.

``--out results.json`` produces

* ``results.json``: the run summary in the public leaderboard schema 1.0 (``schema_version``, ``model``,
  ``evaluation``, ``results.overall``, ``results.by_task``, ``results.by_dataset``), plus zstc's extras;
* ``results.details/<dataset>.json``: metrics, notes, hypotheses, timing and the settings fingerprint;
* ``results.details/<dataset>.npz``: the score matrix, gold labels, predictions and source rows per text.

A dataset's files are written atomically the moment it finishes, so an interrupted run loses nothing it
finished, and re-running the same command only computes what is missing (a changed setting changes the
fingerprint, so stale parts are never reused).
"""

from __future__ import annotations

import math
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from zstc.benchmark.metrics import METRICS, dataset_metrics
from zstc.benchmark.records import SCHEMA_VERSION, DatasetResult, RunSummary, first_problem, percentile
from zstc.adapt import corpus_decisions
from zstc.errors import DataError
from zstc.io import atomic_write, read_json, remove_orphan_temps
from zstc.runs.files import write_json

__all__ = [
    "SCHEMA_VERSION",
    "DamagedResult",
    "DatasetResult",
    "ResultStore",
    "RunSummary",
    "load_summary",
    "percentile",
    "save_summary",
]


class ResultStore:
    """Per-dataset results of one run, in ``<out stem>.details/`` beside the summary file."""

    def __init__(self, summary_path: str | Path) -> None:
        self.summary_path = Path(summary_path)
        self.directory = self.summary_path.with_name(self.summary_path.stem + ".details")

    def _paths(self, dataset: str) -> tuple[Path, Path]:
        return self.directory / f"{dataset}.json", self.directory / f"{dataset}.npz"

    def save(self, result: DatasetResult) -> None:
        """Write one dataset's result (``<dataset>.json`` and its arrays' ``.npz``), each file atomically."""
        json_path, npz_path = self._paths(result.dataset)
        self.directory.mkdir(exist_ok=True)
        arrays = result.arrays()
        with atomic_write(npz_path, "wb") as handle:
            np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]  # numpy types **kwds as bool
        write_json(
            json_path, DatasetResult.model_validate(result.record()).record()
        )  # written last: its presence marks the dataset as finished

    def remove_orphans(self) -> list[Path]:
        """Temporary files left by a bench that was killed while writing (see :func:`zstc.io.remove_orphan_temps`)."""
        return [*remove_orphan_temps(self.directory), *remove_orphan_temps(self.summary_path.absolute().parent)]

    def load(self, dataset: str, *, with_arrays: bool = True) -> DatasetResult | None:
        """A stored dataset result; None when it was never finished. A damaged one (truncated, garbage,
        failed checksum, wrong fields) raises :class:`DamagedResult` naming the file: never half-used."""
        json_path, npz_path = self._paths(dataset)
        if not json_path.exists():
            return None
        try:
            record = read_json(json_path)
        except DataError as error:
            raise DamagedResult(json_path, str(error).removeprefix(f"{json_path}: ")) from None
        metrics = record.get("metrics") if isinstance(record, dict) else None
        bad = [
            name
            for name, value in (metrics.items() if isinstance(metrics, dict) else [])
            if isinstance(value, bool) or not isinstance(value, (int, float))
        ]
        if not isinstance(metrics, dict) or bad:
            raise DamagedResult(json_path, f"metric {bad[0] if bad else 'metrics'} is not a number")
        try:
            result = DatasetResult.model_validate(record)
        except ValidationError as error:
            raise DamagedResult(json_path, f"not a zstc dataset result: {first_problem(error)}") from None
        if with_arrays and npz_path.exists():
            try:
                with np.load(npz_path, allow_pickle=False) as arrays:
                    for name in DatasetResult.ARRAYS:
                        if name in arrays:
                            setattr(result, name, arrays[name])
            except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as error:
                # zero bytes: EOFError; garbage or cut short: BadZipFile/ValueError; bit flips: zlib.error or a CRC BadZipFile
                raise DamagedResult(npz_path, type(error).__name__) from None
            _check_arrays(result, json_path, npz_path)
        return result

    def stored(self) -> list[DatasetResult]:
        """Every readable dataset result in the details folder (without their arrays)."""
        if not self.directory.is_dir():
            return []
        found = []
        for path in sorted(self.directory.glob("*.json")):
            try:
                result = self.load(path.stem, with_arrays=False)
            except DamagedResult:
                continue  # reported and recomputed when its dataset's turn comes
            if result is not None:
                found.append(result)
        return found

    def remove(self, dataset: str) -> None:
        """Delete one dataset's stored result, if any."""
        for path in self._paths(dataset):
            path.unlink(missing_ok=True)

    def finished(self, dataset: str, expected_fingerprint: str) -> DatasetResult | None:
        """The stored result of ``dataset`` if it was made under ``expected_fingerprint`` and has its scores, else None."""
        result = self.load(dataset)
        if result is None or result.fingerprint != expected_fingerprint or result.scores is None:
            return None
        return result


def _check_arrays(result: DatasetResult, json_path: Path, npz_path: Path) -> None:
    """The stored predictions must be the argmax of the stored scores (what bench decides; the first label on
    ties), and the recorded metrics those of the stored gold labels and predictions: an edited score matrix
    (which the multi-label, calibration and cascade reports read) or an edited number in the JSON was otherwise
    reused on resume and reported as if computed."""
    if result.gold is None or result.predicted is None:
        return
    if result.scores is not None:
        if result.scores.ndim != 2 or result.scores.shape[0] != len(result.predicted) or result.scores.shape[1] == 0:
            raise DamagedResult(
                npz_path, f"its scores have shape {result.scores.shape}, not ({len(result.predicted)}, labels)"
            )
        adapt = ((result.identity or {}).get("run") or {}).get("adapt", "none")  # bench --adapt: decided as one corpus
        differ = np.flatnonzero(corpus_decisions(result.scores, adapt, result.scorer or {}) != result.predicted)
        if len(differ):
            how = "the argmax of its scores" if adapt == "none" else f"its scores' decisions adapted by {adapt}"
            raise DamagedResult(
                npz_path,
                f"its predictions are not {how} ({len(differ)} of "
                f"{len(result.predicted)} texts, the first at row {differ[0]})",
            )
    recomputed = dataset_metrics(result.gold, result.predicted)
    for metric in METRICS:
        recorded = result.metrics.get(metric)
        if recorded is not None and not math.isclose(recorded, recomputed[metric], rel_tol=0, abs_tol=1e-9):
            raise DamagedResult(
                json_path, f"its {metric} {recorded} is not that of its stored predictions ({recomputed[metric]})"
            )


class DamagedResult(DataError):
    """A stored result file that cannot be read whole; ``path`` names it (bench recomputes it, report stops)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: damaged result file ({reason}); delete it, or run the bench again to recompute it")
        self.path = path
        self.reason = reason


def load_summary(path: str | Path) -> dict[str, Any]:
    """A ``zstc bench`` summary, checked enough that every reader can trust its shape: per-dataset rows of
    numbers. Anything else is a :class:`DataError` naming the file and the field."""
    path = Path(path)
    content = read_json(path)
    if not isinstance(content, dict) or not isinstance(content.get("results"), dict):
        raise DataError(f"{path}: not a zstc result file (no 'results')")
    by_dataset = content["results"].get("by_dataset", {})
    if not isinstance(by_dataset, dict):
        raise DataError(f"{path}: results.by_dataset is not an object")
    for name, row in by_dataset.items():
        if not isinstance(row, dict):
            raise DataError(f"{path}: results.by_dataset.{name} is not an object of metrics")
        for key, value in row.items():
            if (
                key in NUMERIC_FIELDS
                and value is not None
                and (isinstance(value, bool) or not isinstance(value, (int, float)))
            ):
                raise DataError(f"{path}: results.by_dataset.{name}.{key} is {value!r}, expected a number")
    try:
        # Strict: the published schema's types. In lax mode "22.7" passed as a number and "false" as a boolean, and
        # the raw values (this returns the file's own content) broke export and report later, or read as true.
        checked = RunSummary.model_validate(content, strict=True).model_dump(mode="json")
    except ValidationError as error:
        raise DataError(f"{path}: not a valid zstc result file: {first_problem(error)}") from None
    content = _counts_as_checked(content, checked)
    # The optional sections a file may hold as null (the schema allows it): absent, as readers expect them.
    return {key: value for key, value in content.items() if not (value is None and key in RunSummary.OPTIONAL_SECTIONS)}


def _counts_as_checked(raw: Any, checked: Any) -> Any:
    """``raw`` with each count the file wrote as an integral float (``100.0``, valid) as the integer validation
    made of it, so readers print and compare 100, not 100.0; everything else as the file has it."""
    if isinstance(raw, dict) and isinstance(checked, dict):
        return {key: _counts_as_checked(value, checked.get(key)) for key, value in raw.items()}
    if isinstance(raw, float) and type(checked) is int:
        return checked
    return raw


def save_summary(path: str | Path, summary: RunSummary) -> dict[str, Any]:
    """Write a run summary (validated again, so a field set after construction is checked too); returns its content."""
    content = RunSummary.model_validate(summary.content()).content()
    write_json(Path(path), content)
    return content


NUMERIC_FIELDS = frozenset(
    {
        "macro_f1",
        "accuracy",
        "macro_precision",
        "macro_recall",
        "n_texts",
        "n_labels",
        "wall_time_s",
        "texts_per_second",
        "latency_p50_s",
        "latency_p95_s",
        "unlabelled_texts",
    }
)
"""Fields of a summary's per-dataset rows that reports compute with."""
