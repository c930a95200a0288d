"""Calibration of zero-shot scores, fitted on a labelled dev set, judged by ECE and Brier score (``zstc calibrate``).

What a fit gives, the calibration file and how any family's scores become probabilities, is the library's:
:mod:`zstc.probabilities`. This module fits it and measures it.

Two methods, each with its "before" (the scores read as probabilities with no fitting):

* ``temperature`` (single-label): probabilities ``softmax(scores / T)``; T minimises the dev set's negative
  log-likelihood. Before: T = 1. Argmax decisions do not change, only confidence.
* ``platt`` (multi-label, one yes/no per label): ``sigmoid(a * score + b)``, one (a, b) shared by all labels
  (a logistic regression of "label is gold" on the score over all dev (text, label) pairs). Before: the
  scores themselves when they are probabilities, their sigmoid otherwise.

ECE: confidence split into 15 equal-width bins, the mean |accuracy - confidence| weighted by bin size;
single-label confidence is the top probability and accuracy whether the top label is gold, multi-label
confidence is each (text, label) probability and accuracy whether that label is gold. Brier: the mean over
texts of the summed squared differences between probabilities and the one-hot gold (single-label), or the
mean squared difference over all (text, label) pairs (multi-label).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_softmax, softmax

from zstc.probabilities import METHODS

from zstc.errors import DataError, UnknownNameError
from zstc.multilabel import gold_matrix

ECE_BINS = 15

TEMPERATURE_BOUNDS: tuple[float, float] = (1e-2, 1e2)
"""The range T is searched in: from 1/100 to 100 covers cosine similarities (tiny spread) and logits (large spread)."""


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> float:
    """ECE: the mean over equal-width confidence bins of |accuracy - mean confidence|, weighted by each bin's share."""
    confidence = np.asarray(confidence, dtype=np.float64).ravel()
    correct = np.asarray(correct, dtype=np.float64).ravel()
    # Bin i holds (i/bins, (i+1)/bins]; confidence 0 goes to the first bin.
    which = np.clip(np.ceil(confidence * bins).astype(int) - 1, 0, bins - 1)
    total = 0.0
    for b in range(bins):
        members = which == b
        if members.any():
            total += members.sum() * abs(correct[members].mean() - confidence[members].mean())
    return float(total / len(confidence))


def single_label_report(probabilities: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """ECE and Brier of a (texts, labels) distribution against gold indices."""
    onehot = gold_matrix(gold, probabilities.shape[1]).astype(np.float64)
    correct = probabilities.argmax(axis=1) == gold
    return {
        "ece": expected_calibration_error(probabilities.max(axis=1), correct),
        "brier": float(((probabilities - onehot) ** 2).sum(axis=1).mean()),
    }


def multi_label_report(probabilities: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """ECE and Brier of per-(text, label) probabilities against the gold indicator matrix."""
    truth = gold_matrix(gold, probabilities.shape[1]).astype(np.float64)
    return {
        "ece": expected_calibration_error(probabilities, truth),
        "brier": float(((probabilities - truth) ** 2).mean()),
    }


@dataclass
class TemperatureScaling:
    """Single-label calibration: a softmax over the labels of scores / T, with T fitted by minimum NLL."""

    temperature: float = 1.0

    def fit(self, scores: np.ndarray, gold: np.ndarray) -> TemperatureScaling:
        """Fit T on (texts, labels) scores and gold label indices."""
        rows = np.arange(len(gold))

        def nll(log_t: float) -> float:
            return float(-log_softmax(scores / np.exp(log_t), axis=1)[rows, gold].mean())

        bounds = (np.log(TEMPERATURE_BOUNDS[0]), np.log(TEMPERATURE_BOUNDS[1]))
        self.temperature = float(np.exp(minimize_scalar(nll, bounds=bounds, method="bounded").x))
        return self

    def at_bound(self) -> float | None:
        """The bound of :data:`TEMPERATURE_BOUNDS` the fitted T lies on (the search stopped there, so the dev
        data did not pin T down), else None."""
        for bound in TEMPERATURE_BOUNDS:
            if abs(np.log(self.temperature) - np.log(bound)) < 1e-3:
                return bound
        return None

    def transform(self, scores: np.ndarray) -> np.ndarray:
        """Each text's probabilities over its labels."""
        return softmax(scores / self.temperature, axis=1)


@dataclass
class PlattScaling:
    """Multi-label calibration: each (text, label) score on its own, sigmoid(slope * score + intercept)."""

    slope: float = 1.0
    intercept: float = 0.0
    converged: bool = True
    """Whether the optimiser met its tolerance (a fit that did not is noted by :func:`calibrate`)."""

    def fit(self, scores: np.ndarray, gold: np.ndarray) -> PlattScaling:
        """Fit slope and intercept by logistic regression of every pair's score on whether its label is gold.

        Fitted on the standardised scores, then mapped back to the raw ones: on scores of a small spread (an NLI
        head's log-odds of 0.01 apart) the solver stopped at its first step, slope 0 and intercept 0, silently."""
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.linear_model import LogisticRegression

        truth = gold_matrix(gold, scores.shape[1]).ravel()
        flat = scores.reshape(-1).astype(np.float64)
        centre, spread = float(flat.mean()), float(flat.std())
        if not spread > 0:
            raise DataError(
                f"the {flat.size} dev scores are all {centre:.6g}: Platt scaling has no spread to fit a slope on"
            )
        with warnings.catch_warnings():  # said as a note by calibrate, not as sklearn's warning
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LogisticRegression(C=1e6).fit(
                ((flat - centre) / spread).reshape(-1, 1), truth
            )  # ~no regularisation
        slope = float(model.coef_[0, 0])
        self.slope, self.intercept = slope / spread, float(model.intercept_[0]) - slope * centre / spread
        self.converged = bool(np.all(model.n_iter_ < model.max_iter))
        return self

    def transform(self, scores: np.ndarray) -> np.ndarray:
        """Each (text, label) pair's own probability."""
        return expit(self.slope * scores + self.intercept)


def uncalibrated(scores: np.ndarray, method: str, score_type: str | None) -> np.ndarray:
    """The scores read as probabilities with no fitting (the "before" of each method)."""
    if method == "temperature":
        return softmax(scores, axis=1)
    return np.clip(scores, 0.0, 1.0) if score_type == "prob" else expit(scores)


def calibrate(
    dev_scores: np.ndarray,
    dev_gold: np.ndarray,
    test_scores: np.ndarray,
    test_gold: np.ndarray,
    *,
    method: str = "temperature",
    score_type: str | None = None,
) -> dict[str, Any]:
    """Fit ``method`` on the dev set; ECE and Brier on the test set before and after, and the fitted parameters.

    Texts whose gold is -1 (no candidate label) are left out of temperature scaling, which needs a gold label;
    Platt scaling keeps them as all-negative rows.
    """
    if method not in METHODS:
        raise UnknownNameError(f"unknown calibration method {method!r}; expected one of {', '.join(METHODS)}")
    notes: list[str] = []
    if method == "temperature":
        dev_keep, test_keep = dev_gold >= 0, test_gold >= 0
        dev_scores, dev_gold = dev_scores[dev_keep], dev_gold[dev_keep]
        test_scores, test_gold = test_scores[test_keep], test_gold[test_keep]
        temperature = TemperatureScaling().fit(dev_scores, dev_gold)
        scaler: TemperatureScaling | PlattScaling = temperature
        report = single_label_report
        parameters = {"temperature": temperature.temperature}
        bound = temperature.at_bound()
        if bound is not None:  # said, not silent: such a T is where the search stopped, not a fitted value
            notes.append(
                f"the fitted temperature {temperature.temperature:.4g} lies on the bound {bound:g} of its search "
                f"range ({TEMPERATURE_BOUNDS[0]:g} to {TEMPERATURE_BOUNDS[1]:g}): the dev texts do not determine it "
                "(too few of them, or scores that do not separate the labels)"
            )
    else:
        scaler = PlattScaling().fit(dev_scores, dev_gold)
        report = multi_label_report
        parameters = {"slope": scaler.slope, "intercept": scaler.intercept}
        if not scaler.converged:
            notes.append(
                "the Platt fit did not converge (its optimiser stopped at its iteration limit): the slope and "
                "intercept are where it stopped, not fitted values"
            )
    return {
        "method": method,
        "parameters": parameters,
        "n_dev": int(len(dev_gold)),
        "n_test": int(len(test_gold)),
        "before": report(uncalibrated(test_scores, method, score_type), test_gold),
        "after": report(scaler.transform(test_scores), test_gold),
        "notes": notes,
    }
