"""NLI cross-encoders: premise = text, hypothesis = label description, score = how strongly it is entailed.

The approach of Yin et al. (2019) and the family BTZSC benchmarks most (PROTOCOL.md section 2). Which output
is entailment comes from the model's ``id2label`` (or an explicit override), never from a guess. Three
ways to turn one pair's logits into a score (``score_type``):

* ``logodds`` (default, the paper): ``l_ent - log(sum(exp(l_other)))``, the log-odds of entailment against
  neutral and contradiction together;
* ``logit``: the raw entailment logit (the public harness);
* ``prob``: the softmax probability of entailment.

A binary model with one output scores its logit (``prob``: its sigmoid); one with two outputs reads the
column named entailment, where ``logodds`` is ``l_ent - l_not``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from zstc.models.registry import ModelSpec
from zstc.scorers.pairs import CrossEncoderScorer, OutputColumn, log_odds, output_column

ENTAILMENT_NAMES: frozenset[str] = frozenset({"entailment"})
"""Label names (compared case-insensitively) that mark the entailment output: ``entailment``, ``ENTAILMENT``."""


def entailment_index(
    id2label: dict[int, str], *, model_id: str, index: int | None = None, label: str | None = None
) -> int:
    """The entailment output of an NLI head with this ``id2label``; ``index`` or ``label`` override it."""
    return output_column(
        id2label,
        names=ENTAILMENT_NAMES,
        meaning="entailment",
        model_id=model_id,
        index=index,
        label=label,
        how_to_choose="; pass entailment_index (or give its registry entry an entailment_label)",
        parameters=("entailment_index",),
    )


def entailment_scores(logits: torch.Tensor, entailment: int, score_type: str = "logodds") -> torch.Tensor:
    """``(batch, n_outputs)`` logits -> ``(batch,)`` entailment scores of the given type."""
    if score_type == "logodds":
        return log_odds(logits, entailment)
    if logits.shape[-1] == 1:
        return torch.sigmoid(logits[:, 0]) if score_type == "prob" else logits[:, 0]
    if score_type == "prob":
        return logits.softmax(dim=-1)[:, entailment]
    return logits[:, entailment]


class NliScorer(CrossEncoderScorer):
    """NLI cross-encoders: premise = text, hypothesis = label description; the score is chosen by
    ``score_type`` (see the module's docstring), by default the paper's log-odds of entailment."""

    family: ClassVar[str] = "nli"
    SCORING_VERSION: ClassVar[str] = "3"  # 2: passes of 64 pairs / 4,096 tokens; 3: bf16 rechecks near ties in fp32
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        self.score_type: str = self.options["score_type"]
        self.entailment_index: int | None = self.options["entailment_index"]
        """As given; the resolved column is :attr:`LoadedModel.facts` once the model is loaded."""

    def describe(self) -> dict[str, Any]:
        """The base description, plus the score type and, once loaded, which output is entailment and how it was found."""
        column = self._loaded.facts if self._loaded is not None else None
        return {
            **super().describe(),
            "score_type": self.score_type,
            "entailment_index": column.index if column is not None else self.entailment_index,
            "entailment_label": column.name if column is not None else None,
        }

    def _resolve_outputs(self, id2label: dict[int, str]) -> OutputColumn:
        index = entailment_index(
            id2label, model_id=self.spec.model_id, index=self.entailment_index, label=self.spec.entailment_label
        )
        return OutputColumn(index, id2label[index])

    def _scores_from_logits(self, logits: torch.Tensor, column: OutputColumn) -> torch.Tensor:
        return entailment_scores(logits, column.index, self.score_type)

    def pipeline_logits(self, texts: Sequence[str], descriptions: Sequence[str]) -> np.ndarray:
        """Each (text, description) pair's contradiction and entailment logits, ``(len(texts), len(descriptions), 2)``
        in fp32: what transformers' zero-shot-classification pipeline reads (its contradiction output is the first, or
        the last when entailment is the first), so that the service's Hugging Face shape gives the pipeline's numbers."""
        loaded = self.loaded
        entailment = loaded.facts.index
        contradiction = -1 if entailment == 0 else 0
        distinct = list(dict.fromkeys(self.spec.format_query(text) for text in texts))
        documents = [self.spec.format_document(description) for description in descriptions]
        plan = self._plan(loaded, distinct, documents, pairs=None)
        logits = np.zeros((len(distinct), len(documents), 2), dtype=np.float32)
        for batch, pair in self._run(loaded, plan, False, "fp32", read=lambda out: out[:, [contradiction, entailment]]):
            logits[batch.firsts, batch.seconds] = pair
        row = {text: i for i, text in enumerate(distinct)}
        return logits[[row[self.spec.format_query(text)] for text in texts]]
