"""The paper's published scores for its 38 models (package data, from the BTZSC paper's tables)."""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources

from zstc.models.registry import ModelSpec

METRIC_FILES: dict[str, str] = {
    "macro_f1": "f1_scores.csv",
    "accuracy": "acc_scores.csv",
    "macro_precision": "precision_scores.csv",
    "macro_recall": "recall_scores.csv",
    "auroc": "roc_scores.csv",
}


@cache
def published(metric: str) -> dict[str, dict[str, float]]:
    """Paper short name -> column (dataset or NLI set) -> published value."""
    text = resources.files("zstc.resources").joinpath("baselines", METRIC_FILES[metric]).read_text(encoding="utf-8")
    rows = csv.DictReader(text.splitlines())
    return {row["mdl"]: {k: float(v) for k, v in row.items() if k != "mdl" and v not in ("", None)} for row in rows}


def paper_rows(spec: ModelSpec | None, metric: str = "macro_f1") -> dict[str, float] | None:
    """The published row of a model, or None when it is not one of the paper's 38."""
    if spec is None or spec.paper_name is None:
        return None
    return published(metric).get(spec.paper_name)


def paper_model_names() -> list[str]:
    return list(published("macro_f1"))
