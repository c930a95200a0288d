"""A task is what a scorer is evaluated on: texts, gold class indices, and the candidate label set.

Data flows one way: loaders (``zstc.benchmark.data``) build a :class:`Task`; a scorer turns its texts and
hypotheses into a score matrix; decisions and metrics follow. Nothing here touches a model.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import numpy as np

from zstc.errors import OptionError, UnknownNameError
from zstc.validation import check_choice, check_options

NO_HYPOTHESIS = -1
"""Gold index of a text whose class has no hypothesis among the candidates (banking77, massive)."""

UNLABELLED_POLICIES: tuple[str, ...] = ("paper", "exclude")
"""What ``--unlabelled`` does with texts whose gold class has no hypothesis (:func:`apply_unlabelled_policy`)."""

SAMPLING_METHODS: tuple[str, ...] = ("stratified", "paper", "harness")
"""How ``--max-samples`` draws: a seeded stratified sample; the texts the paper scored (:func:`paper_sample`); or
the public harness's draw as its current code makes it (:func:`harness_sample`), which differs from the paper's
only on rottentomatoes (:data:`PAPER_WHOLE_DATASETS`)."""

HARNESS_DRAWS: frozenset[str] = frozenset({"paper", "harness"})
"""The sampling methods that draw positions in the whole BTZSC file, as the public harness does (texts 0 and 1, then
``random.Random(0)``): their samples are the paper's texts, drawn before any text is dropped."""


@dataclass(frozen=True)
class Task:
    """Texts with gold labels and the candidate labels they are classified into.

    ``gold[i]`` indexes ``label_names`` and ``hypotheses``; ``NO_HYPOTHESIS`` (-1) marks a text whose gold
    class is not among the candidates. ``source_index[i]`` is the row of text ``i`` in its source, so
    predictions can be traced back after sampling.
    """

    name: str
    texts: list[str]
    gold: np.ndarray
    label_names: list[str]
    hypotheses: list[str]
    family: str | None = None
    source: str = ""
    content_sha256: str | None = None
    """The sha256 of the rows a task was read from when no file holds them (the hub: its rows as sorted-key JSON
    lines, in order); a file's own sha256 identifies it otherwise."""
    source_index: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    """What loading did that a reader of the numbers should know (quirks applied, texts dropped)."""
    counted_as_class0: np.ndarray | None = None
    """Policy ``paper``: which texts had no hypothesis and were counted as class 0 (kept through sampling,
    so the note and the result count the texts actually scored)."""

    def __post_init__(self) -> None:
        if len(self.texts) != len(self.gold):
            raise ValueError(f"{self.name}: {len(self.texts)} texts but {len(self.gold)} gold labels")
        if len(self.label_names) != len(self.hypotheses):
            raise ValueError(f"{self.name}: label names and hypotheses differ in length")
        if self.source_index is None:
            object.__setattr__(self, "source_index", np.arange(len(self.texts)))

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def n_unlabelled(self) -> int:
        """Texts whose gold class has no hypothesis."""
        return int(np.sum(self.gold == NO_HYPOTHESIS))

    def subset(self, indices: np.ndarray, note: str | None = None) -> Task:
        """The texts at ``indices`` in that order, with their gold and source rows; ``note`` (how they were chosen) is
        added to the notes, and the count of texts counted as class 0 is the subset's own."""
        indices = np.asarray(indices, dtype=np.int64)
        notes = [*self.notes, note] if note else list(self.notes)
        counted = None
        if self.counted_as_class0 is not None:
            counted = self.counted_as_class0[indices]
            notes = [
                _counted_note(int(counted.sum()), self.label_names[0])
                if n == _counted_note(self.n_counted_as_class0, self.label_names[0])
                else n
                for n in notes
            ]
        return replace(
            self,
            texts=[self.texts[i] for i in indices],
            gold=self.gold[indices],
            source_index=self.source_index[indices] if self.source_index is not None else None,
            notes=notes,
            counted_as_class0=counted,
        )

    @property
    def n_counted_as_class0(self) -> int:
        """Texts without a hypothesis that policy ``paper`` counted as class 0 (0 under any other policy)."""
        return 0 if self.counted_as_class0 is None else int(self.counted_as_class0.sum())


def _counted_note(count: int, first_label: str) -> str:
    return (
        f"{count} texts whose gold class has no hypothesis counted as class 0 ({first_label!r}), "
        "as the public harness does (policy 'paper')"
    )


def apply_unlabelled_policy(task: Task, policy: str) -> tuple[Task, int]:
    """Resolve texts whose gold class has no hypothesis; return the task and how many texts were affected.

    ``paper``: count them as class 0, as the public BTZSC harness does (it does so silently; we report it).
    ``exclude``: drop them, so the metric only covers texts that have a correct candidate.
    """
    if policy not in UNLABELLED_POLICIES:
        raise UnknownNameError(
            f"unknown unlabelled policy {policy!r}; expected one of {', '.join(UNLABELLED_POLICIES)}"
        )
    affected = task.n_unlabelled
    if affected == 0:
        return task, 0
    if policy == "paper":
        unlabelled = task.gold == NO_HYPOTHESIS
        gold = np.where(unlabelled, 0, task.gold)
        note = _counted_note(affected, task.label_names[0])
        return replace(task, gold=gold, notes=[*task.notes, note], counted_as_class0=unlabelled), affected
    keep = np.flatnonzero(task.gold != NO_HYPOTHESIS)
    return task.subset(
        keep, f"{affected} texts whose gold class has no hypothesis excluded (policy 'exclude')"
    ), affected


def stratified_sample(task: Task, max_samples: int | None, seed: int = 0) -> Task:
    """A deterministic sample of at most ``max_samples`` texts, stratified by gold class.

    Each class gets its proportional share (largest-remainder rounding, so the total is exact); within a
    class the texts are a seeded random choice. The sample keeps the source order, so the same seed and size
    always give the same texts in the same order.
    """
    checked = check_options({"max_samples": max_samples, "seed": seed})  # numpy's generator takes no negative seed
    max_samples, seed = checked["max_samples"], checked["seed"]
    if max_samples is None or max_samples >= len(task):
        return task
    rng = np.random.default_rng(seed)
    classes, counts = np.unique(task.gold, return_counts=True)
    exact = counts * max_samples / len(task)
    quota = np.floor(exact).astype(int)
    remainder = max_samples - quota.sum()
    # Largest remainders first; ties broken by class order so the result is deterministic.
    order = np.lexsort((classes, -(exact - quota)))
    quota[order[:remainder]] += 1
    chosen: list[np.ndarray] = []
    for cls, n in zip(classes, quota):
        members = np.flatnonzero(task.gold == cls)
        chosen.append(rng.choice(members, size=n, replace=False))
    indices = np.sort(np.concatenate(chosen))
    return task.subset(indices, f"stratified sample of {max_samples} of {len(task)} texts (seed {seed})")


PAPER_SAMPLE_SIZE = 1000
"""Texts per dataset the paper scored: the public harness's draw (:func:`harness_sample`) of this many, or every
text of a smaller dataset, or of one in :data:`PAPER_WHOLE_DATASETS`."""

PAPER_FIXED_TEXTS = 2
"""The harness always keeps the first two texts of the grouped file, then draws the rest."""

PAPER_WHOLE_DATASETS: frozenset[str] = frozenset({"rottentomatoes"})
"""Datasets the paper scored whole although they hold more than its 1000 texts. Every published rottentomatoes
accuracy (38 models) is a multiple of 1/1066, so the paper scored all 1066 texts, where the public harness's
current code draws 1000 of them (PROTOCOL.md section 1): the harness and the paper disagree here."""


def paper_scores_whole(name: str, n_texts: int, max_samples: int | None) -> bool:
    """Whether the paper's sample of dataset ``name`` (``n_texts`` texts) is every text where the harness's draw
    of ``max_samples`` would leave some out: a dataset of :data:`PAPER_WHOLE_DATASETS`, drawn at the paper's size
    or more."""
    return name in PAPER_WHOLE_DATASETS and max_samples is not None and PAPER_SAMPLE_SIZE <= max_samples < n_texts


def harness_sample(task: Task, max_samples: int | None) -> Task:
    """The public BTZSC harness's draw (its current ``data.py``): texts 0 and 1 of the file, plus
    ``random.Random(0).sample(range(2, N), n - 2)``, in the harness's order (N texts in BTZSC file order).

    No seed: the harness's is fixed at 0. On a file in exact BTZSC order this is the paper's own sample, except
    for :data:`PAPER_WHOLE_DATASETS` (see :func:`paper_sample`).
    """
    if max_samples is None or max_samples >= len(task):
        return task
    if max_samples < PAPER_FIXED_TEXTS:  # checked before any work by check_sampling
        raise OptionError(
            f"max_samples must be >= {PAPER_FIXED_TEXTS}, got {max_samples}: the harness's draw keeps texts 0 and 1",
            "max_samples",
        )
    drawn = random.Random(0).sample(range(PAPER_FIXED_TEXTS, len(task)), max_samples - PAPER_FIXED_TEXTS)
    indices = np.array([*range(PAPER_FIXED_TEXTS), *drawn])
    return task.subset(
        indices,
        f"the public harness's sample of {max_samples} of {len(task)} texts (texts 0 and 1, then random.Random(0))",
    )


def paper_sample(task: Task, max_samples: int | None) -> Task:
    """The texts the paper scored: the harness's draw (:func:`harness_sample`), except that a dataset the paper
    scored whole (:data:`PAPER_WHOLE_DATASETS`) keeps every text when ``max_samples`` is the paper's size or more."""
    if paper_scores_whole(task.name, len(task), max_samples):
        note = (
            f"every one of the {len(task)} texts, as the paper scored {task.name} (its published accuracies are multiples "
            f"of 1/{len(task)}); the public harness's current code draws {max_samples}"
        )
        return replace(task, notes=[*task.notes, note])
    return harness_sample(task, max_samples)


def sample_task(task: Task, method: str, max_samples: int | None, seed: int = 0) -> Task:
    """At most ``max_samples`` texts of ``task`` by ``method`` (see :data:`SAMPLING_METHODS`)."""
    if method == "stratified":
        return stratified_sample(task, max_samples, seed)
    if method == "paper":
        return paper_sample(task, max_samples)
    if method == "harness":
        return harness_sample(task, max_samples)
    raise UnknownNameError(f"unknown sampling {method!r}; expected one of {', '.join(SAMPLING_METHODS)}")


def check_sampling(sampling: str, max_samples: int | None) -> str:
    """``sampling`` if it is a sampling method and ``max_samples`` can be drawn by it, else :class:`OptionError`
    naming the parameter: the paper's and the harness's draws keep texts 0 and 1 of every dataset, so they cannot
    draw fewer than two (every command with ``--sampling``, before any work)."""
    check_choice("sampling", sampling, SAMPLING_METHODS)
    if sampling in HARNESS_DRAWS and max_samples is not None and max_samples < PAPER_FIXED_TEXTS:
        raise OptionError(
            f"max_samples must be >= {PAPER_FIXED_TEXTS} with sampling {sampling}, got {max_samples}: the "
            f"{sampling}'s draw keeps texts 0 and 1 of every dataset",
            "max_samples",
            "sampling",
        )
    return sampling
