"""The paper's published scores for its 38 models, read from the BTZSC result files.

The files (``f1_scores.csv``, ``acc_scores.csv``, ``precision_scores.csv``, ``recall_scores.csv``,
``roc_scores.csv``; first column ``mdl``, the paper's short model name) ship with zstc as package data
(``zstc/resources/paper_scores``, the paper's figures unchanged), so bench, report, validate and the demo compare
with the paper wherever zstc is installed. ``$ZSTC_BASELINES``, then ``$ZSTC_SHARED_DATA/baselines``, then a
``shared/data/baselines`` folder beside or above the working directory override them (a corrected table is
tried without reinstalling).
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

from zstc.models.registry import ModelSpec

METRIC_FILES: dict[str, str] = {
    "macro_f1": "f1_scores.csv",
    "accuracy": "acc_scores.csv",
    "macro_precision": "precision_scores.csv",
    "macro_recall": "recall_scores.csv",
    "auroc": "roc_scores.csv",
}


def baselines_dir() -> Path | None:
    """The folder holding the paper's result files: an override (see the module docstring), else the packaged
    tables; None only when neither holds them (an install that lost its package data)."""
    from zstc.benchmark.catalog import find_shared_data, packaged_folder

    override = find_shared_data("baselines", METRIC_FILES["macro_f1"], override_env="ZSTC_BASELINES")
    return override or packaged_folder("paper_scores", METRIC_FILES["macro_f1"])


def published(metric: str) -> dict[str, dict[str, float]]:
    """Paper short name -> column (dataset or NLI set) -> published value; empty when the files are not found."""
    # Found afresh, read once per folder: the folder depends on $ZSTC_BASELINES and the working directory, and a
    # cache keyed on the metric alone kept "not found" (or another folder's scores) after either changed.
    return _read_published(baselines_dir(), metric)


@cache
def _read_published(folder: Path | None, metric: str) -> dict[str, dict[str, float]]:
    if folder is None or not (folder / METRIC_FILES[metric]).is_file():
        return {}
    with (folder / METRIC_FILES[metric]).open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {row["mdl"]: {k: float(v) for k, v in row.items() if k != "mdl" and v not in ("", None)} for row in rows}


def paper_rows(spec: ModelSpec | None, metric: str = "macro_f1") -> dict[str, float] | None:
    """The published row of a model, or None when it is not one of the paper's 38."""
    if spec is None or spec.paper_name is None:
        return None
    return published(metric).get(spec.paper_name)
