"""Length-sorted batching, the one loop every scorer batches with.

Items (texts, pairs, prompts) are sorted longest first and cut into batches of at most ``max_items`` items
and, when ``max_tokens`` is given, at most that many padded tokens (a batch is as wide as its first, longest
item). Similar lengths together means little compute spent on padding; the largest batch first means an
out-of-memory error happens at once, not an hour in.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def token_budget_batches(
    lengths: np.ndarray | Sequence[int], *, max_pairs: int, max_batch_tokens: int | None = None
) -> list[tuple[int, int]]:
    """Cut items already sorted longest first into ``[start, stop)`` batches of at most ``max_pairs`` items
    and ``max_batch_tokens`` padded tokens. A single item longer than the budget still gets a batch of its own."""
    bounds: list[tuple[int, int]] = []
    start, n = 0, len(lengths)
    while start < n:
        fits = (
            max_pairs
            if max_batch_tokens is None
            else max(1, min(max_pairs, max_batch_tokens // max(1, int(lengths[start]))))
        )
        stop = min(n, start + fits)
        bounds.append((start, stop))
        start = stop
    return bounds


def longest_first(lengths: np.ndarray | Sequence[int]) -> np.ndarray:
    """Indices that sort ``lengths`` longest first; equal lengths keep their order (a stable sort)."""
    return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")


def length_batches(
    lengths: np.ndarray | Sequence[int], max_items: int, max_tokens: int | None = None
) -> list[list[int]]:
    """Indices into ``lengths`` in batches of similar length, longest first (see the module docstring)."""
    order = longest_first(lengths)
    sorted_lengths = np.asarray(lengths, dtype=np.int64)[order]
    return [
        order[start:stop].tolist()
        for start, stop in token_budget_batches(sorted_lengths, max_pairs=max_items, max_batch_tokens=max_tokens)
    ]
