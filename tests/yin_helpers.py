"""Helpers shared by the Yin et al. tests: a deterministic fake scorer and the real data's location."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from shared_data import SHARED_DATA  # noqa: F401  (re-exported for the Yin tests)

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


class WordOverlapScorer:
    """Score = number of words a text shares with a hypothesis (plus a tiny length term to break ties)."""

    family: ClassVar[str] = "embedding"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.notes: list[str] = []

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        self.calls.append(list(labels))
        words = [set(t.lower().replace(".", "").split()) for t in texts]
        hyps = [set(h.lower().replace(".", "").split()) for h in labels]
        return np.asarray([[len(w & h) - 1e-3 * len(h) for h in hyps] for w in words], dtype=np.float32)

    def describe(self) -> dict[str, Any]:
        return {"name": "word-overlap", "family": self.family}
