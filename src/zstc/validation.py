"""The one place where user-provided texts and labels are checked (scikit-learn style).

Every entry point (Python API, CLI, HTTP service, bench) calls these, so a message for a given mistake is
written once and reads the same everywhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from zstc.errors import DataError, LabelError


def check_labels(labels: Sequence[str], *, what: str = "labels", allow_single: bool = False) -> list[str]:
    """Return the labels as a list of stripped strings, or raise :class:`LabelError`.

    A zero-shot decision among fewer than two candidates is meaningless for argmax; multi-label
    scoring (one label, yes or no) passes ``allow_single=True``.
    """
    if isinstance(labels, str):
        raise LabelError(f"{what} must be a sequence of strings, got one string {labels!r}")
    cleaned = [str(label).strip() for label in labels]
    if not cleaned:
        raise LabelError(f"no {what} given: expected at least two")
    empty = [i for i, label in enumerate(cleaned) if not label]
    if empty:
        raise LabelError(f"{what} contain an empty entry (position {empty[0] + 1})")
    if len(cleaned) < 2 and not allow_single:
        raise LabelError(f"only one label given ({cleaned[0]!r}): zero-shot classification needs at least two")
    duplicates = [label for label, count in Counter(cleaned).items() if count > 1]
    if duplicates:
        raise LabelError(f"duplicate {what}: {', '.join(repr(d) for d in duplicates)}")
    return cleaned


def check_texts(texts: Sequence[str], *, source: str = "input") -> list[str]:
    """Return the texts as a list, or raise :class:`DataError` naming the first empty one."""
    if isinstance(texts, str):
        raise DataError(f"{source}: texts must be a sequence of strings, got one string")
    result = list(texts)
    if not result:
        raise DataError(f"{source}: no texts to classify")
    for i, text in enumerate(result):
        if not isinstance(text, str):
            raise DataError(f"{source}: text {i + 1} is {type(text).__name__}, expected a string")
        if not text.strip():
            raise DataError(f"{source}: text {i + 1} is empty")
    return result
