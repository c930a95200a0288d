"""Metrics exactly as BTZSC computes them (PROTOCOL.md s.3), and their aggregation.

Per dataset: scikit-learn macro-F1, accuracy, macro-precision and macro-recall with ``zero_division=0``
and no ``labels=`` argument, so a class absent from both truth and predictions does not count.
Per family: the unweighted mean over its datasets. Overall: the unweighted mean over all datasets (topic
weighs 11/22), not the mean of family means. Standard deviations are across datasets (population, ddof=0).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from sklearn.metrics import accuracy_score, f1_score, precision_score, recall_score

METRICS: tuple[str, ...] = ("macro_f1", "accuracy", "macro_precision", "macro_recall")


def dataset_metrics(gold: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """The paper's four metrics of one dataset: scikit-learn macro scores with ``zero_division=0`` and no ``labels=``."""
    return {
        "macro_f1": float(f1_score(gold, predicted, average="macro", zero_division=0)),
        "accuracy": float(accuracy_score(gold, predicted)),
        "macro_precision": float(precision_score(gold, predicted, average="macro", zero_division=0)),
        "macro_recall": float(recall_score(gold, predicted, average="macro", zero_division=0)),
    }


def aggregate(by_dataset: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Unweighted mean of each metric over the given datasets, with ``<metric>_std`` across them."""
    summary: dict[str, float] = {}
    for metric in METRICS:
        values = np.asarray([scores[metric] for scores in by_dataset.values()], dtype=np.float64)
        summary[metric] = float(values.mean()) if len(values) else float("nan")
        summary[f"{metric}_std"] = float(values.std()) if len(values) else float("nan")
    summary["n_datasets"] = len(by_dataset)
    return summary


def aggregate_by_family(
    by_dataset: Mapping[str, Mapping[str, float]], family_of: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """:func:`aggregate` over each task family's datasets (``family_of`` maps a dataset to its family)."""
    grouped: dict[str, dict[str, Mapping[str, float]]] = {}
    for name, scores in by_dataset.items():
        grouped.setdefault(family_of[name], {})[name] = scores
    return {family: aggregate(members) for family, members in grouped.items()}
