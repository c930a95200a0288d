"""The Python API for practitioners: label your texts with your labels.

>>> from zstc import classify
>>> classify(["The match ended 2-1."], ["sports", "politics"], template="This text is about {}.")
[Prediction(text='The match ended 2-1.', label='sports', scores={'sports': 0.904..., 'politics': 0.095...}, ...)]
>>> classify(["The match ended 2-1."], ["sports", "politics"], multi_label=True)
[MultiLabelPrediction(text='The match ended 2-1.', labels=['sports'], scores={...}, ...)]

Single-label scores are probabilities by default (a softmax over the labels at the family's measured
temperature, or a calibration file's), highest first; ``scores="raw"`` gives the model's own numbers, which
``raw_scores`` always holds. :func:`prediction_record` turns a prediction into the record ``zstc classify``
writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from zstc.adapt import Adaptation, check_adapt_options
from zstc.errors import DataError, LabelError, ModelError, OptionError, quoted
from zstc.hypotheses.polarity import is_polarity_label_set, polarity_variants
from zstc.hypotheses.variants import (
    ASPECT_TEMPLATES,
    DEFAULT_ASPECT,
    HypothesisSet,
    build_hypotheses,
    score_hypotheses_with_notes,
    tie_message,
    tied_labels,
)
from zstc.defaults import DEFAULT_MODEL, DEFAULT_TEMPLATE
from zstc.models.registry import get_model_spec
from zstc.multilabel import fit_thresholds
from zstc.policy import (
    DecisionPolicy,
    argmax_decisions,
    score_type_of,
    check_multi_label_options,
    check_multilabel_names,
)
from zstc.scorers import get_family, make_scorer
from zstc.scorers.base import Scorer, indistinguishable_labels
from zstc.validation import (
    NONE_LABEL,
    OPTIONS,
    Choices,
    Interval,
    Option,
    check_distinct_descriptions,
    check_labels,
    check_option,
    check_read_apart,
    check_sequence,
    check_template,
    check_texts,
)
from zstc.probabilities import Calibration, load_calibration

HYPOTHESES = OPTIONS["hypotheses"]


SCORE_KINDS: tuple[str, ...] = ("probs", "raw")
"""``probs``: probabilities (single-label: a softmax over the labels; multi-label: each label's own, >= 0.5 exactly
when it passed); ``raw``: the family's own scores (cosines, NLI log-odds, LLM option probabilities, ...)."""


def _ranked(labels: Sequence[str], values: np.ndarray) -> dict[str, float]:
    """``{label: value}``, highest first (ties keep the label order)."""
    order = np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")
    return {labels[j]: float(values[j]) for j in order}


@dataclass(frozen=True)
class Prediction:
    """A single-label prediction: the text's best ``label`` and every label's score."""

    text: str
    label: str
    scores: dict[str, float]
    """Every label's score, highest first: probabilities that sum to 1, or raw scores (``score_kind``)."""
    raw_scores: dict[str, float] = field(default_factory=dict)
    """The family's own scores, highest first, whatever ``score_kind`` is."""
    score_kind: str = "raw"

    @property
    def score(self) -> float:
        """The predicted label's score."""
        return self.scores[self.label]


@dataclass(frozen=True)
class MultiLabelPrediction:
    """A multi-label prediction: every label of the text that passed its threshold, and every label's score."""

    text: str
    labels: list[str]
    """Every label whose score passed its threshold, highest score first, or ``["none"]``."""
    scores: dict[str, float]
    raw_scores: dict[str, float] = field(default_factory=dict)
    score_kind: str = "raw"

    @property
    def none(self) -> bool:
        """True when no label passed its threshold (``labels`` is ``["none"]``)."""
        return self.labels == [NONE_LABEL]


def prediction_record(
    prediction: Prediction | MultiLabelPrediction,
    *,
    digits: int | None = 4,
    flat: bool = False,
    text: bool = True,
    labels: Sequence[str] | None = None,
) -> dict[str, Any]:
    """One output record of a prediction, as ``zstc classify`` writes it (either engine; the HTTP service answers
    in its own shapes, with each label's probability beside its score).

    Nested (JSONL, JSON): ``{"text", "label", "score", "scores": {label: score, highest first}}``, or for
    multi-label ``{"text", "labels": [...], "scores": {...}}``. ``flat`` (CSV, Parquet): the scores become
    one column per label, ``score_<label>``, in the order of ``labels`` (a table needs the same columns in
    every row; default: the ranking), and multi-label ``labels`` one string joined by ``"; "``. ``digits`` rounds the scores (None: full precision); ``text=False`` leaves the text
    out (when the caller carries the input row through).
    """
    if digits is not None:  # round(x, -1) would make every score 0.0, round(x, "2") a TypeError
        digits = int(check_option("digits", digits, Option(int, constraint=Interval(0))))

    def rounded(value: float) -> float:
        return value if digits is None else round(value, digits)

    record: dict[str, Any] = {"text": prediction.text} if text else {}
    scores = {label: rounded(value) for label, value in prediction.scores.items()}
    if isinstance(prediction, MultiLabelPrediction):
        record["labels"] = "; ".join(prediction.labels) if flat else list(prediction.labels)
    else:
        record["label"] = prediction.label
        record["score"] = scores[prediction.label]
    if flat:
        missing = [label for label in labels or () if label not in scores]
        if missing:
            raise LabelError(
                f"labels: {', '.join(quoted(label) for label in missing)} not among the prediction's labels "
                f"({', '.join(scores)})",
                parameters=("labels",),
            )
        record.update({f"score_{label}": scores[label] for label in (labels or scores)})
    else:
        record["scores"] = scores
    return record


def describe_labels(labels: Sequence[str], template: str | None) -> list[str] | HypothesisSet:
    """Label descriptions: each label through ``template`` (one ``{}``), or the labels themselves.

    Through the default template, a label set of sentiment polarities (``positive``, ``negative``,
    ``neutral``) is described by short opinions instead, one score per phrase averaged
    (:mod:`zstc.hypotheses.polarity`: the default model misreads ``This is positive.``).
    """
    if template is None:
        return list(labels)
    template = check_template(template)
    if template == DEFAULT_TEMPLATE and is_polarity_label_set(labels):
        return HypothesisSet(polarity_variants(labels))
    return [template.format(label) for label in labels]


def label_hypotheses(
    labels: Sequence[str],
    *,
    hypotheses: str = "dataset",
    template: str | None = None,
    descriptions: Sequence[str] | None = None,
) -> list[str] | HypothesisSet:
    """What the model reads for each label.

    ``hypotheses="dataset"``: the label names through ``template`` if one is given, or their ``descriptions``
    as written. Both at once are refused (a template would rewrite the descriptions), unless the descriptions are
    the names themselves (a labels file of names alone) or the template is ``"{}"``, which changes nothing.
    Otherwise Yin et al.'s variants of the label names (``name``, ``definition`` from WordNet,
    ``both``, or the three as an ``ensemble`` whose scores are averaged), filled into ``template`` (default:
    the topic aspect's, "this text is about {}"; ``"{}"`` fills in the bare name, definition or both).
    """
    hypotheses = check_option("hypotheses", hypotheses, HYPOTHESES)
    if hypotheses == "dataset":
        if (
            descriptions is not None and list(descriptions) != list(labels) and template not in (None, "{}")
        ):  # said, not dropped
            raise LabelError(
                "template is for label names; with descriptions, which are used as written, it would rewrite "
                "them: give one or the other",
                parameters=("template", "descriptions"),
            )
        return describe_labels(list(descriptions) if descriptions is not None else labels, template)
    if descriptions is not None and list(descriptions) != list(labels):  # said, not dropped
        raise LabelError(
            f"hypotheses {hypotheses} describes each label from its name, so the labels' own "
            "descriptions would go unused: give hypotheses dataset to use them, or the labels alone",
            parameters=("hypotheses",),
        )
    built = build_hypotheses(labels, hypotheses, template or ASPECT_TEMPLATES[DEFAULT_ASPECT])
    # Refused here, naming WordNet: check_distinct_descriptions would speak of descriptions the user never gave.
    groups = tied_labels(labels, list(built))
    if groups:
        raise LabelError(tie_message(hypotheses, groups), parameters=("hypotheses",))
    return built


def check_labels_read_apart(scorer: Any, labels: Sequence[str], descriptions: Sequence[str]) -> None:
    """Refuse labels whose descriptions differ but which ``scorer``'s model reads as the very same input
    (:func:`zstc.validation.check_read_apart`; a :class:`HypothesisSet`'s labels when they read alike in every
    variant, as their averaged scores then tie). A scorer that cannot tell (a user's own object) passes them all.
    The one place labels meet a loaded model before scoring: :meth:`Classifier.scores`, ``classify`` before it
    writes anything, and the HTTP service."""
    variants = list(descriptions.variants.values()) if isinstance(descriptions, HypothesisSet) else [list(descriptions)]
    # Each label's group in every variant (its own position when it reads unlike any other): equal keys tie.
    keys: list[tuple[int, ...]] = [() for _ in labels]
    for variant in variants:
        first_of = {i: group[0] for group in indistinguishable_labels(scorer, variant) for i in group}
        keys = [key + (first_of.get(i, i),) for i, key in enumerate(keys)]
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    alike = [members for members in groups.values() if len(members) > 1]
    model = getattr(getattr(scorer, "spec", None), "model_id", None) or "the model"
    check_read_apart(labels, descriptions, alike, model)


def _model_id(name: str, family: str | None) -> str:
    """``name`` (a calibration file's model) as the registry resolves it, so that a paper name, a hub id and an
    alias of one model agree; the name as written when the registry cannot resolve it."""
    from zstc.errors import ZstcError

    try:
        return get_model_spec(name, family).model_id
    except ZstcError:
        return name


class Classifier:
    """A loaded model plus a fixed way of describing labels; reuse it to classify many batches.

    ``template`` turns label names into descriptions (default :data:`DEFAULT_TEMPLATE` for the labels as
    given; ``None`` or ``"{}"``: the names as they are). It is this classifier's way with label names, for every
    call that gives names alone: the ``descriptions`` a call gives are scored as written, never through it (as
    ``classify --labels-file`` descriptions are; a template given with them there, or to the service, is refused).
    ``calibration`` is a file written by ``zstc calibrate
    --out`` (or a :class:`~zstc.probabilities.Calibration`): its temperature replaces the family's default
    one for single-label probabilities; a Platt calibration makes multi-label scores probabilities
    (threshold 0.5).
    """

    def __init__(
        self,
        model: str | Path | Scorer = DEFAULT_MODEL,
        *,
        family: str | None = None,
        template: str | None = DEFAULT_TEMPLATE,
        hypotheses: str = "dataset",
        precision: str | None = "auto",
        shortlist: str | int | None = None,
        calibration: str | Path | Calibration | None = None,
        **options: Any,
    ) -> None:
        """``model``: a hub id, paper name or local folder, or a scorer already built (:func:`make_scorer`,
        or any object with ``score(texts, labels)``). ``hypotheses`` and ``template``: see
        :func:`label_hypotheses`. ``precision``: ``fp32``, ``bf16`` or ``auto`` (bf16 where the hardware runs
        it fast; see :func:`zstc.scorers.runtime.resolve_precision`), resolved here once for this classifier.
        ``shortlist`` (``K`` or ``"MODEL:K"``): a bi-encoder (default all-MiniLM-L6-v2) keeps each text's top K
        labels and only those are scored by ``model``; the others rank below them (:mod:`zstc.scorers.cascade`)."""
        self.hypotheses: str = check_option("hypotheses", hypotheses, HYPOTHESES)
        if self.hypotheses == "dataset" and template == "{}":
            template = None  # the labels as they are, which "{}" also gives
        elif self.hypotheses != "dataset" and template == DEFAULT_TEMPLATE:
            template = None  # the default template is for label names as given; Yin's variants keep their aspect's
        # "{}" with Yin's variants stays: the bare name, definition or both, as bench fills it (not the aspect's).
        self.template = check_template(template) if template is not None else None
        # Named in messages as the user gave it: a file's path, else "calibration" (a Calibration object).
        calibration_name = f"calibration {calibration}" if isinstance(calibration, (str, Path)) else "calibration"
        if calibration is not None and not isinstance(calibration, (Calibration, str, Path)):  # a dict was a traceback
            raise TypeError(
                f"calibration must be a file path or a zstc.probabilities.Calibration, got {type(calibration).__name__}"
            )
        if calibration is not None and not isinstance(calibration, Calibration):
            calibration = load_calibration(calibration)
        self.calibration: Calibration | None = calibration
        if isinstance(model, Path):  # a local folder, as its name would say it
            model = str(model)
        if not isinstance(model, str) and not callable(getattr(model, "score", None)):
            raise ModelError(
                f"model must be a hub id, paper name or local folder, or a scorer with score(texts, labels); "
                f"got {type(model).__name__} {quoted(model)}",
                parameters=("model",),
            )
        if isinstance(model, str):
            spec = get_model_spec(model, family)
            if "precision" in get_family(spec.family).options:
                from zstc.scorers.runtime import resolved_options

                options = resolved_options(precision, options, spec.family)
            elif precision not in (None, "auto"):  # asked for explicitly: make_scorer says it does not apply
                options = {**options, "precision": precision}
            self.scorer: Scorer = make_scorer(spec, shortlist=shortlist, **options)
        else:
            given = ["family"] * (family is not None) + ["shortlist"] * (shortlist is not None) + list(options)
            if given:
                raise OptionError(
                    f"{', '.join(given)} cannot be given with a scorer object: build the scorer with them", *given
                )
            self.scorer = model
        self.policy = DecisionPolicy.for_scorer(self.scorer, calibration, calibration_name)
        """How this classifier's scores become decisions and probabilities (:mod:`zstc.policy`)."""
        self.notes: list[str] = []
        """What the user should hear about this classifier (``classify`` and ``serve`` print it): a calibration
        fitted on another model."""
        own = getattr(getattr(self.scorer, "spec", None), "model_id", None)  # None: a scorer that names no model
        if (
            calibration is not None
        ):  # fitted on another family's or score type's numbers, its probabilities mean nothing here
            self._check_calibration_fits(calibration, calibration_name)
        if (
            calibration is not None
            and calibration.model is not None
            and own is not None
            and _model_id(calibration.model, calibration.family) != own
        ):
            self.notes.append(
                f"the calibration was fitted on {calibration.model}, not on {own}: its probabilities are "
                "that model's, not this one's"
            )

    def _check_calibration_fits(self, calibration: Calibration, name: str) -> None:
        """Refuse a calibration fitted on another family's or score type's scores (an NLI model's logits read as an
        embedding model's cosines): an :class:`OptionError` naming both. A calibration that names neither passes."""
        own = {"family": self.family or None, "score type": score_type_of(self.scorer) if self.family else None}
        fitted = {"family": calibration.family, "score type": calibration.score_type}
        for what, value in fitted.items():
            if value is not None and own[what] is not None and value != own[what]:
                raise OptionError(
                    f"{name} was fitted on scores of the {what} {value!r}, and this model's are "
                    f"{own[what]!r}: fit one for this model (zstc calibrate)",
                    "calibration",
                )

    @property
    def family(self) -> str:
        """The scorer's family (``embedding``, ``nli``, ...; empty for a scorer that names none)."""
        return getattr(self.scorer, "family", "")

    def temperature(self) -> float:
        """The temperature of single-label probabilities: the calibration file's, else the family's default."""
        return self.policy.temperature()

    def probabilities(self, matrix: np.ndarray) -> np.ndarray:
        """Single-label probabilities of a raw score matrix: softmax over labels at :meth:`temperature` (behind a
        shortlist, over each text's shortlisted labels; the others get 0)."""
        if np.ndim(matrix) != 2:  # one text's row is still a (1, labels) matrix; a 1-D row is ambiguous
            raise DataError(
                f"matrix must be a (texts, labels) score matrix, got {np.ndim(matrix)} dimension(s)",
                parameters=("matrix",),
            )
        if np.shape(matrix)[1] == 0:  # a softmax over no labels: numpy's "zero-size array" ValueError
            raise DataError(
                "matrix has no labels (0 columns): a distribution needs at least one label's score",
                parameters=("matrix",),
            )
        return self.policy.single_label_probabilities(matrix, self.scored(matrix))

    def single_label_calibration(self) -> Calibration:
        """The temperature single-label probabilities use (:meth:`zstc.policy.DecisionPolicy.single_label_calibration`:
        a Platt calibration is refused, as ``classify`` refuses one without ``--multi-label``)."""
        return self.policy.single_label_calibration()

    def scored(self, matrix: np.ndarray) -> np.ndarray | None:
        """Behind a shortlist: which labels of each row the model scored (the others hold placeholders, which
        no decision or probability may use); ``None`` when it scored them all."""
        from zstc.scorers.cascade import scored_by

        return scored_by(self.scorer, matrix)

    def platt(self) -> Calibration | None:
        """The Platt calibration multi-label decides on (``calibration`` when it is one), else None."""
        return self.policy.platt()

    def scores(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        descriptions: Sequence[str] | None = None,
        *,
        allow_single: bool = False,
        notes: list[str] | None = None,
        thresholds: Sequence[float] | np.ndarray | None = None,
        margins: Sequence[float] | np.ndarray | None = None,
    ) -> np.ndarray:
        """The (texts, labels) score matrix; ``allow_single`` admits one label (multi-label: a yes/no question).
        ``thresholds`` (one raw-score cut per label) tell a bf16 cross-encoder or embedding model which pairs to
        recheck in fp32 (:mod:`zstc.scorers.recheck`): the caller decides by them, not by each text's best label;
        ``margins`` (one per label, ``nan`` for none) that a label must also be near its text's best score
        (:func:`zstc.policy.decide`)."""
        if notes is not None and not isinstance(notes, list):  # a tuple failed on extend, after the scoring
            raise TypeError(
                f"notes must be a list (it receives what the scorer has to say), got {type(notes).__name__}"
            )
        texts = check_texts(texts)
        labels = check_labels(labels, allow_single=allow_single)
        if descriptions is None:
            descriptions = label_hypotheses(labels, hypotheses=self.hypotheses, template=self.template)
        elif not isinstance(descriptions, HypothesisSet):
            # A list: a generator has no len().
            descriptions = check_sequence(descriptions, "descriptions", LabelError, each="one per label")
            if (
                self.hypotheses != "dataset"
            ):  # label_hypotheses refuses descriptions these hypotheses would leave unused
                descriptions = label_hypotheses(
                    labels, hypotheses=self.hypotheses, template=self.template, descriptions=descriptions
                )
        if len(descriptions) != len(labels):
            raise LabelError(f"{len(descriptions)} descriptions for {len(labels)} labels")
        check_distinct_descriptions(labels, descriptions)
        check_labels_read_apart(self.scorer, labels, descriptions)
        # A HypothesisSet of several variants (the ensemble) is scored per variant and averaged.
        result = score_hypotheses_with_notes(self.scorer, texts, descriptions, thresholds=thresholds, margins=margins)
        if notes is not None:  # the caller's list: the classifier keeps no per-call state (it may serve threads)
            notes.extend(note for note in result.notes if note not in notes)
        return result.scores

    def predict(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        descriptions: Sequence[str] | None = None,
        *,
        notes: list[str] | None = None,
        scores: str = "probs",
        adapt: str | Adaptation | None = None,
    ) -> list[Prediction]:
        """The best label of each text; ``scores`` ``probs`` (default) or ``raw`` (see :data:`SCORE_KINDS`).
        ``notes``, when given, receives what the scorer had to say (texts truncated, ...). ``adapt``: a method of
        :data:`zstc.adapt.METHODS` that adapts the decisions (and probabilities) to these texts as one corpus
        (:meth:`adaptation`), or an :class:`~zstc.adapt.Adaptation` already estimated on a larger corpus they belong
        to (``classify --adapt`` decides a file a chunk at a time so); None or ``none``: each text decided alone."""
        check_score_kind(scores)
        self.single_label_calibration()  # a Platt calibration is refused before any text is scored (raw scores too)
        if isinstance(adapt, str):
            self.check_adapt(adapt)
        texts = check_texts(texts)
        labels = check_labels(labels)
        matrix = self.scores(texts, labels, descriptions, notes=notes)
        if adapt is not None and adapt != "none":
            adapted = adapt if isinstance(adapt, Adaptation) else self.adaptation(matrix, adapt)
            shown = adapted.probabilities(matrix) if scores == "probs" else matrix
            best = adapted.decisions(matrix)
        else:
            shown = self.probabilities(matrix) if scores == "probs" else matrix
            best = argmax_decisions(matrix)
        return [
            Prediction(text, labels[int(b)], _ranked(labels, view), _ranked(labels, row), scores)
            for text, b, view, row in zip(texts, best, shown, matrix)
        ]

    def check_adapt(self, method: str) -> str:
        """``method`` if this classifier can adapt with it: one of :data:`zstc.adapt.METHODS`, and not behind a
        shortlist (its placeholders for the labels left out are no scores to estimate from)."""
        from zstc.scorers.cascade import CascadeScorer

        return check_adapt_options(method, shortlist=isinstance(self.scorer, CascadeScorer))

    def adaptation(self, matrix: np.ndarray, method: str) -> Adaptation:
        """``method``'s per-label offsets estimated from a corpus's raw score ``matrix`` (all its texts, or a sample of
        them) at this classifier's score scale and :meth:`temperature`: apply them to any matrix of the same labels
        with :meth:`~zstc.adapt.Adaptation.decisions` or :meth:`~zstc.adapt.Adaptation.probabilities`."""
        from zstc.adapt import estimate
        from zstc.probabilities import score_scale

        self.check_adapt(method)
        return estimate(
            matrix,
            method,
            scale=score_scale(self.policy.family, self.policy.score_type),
            temperature=self.temperature(),
        )

    def default_threshold(self) -> float:
        """The multi-label threshold without options: 0.5 on Platt probabilities, else the family's."""
        return self.policy.default_threshold()

    def default_margin(self) -> float | None:
        """The multi-label margin without options (:func:`zstc.policy.default_margin`): for the embedding
        family, labels at least half as probable as the best one at :meth:`temperature`; None otherwise."""
        return self.policy.default_margin()

    def predict_multi_label(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        descriptions: Sequence[str] | None = None,
        *,
        threshold: float | None = None,
        per_label: Mapping[str, float] | None = None,
        notes: list[str] | None = None,
        scores: str | None = None,
    ) -> list[MultiLabelPrediction]:
        """Every label whose score reaches its threshold (``per_label`` overrides, else ``threshold``, else
        :meth:`default_threshold` and, for the embedding family, :meth:`default_margin` below the text's best
        label), or ``"none"``. With a Platt calibration the thresholds apply to its probabilities and ``scores``
        defaults to ``probs``; otherwise to the raw scores, and to ``raw``. ``probs`` are each label's probability,
        >= 0.5 exactly when the label passed (:meth:`zstc.policy.MultiLabelRule.probabilities`)."""
        texts = check_texts(texts)
        labels = check_labels(labels, allow_single=True)
        rule = self.policy.multi_label(labels, threshold, per_label)  # every option checked, before any text is scored
        kind = scores or ("probs" if rule.platt is not None else "raw")
        check_score_kind(kind)
        # bf16 rechecks the pairs near each label's cut (in raw scores) and, under the default margin rule, near the
        # text's best minus the margin.
        matrix = self.scores(
            texts,
            labels,
            descriptions,
            allow_single=True,
            notes=notes,
            thresholds=rule.recheck_cuts(),
            margins=rule.recheck_margins(),
        )
        scored = self.scored(matrix)
        shown = rule.probabilities(matrix, scored) if kind == "probs" else matrix
        return [
            MultiLabelPrediction(text, names, _ranked(labels, view), _ranked(labels, row), kind)
            for text, names, view, row in zip(texts, rule.label_sets(matrix, scored), shown, matrix)
        ]

    def fit_thresholds(
        self,
        texts: Sequence[str],
        gold: Sequence[Sequence[str]],
        labels: Sequence[str],
        descriptions: Sequence[str] | None = None,
        *,
        per_label: bool = False,
    ) -> tuple[float, dict[str, float]]:
        """Thresholds for :meth:`predict_multi_label` fitted on labelled texts: ``gold`` holds each text's
        labels (empty, or ``["none"]``, for a text with none of them; one string: that one label). Returns the global threshold that
        maximises label-wise weighted F1 and, with ``per_label``, each label's own (see
        :func:`zstc.multilabel.fit_thresholds`)."""
        texts = check_texts(texts)
        labels = check_labels(labels, allow_single=True)
        check_multilabel_names(labels)
        gold = check_sequence(gold, "gold", LabelError)
        if len(gold) != len(texts):
            raise LabelError(f"{len(texts)} dev texts but {len(gold)} gold label sets")
        position = {label: j for j, label in enumerate(labels)}
        truth = np.zeros((len(texts), len(labels)), dtype=bool)
        for i, names in enumerate(gold):
            if isinstance(names, str):  # one label (as a labelled file gives it), not its characters
                names = [names]
            elif isinstance(names, Iterable) and not isinstance(names, (bytes, bytearray, Mapping)):
                names = list(names)
            # A number or None was a TypeError ('int' object is not iterable), not the user's entry named.
            if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
                raise LabelError(
                    f"gold: dev text {i + 1} has {type(names).__name__} {quoted(names)}, expected a label or a list of labels",
                    parameters=("gold",),
                )
            if NONE_LABEL in names and any(name != NONE_LABEL for name in names):  # "no label" and a label: which?
                raise LabelError(
                    f"gold: dev text {i + 1} has {NONE_LABEL!r} together with {quoted(next(n for n in names if n != NONE_LABEL))}; "
                    f"{NONE_LABEL!r} means the text has none of the labels",
                    parameters=("gold",),
                )
            for name in names:
                if name == NONE_LABEL:
                    continue
                if name not in position:
                    raise LabelError(
                        f"dev text {i + 1} has label {name!r}, which is not one of the labels: {', '.join(labels)}"
                    )
                truth[i, position[name]] = True
        matrix = self.scores(texts, labels, descriptions, allow_single=True)
        platt = self.platt()
        # Behind a shortlist the fit decides as predict_multi_label does: unscored pairs never pass.
        threshold, own = fit_thresholds(
            platt.multi_label(matrix) if platt is not None else matrix,
            truth,
            labels,
            per_label=per_label,
            scored=self.scored(matrix),
        )
        bounds = self.policy.threshold_bounds()
        if bounds is None:
            return threshold, own
        # A fitted cut just past the dev set's lowest or highest score (every label passes, or none) fell outside the
        # scores' range where a score lies on its bound (a probability of 0.0), and predict_multi_label then refused
        # the threshold the fit had returned. Clipped to the bound, the cut passes every score as the fit's did (the
        # decision is score >= cut); past the top, only a score on the bound itself would pass it now.
        low, high, _ = bounds

        def clipped(cut: float) -> float:
            return float(min(max(cut, low), high))

        return clipped(threshold), {name: clipped(cut) for name, cut in own.items()}


def check_score_kind(kind: str) -> None:
    """``kind`` is one of :data:`SCORE_KINDS`, else an :class:`UnknownOptionError` naming ``scores``."""
    Option(str, constraint=Choices(SCORE_KINDS, meaning="score kind")).check("scores", kind)


def classify(
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    model: str | Path | Scorer = DEFAULT_MODEL,
    family: str | None = None,
    template: str | None = DEFAULT_TEMPLATE,
    hypotheses: str = "dataset",
    multi_label: bool = False,
    threshold: float | None = None,
    shortlist: str | int | None = None,
    scores: str | None = None,
    calibration: str | Path | Calibration | None = None,
    adapt: str | None = None,
    **options: Any,
) -> list[Prediction] | list[MultiLabelPrediction]:
    """Classify ``texts`` into ``labels``: single-label (argmax; ``scores`` probabilities by default), or
    with ``multi_label=True`` every label whose score passes ``threshold`` (default: the family's), "none"
    when no label does. ``hypotheses`` picks how labels become hypotheses (see :func:`label_hypotheses`);
    ``adapt`` adapts single-label decisions to ``texts`` as one corpus (:meth:`Classifier.predict`).
    See :class:`Classifier` to reuse a model."""
    if not isinstance(multi_label, bool):  # "yes", "false" or 0 would be read by truth value, silently
        raise OptionError(f"multi_label must be True or False, got {quoted(multi_label)}", "multi_label")
    check_multi_label_options(multi_label, threshold=threshold)  # said, not dropped (as the CLI's --threshold)
    if adapt is not None:  # said, not dropped
        check_adapt_options(adapt, multi_label=multi_label)
    classifier = Classifier(
        model,
        family=family,
        template=template,
        hypotheses=hypotheses,
        shortlist=shortlist,
        calibration=calibration,
        **options,
    )
    if multi_label:
        return classifier.predict_multi_label(texts, labels, threshold=threshold, scores=scores)
    return classifier.predict(texts, labels, scores=scores or "probs", adapt=adapt)
