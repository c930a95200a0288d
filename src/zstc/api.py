"""The Python API for practitioners: label your texts with your labels.

>>> from zstc import classify
>>> classify(["The match ended 2-1."], ["sports", "politics"], template="This text is about {}.")
[Prediction(text='The match ended 2-1.', label='sports', scores={...})]
>>> classify(["The match ended 2-1."], ["sports", "politics"], multi_label=True, threshold=0.3)
[MultiLabelPrediction(text='The match ended 2-1.', labels=['sports'], scores={...})]
>>> classify(["The match ended 2-1."], ["sports", "politics"], hypotheses="ensemble")  # Yin et al.'s variants
[Prediction(text='The match ended 2-1.', label='sports', scores={...})]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zstc.decisions import argmax_decisions
from zstc.errors import LabelError, OptionError
from zstc.hypotheses.variants import ASPECT_TEMPLATES, DEFAULT_ASPECT, VARIANTS, HypothesisSet, build_hypotheses, score_hypotheses_with_notes
from zstc.models.registry import DEFAULT_MODEL, get_model_spec
from zstc.multilabel import NONE_LABEL, check_multilabel_names, decide, default_threshold, fit_thresholds, label_sets, score_type_of
from zstc.scorers import get_family, make_scorer
from zstc.scorers.base import Scorer
from zstc.validation import OptionSpec, check_labels, check_option, check_options, check_template, check_texts

HYPOTHESES = OptionSpec(str, "dataset", choices=VARIANTS, meaning="hypothesis variant",
                        help="how labels become hypotheses: 'dataset' (as given), 'name', 'definition', 'both', 'ensemble'")


@dataclass(frozen=True)
class Prediction:
    text: str
    label: str
    scores: dict[str, float]


@dataclass(frozen=True)
class MultiLabelPrediction:
    text: str
    labels: list[str]
    """Every label whose score passed its threshold, or ``["none"]``."""
    scores: dict[str, float]

    @property
    def none(self) -> bool:
        return self.labels == [NONE_LABEL]


def describe_labels(labels: Sequence[str], template: str | None) -> list[str]:
    """Label descriptions: each label through ``template`` (one ``{}``), or the labels themselves."""
    if template is None:
        return list(labels)
    return [check_template(template).format(label) for label in labels]


def label_hypotheses(labels: Sequence[str], *, hypotheses: str = "dataset", template: str | None = None,
                     descriptions: Sequence[str] | None = None) -> list[str] | HypothesisSet:
    """What the model reads for each label.

    ``hypotheses="dataset"``: the labels as given (or their ``descriptions``), through ``template`` if one is
    given. Otherwise Yin et al.'s variants of the label names (``name``, ``definition`` from WordNet,
    ``both``, or the three as an ``ensemble`` whose scores are averaged), filled into ``template`` (default:
    the topic aspect's, "This text is about {}.").
    """
    hypotheses = check_option("hypotheses", hypotheses, HYPOTHESES)
    if hypotheses == "dataset":
        return describe_labels(list(descriptions) if descriptions is not None else labels, template)
    return build_hypotheses(labels, hypotheses, template or ASPECT_TEMPLATES[DEFAULT_ASPECT])


class Classifier:
    """A loaded model plus a fixed way of describing labels; reuse it to classify many batches."""

    def __init__(self, model: str | Scorer = DEFAULT_MODEL, *, family: str | None = None, template: str | None = None,
                 hypotheses: str = "dataset", precision: str | None = "auto", shortlist: str | int | None = None,
                 **options: Any) -> None:
        """``model``: a hub id, paper name or local folder, or a scorer already built (:func:`make_scorer`,
        or any object with ``score(texts, labels)``). ``hypotheses`` and ``template``: see
        :func:`label_hypotheses`. ``precision``: ``fp32``, ``bf16`` or ``auto`` (bf16 where the hardware runs
        it fast; see :func:`zstc.scorers.runtime.resolve_precision`), resolved here once for this classifier.
        ``shortlist`` (``K`` or ``"MODEL:K"``): a bi-encoder (default all-MiniLM-L6-v2) keeps each text's top K
        labels and only those are scored by ``model``; the others rank below them (:mod:`zstc.scorers.cascade`)."""
        self.template = check_template(template) if template is not None else None
        self.hypotheses: str = check_option("hypotheses", hypotheses, HYPOTHESES)
        if isinstance(model, str):
            spec = get_model_spec(model, family)
            if "precision" in get_family(spec.family).options:
                from zstc.scorers.runtime import resolved_options

                options = resolved_options(precision, options)
            elif precision not in (None, "auto"):  # asked for explicitly: make_scorer says it does not apply
                options = {**options, "precision": precision}
            self.scorer: Scorer = make_scorer(spec, shortlist=shortlist, **options)
        else:
            given = ["family"] * (family is not None) + ["shortlist"] * (shortlist is not None) + list(options)
            if given:
                raise OptionError(f"{', '.join(given)} cannot be given with a scorer object: build the scorer with them", *given)
            self.scorer = model

    def scores(self, texts: Sequence[str], labels: Sequence[str], descriptions: Sequence[str] | None = None, *,
               allow_single: bool = False, notes: list[str] | None = None) -> np.ndarray:
        """The (texts, labels) score matrix; ``allow_single`` admits one label (multi-label: a yes/no question)."""
        texts = check_texts(texts)
        labels = check_labels(labels, allow_single=allow_single)
        if descriptions is None:
            descriptions = label_hypotheses(labels, hypotheses=self.hypotheses, template=self.template)
        elif len(descriptions) != len(labels):
            raise LabelError(f"{len(descriptions)} descriptions for {len(labels)} labels")
        # A HypothesisSet of several variants (the ensemble) is scored per variant and averaged.
        result = score_hypotheses_with_notes(self.scorer, texts, descriptions)
        if notes is not None:  # the caller's list: the classifier keeps no per-call state (it may serve threads)
            notes.extend(note for note in result.notes if note not in notes)
        return result.scores

    def predict(self, texts: Sequence[str], labels: Sequence[str], descriptions: Sequence[str] | None = None, *,
                notes: list[str] | None = None) -> list[Prediction]:
        """The best label of each text. ``notes``, when given, receives what the scorer had to say (texts
        truncated, ...)."""
        texts = check_texts(texts)
        labels = check_labels(labels)
        matrix = self.scores(texts, labels, descriptions, notes=notes)
        best = argmax_decisions(matrix)
        return [
            Prediction(text, labels[int(b)], {label: float(s) for label, s in zip(labels, row)})
            for text, b, row in zip(texts, best, matrix)
        ]

    def default_threshold(self) -> float:
        """The multi-label threshold for this scorer's score type (see :data:`zstc.multilabel.DEFAULT_THRESHOLDS`)."""
        return default_threshold(score_type_of(self.scorer))

    def predict_multi_label(self, texts: Sequence[str], labels: Sequence[str], descriptions: Sequence[str] | None = None, *,
                            threshold: float | None = None, per_label: Mapping[str, float] | None = None,
                            notes: list[str] | None = None) -> list[MultiLabelPrediction]:
        """Every label whose score reaches its threshold (``per_label`` overrides, else ``threshold``, else
        the score type's default), or ``"none"``."""
        check_options({"threshold": threshold})  # a NaN threshold would make every text "none"
        texts = check_texts(texts)
        labels = check_labels(labels, allow_single=True)
        check_multilabel_names(labels)
        matrix = self.scores(texts, labels, descriptions, allow_single=True, notes=notes)
        chosen = decide(matrix, labels, self.default_threshold() if threshold is None else threshold, per_label)
        return [
            MultiLabelPrediction(text, names, {label: float(s) for label, s in zip(labels, row)})
            for text, names, row in zip(texts, label_sets(chosen, labels), matrix)
        ]

    def fit_thresholds(self, texts: Sequence[str], gold: Sequence[Sequence[str]], labels: Sequence[str],
                       descriptions: Sequence[str] | None = None, *, per_label: bool = False) -> tuple[float, dict[str, float]]:
        """Thresholds for :meth:`predict_multi_label` fitted on labelled texts: ``gold`` holds each text's
        labels (empty, or ``["none"]``, for a text with none of them). Returns the global threshold that
        maximises label-wise weighted F1 and, with ``per_label``, each label's own (see
        :func:`zstc.multilabel.fit_thresholds`)."""
        texts = check_texts(texts)
        labels = check_labels(labels, allow_single=True)
        check_multilabel_names(labels)
        if len(gold) != len(texts):
            raise LabelError(f"{len(texts)} dev texts but {len(gold)} gold label sets")
        position = {label: j for j, label in enumerate(labels)}
        truth = np.zeros((len(texts), len(labels)), dtype=bool)
        for i, names in enumerate(gold):
            for name in names:
                if name == NONE_LABEL:
                    continue
                if name not in position:
                    raise LabelError(f"dev text {i + 1} has label {name!r}, which is not one of the labels: {', '.join(labels)}")
                truth[i, position[name]] = True
        matrix = self.scores(texts, labels, descriptions, allow_single=True)
        return fit_thresholds(matrix, truth, labels, per_label=per_label)


def classify(texts: Sequence[str], labels: Sequence[str], *, model: str | Scorer = DEFAULT_MODEL, family: str | None = None,
             template: str | None = None, hypotheses: str = "dataset", multi_label: bool = False,
             threshold: float | None = None, shortlist: str | int | None = None, **options: Any) -> list[Prediction] | list[MultiLabelPrediction]:
    """Classify ``texts`` into ``labels``: single-label (argmax), or with ``multi_label=True`` every label
    whose score passes ``threshold`` (default: the score type's), "none" when no label does. ``hypotheses``
    picks how labels become hypotheses (see :func:`label_hypotheses`). See :class:`Classifier` to reuse a model."""
    classifier = Classifier(model, family=family, template=template, hypotheses=hypotheses, shortlist=shortlist, **options)
    if multi_label:
        return classifier.predict_multi_label(texts, labels, threshold=threshold)
    return classifier.predict(texts, labels)
