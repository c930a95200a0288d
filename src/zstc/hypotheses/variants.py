"""Hypotheses from labels, as Yin et al. (2019) build them (PROTOCOL.md s.7).

A label becomes a hypothesis by filling its aspect's interpretation template:

* ``name``: the template filled with the label name ("this text is about sports");
* ``definition``: filled with the label's WordNet definition (:mod:`zstc.hypotheses.wordnet`; the name when WordNet
  has no entry, which the result notes say, as they say the parts of a label WordNet lacks and the labels
  that get one definition: :func:`tied_labels`);
* ``both``: filled with "name, definition";
* ``ensemble``: the three above, each scored, the score matrices averaged;
* ``dataset``: the benchmark's own hand-written verbalizers (BTZSC's default), no template involved.

The template is the user's own (exactly one ``{}``), or the aspect's: topic, emotion or situation, chosen
from a task's family by :data:`FAMILY_ASPECT`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zstc.scorers.base import ScoreResult, add_note, capabilities, score_with_notes
from zstc.scorers.recheck import label_cuts, margin_cuts, pair_cuts, recheck_in_fp32
from zstc.errors import LabelError, quoted
from zstc.validation import HYPOTHESIS_VARIANTS, OPTIONS, check_template

HYPOTHESES = OPTIONS["hypotheses"]

ASPECT_TEMPLATES: dict[str, str] = {
    "topic": "this text is about {}",
    "emotion": "this text expresses {}",
    "situation": "the people there need {}",
}
"""Yin et al.'s interpretation of each aspect, as a template: PROTOCOL.md s.7's strings exactly (lower case, no
final period), since a cased model reads "This text is about sports." as another input."""

FAMILY_ASPECT: dict[str, str] = {
    "topic": "topic",
    "emotion": "emotion",
    # Yin et al. have no sentiment aspect; a sentiment is something a text expresses, like an emotion.
    "sentiment": "emotion",
    # BTZSC's intents are what a customer or user writes about (banking77's "card_arrival", massive's
    # "alarm_set"); Yin's situation aspect ("the people there need {}") names needs in disaster reports.
    "intent": "topic",
}
"""Which aspect template a BTZSC task family uses when no template is given."""

DEFAULT_ASPECT = "topic"
VARIANTS: tuple[str, ...] = HYPOTHESIS_VARIANTS
"""The hypothesis variants, as the ``hypotheses`` option declares them (:data:`zstc.validation.OPTIONS`)."""
ENSEMBLE_MEMBERS: tuple[str, ...] = ("name", "definition", "both")


@dataclass(frozen=True)
class HypothesisSet(Sequence[str]):
    """The hypotheses of each label under one or more variants; scores are averaged over the variants.

    As a sequence it is one string per label (the variants joined by " | "), which is what result files
    record as the exact hypotheses used.
    """

    variants: dict[str, list[str]]
    """Variant name -> one hypothesis per label."""
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        lengths = {len(h) for h in self.variants.values()}
        if not self.variants or len(lengths) != 1:
            raise ValueError("a hypothesis set needs at least one variant, all with one hypothesis per label")

    def __len__(self) -> int:
        return len(next(iter(self.variants.values())))

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        return " | ".join(hypotheses[index] for hypotheses in self.variants.values())

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))


def aspect_template(family: str | None) -> str:
    """The aspect template of a task family (:data:`FAMILY_ASPECT`); a family it does not name gets the
    :data:`DEFAULT_ASPECT`'s."""
    return ASPECT_TEMPLATES[FAMILY_ASPECT.get(family or "", DEFAULT_ASPECT)]


def readable_label(name: str) -> str:
    """A label name as words: identifiers lose their underscores ("card_arrival" -> "card arrival")."""
    return " ".join(name.replace("_", " ").split())


def _definitions(labels: Sequence[str]) -> tuple[list[str | None], list[str]]:
    from zstc.hypotheses.wordnet import define_label, load_wordnet

    wordnet = load_wordnet()
    found = [define_label(label, wordnet) for label in labels]
    missing = [label for label, d in zip(labels, found) if d.text is None]
    notes = (
        [f"no WordNet definition for {len(missing)} label(s), described by name: {', '.join(missing)}"]
        if missing
        else []
    )
    partial = [
        f"{label} (without {', '.join(repr(part) for part in d.left_out)})"
        for label, d in zip(labels, found)
        if d.left_out
    ]
    if partial:  # said: "Sci/Tech" defined as "tech" alone reads as a technical school, and the user should know
        notes.append(
            f"WordNet defines only part of {len(partial)} label(s), the rest left out of their definition: "
            f"{'; '.join(partial)}"
        )
    return [d.text for d in found], notes


def tied_labels(labels: Sequence[str], hypotheses: Sequence[str]) -> list[list[str]]:
    """Groups of labels (in label order, groups in order of their first label) that get the very same
    hypothesis: their scores tie on every text and argmax always picks the first of a group."""
    groups: dict[str, list[str]] = {}
    for label, hypothesis in zip(labels, hypotheses):
        groups.setdefault(hypothesis, []).append(label)
    return [group for group in groups.values() if len(group) > 1]


def tie_message(variant: str, groups: list[list[str]]) -> str:
    """What to tell a user whose labels :func:`tied_labels` found tied under ``variant`` (one line)."""
    shown = "; ".join(", ".join(quoted(label) for label in group) for group in groups[:5]) + (
        "; ..." if len(groups) > 5 else ""
    )
    why = "get the same WordNet definition" if variant == "definition" else f"get the same {variant} hypothesis"
    return (
        f"{sum(map(len, groups))} labels in {len(groups)} group(s) {why}, so no model can tell them apart and only "
        f"the first of each group can be predicted: {shown}; hypotheses both or name keeps them apart"
    )


def build_hypotheses(
    labels: Sequence[str], variant: str, template: str, *, dataset: Sequence[str] | None = None
) -> HypothesisSet:
    """The hypotheses of ``labels`` under ``variant`` (see the module docstring), filled into ``template``."""
    HYPOTHESES.check("hypotheses", variant)
    if variant == "dataset":
        if dataset is None:
            raise LabelError("the 'dataset' hypotheses need the dataset's own label descriptions")
        return HypothesisSet({"dataset": list(dataset)})
    template = check_template(template)
    names = [readable_label(label) for label in labels]
    members = ENSEMBLE_MEMBERS if variant == "ensemble" else (variant,)
    notes: list[str] = []
    definitions: list[str | None] = [None] * len(labels)
    if "definition" in members or "both" in members:
        definitions, notes = _definitions(labels)
    fillers = {
        "name": names,
        "definition": [d or n for n, d in zip(names, definitions)],
        "both": [f"{n}, {d}" if d else n for n, d in zip(names, definitions)],
    }
    built = HypothesisSet({member: [template.format(f) for f in fillers[member]] for member in members}, notes)
    # Tied in every variant (the joined strings): WordNet gives banking77's 8 "*card*" labels one definition. The
    # set is still built (bench scores it, as the variant asks) but says so; classify refuses it (label_hypotheses).
    groups = tied_labels(labels, list(built))
    if groups:
        built.notes.append(tie_message(variant, groups))
    return built


def make_hypothesis_provider(variant: str, template: str | None = None) -> Callable[[Any], HypothesisSet]:
    """A ``Task -> HypothesisSet`` function for :class:`zstc.benchmark.runner.Bench` (template: the user's or the aspect's)."""
    HYPOTHESES.check("hypotheses", variant)
    if template is not None:
        check_template(template)

    def provide(task: Any) -> HypothesisSet:
        return build_hypotheses(
            task.label_names, variant, template or aspect_template(task.family), dataset=task.hypotheses
        )

    return provide


def score_hypotheses(
    scorer: Any, texts: Sequence[str], hypotheses: Sequence[str], *, show_progress: bool = False
) -> np.ndarray:
    """The score matrix of ``texts`` against ``hypotheses``; a :class:`HypothesisSet` of several variants
    is scored once per variant and the matrices averaged (Yin et al.'s ensemble)."""
    return score_hypotheses_with_notes(scorer, texts, hypotheses, show_progress=show_progress).scores


def score_hypotheses_with_notes(
    scorer: Any,
    texts: Sequence[str],
    hypotheses: Sequence[str],
    *,
    show_progress: bool = False,
    thresholds: Sequence[float] | np.ndarray | None = None,
    margins: Sequence[float] | np.ndarray | None = None,
) -> ScoreResult:
    """:func:`score_hypotheses` with the scorer's notes (each note once, whichever variant gave it).

    ``thresholds`` (one per label: multi-label cuts) and ``margins`` (the embedding family's default rule) reach a
    scorer that rechecks pairs near them in bf16 (:func:`zstc.scorers.base.rechecks_thresholds`). An average of several
    variants is decided on the average, so in bf16 that is what is rechecked (:func:`average_rechecked`), with the cuts
    and margins taken on it.
    """
    if not isinstance(hypotheses, HypothesisSet) or len(hypotheses.variants) == 1:
        single = (
            list(next(iter(hypotheses.variants.values())))
            if isinstance(hypotheses, HypothesisSet)
            else list(hypotheses)
        )
        return score_with_notes(
            scorer, texts, single, show_progress=show_progress, thresholds=thresholds, margins=margins
        )
    variants = [list(variant) for variant in hypotheses.variants.values()]
    if rechecks_average(scorer):
        return average_rechecked(
            scorer, texts, variants, show_progress=show_progress, thresholds=thresholds, margins=margins
        )
    # fp32 (nothing to recheck), or a scorer without twins (a cascade, a user's object): each variant rechecks its own
    # near ties, as it would alone.
    return _averaged([score_with_notes(scorer, texts, h, show_progress=show_progress) for h in variants])


def _averaged(results: Sequence[ScoreResult]) -> ScoreResult:
    """The mean of the variants' score matrices, as float32, with each note once."""
    notes: list[str] = []
    for result in results:
        for note in result.notes:
            add_note(notes, note)
    return ScoreResult(np.mean([result.scores for result in results], axis=0).astype(np.float32), notes)


def rechecks_average(scorer: Any) -> bool:
    """Whether an average of ``scorer``'s scores is rechecked as a whole (:func:`average_rechecked`): a bf16 scorer
    with a recheck margin whose class makes twins in another precision (:meth:`zstc.scorers.base.TorchScorer.twin`;
    a cascade does not: its shortlists would be drawn again for the rescored texts)."""
    return capabilities(scorer).twin and scorer.precision == "bf16" and scorer.recheck_margin > 0


def average_rechecked(
    scorer: Any,
    texts: Sequence[str],
    variants: Sequence[Sequence[str]],
    *,
    show_progress: bool = False,
    thresholds: Sequence[float] | np.ndarray | None = None,
    margins: Sequence[float] | np.ndarray | None = None,
) -> ScoreResult:
    """The mean of ``scorer``'s bf16 scores of ``texts`` against each variant of the labels' descriptions (one list per
    variant, one description per label), with every text whose decision on the mean bf16 could change scored again in
    fp32 (:func:`~zstc.scorers.recheck.recheck_in_fp32`: near ties of its best label, or near the cuts of
    ``thresholds`` and of the embedding family's default-rule ``margins``, both on the mean), and the notes saying how
    many.

    The variants run in bf16 without a recheck of their own (a variant's near tie is not the average's). The mean is
    rechecked with the scorer's margin, in the scores it returns, for two reasons that keep
    :mod:`zstc.scorers.recheck`'s guarantee: the mean's bf16 error is at most the largest of its variants' errors;
    and where the family rechecks in another space (a cross-encoder's logits are what it returns; a yes/no judge's
    ``p_yes`` is the sigmoid of its log-odds, ``|dp| <= |dlogit| / 4``; an LLM's probabilities ``exp`` of its
    log-probabilities, ``|dp| <= |dlog p|``) an error is no larger in the returned probabilities. The margin widens by
    itself if the texts rescored show a larger error. A text is rescored whole, every variant and label in fp32 (by
    the scorer's fp32 twin, which shares its model), so the notes count texts. The recheck step is
    :func:`recheck_means` (the service's too, for a batch of requests each with its own labels).
    """
    plain, exact_scorer = scorer.twin(recheck_margin=0.0), scorer.twin(precision="fp32")
    averaged = _averaged([score_with_notes(plain, texts, variant, show_progress=show_progress) for variant in variants])
    mean = averaged.scores

    def rescore(rows: np.ndarray) -> list[np.ndarray]:
        again = [texts[int(i)] for i in rows]
        return list(np.mean([score_with_notes(exact_scorer, again, variant).scores for variant in variants], axis=0))

    n_texts = len(mean)
    rechecked, notes = recheck_means(
        list(mean), [thresholds] * n_texts, [margins] * n_texts, scorer.recheck_margin, rescore
    )
    return ScoreResult(np.array(rechecked, dtype=np.float32).reshape(mean.shape), averaged.notes + notes)


Cuts = Sequence[float] | np.ndarray | None


def recheck_means(
    means: Sequence[np.ndarray],
    thresholds: Sequence[Cuts],
    margins: Sequence[Cuts],
    margin: float,
    rescore: Callable[[np.ndarray], Sequence[np.ndarray]],
) -> tuple[list[np.ndarray], list[str]]:
    """The recheck step of :func:`average_rechecked`, for texts with labels of their own (a service's batch): each
    text's bf16 mean row (one score per label, averaged over the variants), with every text whose decision on it bf16
    could change replaced by its fp32 mean, and the notes saying how many texts.

    ``thresholds[i]`` and ``margins[i]``: text ``i``'s multi-label cuts and the embedding family's default-rule margins,
    one per label (None: none; a ``nan`` margin: a label with a cut of its own), taken on the mean as
    :func:`~zstc.scorers.recheck.recheck_in_fp32` takes them. ``rescore(rows)``: the fp32 mean rows of the texts
    ``rows`` (indices into ``means``, ascending), every variant and label scored again.
    """
    lengths = [len(mean) for mean in means]
    flat = np.concatenate(means) if means else np.zeros(0, dtype=np.float32)
    groups = np.repeat(np.arange(len(means)), lengths)
    cuts = pair_cuts([label_cuts(cut, n) for cut, n in zip(thresholds, lengths)], lengths)
    near = pair_cuts([label_cuts(rule, n) for rule, n in zip(margins, lengths)], lengths)
    if near is not None:
        cuts = margin_cuts(flat, groups, cuts, near)
    starts = np.cumsum([0, *lengths])

    def rescore_pairs(todo: np.ndarray) -> np.ndarray:
        rows = np.unique(groups[todo])
        exact = flat.copy()
        for row, fresh in zip(rows, rescore(rows)):
            exact[starts[row] : starts[row + 1]] = fresh
        return exact[todo]

    rechecked, notes = recheck_in_fp32(flat, groups, cuts, margin, rescore_pairs, whole_groups=True, unit="texts")
    return [rechecked[starts[i] : starts[i + 1]] for i in range(len(means))], notes
