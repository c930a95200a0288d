"""Multi-label evaluation with "none" (Yin et al. 2019): its metric, and thresholds fitted on labelled texts.

A text may carry several labels or none; "none" is predicted when no label passes. How scores become those
decisions is :mod:`zstc.policy`'s; :func:`fit_thresholds` chooses the cuts on a labelled dev set instead.

The metric is Yin et al.'s label-wise weighted F1: scikit-learn's F1 per label over the (texts, labels)
indicator matrices, averaged with the labels' supports as weights. "none" is scored as one more label
(gold: no gold label; predicted: no label passed), so a model that never abstains is penalised on texts
that belong to no candidate; with no gold "none" texts its weight is zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.metrics import f1_score, precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer

from zstc.validation import NONE_LABEL


def gold_matrix(gold: np.ndarray, n_labels: int) -> np.ndarray:
    """Single-label gold indices as a (texts, labels) indicator matrix; index -1 (no candidate) is a "none" row."""
    gold = np.asarray(gold)
    if gold.ndim == 2:
        return gold.astype(bool)
    binarizer = MultiLabelBinarizer(classes=list(range(n_labels)))
    return binarizer.fit_transform([[int(index)] if index >= 0 else [] for index in gold]).astype(bool)


def _with_none(matrix: np.ndarray) -> np.ndarray:
    return np.column_stack([matrix, ~matrix.any(axis=1)])


def multilabel_metrics(gold: np.ndarray, decisions: np.ndarray, labels: Sequence[str]) -> dict[str, Any]:
    """Label-wise weighted F1 (Yin et al.), micro and macro F1, and per-label precision, recall, F1, support.

    ``gold`` is an indicator matrix or single-label indices (see :func:`gold_matrix`); "none" is a label.
    """
    truth = _with_none(gold_matrix(gold, len(labels)))
    predicted = _with_none(decisions.astype(bool))
    names = [*labels, NONE_LABEL]
    precision, recall, f1, support = precision_recall_fscore_support(truth, predicted, average=None, zero_division=0)
    return {
        "weighted_f1": float(f1_score(truth, predicted, average="weighted", zero_division=0)),
        "micro_f1": float(f1_score(truth, predicted, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(truth[:, support > 0], predicted[:, support > 0], average="macro", zero_division=0)),
        "none_predicted": int(predicted[:, -1].sum()),
        "none_gold": int(truth[:, -1].sum()),
        "per_label": {
            name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
            for name, p, r, f, s in zip(names, precision, recall, f1, support)
        },
    }


def _candidate_cuts(values: np.ndarray, limit: int = 200) -> np.ndarray:
    """Thresholds worth trying: midpoints between sorted distinct scores (quantiles when there are many)."""
    distinct = np.unique(values)
    if len(distinct) > limit:
        distinct = np.unique(np.quantile(values, np.linspace(0, 1, limit)))
    below = distinct[0] - 1e-6
    return np.concatenate([[below], (distinct[:-1] + distinct[1:]) / 2, [distinct[-1] + 1e-6]])


def fit_thresholds(
    scores: np.ndarray,
    gold: np.ndarray,
    labels: Sequence[str],
    *,
    per_label: bool = False,
    scored: np.ndarray | None = None,
) -> tuple[float, dict[str, float]]:
    """Thresholds that maximise F1 on a labelled dev set.

    Returns the global threshold maximising label-wise weighted F1 (with "none"), and, with
    ``per_label=True``, each label's own threshold maximising that label's F1 (labels absent from the dev
    gold, or never scored, keep the global one, since their F1 cannot be measured or moved).

    ``scored`` (behind a shortlist: which pairs the model scored) makes the fit decide as prediction does: an
    unscored pair never passes whatever the cut, and its placeholder value is never a candidate cut.
    """
    truth = gold_matrix(gold, len(labels))
    mask = np.ones(scores.shape, dtype=bool) if scored is None else np.asarray(scored, dtype=bool)
    best_global, best_value = 0.0, -1.0
    for cut in _candidate_cuts(scores[mask]):
        value = multilabel_metrics(truth, (scores >= cut) & mask, labels)["weighted_f1"]
        if value > best_value:
            best_global, best_value = float(cut), value
    overrides: dict[str, float] = {}
    if per_label:
        for j, label in enumerate(labels):
            column = scores[mask[:, j], j]
            if not truth[:, j].any() or not len(column):
                continue
            cuts = _candidate_cuts(column)
            f1s = [f1_score(truth[:, j], (scores[:, j] >= cut) & mask[:, j], zero_division=0) for cut in cuts]
            overrides[label] = float(cuts[int(np.argmax(f1s))])
    return best_global, overrides
