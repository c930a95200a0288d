"""Cross-encoder rerankers: query = text, document = label description, score = relevance.

Most rerankers (ms-marco MiniLM, bge-reranker, gte-reranker) have a single relevance logit, which is the
score (PROTOCOL.md section 2). A reranker with several outputs is scored by the column its ``id2label``
names ``relevant``, as the log-odds of that column against the others (for two outputs ``l_rel - l_not``,
which, unlike the raw column, does not depend on an arbitrary shift of the logits).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from zstc.scorers.pairs import CrossEncoderScorer, OutputColumn, log_odds, output_column

RELEVANT_NAMES: frozenset[str] = frozenset({"relevant"})


class RerankerScorer(CrossEncoderScorer):
    """Cross-encoder rerankers: query = text, document = label description; the score is the relevance logit."""

    family: ClassVar[str] = "reranker"
    SCORING_VERSION: ClassVar[str] = "3"  # 2: passes of 64 pairs / 4,096 tokens; 3: bf16 rechecks near ties in fp32
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""

    def describe(self) -> dict[str, Any]:
        """The base description, plus, once loaded, which output is the relevance logit."""
        column = self._loaded.facts if self._loaded is not None else None
        return {**super().describe(), "relevant_index": column.index if column is not None else None}

    def _resolve_outputs(self, id2label: dict[int, str]) -> OutputColumn:
        index = output_column(
            id2label,
            names=RELEVANT_NAMES,
            meaning="relevance",
            model_id=self.spec.model_id,
            how_to_choose="; zstc scores rerankers with one output, or with several of which one is named 'relevant'",
        )
        return OutputColumn(index, id2label[index])

    def _scores_from_logits(self, logits: torch.Tensor, column: OutputColumn) -> torch.Tensor:
        return log_odds(logits, column.index)
