"""How sure the numbers are: bootstrap intervals, a paired test between two models, rank agreement.

* Bootstrap (``scipy.stats.bootstrap``, percentile method, paired): resample a dataset's texts with
  replacement (seeded), recompute the metric, take the 2.5th and 97.5th percentiles. The overall interval
  resamples every dataset independently and averages per draw, exactly as the overall score averages datasets.
* McNemar's exact test: on texts both models classified, does one get right what the other gets wrong more
  often than chance? (two-sided binomial test on the discordant pairs).
* Kendall's tau-b between two rankings of the same models (or datasets).

Macro-F1 is computed from confusion counts for a batch of draws at once (the statistic is vectorized); it equals scikit-learn's
``f1_score(average="macro", zero_division=0)``, including its rule that a class absent from both the
gold labels and the predictions of a draw does not count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.stats._resampling import BootstrapResult

BOOTSTRAP_DRAWS = 1000
CONFIDENCE = 0.95
MIN_TEXTS_FOR_INTERVAL = 2
"""Fewer texts than this have no bootstrap interval: every resample of one text is that text (scipy refuses it)."""
_DRAWS_PER_CHUNK = 200  # bounds memory: draws x texts indices at a time


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap confidence interval."""

    value: float
    low: float
    high: float

    def contains(self, x: float) -> bool:
        """Whether ``x`` lies in the interval, bounds included."""
        return self.low <= x <= self.high


def _encode(gold: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Map the labels that occur to 0..k-1 (gold and predictions share one code)."""
    classes, codes = np.unique(np.concatenate([gold, predicted]), return_inverse=True)
    return codes[: len(gold)], codes[len(gold) :], len(classes)


def _confusions(gold: np.ndarray, predicted: np.ndarray, k: int, draws: np.ndarray | None = None) -> np.ndarray:
    """Confusion matrices ``(n_draws, k, k)`` (rows gold, columns predicted) of the rows of ``(n_draws, n)`` codes,
    or of texts ``draws[b]`` when ``draws`` is given."""
    if draws is not None:
        gold, predicted = gold[draws], predicted[draws]
    gold, predicted = np.atleast_2d(gold), np.atleast_2d(predicted)
    n_draws = len(gold)
    flat = (np.arange(n_draws)[:, None] * (k * k) + gold * k + predicted).ravel()
    return np.bincount(flat, minlength=n_draws * k * k).reshape(n_draws, k, k)


def macro_f1_from_confusions(confusions: np.ndarray) -> np.ndarray:
    """Macro-F1 per confusion matrix, over the classes that occur in its gold labels or predictions."""
    true_positive = np.diagonal(confusions, axis1=-2, axis2=-1).astype(np.float64)
    support = confusions.sum(axis=-1)
    predicted = confusions.sum(axis=-2)
    denominator = support + predicted  # 2TP + FP + FN
    present = denominator > 0
    f1 = np.divide(2 * true_positive, denominator, out=np.zeros_like(true_positive), where=present)
    return f1.sum(axis=-1) / present.sum(axis=-1)


def accuracy_from_confusions(confusions: np.ndarray) -> np.ndarray:
    """Accuracy of each confusion matrix in a stack (gold x predicted on the last two axes)."""
    return np.trace(confusions, axis1=-2, axis2=-1) / confusions.sum(axis=(-2, -1))


METRIC_FUNCTIONS = {"macro_f1": macro_f1_from_confusions, "accuracy": accuracy_from_confusions}
"""Metrics the bootstrap supports, computed from confusion matrices."""


def _statistic(metric: str, k: int) -> Callable[..., np.ndarray]:
    """The metric of resampled (gold, predicted) codes, vectorized over draws as ``scipy.stats.bootstrap`` asks."""
    if metric not in METRIC_FUNCTIONS:
        raise ValueError(f"bootstrap supports {', '.join(METRIC_FUNCTIONS)}, not {metric!r}")

    def statistic(gold: np.ndarray, predicted: np.ndarray, axis: int = -1) -> np.ndarray:
        values = METRIC_FUNCTIONS[metric](_confusions(np.moveaxis(gold, axis, -1), np.moveaxis(predicted, axis, -1), k))
        return values if gold.ndim > 1 else values[0]

    return statistic


def _bootstrap(gold: np.ndarray, predicted: np.ndarray, metric: str, draws: int, seed: int) -> BootstrapResult:
    from scipy.stats import bootstrap

    gold_codes, predicted_codes, k = _encode(np.asarray(gold), np.asarray(predicted))
    return bootstrap(
        (gold_codes, predicted_codes),
        _statistic(metric, k),
        n_resamples=draws,
        batch=_DRAWS_PER_CHUNK,
        paired=True,
        vectorized=True,
        confidence_level=CONFIDENCE,
        method="percentile",
        rng=np.random.default_rng(seed),
    )


def bootstrap_draws(
    gold: np.ndarray, predicted: np.ndarray, metric: str, *, draws: int = BOOTSTRAP_DRAWS, seed: int = 0
) -> np.ndarray:
    """The metric on ``draws`` resamples (with replacement) of the texts; seeded, so reproducible."""
    return np.asarray(_bootstrap(gold, predicted, metric, draws, seed).bootstrap_distribution)


def point_estimate(gold: np.ndarray, predicted: np.ndarray, metric: str) -> float:
    """``metric`` of one dataset's predictions, computed the way the bootstrap computes each draw's."""
    gold_codes, predicted_codes, k = _encode(np.asarray(gold), np.asarray(predicted))
    return float(_statistic(metric, k)(gold_codes, predicted_codes))


def bootstrap_interval(
    gold: np.ndarray, predicted: np.ndarray, metric: str = "macro_f1", *, draws: int = BOOTSTRAP_DRAWS, seed: int = 0
) -> Interval:
    """Percentile bootstrap 95% interval of one dataset's metric."""
    interval = _bootstrap(gold, predicted, metric, draws, seed).confidence_interval
    return Interval(point_estimate(gold, predicted, metric), float(interval.low), float(interval.high))


def overall_interval(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    metric: str = "macro_f1",
    *,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
) -> Interval:
    """Interval of the unweighted mean over datasets; each dataset ``(gold, predicted)`` is resampled on its own.

    Each dataset gets its own seed (``seed + i``), so adding a dataset does not change the others' draws.
    """
    per_dataset = np.stack(
        [bootstrap_draws(g, p, metric, draws=draws, seed=seed + i) for i, (g, p) in enumerate(pairs)]
    )
    value = float(np.mean([point_estimate(g, p, metric) for g, p in pairs]))
    tail = (1 - CONFIDENCE) / 2 * 100  # the percentile method, as scipy.stats.bootstrap uses for one dataset
    low, high = np.percentile(per_dataset.mean(axis=0), [tail, 100 - tail])
    return Interval(value, float(low), float(high))


@dataclass(frozen=True)
class McNemar:
    """Paired comparison of two models on the same texts."""

    n_texts: int
    only_a: int
    """Texts model A classified correctly and model B did not."""
    only_b: int
    p_value: float


def mcnemar(gold: np.ndarray, predicted_a: np.ndarray, predicted_b: np.ndarray) -> McNemar:
    """McNemar's exact test: two-sided binomial test of the discordant pairs against 1/2."""
    from scipy.stats import binomtest

    correct_a = np.asarray(predicted_a) == np.asarray(gold)
    correct_b = np.asarray(predicted_b) == np.asarray(gold)
    only_a = int(np.sum(correct_a & ~correct_b))
    only_b = int(np.sum(~correct_a & correct_b))
    p_value = 1.0 if only_a + only_b == 0 else float(binomtest(only_a, only_a + only_b, 0.5).pvalue)
    return McNemar(len(correct_a), only_a, only_b, p_value)


def combine_mcnemar(tests: Sequence[McNemar]) -> McNemar:
    """One exact test over the discordant pairs of several datasets pooled."""
    from scipy.stats import binomtest

    only_a = sum(t.only_a for t in tests)
    only_b = sum(t.only_b for t in tests)
    p_value = 1.0 if only_a + only_b == 0 else float(binomtest(only_a, only_a + only_b, 0.5).pvalue)
    return McNemar(sum(t.n_texts for t in tests), only_a, only_b, p_value)


@dataclass(frozen=True)
class RankAgreement:
    """Kendall's tau-b between two rankings over the ``n`` items both score, with its p-value."""

    n: int
    tau: float
    p_value: float


def kendall_tau(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> RankAgreement | None:
    """Kendall's tau-b between two rankings, over the items both score; None with fewer than 3 items."""
    from scipy.stats import kendalltau

    common = [
        name for name in scores_a if name in scores_b and np.isfinite(scores_a[name]) and np.isfinite(scores_b[name])
    ]
    if len(common) < 3:
        return None
    result = kendalltau([scores_a[n] for n in common], [scores_b[n] for n in common])
    return RankAgreement(len(common), float(result.statistic), float(result.pvalue))
