"""NLI training data: reading pairs, the balanced dev hold-out, and length-grouped batches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zstc.errors import DataError
from zstc.io import read_records
from zstc.validation import is_blank

NLI_CLASSES: tuple[str, ...] = ("entailment", "neutral", "contradiction")
"""Gold labels an NLI file may hold; a pair's class index is its position here."""


@dataclass(frozen=True)
class NliPairs:
    """Premise/hypothesis pairs with their gold class (index into :data:`NLI_CLASSES`)."""

    premises: list[str]
    hypotheses: list[str]
    classes: np.ndarray

    def __len__(self) -> int:
        return len(self.premises)

    def subset(self, indices: Sequence[int] | np.ndarray) -> NliPairs:
        """The pairs at ``indices``, in that order."""
        return NliPairs(
            [self.premises[i] for i in indices],
            [self.hypotheses[i] for i in indices],
            self.classes[np.asarray(indices, dtype=int)],
        )


def read_nli_pairs(path: str | Path) -> NliPairs:
    """Read ``premise``, ``hypothesis``, ``label`` (entailment, neutral or contradiction) rows."""
    premises: list[str] = []
    hypotheses: list[str] = []
    classes: list[int] = []
    for row, record in read_records(path):
        where = f"{path}:{row}"
        for column in ("premise", "hypothesis"):
            value = record.get(column)
            if not isinstance(value, str) or is_blank(value):
                raise DataError(f"{where}: expected a non-empty string in column {column!r}, found {value!r}")
        label = record.get("label")
        if label not in NLI_CLASSES:
            raise DataError(f"{where}: expected label to be one of {', '.join(NLI_CLASSES)}, found {label!r}")
        premises.append(record["premise"])
        hypotheses.append(record["hypothesis"])
        classes.append(NLI_CLASSES.index(label))
    if not premises:
        raise DataError(f"{path}: no NLI pairs")
    return NliPairs(premises, hypotheses, np.asarray(classes, dtype=np.int64))


def balanced_indices(classes: np.ndarray, size: int, seed: int) -> np.ndarray:
    """``size`` indices (at most), an equal number from each class present, drawn with ``seed``; sorted."""
    present = np.unique(classes)
    per_class = size // len(present)
    if per_class == 0:
        raise DataError(f"a balanced dev set of {size} pairs cannot hold one pair of each of {len(present)} classes")
    rng = np.random.default_rng(seed)
    chosen: list[np.ndarray] = []
    for label in present:
        members = np.flatnonzero(classes == label)
        if len(members) < per_class:
            raise DataError(
                f"a balanced dev set of {size} pairs needs {per_class} {NLI_CLASSES[label]} pairs, found {len(members)}"
            )
        chosen.append(rng.choice(members, per_class, replace=False))
    return np.sort(np.concatenate(chosen))


def split_dev(pairs: NliPairs, size: int, seed: int) -> tuple[NliPairs, NliPairs]:
    """(train, dev): a balanced dev set of ``size`` pairs held out from ``pairs``, the rest for training."""
    dev = balanced_indices(pairs.classes, size, seed)
    train = np.setdiff1d(np.arange(len(pairs)), dev)
    return pairs.subset(train), pairs.subset(dev)


def length_grouped_batches(
    lengths: Sequence[int], batch_size: int, seed: int, group_batches: int = 50
) -> list[list[int]]:
    """One epoch's batches: shuffled, then sorted by length within groups of ``group_batches`` batches.

    Pairs of similar length share a batch, so dynamic padding wastes little; shuffling the groups' order and
    the batches afterwards keeps the epoch random. The same ``seed`` gives the same batches (resuming relies on it).
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(lengths))
    sizes = np.asarray(lengths)
    batches: list[list[int]] = []
    group = batch_size * group_batches
    for start in range(0, len(order), group):
        members = order[start : start + group]
        members = members[np.argsort(-sizes[members], kind="stable")]
        batches.extend(members[i : i + batch_size].tolist() for i in range(0, len(members), batch_size))
    permutation = rng.permutation(len(batches))
    return [batches[i] for i in permutation]
