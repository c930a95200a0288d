"""Scores people can read: probabilities from any family's scores, and the calibration file.

Single-label probabilities are a softmax over a text's labels of its scores read as logits (:func:`as_logits`)
divided by a temperature: the family's measured one (its ``Family`` record's ``temperature``) or a calibration file's.
``zstc calibrate`` (:mod:`zstc.yin.calibration`) fits a temperature or a Platt scaling and writes the file that
:func:`load_calibration` reads for ``classify --calibration``, the API and ``serve``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import expit, softmax

from zstc.errors import DataError, OptionError, UnknownNameError, quoted
from zstc.models.families import find_family
from zstc.validation import is_number

CALIBRATION_PARAMETERS: dict[str, tuple[str, ...]] = {"temperature": ("temperature",), "platt": ("slope", "intercept")}
"""Each calibration method and its parameters."""
METHODS: tuple[str, ...] = tuple(CALIBRATION_PARAMETERS)


LOGIT_SCALE: dict[str, str] = {
    "cosine": "identity",
    "logodds": "identity",
    "logit": "identity",
    "prob": "logit",  # an independent probability per label (yes/no reranker, NLI --score-type prob)
    "distribution": "log",  # already a distribution over the labels (the LLM's options)
}
"""How each score type becomes a logit-like number before the softmax over labels."""

CALIBRATION_FORMAT = "zstc-calibration"
CALIBRATION_FORMAT_VERSIONS = (1,)
"""The calibration file versions this zstc reads; another (a newer zstc's) is refused, not read as if it were one."""
MIN_TEMPERATURE = 1e-6
"""The smallest temperature taken: fitted ones lie between about 0.01 and 100."""


def score_scale(family: str | None, score_type: str | None) -> str:
    """The score type used to read scores as logits: the scorer's own, or the family's (LLM: a distribution)."""
    record = find_family(family)
    if record is not None and record.distribution:  # a distribution over the labels (the LLM's options)
        return "distribution"
    return score_type or "cosine"


def as_logits(scores: np.ndarray, scale: str) -> np.ndarray:
    """Scores as numbers whose softmax over labels is a distribution (see :data:`LOGIT_SCALE`)."""
    how = LOGIT_SCALE.get(scale, "identity")
    scores = np.asarray(scores, dtype=np.float64)
    if how == "logit":
        clipped = np.clip(scores, 1e-7, 1 - 1e-7)
        return np.log(clipped) - np.log1p(-clipped)
    if how == "log":
        return np.log(np.clip(scores, 1e-12, None))
    return scores


@dataclass(frozen=True)
class Calibration:
    """What ``zstc calibrate --out F`` fitted, readable by ``classify --calibration F``, the API and ``serve``.

    ``method`` ``temperature``: single-label probabilities are ``softmax(logits / temperature)``;
    ``platt``: each label's probability is ``sigmoid(slope * score + intercept)`` (multi-label).
    """

    method: str
    parameters: dict[str, float]
    model: str | None = None
    family: str | None = None
    score_type: str | None = None

    def __post_init__(self) -> None:
        # Built in Python, as read from a file: a NaN temperature made every probability NaN, silently.
        problem = calibration_problem(self.method, self.parameters)
        if problem is not None:
            raise OptionError(f"calibration: {problem}", "calibration")
        # numpy.float32(2.0) is a temperature too; kept as Python's float, it is recorded as JSON like any other.
        as_float = {name: float(value) if is_number(value) else value for name, value in self.parameters.items()}
        object.__setattr__(self, "parameters", as_float)

    def single_label(self, scores: np.ndarray, scale: str) -> np.ndarray:
        """A temperature calibration's single-label probabilities: the softmax over each row of ``scores`` read as
        logits (``scale``: :func:`score_scale`) over the temperature."""
        if self.method != "temperature":
            raise UnknownNameError(
                "a Platt calibration gives per-label (multi-label) probabilities; "
                "fit a temperature (zstc calibrate --method temperature) for single-label"
            )
        return softmax(as_logits(scores, scale) / self.parameters["temperature"], axis=1)

    def multi_label(self, scores: np.ndarray) -> np.ndarray:
        """A Platt calibration's probability of each (text, label) score on its own: ``sigmoid(slope * score + intercept)``."""
        if self.method != "platt":
            raise UnknownNameError("multi-label probabilities need a Platt calibration (zstc calibrate --method platt)")
        return expit(self.parameters["slope"] * np.asarray(scores, dtype=np.float64) + self.parameters["intercept"])

    def score_at(self, probabilities: np.ndarray) -> np.ndarray:
        """The raw scores that a Platt calibration maps to ``probabilities``: where a probability threshold cuts
        the scores (``+-inf`` for a threshold of 0 or 1, or a flat calibration, which no score sits at)."""
        slope, intercept = self.parameters["slope"], self.parameters["intercept"]
        probabilities = np.asarray(probabilities, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            cuts = (np.log(probabilities) - np.log1p(-probabilities) - intercept) / slope
        return np.where(np.isnan(cuts), np.inf, cuts)


def default_calibration(family: str | None) -> Calibration:
    """The family's measured temperature (its :class:`zstc.models.families.Family` record's; 1 for an unknown one)."""
    record = find_family(family)
    return Calibration("temperature", {"temperature": record.temperature if record else 1.0}, family=family)


def calibration_record(
    report: dict[str, Any], *, model: str, family: str, score_type: str | None, settings: dict[str, Any]
) -> dict[str, Any]:
    """The JSON ``zstc calibrate`` writes: a calibration file (format, model, family, score type, method,
    parameters) that is also the report (ECE and Brier before and after, settings)."""
    return {
        "format": CALIBRATION_FORMAT,
        "format_version": CALIBRATION_FORMAT_VERSIONS[-1],
        "model": model,
        "family": family,
        "score_type": score_type,
        "settings": settings,
        **report,
    }


def load_calibration(path: str | Path) -> Calibration:
    """Read a file written by ``zstc calibrate --out``; every problem is one :class:`DataError`."""
    import json

    from zstc.io import read_text

    path = Path(path)
    if not path.exists():
        raise DataError(f"calibration file {path} does not exist")
    try:
        # zstc.io's reader, as for every text file: a byte-order mark is dropped, non-UTF-8 bytes named by offset.
        data = json.loads(read_text(path))
    except DataError as error:
        raise DataError(f"calibration file {error}") from None
    except json.JSONDecodeError as error:
        raise DataError(f"calibration file {path} is not readable JSON: {error}") from None
    if not isinstance(data, dict) or data.get("format") != CALIBRATION_FORMAT:
        raise DataError(
            f'{path} is not a calibration file written by `zstc calibrate --out` (no "format": "{CALIBRATION_FORMAT}")'
        )
    if data.get("format_version", 1) not in CALIBRATION_FORMAT_VERSIONS:  # none: a file made by hand, read as the first
        raise DataError(
            f"calibration file {path}: format_version {json.dumps(data.get('format_version'))} is not one this "
            f"zstc reads ({', '.join(map(str, CALIBRATION_FORMAT_VERSIONS))}): fit it again with this zstc's "
            "`zstc calibrate`, or use the zstc that wrote it"
        )
    method, parameters = str(data.get("method")), data.get("parameters")
    problem = calibration_problem(method, parameters)
    if problem is not None:
        raise DataError(f"calibration file {path}: {problem}")
    assert isinstance(parameters, dict)  # calibration_problem found one
    needed = CALIBRATION_PARAMETERS[method]
    return Calibration(
        method, {k: float(parameters[k]) for k in needed}, data.get("model"), data.get("family"), data.get("score_type")
    )


def calibration_problem(method: str, parameters: Any) -> str | None:
    """What is wrong with a calibration's ``method`` and ``parameters`` (None: nothing), in words for a message: one
    rule for a file (:func:`load_calibration`) and a :class:`Calibration` built in Python."""
    import json

    needed = CALIBRATION_PARAMETERS.get(method)
    if needed is None or not isinstance(parameters, dict) or not all(k in parameters for k in needed):
        return "expected method temperature (with a temperature) or platt (slope, intercept)"
    for name in needed:  # json reads NaN and Infinity; a NaN parameter would make every score NaN, true would read as 1
        value = parameters[name]
        if not is_number(value) or not math.isfinite(value):
            shown = quoted(value) if isinstance(value, str) else json.dumps(value, default=repr)[:60]
            return f"parameter {name} must be a finite number, got {shown}"
    if method == "temperature" and parameters["temperature"] < MIN_TEMPERATURE:
        # 1e-320 is positive, and logits over it overflow: every probability NaN, written as such.
        return (
            f"the temperature must be positive, at least {MIN_TEMPERATURE:g} (a smaller one makes the probabilities 0, 1 or, "
            f"past float range, NaN), got {parameters['temperature']!r}"
        )
    return None
