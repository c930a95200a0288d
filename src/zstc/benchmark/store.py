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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zstc.errors import DataError

SCHEMA_VERSION = "1.0"


@dataclass
class DatasetResult:
    dataset: str
    family: str | None
    metrics: dict[str, float]
    n_texts: int
    label_names: list[str]
    hypotheses: list[str]
    unlabelled_policy: str
    unlabelled_texts: int
    wall_time_s: float
    fingerprint: str
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    # Per-text arrays, kept in the .npz beside the JSON.
    scores: np.ndarray | None = field(default=None, repr=False)
    gold: np.ndarray | None = field(default=None, repr=False)
    predicted: np.ndarray | None = field(default=None, repr=False)
    source_index: np.ndarray | None = field(default=None, repr=False)

    ARRAYS = ("scores", "gold", "predicted", "source_index")

    def summary(self) -> dict[str, Any]:
        return {
            **self.metrics,
            "n_texts": self.n_texts,
            "n_labels": len(self.label_names),
            "unlabelled_texts": self.unlabelled_texts,
            "wall_time_s": round(self.wall_time_s, 3),
            "texts_per_second": round(self.n_texts / self.wall_time_s, 2) if self.wall_time_s > 0 else None,
            "latency_p50_s": percentile(self.batch_latencies, 50),
            "latency_p95_s": percentile(self.batch_latencies, 95),
        }

    @property
    def batch_latencies(self) -> list[float]:
        """Seconds per timed scorer call (empty for results stored before timing was recorded)."""
        return list(self.extra.get("timing", {}).get("batch_latencies_s", []))


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (linear interpolation), rounded for the result file; None when empty."""
    return round(float(np.percentile(values, q)), 5) if values else None


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
        arrays = {name: getattr(result, name) for name in DatasetResult.ARRAYS if getattr(result, name) is not None}
        _atomic_write(npz_path, lambda h: np.savez_compressed(h, **arrays), ".npz")
        record = {k: v for k, v in asdict(result).items() if k not in DatasetResult.ARRAYS}
        write_json(json_path, record)  # written last: its presence marks the dataset as finished

    def load(self, dataset: str, *, with_arrays: bool = True) -> DatasetResult | None:
        json_path, npz_path = self._paths(dataset)
        if not json_path.exists():
            return None
        try:
            record = json.loads(json_path.read_text(encoding="utf-8"))
            result = DatasetResult(**record)
            if with_arrays and npz_path.exists():
                with np.load(npz_path) as arrays:
                    for name in DatasetResult.ARRAYS:
                        if name in arrays:
                            setattr(result, name, arrays[name])
        except (json.JSONDecodeError, TypeError, ValueError, OSError):
            return None  # a damaged part is recomputed, never trusted
        return result

    def stored(self) -> list[DatasetResult]:
        """Every readable dataset result in the details folder (without their arrays)."""
        if not self.directory.is_dir():
            return []
        found = (self.load(path.stem, with_arrays=False) for path in sorted(self.directory.glob("*.json")))
        return [result for result in found if result is not None]

    def remove(self, dataset: str) -> None:
        for path in self._paths(dataset):
            path.unlink(missing_ok=True)

    def finished(self, dataset: str, expected_fingerprint: str) -> DatasetResult | None:
        result = self.load(dataset)
        if result is None or result.fingerprint != expected_fingerprint or result.scores is None:
            return None
        return result


def load_summary(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DataError(f"{path}: not valid JSON ({error.msg}, line {error.lineno})") from None
    if not isinstance(content, dict) or "results" not in content:
        raise DataError(f"{path}: not a zstc result file (no 'results')")
    return content
