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

from typing import Any, ClassVar

import torch

from zstc.errors import UnknownNameError, ZstcError
from zstc.models.registry import ModelSpec
from zstc.scorers.runtime import Precision
from zstc.scorers.pairs import DEFAULT_MAX_BATCH_TOKENS, DEFAULT_MAX_PAIRS, CrossEncoderScorer, log_odds, output_column

SCORE_TYPES: tuple[str, ...] = ("logodds", "logit", "prob")
ENTAILMENT_NAMES: frozenset[str] = frozenset({"entailment"})
"""Label names (compared case-insensitively) that mark the entailment output: ``entailment``, ``ENTAILMENT``."""


def entailment_index(id2label: dict[int, str], *, model_id: str, index: int | None = None, label: str | None = None) -> int:
    """The entailment output of an NLI head with this ``id2label``; ``index`` or ``label`` override it."""
    return output_column(
        id2label, names=ENTAILMENT_NAMES, meaning="entailment", model_id=model_id, index=index, label=label,
        how_to_choose="; pass --entailment-index (or give its registry entry an entailment_label)",
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
    family: ClassVar[str] = "nli"
    SCORING_VERSION: ClassVar[str] = "1"
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""

    def __init__(
        self,
        spec: ModelSpec,
        *,
        score_type: str = "logodds",
        entailment_index: int | None = None,
        device: str | None = None,
        precision: Precision = "fp32",
        batch_size: int = DEFAULT_MAX_PAIRS,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        max_length: int | None = None,
    ) -> None:
        super().__init__(spec, device=device, precision=precision, batch_size=batch_size, max_batch_tokens=max_batch_tokens, max_length=max_length)
        if score_type not in SCORE_TYPES:
            raise UnknownNameError(f"unknown score type {score_type!r}; expected one of {', '.join(SCORE_TYPES)}")
        if entailment_index is not None and entailment_index < 0:
            raise ZstcError(f"--entailment-index must be 0 or more, got {entailment_index}")
        self.score_type = score_type
        self.entailment_index = entailment_index
        """As given; the resolved column once the model is loaded."""
        self._entailment_name: str | None = None

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "score_type": self.score_type,
            "entailment_index": self.entailment_index,
            "entailment_label": self._entailment_name,
        }

    def _resolve_outputs(self, id2label: dict[int, str]) -> None:
        self.entailment_index = entailment_index(
            id2label, model_id=self.spec.model_id, index=self.entailment_index, label=self.spec.entailment_label
        )
        self._entailment_name = id2label[self.entailment_index]

    def _scores_from_logits(self, logits: torch.Tensor) -> torch.Tensor:
        return entailment_scores(logits, self.entailment_index, self.score_type)
