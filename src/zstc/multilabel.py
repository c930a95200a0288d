"""Multi-label decisions with "none" (Yin et al. 2019): every label whose score passes its threshold.

A text may carry several labels or none; "none" is predicted when no label passes. Thresholds come, in
order of precedence, from per-label overrides, a global threshold, or the default for the scorer's score
type (:data:`DEFAULT_THRESHOLDS`); :func:`fit_thresholds` chooses them on a labelled dev set instead.

The metric is Yin et al.'s label-wise weighted F1: scikit-learn's F1 per label over the (texts, labels)
indicator matrices, averaged with the labels' supports as weights. "none" is scored as one more label
(gold: no gold label; predicted: no label passed), so a model that never abstains is penalised on texts
that belong to no candidate; with no gold "none" texts its weight is zero.
"""

from __future__ import annotations

import math

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.metrics import f1_score, precision_recall_fscore_support
from sklearn.preprocessing import MultiLabelBinarizer

from zstc.decisions import threshold_decisions
from zstc.errors import LabelError, OptionError, UnknownNameError, quoted
from zstc.models.families import FamilySet, FamilyTable
from zstc.validation import NONE_LABEL

DEFAULT_THRESHOLDS: dict[str, float] = {
    "prob": 0.5,  # a probability: the label is more likely than not
    "logodds": 0.0,  # entailment log-odds 0 = entailment as likely as the other classes together
    "logit": 0.0,  # a raw relevance / entailment logit: its sign (a rough rule; fit one when it matters)
    "cosine": 0.3,  # embedding similarity has no natural cut; 0.3 is a rough rule for all-MiniLM-L6-v2
}
"""Default threshold per score type. Score types of the families: embedding/encoder ``cosine``, NLI its
``score_type`` (``logodds`` by default), reranker ``logit``, yes/no reranker ``prob``. An LLM's scores are
a distribution over the options (they sum to 1), so no fixed cut suits multi-label: give or fit one."""

FAMILY_THRESHOLDS: FamilyTable[float] = FamilyTable(lambda family: family.threshold)
"""Measured defaults per family (a view of the :class:`zstc.models.families.Family` records, where each value and
its measurement are written); they take precedence over the score type's rough rule. Without a threshold of the
user's, the embedding family's labels must also be near the best one (:func:`default_margin`)."""

RELATIVE_FAMILIES: FamilySet = FamilySet(lambda family: family.relative_margin)
"""Families whose default multi-label rule also asks a label to be near the text's best one
(:func:`default_margin`): where a score's level says little about a label on its own, while its distance to the
best label's does (the embedding family's cosines: its record says why; measured by
scripts/measure_label_defaults.py). A view of the :class:`zstc.models.families.Family` records."""


def default_margin(family: str | None, temperature: float) -> float | None:
    """The default multi-label margin of ``family`` (None: no margin): ``temperature * ln 2``, so a label
    passes when its single-label probability (softmax at ``temperature``) is at least half the best label's."""
    return temperature * math.log(2) if family in RELATIVE_FAMILIES else None


FAMILY_SCORE_TYPE: FamilyTable[str] = FamilyTable(lambda family: family.score_type)
"""Family name -> its score type (a view of the :class:`zstc.models.families.Family` records)."""


def score_type_of(scorer: Any) -> str | None:
    """The score type a scorer produces: its own ``score_type`` setting, else its family's."""
    described = scorer.describe() if hasattr(scorer, "describe") else {}
    return getattr(scorer, "score_type", None) or described.get("score_type") or FAMILY_SCORE_TYPE.get(getattr(scorer, "family", ""))


def default_threshold(score_type: str | None, family: str | None = None) -> float:
    """The family's measured threshold (:data:`FAMILY_THRESHOLDS`) for its own score type, else the score type's."""
    if family is not None and family in FAMILY_THRESHOLDS and score_type in (None, FAMILY_SCORE_TYPE.get(family)):
        return FAMILY_THRESHOLDS[family]
    if score_type not in DEFAULT_THRESHOLDS:
        # No score type: an LLM's scores, a distribution over the labels (see DEFAULT_THRESHOLDS).
        what = f"scores of type {score_type!r}" if score_type is not None else f"{family or 'these'} models' scores (a distribution over the labels)"
        raise UnknownNameError(
            f"{what} have no default multi-label cut; give threshold, a per-label one for every label, or fit one on "
            "labelled texts; "
            f"defaults exist for score types {', '.join(DEFAULT_THRESHOLDS)}", parameters=("threshold",)
        )
    return DEFAULT_THRESHOLDS[score_type]


def default_rule_applies(threshold: float | None, labels: Iterable[str], per_label: Mapping[str, float]) -> bool:
    """Whether the family's default rule (its cut and, for :data:`RELATIVE_FAMILIES`, its margin) decides some label:
    no ``threshold`` of the user's, and a label without a cut of its own in ``per_label``."""
    return threshold is None and not all(name in per_label for name in labels)


def check_margin_rule(labels: Sequence[str], margin: float | None, per_label: Mapping[str, float] | None = None) -> None:
    """Refuse one label under a margin rule (:func:`default_margin`, the embedding family's default): the rule
    keeps the labels near a text's best one, and a single label is its own best, so it would pass on every text
    (a cut of its own in ``per_label`` decides it instead)."""
    if margin is not None and len(labels) == 1 and labels[0] not in (per_label or {}):
        raise LabelError(f"one label ({quoted(labels[0])}) with the default multi-label rule of embedding models, which "
                         "keeps the labels near a text's best one: a single label would pass on every text; give threshold "
                         "(or a cut per label, or one fitted on labelled texts), or more labels", parameters=("threshold",))


def check_multilabel_names(labels: Sequence[str]) -> None:
    """Refuse a label named ``none``: multi-label predicts it for a text that no label passes."""
    if NONE_LABEL in labels:
        raise LabelError(f"{NONE_LABEL!r} is what multi-label classification predicts when no label applies; rename that label")


def parse_label_thresholds(items: Sequence[str], labels: Sequence[str], parameter: str = "label_thresholds") -> dict[str, float]:
    """``["sports=0.4", ...]`` -> ``{"sports": 0.4}``, each label checked against ``labels``; errors name ``parameter``."""
    parsed: dict[str, float] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        try:
            threshold = float(value)
        except ValueError:
            threshold = None
        if not sep or not name or threshold is None or not math.isfinite(threshold):
            raise LabelError(f"{parameter}: each must look like LABEL=NUMBER, got {quoted(item)}", parameters=(parameter,))
        _check_label_named(name, labels, parameter)
        if name in parsed and parsed[name] != threshold:  # the last would win, silently
            raise LabelError(f"{parameter}: two thresholds for {quoted(name)} ({parsed[name]:g} and {threshold:g}); give one",
                             parameters=(parameter,))
        parsed[name] = threshold
    return parsed


def check_label_thresholds(per_label: Mapping[str, float], labels: Sequence[str], parameter: str = "per_label") -> dict[str, float]:
    """A mapping of per-label thresholds checked as :func:`parse_label_thresholds` checks ``LABEL=NUMBER`` items
    (each label one of ``labels``, each threshold a finite number)."""
    from zstc.validation import Rule

    if not isinstance(per_label, Mapping):  # a list of numbers has no label names to match
        raise OptionError(f"{parameter} must be a mapping of label to threshold, got {type(per_label).__name__}", parameter)
    for name, value in per_label.items():
        Rule().check(f"{parameter}[{name!r}]", value)  # "per_label['a'] must be a finite number, got nan"
    checked = {str(name): float(value) for name, value in per_label.items()}
    for name in checked:
        _check_label_named(name, labels, parameter)
    return checked


def check_threshold_range(threshold: float | None, per_label: Mapping[str, float], low: float, high: float, scale: str, *,
                          parameter: str = "threshold", per_label_parameter: str = "per_label") -> None:
    """Thresholds on scores bounded to [``low``, ``high``] (probabilities: [0, 1]; cosines: [-1, 1]) lie in that
    range: above it no label passes (every text "none"), below it every label does, and neither was said.
    ``scale`` says what the scores are (``probabilities here (a Platt calibration's)``); errors name ``parameter`` /
    ``per_label_parameter`` (the CLI writes them as its flags). Log-odds and logits have no such bounds."""
    from zstc.validation import Rule

    rule = Rule(low=low, high=high)
    problem = rule.problem(threshold) if threshold is not None else None
    if problem:
        raise OptionError(f"{parameter} {problem}: multi-label decides on {scale}", parameter)
    for name, value in per_label.items():
        problem = rule.problem(value)
        if problem:
            raise OptionError(f"{per_label_parameter}: the threshold of {quoted(name)} {problem}: multi-label decides on "
                              f"{scale}", per_label_parameter)


PROBABILITY_SCALES: dict[str, str] = {
    "prob": "the model's scores are probabilities",
    "distribution": "the model's scores are a distribution over the labels",
}
"""The score scales (:func:`zstc.probabilities.score_scale`) that are probabilities, each in words."""


def score_bounds(family: str | None, score_type: str | None) -> tuple[float, float, str] | None:
    """The range a model's raw scores lie in, so a multi-label threshold on them must too, with what they are in
    words (:func:`check_threshold_range`'s ``scale``): [0, 1] on probabilities (score type ``prob``, an LLM's
    distribution over its options), [-1, 1] on cosines; None for log-odds and logits, which any finite cut suits."""
    from zstc.probabilities import score_scale

    scale = score_scale(family, score_type)
    if scale in PROBABILITY_SCALES:
        return 0.0, 1.0, f"probabilities here ({PROBABILITY_SCALES[scale]})"
    if score_type == "cosine":  # score_scale reads a scorer of no score type as cosines; its cuts are not bounded here
        return -1.0, 1.0, "cosine similarities here, which lie in [-1, 1]"
    return None


def _check_label_named(name: str, labels: Sequence[str], parameter: str) -> None:
    """A per-label threshold's label must be one of ``labels``."""
    if name not in labels:
        known = ', '.join(labels)
        raise LabelError(f"{parameter}: threshold given for {quoted(name)}, which is not one of the labels "
                         f"({known if len(known) <= 300 else known[:300] + '...'})", parameters=(parameter,))


def decide(scores: np.ndarray, labels: Sequence[str], threshold: float, per_label: Mapping[str, float] | None = None,
           margin: float | None = None) -> np.ndarray:
    """Boolean (texts, labels) decisions; a row with no label set is "none". With a ``margin`` (the default rule's,
    :func:`default_margin`), a label without a cut of its own in ``per_label`` must also score at least the row's best
    score minus ``margin``; one with its own is decided by that cut alone, and the others keep the default rule."""
    chosen = threshold_decisions(scores, threshold, labels, per_label)
    if margin is not None:
        own_cut = np.array([label in (per_label or {}) for label in labels], dtype=bool)
        chosen &= (scores >= scores.max(axis=1, keepdims=True) - margin) | own_cut[None, :]
    return chosen


def label_sets(decisions: np.ndarray, labels: Sequence[str]) -> list[list[str]]:
    """Each row's labels, or ``["none"]`` when none passed."""
    return [[labels[int(j)] for j in np.flatnonzero(row)] or [NONE_LABEL] for row in decisions]


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


def fit_thresholds(scores: np.ndarray, gold: np.ndarray, labels: Sequence[str], *, per_label: bool = False,
                   scored: np.ndarray | None = None) -> tuple[float, dict[str, float]]:
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
