"""From a score matrix to decisions: argmax for single-label, thresholds and "none" for multi-label."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def argmax_decisions(scores: np.ndarray) -> np.ndarray:
    """Index of the highest-scoring label per text (the first one on ties, as numpy and the paper do)."""
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise ValueError(f"expected a (texts, labels) matrix with at least one label, got shape {scores.shape}")
    return scores.argmax(axis=1)


def threshold_decisions(
    scores: np.ndarray,
    threshold: float,
    labels: Sequence[str] | None = None,
    per_label: Mapping[str, float] | None = None,
) -> np.ndarray:
    """A boolean (texts, labels) matrix: a label applies when its score reaches its threshold.

    A row with no label set means "none". ``per_label`` overrides the global threshold by label name.
    """
    return scores >= label_thresholds(scores.shape[1], threshold, labels, per_label)[None, :]


def label_thresholds(n_labels: int, threshold: float, labels: Sequence[str] | None = None,
                     per_label: Mapping[str, float] | None = None) -> np.ndarray:
    """Each label's threshold: ``per_label``'s for the labels it names, ``threshold`` for the others."""
    thresholds = np.full(n_labels, threshold, dtype=np.float64)
    if per_label:
        if labels is None:
            raise ValueError("per-label thresholds need the label names")
        for name, value in per_label.items():
            if name not in labels:
                raise ValueError(f"threshold given for unknown label {name!r}")
            thresholds[list(labels).index(name)] = value
    return thresholds
