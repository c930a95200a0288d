"""A task is what a scorer is evaluated on: texts, gold class indices, and the candidate label set.

Data flows one way: loaders (``zstc.benchmark.data``) build a :class:`Task`; a scorer turns its texts and
hypotheses into a score matrix; decisions and metrics follow. Nothing here touches a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from zstc.errors import UnknownNameError

NO_HYPOTHESIS = -1
"""Gold index of a text whose class has no hypothesis among the candidates (banking77, massive)."""

UnlabelledPolicy = Literal["paper", "exclude"]
UNLABELLED_POLICIES: tuple[str, ...] = ("paper", "exclude")


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
    source_index: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    """What loading did that a reader of the numbers should know (quirks applied, texts dropped)."""

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
        indices = np.asarray(indices, dtype=np.int64)
        return replace(
            self,
            texts=[self.texts[i] for i in indices],
            gold=self.gold[indices],
            source_index=self.source_index[indices] if self.source_index is not None else None,
            notes=[*self.notes, note] if note else list(self.notes),
        )


def apply_unlabelled_policy(task: Task, policy: str) -> tuple[Task, int]:
    """Resolve texts whose gold class has no hypothesis; return the task and how many texts were affected.

    ``paper``: count them as class 0, as the public BTZSC harness does (it does so silently; we report it).
    ``exclude``: drop them, so the metric only covers texts that have a correct candidate.
    """
    if policy not in UNLABELLED_POLICIES:
        raise UnknownNameError(f"unknown unlabelled policy {policy!r}; expected one of {', '.join(UNLABELLED_POLICIES)}")
    affected = task.n_unlabelled
    if affected == 0:
        return task, 0
    if policy == "paper":
        gold = np.where(task.gold == NO_HYPOTHESIS, 0, task.gold)
        note = (
            f"{affected} texts whose gold class has no hypothesis counted as class 0 "
            f"({task.label_names[0]!r}), as the public harness does (policy 'paper')"
        )
        return replace(task, gold=gold, notes=[*task.notes, note]), affected
    keep = np.flatnonzero(task.gold != NO_HYPOTHESIS)
    return task.subset(keep, f"{affected} texts whose gold class has no hypothesis excluded (policy 'exclude')"), affected


def stratified_sample(task: Task, max_samples: int | None, seed: int = 0) -> Task:
    """A deterministic sample of at most ``max_samples`` texts, stratified by gold class.

    Each class gets its proportional share (largest-remainder rounding, so the total is exact); within a
    class the texts are a seeded random choice. The sample keeps the source order, so the same seed and size
    always give the same texts in the same order.
    """
    if max_samples is None or max_samples >= len(task):
        return task
    if max_samples < 1:
        raise ValueError("max_samples must be at least 1")
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
