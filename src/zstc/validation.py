"""The one place where user-provided texts, labels and options are checked (scikit-learn style).

Every entry point (Python API, CLI, HTTP service, bench) calls these, so a message for a given mistake is
written once and reads the same everywhere.

Options are checked against data, not code: each option is an :class:`OptionSpec` (type, range, choices,
finiteness, whether ``None`` is a value), and :func:`check_options` checks a dict of values against a dict
of specs. Messages name the Python parameter (``batch_size must be >= 1, got 0``); the CLI rewrites the
names it lists in :attr:`OptionError.parameters` into its flags when it prints one.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zstc.errors import DataError, LabelError, OptionError, UnknownOptionError

_TYPE_WORDS: dict[type, str] = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


@dataclass(frozen=True)
class OptionSpec:
    """What values one option accepts, and its default."""

    type: type
    """``bool``, ``int``, ``float`` or ``str`` (an ``int`` is accepted where a ``float`` is asked for)."""
    default: Any = None
    low: float | None = None
    """Smallest allowed value (``low_inclusive=False``: values must be above it)."""
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    choices: tuple[Any, ...] | None = None
    """The only values allowed, when the option names one of a few things."""
    finite: bool = True
    """For ``float`` options: reject NaN and infinity."""
    allow_none: bool = False
    """Whether ``None`` is a value of its own (it then means what :attr:`help` says, e.g. "the model's own")."""
    meaning: str = ""
    """What a value names, for messages about choices: ``"score type"`` gives "unknown score type 'odds'"."""
    help: str = ""

    def check(self, name: str, value: Any) -> Any:
        """``value`` if it satisfies this spec, else :class:`OptionError` naming ``name``."""
        if value is None:
            if self.allow_none:
                return None
            raise OptionError(f"{name} must be {_TYPE_WORDS.get(self.type, self.type.__name__)}, got None", name)
        if not _is_instance(value, self.type):
            raise OptionError(f"{name} must be {_TYPE_WORDS.get(self.type, self.type.__name__)}, got {value!r}", name)
        if self.type is float:
            value = float(value)
            if self.finite and not math.isfinite(value):
                raise OptionError(f"{name} must be finite, got {value}", name)
        elif self.type is int:
            value = int(value)
        if self.choices is not None and value not in self.choices:
            expected = ", ".join(str(choice) for choice in self.choices)
            if self.meaning:
                raise UnknownOptionError(f"unknown {self.meaning} {value!r}: {name} must be one of {expected}", name)
            raise UnknownOptionError(f"{name} must be one of {expected}, got {value!r}", name)
        if self.low is not None and not (value >= self.low if self.low_inclusive else value > self.low):
            raise OptionError(f"{name} must be {'>=' if self.low_inclusive else '>'} {_number(self.low)}, got {value}", name)
        if self.high is not None and not (value <= self.high if self.high_inclusive else value < self.high):
            raise OptionError(f"{name} must be {'<=' if self.high_inclusive else '<'} {_number(self.high)}, got {value}", name)
        return value


def _is_instance(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, (bool, _numpy_bool()))
    if kind is int:  # True is an int to Python, never a batch size to a user
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    return isinstance(value, kind)


def _numpy_bool() -> type:
    try:
        import numpy

        return numpy.bool_
    except ImportError:  # pragma: no cover - numpy is a dependency
        return bool


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def check_options(values: Mapping[str, Any], specs: Mapping[str, OptionSpec], *, context: str = "") -> dict[str, Any]:
    """Every option of ``specs``: the checked value where ``values`` gives one, else its default.

    A value of ``None`` counts as not given (front ends pass ``None`` for what the user left unset), so
    it takes the default. A name ``specs`` does not have is an :class:`UnknownOptionError` ("pooling does
    not apply to nli models"), never silently ignored; ``context`` says to what (``"nli models (m)"``).
    """
    unknown = [name for name, value in values.items() if name not in specs and value is not None]
    if unknown:
        target = context or f"this call (it takes {', '.join(specs) or 'no options'})"
        raise UnknownOptionError(f"{', '.join(unknown)} does not apply to {target}", *unknown)
    checked: dict[str, Any] = {}
    for name, spec in specs.items():
        value = values.get(name)
        checked[name] = spec.default if value is None else spec.check(name, value)
    return checked


def check_option(name: str, value: Any, spec: OptionSpec) -> Any:
    """One option (``None`` is its default): ``check_options({name: value}, {name: spec})[name]``."""
    return check_options({name: value}, {name: spec})[name]


def check_labels(labels: Sequence[str], *, what: str = "labels", allow_single: bool = False) -> list[str]:
    """Return the labels as a list of stripped strings, or raise :class:`LabelError`.

    A zero-shot decision among fewer than two candidates is meaningless for argmax; multi-label
    scoring (one label, yes or no) passes ``allow_single=True``.
    """
    if isinstance(labels, str):
        raise LabelError(f"{what} must be a sequence of strings, got one string {labels!r}")
    cleaned = [str(label).strip() for label in labels]
    if not cleaned:
        raise LabelError(f"no {what} given: expected at least two")
    empty = [i for i, label in enumerate(cleaned) if not label]
    if empty:
        raise LabelError(f"{what} contain an empty entry (position {empty[0] + 1})")
    if len(cleaned) < 2 and not allow_single:
        raise LabelError(f"only one label given ({cleaned[0]!r}): zero-shot classification needs at least two")
    duplicates = [label for label, count in Counter(cleaned).items() if count > 1]
    if duplicates:
        raise LabelError(f"duplicate {what}: {', '.join(repr(d) for d in duplicates)}")
    return cleaned


def check_template(template: str, *, parameter: str = "template") -> str:
    """``template`` if it has exactly one ``{}`` (where a label goes), else :class:`LabelError`."""
    if template.count("{}") != 1:
        raise LabelError(f"{parameter} must contain exactly one '{{}}' where the label goes, got {template!r}",
                         parameters=(parameter,))
    return template


def check_texts(texts: Sequence[str], *, source: str = "input") -> list[str]:
    """Return the texts as a list, or raise :class:`DataError` naming the first empty one."""
    if isinstance(texts, str):
        raise DataError(f"{source}: texts must be a sequence of strings, got one string")
    result = list(texts)
    if not result:
        raise DataError(f"{source}: no texts to classify")
    for i, text in enumerate(result):
        if not isinstance(text, str):
            raise DataError(f"{source}: text {i + 1} is {type(text).__name__}, expected a string")
        if not text.strip():
            raise DataError(f"{source}: text {i + 1} is empty")
    return result
