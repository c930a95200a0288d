"""The decision policy: from a (texts, labels) score matrix to decisions, and the probabilities that mean them.

Every front door decides here, so none can disagree with another: the Python API (:class:`zstc.api.Classifier`,
:func:`zstc.classify`), ``zstc classify``, ``bench``'s multi-label summary and the service's zstc, Hugging Face and
rerank shapes. This module owns single-label argmax; multi-label cuts (the user's, one per label, or the family's
default), the embedding family's default margin rule, Platt calibrations, "none", shortlist masks (an unscored pair
never passes), the raw-score cuts and margins a bf16 scorer rechecks in fp32, and each rule that ties these options
together, with its one error. It sits low in the layering: it reads the family records and calibrations, never the
API, the CLI, the service or the benchmark.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit

from zstc.errors import LabelError, OptionError, UnknownNameError, quoted
from zstc.probabilities import Calibration, as_logits, default_calibration, score_scale
from zstc.models.families import families, find_family
from zstc.validation import NONE_LABEL

DEFAULT_THRESHOLDS: dict[str, float] = {
    "prob": 0.5,  # a probability: the label is more likely than not
    "logodds": 0.0,  # entailment log-odds 0 = entailment as likely as the other classes together
    "logit": 0.0,  # a raw relevance / entailment logit: its sign (a rough rule; fit one when it matters)
    "cosine": 0.3,  # embedding similarity has no natural cut; 0.3 is a rough rule for all-MiniLM-L6-v2
}
"""Default threshold per score type. Score types of the families: embedding/encoder ``cosine``, NLI its
``score_type`` (``logodds`` by default), reranker ``logit``, yes/no reranker ``prob``. An LLM's scores are
a distribution over the options (they sum to 1), so no fixed cut suits multi-label: give or fit one. A family's
measured cut (:attr:`zstc.models.families.Family.threshold`) takes precedence for its own score type."""

OWN_PROBABILITY_TEMPERATURES: dict[str, float] = {"cosine": 0.05, "logodds": 1.0, "logit": 1.0}
"""The temperature T of each label's own probability (multi-label, rerank) per score type: the probability is
``sigmoid((score - cut) / T)`` (:meth:`MultiLabelRule.probabilities`). Not the single-label softmax's, which is the
family's measured one or a calibration file's (:meth:`DecisionPolicy.temperature`). Scores that are probabilities
have none: their distance to the cut is measured in log-odds."""

PROBABILITY_SCALES: dict[str, str] = {
    "prob": "the model's scores are probabilities",
    "distribution": "the model's scores are a distribution over the labels",
}
"""The score scales (:func:`zstc.probabilities.score_scale`) that are probabilities, each in words."""

THRESHOLD_OPTIONS: tuple[str, ...] = ("threshold", "label_thresholds", "fit_thresholds")
"""The options that set multi-label cuts, by their parameter names (the CLI writes them as its flags)."""


def family_thresholds() -> dict[str, float]:
    """Each registered family's measured multi-label cut, for the families that have one (the others: the score
    type's, :data:`DEFAULT_THRESHOLDS`)."""
    return {family.name: family.threshold for family in families() if family.threshold is not None}


# -- single-label -------------------------------------------------------------------------------------------------


def argmax_decisions(scores: np.ndarray) -> np.ndarray:
    """Index of the highest-scoring label per text (the first one on ties, as numpy and the paper do)."""
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise ValueError(f"expected a (texts, labels) matrix with at least one label, got shape {scores.shape}")
    return scores.argmax(axis=1)


# -- the options' rules -------------------------------------------------------------------------------------------


def check_multi_label_options(multi_label: bool, **given: Any) -> None:
    """Cuts decide multi-label only: each of ``given`` (``threshold=...``, ``label_thresholds=...``: None or empty when
    not given) without ``multi_label`` is refused, naming it, in every front door's words (the CLI's flags)."""
    # "Empty" by type and length: numpy.float32(0.3) != [] is an empty array, whose truth value numpy refuses.
    empty = (Mapping, list, tuple)
    named = [
        name for name, value in given.items() if value is not None and not (isinstance(value, empty) and not value)
    ]
    if named and not multi_label:
        one = len(named) == 1
        raise OptionError(
            f"{', '.join(named)} appl{'ies' if one else 'y'} to multi_label classification: give multi_label, "
            f"or leave {'it' if one else 'them'} out",
            *named,
            "multi_label",
        )


def check_multilabel_names(labels: Sequence[str]) -> None:
    """Refuse a label named ``none``: multi-label predicts it for a text that no label passes."""
    if NONE_LABEL in labels:
        raise LabelError(
            f"{NONE_LABEL!r} is what multi-label classification predicts when no label applies; rename that label"
        )


def default_rule_applies(threshold: float | None, labels: Iterable[str], per_label: Mapping[str, float]) -> bool:
    """Whether the family's default rule (its cut and, for a family with ``relative_margin``, its margin) decides some
    label: no ``threshold`` of the user's, and a label without a cut of its own in ``per_label``."""
    return threshold is None and not all(name in per_label for name in labels)


def check_margin_rule(
    labels: Sequence[str], margin: float | None, per_label: Mapping[str, float] | None = None
) -> None:
    """Refuse one label under a margin rule (:func:`default_margin`, the embedding family's default): the rule
    keeps the labels near a text's best one, and a single label is its own best, so it would pass on every text
    (a cut of its own in ``per_label`` decides it instead)."""
    if margin is not None and len(labels) == 1 and labels[0] not in (per_label or {}):
        raise LabelError(
            f"one label ({quoted(labels[0])}) with the default multi-label rule of embedding models, which "
            "keeps the labels near a text's best one: a single label would pass on every text; give threshold "
            "(or a cut per label, or one fitted on labelled texts), or more labels",
            parameters=("threshold",),
        )


def parse_label_thresholds(
    items: Sequence[str], labels: Sequence[str], parameter: str = "label_thresholds"
) -> dict[str, float]:
    """``["sports=0.4", ...]`` -> ``{"sports": 0.4}``, each label checked against ``labels``; errors name ``parameter``."""
    parsed: dict[str, float] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        try:
            threshold = float(value)
        except ValueError:
            threshold = None
        if not sep or not name or threshold is None or not math.isfinite(threshold):
            raise LabelError(
                f"{parameter}: each must look like LABEL=NUMBER, got {quoted(item)}", parameters=(parameter,)
            )
        _check_label_named(name, labels, parameter)
        if name in parsed and parsed[name] != threshold:  # the last would win, silently
            raise LabelError(
                f"{parameter}: two thresholds for {quoted(name)} ({parsed[name]:g} and {threshold:g}); give one",
                parameters=(parameter,),
            )
        parsed[name] = threshold
    return parsed


def check_label_thresholds(
    per_label: Mapping[str, float], labels: Sequence[str], parameter: str = "per_label"
) -> dict[str, float]:
    """A mapping of per-label thresholds checked as :func:`parse_label_thresholds` checks ``LABEL=NUMBER`` items
    (each label one of ``labels``, each threshold a finite number)."""
    from zstc.validation import OPTIONS

    if not isinstance(per_label, Mapping):  # a list of numbers has no label names to match
        raise OptionError(
            f"{parameter} must be a mapping of label to threshold, got {type(per_label).__name__}", parameter
        )
    for name, value in per_label.items():
        OPTIONS["threshold"].check(f"{parameter}[{name!r}]", value)  # "per_label['a'] must be a finite number, got nan"
    checked = {str(name): float(value) for name, value in per_label.items()}
    for name in checked:
        _check_label_named(name, labels, parameter)
    return checked


def check_threshold_range(
    threshold: float | None,
    per_label: Mapping[str, float],
    low: float,
    high: float,
    scale: str,
    *,
    parameter: str = "threshold",
    per_label_parameter: str = "per_label",
) -> None:
    """Thresholds on scores bounded to [``low``, ``high``] (probabilities: [0, 1]; cosines: [-1, 1]) lie in that
    range: above it no label passes (every text "none"), below it every label does, and neither was said.
    ``scale`` says what the scores are (``probabilities here (a Platt calibration's)``); errors name ``parameter`` /
    ``per_label_parameter`` (the CLI writes them as its flags). Log-odds and logits have no such bounds."""
    from zstc.validation import Interval, Option

    rule = Option(float, constraint=Interval(low, high))
    found = rule.problem(threshold) if threshold is not None else None
    if found:
        raise OptionError(f"{parameter} {found[1]}: multi-label decides on {scale}", parameter)
    for name, value in per_label.items():
        found = rule.problem(value)
        if found:
            raise OptionError(
                f"{per_label_parameter}: the threshold of {quoted(name)} {found[1]}: multi-label decides on {scale}",
                per_label_parameter,
            )


def _check_label_named(name: str, labels: Sequence[str], parameter: str) -> None:
    """A per-label threshold's label must be one of ``labels``."""
    if name not in labels:
        known = ", ".join(labels)
        raise LabelError(
            f"{parameter}: threshold given for {quoted(name)}, which is not one of the labels "
            f"({known if len(known) <= 300 else known[:300] + '...'})",
            parameters=(parameter,),
        )


# -- defaults -----------------------------------------------------------------------------------------------------


def score_type_of(scorer: Any) -> str | None:
    """The score type a scorer produces: its own ``score_type`` setting, else its family's."""
    described = scorer.describe() if hasattr(scorer, "describe") else {}
    record = find_family(getattr(scorer, "family", None))
    return getattr(scorer, "score_type", None) or described.get("score_type") or (record.score_type if record else None)


def default_margin(family: str | None, temperature: float) -> float | None:
    """The default multi-label margin of ``family`` (None: no margin): ``temperature * ln 2``, so a label passes when
    its single-label probability (softmax at ``temperature``) is at least half the best label's. Only families whose
    record says ``relative_margin`` (the embedding family's cosines: its record says why)."""
    record = find_family(family)
    return temperature * math.log(2) if record is not None and record.relative_margin else None


def default_threshold(score_type: str | None, family: str | None = None) -> float:
    """The family's measured threshold (its record's ``threshold``) for its own score type, else the score type's
    (:data:`DEFAULT_THRESHOLDS`)."""
    record = find_family(family)
    if record is not None and record.threshold is not None and score_type in (None, record.score_type):
        return record.threshold
    if score_type not in DEFAULT_THRESHOLDS:
        # No score type: an LLM's scores, a distribution over the labels (see DEFAULT_THRESHOLDS).
        what = (
            f"scores of type {score_type!r}"
            if score_type is not None
            else f"{family or 'these'} models' scores (a distribution over the labels)"
        )
        raise UnknownNameError(
            f"{what} have no default multi-label cut; give threshold, a per-label one for every label, or fit one on "
            "labelled texts; "
            f"defaults exist for score types {', '.join(DEFAULT_THRESHOLDS)}",
            parameters=("threshold",),
        )
    return DEFAULT_THRESHOLDS[score_type]


def score_bounds(family: str | None, score_type: str | None) -> tuple[float, float, str] | None:
    """The range a model's raw scores lie in, so a multi-label threshold on them must too, with what they are in
    words (:func:`check_threshold_range`'s ``scale``): [0, 1] on probabilities (score type ``prob``, an LLM's
    distribution over its options), [-1, 1] on cosines; None for log-odds and logits, which any finite cut suits."""
    scale = score_scale(family, score_type)
    if scale in PROBABILITY_SCALES:
        return 0.0, 1.0, f"probabilities here ({PROBABILITY_SCALES[scale]})"
    if score_type == "cosine":  # score_scale reads a scorer of no score type as cosines; its cuts are not bounded here
        return -1.0, 1.0, "cosine similarities here, which lie in [-1, 1]"
    return None


# -- multi-label decisions ----------------------------------------------------------------------------------------


def label_thresholds(
    n_labels: int, threshold: float, labels: Sequence[str] | None = None, per_label: Mapping[str, float] | None = None
) -> np.ndarray:
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


def binding_cuts(
    scores: np.ndarray,
    labels: Sequence[str],
    threshold: float,
    per_label: Mapping[str, float] | None = None,
    margin: float | None = None,
) -> np.ndarray:
    """The (texts, labels) cut each score must reach to pass: its label's cut (``per_label``'s, else ``threshold``)
    and, with a ``margin`` (the default rule's, :func:`default_margin`), for a label without a cut of its own, also
    the row's best score minus ``margin``, whichever is higher."""
    cuts = np.broadcast_to(label_thresholds(scores.shape[1], threshold, labels, per_label)[None, :], scores.shape)
    if margin is None:
        return np.array(cuts, dtype=np.float64)
    own_cut = np.array([label in (per_label or {}) for label in labels], dtype=bool)
    near_best = np.broadcast_to(scores.max(axis=1, keepdims=True) - margin, scores.shape)
    return np.where(own_cut[None, :], cuts, np.maximum(cuts, near_best))


def decide(
    scores: np.ndarray,
    labels: Sequence[str],
    threshold: float,
    per_label: Mapping[str, float] | None = None,
    margin: float | None = None,
) -> np.ndarray:
    """Boolean (texts, labels) decisions; a row with no label set is "none": each score reaches its
    :func:`binding_cuts` (a label with a cut of its own is decided by that cut alone; under the default rule's
    ``margin`` the others must also be near the row's best)."""
    return np.asarray(scores >= binding_cuts(scores, labels, threshold, per_label, margin))


def label_sets(decisions: np.ndarray, labels: Sequence[str]) -> list[list[str]]:
    """Each row's labels, or ``["none"]`` when none passed."""
    return [[labels[int(j)] for j in np.flatnonzero(row)] or [NONE_LABEL] for row in decisions]


@dataclass(frozen=True)
class MultiLabelRule:
    """One multi-label decision rule, resolved: each label's cut on what it decides on (a Platt calibration's
    probabilities, else the raw scores), the default rule's margin for the labels without a cut of their own, and how
    far from a cut a probability of 0.5 sits. Built by :meth:`DecisionPolicy.multi_label`, which checked every option."""

    labels: tuple[str, ...]
    threshold: float
    """The cut of the labels without their own (NaN, never read, when every label has its own)."""
    per_label: dict[str, float] = field(default_factory=dict)
    margin: float | None = None
    platt: Calibration | None = None
    probability_temperature: float | None = None
    """T of :meth:`probabilities` on raw scores; None where what is decided on is a probability (log-odds distances)."""

    def cuts(self) -> np.ndarray:
        """Each label's cut on what the rule decides on."""
        return label_thresholds(len(self.labels), self.threshold, self.labels, self.per_label)

    def recheck_cuts(self) -> np.ndarray:
        """Each label's cut in raw scores (through Platt's inverse): the pairs near it a bf16 scorer rechecks in fp32."""
        cuts = self.cuts()
        return self.platt.score_at(cuts) if self.platt is not None else cuts

    def recheck_margins(self) -> list[float] | None:
        """Under the default margin rule, each label's margin (NaN for a label with a cut of its own): a bf16 scorer
        also rechecks the pairs near a text's best minus it. None without a margin."""
        if self.margin is None:
            return None
        return [math.nan if name in self.per_label else self.margin for name in self.labels]

    def decided_on(self, matrix: np.ndarray) -> np.ndarray:
        """What the cuts apply to: a Platt calibration's probabilities of the raw ``matrix``, else ``matrix``."""
        return self.platt.multi_label(matrix) if self.platt is not None else np.asarray(matrix, dtype=np.float64)

    def decide(self, matrix: np.ndarray, scored: np.ndarray | None) -> np.ndarray:
        """Boolean (texts, labels) decisions of a raw score ``matrix``; ``scored`` (behind a shortlist: which pairs the
        model scored, None for all) masks the pairs never scored, which never pass whatever their placeholder."""
        chosen = decide(self.decided_on(matrix), self.labels, self.threshold, self.per_label, self.margin)
        return chosen if scored is None else chosen & scored

    def probabilities(self, matrix: np.ndarray, scored: np.ndarray | None) -> np.ndarray:
        """Each (text, label) pair's probability, which is >= 0.5 exactly when the pair passed (:meth:`decide`).

        It is the sigmoid of the signed distance from what is decided on to the pair's binding cut (its label's cut
        or, under the margin rule, the text's best minus the margin, whichever is higher): ``sigmoid((s - cut) / T)``
        on raw scores, with T by score type (:data:`OWN_PROBABILITY_TEMPERATURES`); on probabilities (a Platt
        calibration's, yes/no's, an LLM's distribution) the distance in log-odds, ``sigmoid(logit(p) - logit(cut))``,
        so at a cut of 0.5 the probability is ``p`` itself (with Platt and the default cut: Platt's own). Monotone in
        the score, centred on the decision; an unscored pair (behind a shortlist) gets 0."""
        values = self.decided_on(matrix)
        cuts = binding_cuts(values, self.labels, self.threshold, self.per_label, self.margin)
        if self.probability_temperature is None:
            with np.errstate(divide="ignore", invalid="ignore"):
                distance = as_logits(values, "prob") - as_logits(cuts, "prob")
            probabilities = np.where(cuts == 0.5, values, expit(distance))
        else:
            probabilities = expit((values - cuts) / self.probability_temperature)
        # Rounding at the cut itself (a score equal to it, a sigmoid of a distance of 1e-17) never says otherwise.
        passed = values >= cuts
        probabilities = np.where(
            passed, np.maximum(probabilities, 0.5), np.minimum(probabilities, np.nextafter(0.5, 0))
        )
        if scored is not None:
            probabilities = np.where(scored, probabilities, 0.0)
        return np.asarray(probabilities, dtype=np.float64)

    def label_sets(self, matrix: np.ndarray, scored: np.ndarray | None) -> list[list[str]]:
        """Each text's labels that passed, highest score first (ties keep the label order), or ``["none"]``."""
        chosen = self.decide(matrix, scored)
        order = np.argsort(-np.asarray(matrix, dtype=np.float64), axis=1, kind="stable")
        return [[self.labels[j] for j in row if passed[j]] or [NONE_LABEL] for row, passed in zip(order, chosen)]


@dataclass(frozen=True)
class DecisionPolicy:
    """How one scorer's scores become decisions: its family and score type, and a calibration (a temperature for
    single-label probabilities, or a Platt scaling that multi-label decides on). Build it with :meth:`for_scorer`."""

    family: str
    score_type: str | None
    calibration: Calibration | None = None
    calibration_name: str = "calibration"
    """How messages name the calibration: a file's path, else ``calibration``."""

    @classmethod
    def for_scorer(
        cls, scorer: Any, calibration: Calibration | None = None, calibration_name: str = "calibration"
    ) -> DecisionPolicy:
        """The policy of ``scorer``'s scores (its family, ``""`` for a scorer that names none, and score type)."""
        return cls(str(getattr(scorer, "family", "") or ""), score_type_of(scorer), calibration, calibration_name)

    # -- single-label ----------------------------------------------------------------------------------------------

    def single_label_calibration(self) -> Calibration:
        """The temperature single-label probabilities use: the calibration's, else the family's default. A Platt
        calibration is refused (an :class:`OptionError`): it is for multi-label, and the family's temperature in its
        place would ignore it silently."""
        if self.calibration is None:
            return default_calibration(self.family)
        if self.calibration.method != "temperature":
            raise OptionError(
                f"{self.calibration_name} is a {self.calibration.method} calibration, for predict_multi_label; "
                "single-label probabilities need a temperature (zstc calibrate --method temperature)",
                "calibration",
            )
        return self.calibration

    def temperature(self) -> float:
        """The temperature of single-label probabilities: the calibration's, else the family's default."""
        if self.calibration is not None and self.calibration.method == "temperature":
            return self.calibration.parameters["temperature"]
        return default_calibration(self.family).parameters["temperature"]

    def single_label_probabilities(self, matrix: np.ndarray, scored: np.ndarray | None) -> np.ndarray:
        """Softmax over each row's labels at :meth:`temperature` (behind a shortlist, over the scored labels; the
        others get 0)."""
        probabilities = self.single_label_calibration().single_label(matrix, score_scale(self.family, self.score_type))
        if scored is None:
            return probabilities
        kept = np.where(scored, probabilities, 0.0)
        return np.asarray(kept / kept.sum(axis=1, keepdims=True))

    # -- multi-label -----------------------------------------------------------------------------------------------

    def platt(self) -> Calibration | None:
        """The Platt calibration multi-label decides on (the calibration when it is one), else None."""
        return self.calibration if self.calibration is not None and self.calibration.method == "platt" else None

    def default_threshold(self) -> float:
        """The multi-label cut without options: 0.5 on a Platt calibration's probabilities, else the family's."""
        return 0.5 if self.platt() is not None else default_threshold(self.score_type, self.family)

    def default_margin(self) -> float | None:
        """The multi-label margin without options (:func:`default_margin`): for the embedding family, labels at least
        half as probable as the best one at :meth:`temperature`; None otherwise, and on a Platt calibration."""
        return None if self.platt() is not None else default_margin(self.family, self.temperature())

    def probability_scale(self) -> str | None:
        """What multi-label decides on when it is probabilities (a Platt calibration's, or scores that are
        probabilities: score type ``prob``, an LLM's distribution over the options), in words; None for raw scores."""
        if self.platt() is not None:
            return "a Platt calibration's"
        return PROBABILITY_SCALES.get(score_scale(self.family, self.score_type))

    def threshold_bounds(self) -> tuple[float, float, str] | None:
        """The range a multi-label threshold must lie in, with what the scores are in words: [0, 1] on probabilities
        (:meth:`probability_scale`), [-1, 1] on uncalibrated cosines; None for log-odds and logits (any finite cut)."""
        scale = self.probability_scale()
        if scale is not None:
            return 0.0, 1.0, f"probabilities here ({scale})"
        # A cosine cut of 5 made every text "none", -5 passed every label; 2 and -1 did the same on probabilities.
        return score_bounds(self.family, self.score_type)

    def check_thresholds(
        self, threshold: float | None, per_label: Mapping[str, float], *, per_label_parameter: str = "per_label"
    ) -> None:
        """Multi-label thresholds lie in :meth:`threshold_bounds` (log-odds and logit cuts are not bounded)."""
        bounds = self.threshold_bounds()
        if bounds is not None:
            low, high, scale = bounds
            check_threshold_range(threshold, per_label, low, high, scale, per_label_parameter=per_label_parameter)

    def probability_temperature(self) -> float | None:
        """T of the multi-label and rerank probabilities on raw scores; None where they are probabilities already."""
        if self.probability_scale() is not None:
            return None
        return OWN_PROBABILITY_TEMPERATURES.get(score_scale(self.family, self.score_type), 1.0)

    def multi_label(
        self,
        labels: Sequence[str],
        threshold: float | None = None,
        per_label: Mapping[str, float] | None = None,
        *,
        per_label_parameter: str = "per_label",
    ) -> MultiLabelRule:
        """The rule deciding ``labels``, every option checked: ``per_label`` cuts (named ``per_label_parameter`` in
        errors) decide their labels alone; the others pass ``threshold``, else :meth:`default_threshold` and, for the
        embedding family, :meth:`default_margin` below the text's best label (a cut of the user's is a plain cut)."""
        from zstc.validation import check_options

        check_options({"threshold": threshold})  # a NaN threshold would make every text "none"
        check_multilabel_names(labels)
        per_label = check_label_thresholds(
            per_label or {}, labels, per_label_parameter
        )  # a NaN one: its label never passes
        self.check_thresholds(threshold, per_label, per_label_parameter=per_label_parameter)
        applies = default_rule_applies(threshold, labels, per_label)
        margin = self.default_margin() if applies else None
        check_margin_rule(labels, margin, per_label)
        # No cut is needed (NaN, never read) when every label has its own, so a family without a default (llm) takes
        # per-label thresholds alone.
        cut = threshold if threshold is not None else self.default_threshold() if applies else math.nan
        return MultiLabelRule(tuple(labels), cut, per_label, margin, self.platt(), self.probability_temperature())

    def rule_without_options(self, labels: Sequence[str]) -> MultiLabelRule:
        """The rule of a front door that takes no cut (the Hugging Face shape): the default rule, except that one label,
        which the margin rule would pass on every text (:func:`check_margin_rule`), is decided by the family's cut."""
        try:
            cut = self.default_threshold()
        except UnknownNameError as error:  # "give threshold" would send the client to a field this shape does not have
            raise UnknownNameError(
                f"{error}; this shape takes no threshold: POST /classify with multi_label and threshold "
                "or label_thresholds"
            ) from None
        return self.multi_label(labels, cut if len(labels) == 1 and self.default_margin() is not None else None)

    def own_probability_sigmoid(self) -> tuple[float, float] | None:
        """``(center, T)`` of a label's own probability at the default cut without margin (rerank's relevance; ``GET
        /info`` publishes it), or None where the scores are probabilities already (they pass unchanged)."""
        temperature = OWN_PROBABILITY_TEMPERATURES.get(self.score_type or "")
        if self.score_type in ("prob", None) or temperature is None:
            return None
        return default_threshold(self.score_type, self.family), temperature

    def relevance(self, scores: np.ndarray) -> np.ndarray:
        """Each score's own probability, on its own (rerank: no other label to be near, no calibration):
        ``sigmoid((score - center) / T)`` (:meth:`own_probability_sigmoid`); probability scores unchanged."""
        scores = np.asarray(scores, dtype=np.float64)
        sigmoid = self.own_probability_sigmoid()
        if sigmoid is None:
            return scores
        center, temperature = sigmoid
        return np.asarray(1 / (1 + np.exp(-(scores - center) / temperature)))
