"""A toy model family for tests/test_contract.py: everything a new family needs besides its Family entry.

Score = the share of a label description's words that occur in the text (no model, no torch), so the
contract checks run in milliseconds and show what the scorer interface asks of a family.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from zstc.models.registry import ModelSpec
from zstc.scorers import Capabilities, ScoreResult
from zstc.models.families import get_family


class WordShareScorer:
    family: ClassVar[str] = "toy"
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(notes=True)  # score_with_notes

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        self.spec = spec
        self.options = get_family(self.family).check_options(options, spec.model_id)

    def _words(self, text: str) -> set[str]:
        return set(re.findall(r"\w+", text.lower() if self.options["lowercase"] else text))

    def score_with_notes(
        self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False
    ) -> ScoreResult:
        documents = [self._words(self.spec.format_document(label)) for label in labels]
        rows = [[len(self._words(text) & words) / max(1, len(words)) for words in documents] for text in texts]
        empty = sum(not self._words(text) for text in texts)
        notes = [f"{empty} of {len(texts)} texts have no words"] if empty else []
        return ScoreResult(np.asarray(rows, dtype=np.float32).reshape(len(texts), len(labels)), notes)

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        return self.score_with_notes(texts, labels, show_progress=show_progress).scores

    def describe(self) -> dict[str, Any]:
        return {"name": self.spec.model_id, "family": self.family, **self.options}
