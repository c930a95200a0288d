"""Corpus adaptation without labels: per-label offsets estimated from a whole corpus's score matrix.

A file of texts comes from one distribution, and a zero-shot model's bias toward some labels shows in the scores of
the whole file: one label may absorb most texts. Every method here reads only the (texts, labels) score matrix
(never a gold label), works on the family's logits over its temperature (``Z = as_logits(S) / T``, the
single-label probabilities' own scale, :mod:`zstc.probabilities`), and returns one additive offset per label: the
adapted decision is ``argmax(Z + offsets)``, the adapted probabilities ``softmax(Z + offsets)``. Offsets are
estimated once per corpus (or on a stated sample of it) and applied to every text, so a streamed or resumed run
decides exactly as one in-process run given the same scores.

Methods (:data:`METHODS`):

* ``none``: offsets 0, today's decisions.
* ``centre``: each label's mean of ``Z`` over the corpus is subtracted (per-label score centring).
* ``balance``: Sinkhorn iterations toward equal label mass: offsets such that ``softmax(Z + offsets)`` gives every
  label the same mean probability over the corpus.
* ``em``: the label prior re-estimated by EM (Saerens, Latinne and Decaestecker, 2002) from the calibrated
  probabilities ``softmax(Z)``, read as a model of uniform prior; offsets ``log(K * prior)``.
* ``em-map``: the same with a Dirichlet prior on the label prior (a pseudo-count of :data:`PSEUDO_TEXTS_PER_LABEL`
  texts per label): a maximum a posteriori prior, which keeps every label's prior away from 0.

``balance``'s and ``centre``'s offsets are shrunk toward 0 by ``n / (n + K)`` for ``n`` texts and ``K`` labels: a corpus of one text keeps its decision (for one row, full balancing would make every label tie), and
a corpus of thousands is balanced almost fully. Inputs are refused when not finite; every step works in log space
(``logsumexp``), so extreme scores give finite offsets, never NaN; iterations are capped (:data:`MAX_ITERATIONS`),
so the result is deterministic and bounded in time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp, softmax

from zstc.errors import DataError, OptionError, UnknownOptionError, quoted
from zstc.models.families import find_family
from zstc.policy import argmax_decisions
from zstc.probabilities import as_logits, default_calibration, score_scale

METHODS: dict[str, str] = {
    "none": "no adaptation: each text decided alone, as the paper's protocol does",
    "centre": "each label's mean score over the corpus subtracted",
    "balance": "label offsets that give every label the same mean probability over the corpus (Sinkhorn)",
    "em": "the corpus's label prior re-estimated by EM on the calibrated probabilities (Saerens et al. 2002)",
    "em-map": "EM with a Dirichlet prior on the label prior (no collapse onto one label)",
}
"""Each adaptation method (the choices of ``--adapt`` and ``adapt=``) and what it does."""
DEFAULT_METHOD = "balance"
"""The method measured best by benchmarks/adapt.py (its last line's): opt-in, the default of no command, since it
fails the imbalanced-file target (docs/adaptation.md)."""

MAX_ITERATIONS = 200
"""Cap on the iterations of ``balance`` and the EM methods."""
TOLERANCE = 1e-6
"""An iterative method stops when no offset moved by more than this in one iteration."""
PSEUDO_TEXTS_PER_LABEL = 10.0
"""``em-map``'s Dirichlet pseudo-count: as if every label had been seen this many more times."""


@dataclass(frozen=True)
class Adaptation:
    """What a method estimated from a corpus: one additive offset per label on ``Z = as_logits(S) / T``, and the
    label shares it implies (mean adapted probability per label over the texts it was estimated on)."""

    method: str
    offsets: np.ndarray
    shares: np.ndarray
    texts: int
    iterations: int = 0
    temperature: float = 1.0
    scale: str = "cosine"

    def logits(self, scores: np.ndarray) -> np.ndarray:
        """The adapted (texts, labels) logits of ``scores``: ``as_logits(scores) / T + offsets``."""
        matrix = _matrix(scores)
        if matrix.shape[1] != len(self.offsets):
            raise DataError(
                f"scores have {matrix.shape[1]} labels, the adaptation was estimated for {len(self.offsets)}",
                parameters=("scores",),
            )
        return _logits(matrix, self.scale, self.temperature) + self.offsets[None, :]

    def decisions(self, scores: np.ndarray) -> np.ndarray:
        """Each text's adapted best label (its index; the first one on ties, as :func:`zstc.policy.argmax_decisions`)."""
        return self.logits(scores).argmax(axis=1)

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        """Each text's adapted single-label probabilities: ``softmax(as_logits(scores) / T + offsets)``."""
        return softmax(self.logits(scores), axis=1)

    def record(self) -> dict[str, object]:
        """What a result records of the adaptation (part of its identity: it moves decisions)."""
        return {
            "method": self.method,
            "texts": self.texts,
            "temperature": self.temperature,
            "scale": self.scale,
            "offsets": [round(float(v), 6) for v in self.offsets],
        }


def check_method(method: str) -> str:
    """``method`` if it is one of :data:`METHODS`, else an :class:`UnknownOptionError` naming the choices."""
    if method not in METHODS:
        raise UnknownOptionError(f"adapt must be one of {', '.join(METHODS)}, got {quoted(method)}", "adapt")
    return method


def check_adapt_options(method: str, *, multi_label: bool = False, shortlist: bool = False) -> str:
    """``method`` if every front door (``classify``, ``bench``, the API) may adapt with it, one message per rule: one of
    :data:`METHODS`; single-label only (a multi-label view would be of unadapted scores, silently, and no shift of the
    per-label cuts estimated from the corpus met the targets: docs/adaptation.md); every label's score
    of every text (a shortlist scores only each text's top labels, and its placeholders are no scores)."""
    check_method(method)
    if method != "none" and multi_label:
        raise OptionError(
            f"adapt {method} applies to single-label classification (no per-label cut shift measured helps "
            "multi-label: docs/adaptation.md): leave out multi_label or adapt",
            "adapt",
            "multi_label",
        )
    if method != "none" and shortlist:
        raise OptionError(
            f"adapt {method} needs every label's score of every text; a shortlist scores only each "
            "text's top labels: leave one of them out",
            "adapt",
            "shortlist",
        )
    return method


def estimate(scores: np.ndarray, method: str, *, scale: str = "cosine", temperature: float = 1.0) -> Adaptation:
    """Estimate ``method``'s per-label offsets from a corpus's (texts, labels) ``scores`` of score type ``scale``
    (:func:`zstc.probabilities.score_scale`) at ``temperature`` (the family's or a calibration's). Reads nothing but
    the scores."""
    check_method(method)
    if not (np.isfinite(temperature) and temperature > 0):
        raise DataError(
            f"temperature must be a positive finite number, got {temperature!r}", parameters=("temperature",)
        )
    matrix = _matrix(scores)
    z = _logits(matrix, scale, temperature)
    n, k = z.shape
    offsets, iterations = np.zeros(k), 0
    if k > 1 and method == "centre":
        offsets = -z.mean(axis=0)
    elif k > 1 and method == "balance":
        offsets, iterations = _balance(z)
    elif k > 1 and method in ("em", "em-map"):
        offsets, iterations = _em(z, PSEUDO_TEXTS_PER_LABEL if method == "em-map" else 0.0)
    if method in ("centre", "balance"):
        offsets = offsets * (n / (n + k))
    offsets = offsets - offsets.max()  # only differences matter: the largest offset is 0
    shares = softmax(z + offsets[None, :], axis=1).mean(axis=0)
    return Adaptation(method, offsets, shares, n, iterations, float(temperature), scale)


def adapt(
    scores: np.ndarray,
    method: str,
    *,
    scale: str = "cosine",
    temperature: float = 1.0,
    sample: np.ndarray | None = None,
) -> np.ndarray:
    """The adapted logits of every text of ``scores``, the offsets estimated on all of them or on the rows
    ``sample`` (indices or a boolean mask) only."""
    matrix = _matrix(scores)
    basis = matrix if sample is None else matrix[np.asarray(sample)]
    return estimate(basis, method, scale=scale, temperature=temperature).logits(matrix)


def corpus_decisions(scores: np.ndarray, method: str, scorer: Mapping[str, Any]) -> np.ndarray:
    """Each text's label index when the texts of ``scores`` are decided as one corpus by ``method`` (``none``: each
    alone, :func:`zstc.policy.argmax_decisions`), at the scale and default temperature of the family that
    ``scorer`` (a scorer's ``describe()``, as a result stores it) names: bench's decisions, and what its stored
    results are checked against."""
    if check_method(method) == "none":
        return argmax_decisions(scores)
    family = scorer.get("family")
    record = find_family(family)
    score_type = scorer.get("score_type") or (record.score_type if record else None)
    temperature = default_calibration(family).parameters["temperature"]
    return estimate(scores, method, scale=score_scale(family, score_type), temperature=temperature).decisions(scores)


def _matrix(scores: np.ndarray) -> np.ndarray:
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise DataError(
            f"expected a (texts, labels) score matrix with at least one text and one label, got shape {matrix.shape}",
            parameters=("scores",),
        )
    if not np.isfinite(matrix).all():
        raise DataError(
            f"the scores hold {int((~np.isfinite(matrix)).sum())} NaN or infinite values: nothing can be "
            "estimated from them",
            parameters=("scores",),
        )
    return matrix


def _logits(matrix: np.ndarray, scale: str, temperature: float) -> np.ndarray:
    return as_logits(matrix, scale) / temperature


def _row_log_softmax(z: np.ndarray) -> np.ndarray:
    return z - logsumexp(z, axis=1, keepdims=True)


def _balance(z: np.ndarray) -> tuple[np.ndarray, int]:
    """Sinkhorn in log space: offsets ``b`` such that ``softmax(z + b)``'s column means are all ``1 / K``."""
    n, k = z.shape
    target = -np.log(k)
    offsets = np.zeros(k)
    for iteration in range(1, MAX_ITERATIONS + 1):
        mass = logsumexp(_row_log_softmax(z + offsets), axis=0) - np.log(n)  # log mean probability per label
        step = target - mass
        offsets = offsets + step
        if np.abs(step).max() < TOLERANCE:
            return offsets, iteration
    return offsets, MAX_ITERATIONS


def _em(z: np.ndarray, pseudo: float) -> tuple[np.ndarray, int]:
    """Saerens et al.'s EM for a new label prior, the model's own prior taken as uniform; ``pseudo`` texts per label
    of a Dirichlet prior (0: maximum likelihood). Returns ``log(K * prior)`` as the offsets."""
    n, k = z.shape
    log_p = _row_log_softmax(z)
    log_prior = np.full(k, -np.log(k))
    for iteration in range(1, MAX_ITERATIONS + 1):
        posterior = _row_log_softmax(log_p + log_prior)  # q(y|x) ∝ p(y|x) prior(y) / uniform
        counts = np.exp(logsumexp(posterior, axis=0))  # expected texts per label
        updated = np.log(np.maximum(counts + pseudo, 1e-300)) - np.log(n + k * pseudo)
        step = updated - log_prior
        log_prior = updated
        if np.abs(step).max() < TOLERANCE:
            return log_prior + np.log(k), iteration
    return log_prior + np.log(k), MAX_ITERATIONS
