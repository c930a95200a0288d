"""Option checks shared by the benchmark scripts: a bad value ends the script at once, with one line.

A benchmark may load models or train one before it first uses an option, so a value that cannot work
(0 repeats, 0 texts, a chunk of 0, ``abc`` in a list of numbers) is refused while the arguments are parsed,
as zstc's own commands refuse theirs: ``error: argument --chunk: ... (see SCRIPT --help)`` and exit status 2,
instead of a traceback minutes later.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import NoReturn, TypeVar

Number = TypeVar("Number", int, float)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line, in zstc's ``error: ...`` form, without the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def _at_least(value: Number, low: Number, text: str) -> Number:
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, got {text}")
    return value


def positive_int(text: str) -> int:
    """An ``int`` of at least 1 (texts, repeats, chunk and batch sizes)."""
    return _at_least(_integer(text), 1, text)


def non_negative_int(text: str) -> int:
    """An ``int`` of at least 0 (where 0 means "skip this part")."""
    return _at_least(_integer(text), 0, text)


def non_negative_float(text: str) -> float:
    """A finite ``float`` of at least 0 (a margin, where 0 turns it off)."""
    return _at_least(_finite(text), 0.0, text)


def positive_float(text: str) -> float:
    """A finite ``float`` above 0 (a time limit)."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def _list(text: str, item: Callable[[str], Number], example: str) -> list[Number]:
    """Comma-separated values, each read by ``item``; at least one. An error names the bad one among several."""
    values = [part.strip() for part in text.split(",") if part.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated {example}, got {text!r}")
    numbers = []
    for value in values:
        try:
            numbers.append(item(value))
        except argparse.ArgumentTypeError as error:
            where = f"{value!r} in {text!r}: " if len(values) > 1 else ""  # which one, when there are several
            raise argparse.ArgumentTypeError(f"{where}{error}") from None
    return numbers


def positive_int_list(text: str) -> list[int]:
    """Comma-separated ints of at least 1, e.g. ``1,2,4,8``; at least one."""
    return _list(text, positive_int, "whole numbers such as 1,2,4")


def positive_float_list(text: str) -> list[float]:
    """Comma-separated finite floats above 0, e.g. ``0.005,0.01`` (margins); at least one."""
    return _list(text, positive_float, "numbers such as 0.005,0.01")
