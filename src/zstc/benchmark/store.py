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

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from zstc.benchmark.records import SCHEMA_VERSION, DatasetResult, RunSummary, first_problem, percentile
from zstc.errors import DataError

__all__ = ["SCHEMA_VERSION", "DatasetResult", "ResultStore", "RunSummary", "fingerprint", "load_summary", "percentile",
           "save_summary", "write_json"]


def fingerprint(settings: dict[str, Any]) -> str:
    """A short stable hash of the settings that determine a dataset's numbers."""
    canonical = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def _atomic_write(path: Path, write: Any, suffix: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, content: Any) -> None:
    _atomic_write(path, lambda h: h.write((json.dumps(content, indent=2, ensure_ascii=False) + "\n").encode()), ".json")


class ResultStore:
    """Per-dataset results of one run, in ``<out stem>.details/`` beside the summary file."""

    def __init__(self, summary_path: str | Path) -> None:
        self.summary_path = Path(summary_path)
        self.directory = self.summary_path.with_name(self.summary_path.stem + ".details")

    def _paths(self, dataset: str) -> tuple[Path, Path]:
        return self.directory / f"{dataset}.json", self.directory / f"{dataset}.npz"

    def save(self, result: DatasetResult) -> None:
        json_path, npz_path = self._paths(result.dataset)
        arrays = result.arrays()
        _atomic_write(npz_path, lambda h: np.savez_compressed(h, **arrays), ".npz")  # type: ignore[arg-type]  # numpy types **kwds as bool
        write_json(json_path, DatasetResult.model_validate(result.record()).record())  # written last: its presence marks the dataset as finished

    def load(self, dataset: str, *, with_arrays: bool = True) -> DatasetResult | None:
        json_path, npz_path = self._paths(dataset)
        if not json_path.exists():
            return None
        try:
            record = json.loads(json_path.read_text(encoding="utf-8"))
            result = DatasetResult.model_validate(record)
            if with_arrays and npz_path.exists():
                with np.load(npz_path) as arrays:
                    for name in DatasetResult.ARRAYS:
                        if name in arrays:
                            setattr(result, name, arrays[name])
        except (json.JSONDecodeError, ValidationError, TypeError, ValueError, OSError):
            return None  # a damaged part is recomputed, never trusted
        return result

    def finished(self, dataset: str, expected_fingerprint: str) -> DatasetResult | None:
        result = self.load(dataset)
        if result is None or result.fingerprint != expected_fingerprint or result.scores is None:
            return None
        return result


def save_summary(path: str | Path, summary: RunSummary) -> dict[str, Any]:
    """Write a run summary (validated again, so a field set after construction is checked too); returns its content."""
    content = RunSummary.model_validate(summary.content()).content()
    write_json(Path(path), content)
    return content


def load_summary(path: str | Path) -> dict[str, Any]:
    """The JSON content of a ``zstc bench`` summary file, validated against :class:`RunSummary`."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from None
    if not isinstance(content, dict) or "results" not in content:
        raise DataError(f"{path}: not a zstc result file (no 'results')")
    try:
        RunSummary.model_validate(content)
    except ValidationError as error:
        raise DataError(f"{path}: not a valid zstc result file: {first_problem(error)}") from None
    return content
