"""The Hugging Face zero-shot shape's numbers for NLI models: what transformers' ``pipeline("zero-shot-classification")``
returns on the same weights and inputs, so that a client moving from the hub's inference API to ``zstc serve`` reads
the same probabilities (zstc's own ``/classify`` keeps zstc's scores and probabilities).

Single-label: a softmax over the labels' entailment logits. Multi-label (or one candidate label): per label, a
softmax of its entailment logit against its contradiction logit. The logits are
:meth:`zstc.scorers.nli.NliScorer.pipeline_logits`' (fp32). A client that takes a label when its score is >= 0.5
(multi-label) makes the pipeline's decision.
"""

from __future__ import annotations

import numpy as np


def pipeline_scores(logits: np.ndarray, multi_label: bool) -> np.ndarray:
    """One text's ``(labels, 2)`` contradiction and entailment logits -> the pipeline's score per label."""
    pairs = np.asarray(logits, dtype=np.float64)
    if multi_label:
        shifted = np.exp(pairs - pairs.max(axis=1, keepdims=True))
        return np.asarray(shifted[:, 1] / shifted.sum(axis=1))
    entailment = np.exp(pairs[:, 1] - pairs[:, 1].max())
    return np.asarray(entailment / entailment.sum())
