"""Errors a user can cause. The CLI prints them as one line and exits non-zero; no traceback.

Everything raised for bad input derives from :class:`ZstcError`, so callers of the Python API can catch
one type. Programming errors (bugs) are left as ordinary exceptions on purpose. A signal that stops zstc
(:data:`STOPS`) is answered in the same voice: one line and its own exit status.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterable
from typing import NoReturn


class ZstcError(Exception):
    """Base class for every error caused by input, configuration or environment."""

    exit_code: int = 2

    def __init__(self, *args: object, parameters: tuple[str, ...] = ()) -> None:
        super().__init__(*args)
        self.parameters = parameters
        """The Python parameter names the message mentions (``batch_size``); a front end that calls them
        something else (the CLI's ``--batch-size``) rewrites them when it prints the message."""


class DataError(ZstcError):
    """A data file or dataset is missing, unreadable or malformed."""


class LabelError(ZstcError):
    """The candidate labels are unusable (empty, a single one, duplicates)."""


class ModelError(ZstcError):
    """A model cannot be resolved, loaded, or lacks what its family needs."""


class DescriptionTooLongError(ModelError):
    """A label description (a rerank document) that the model cannot read whole: descriptions are never
    truncated. :attr:`description` is the one found too long, as the model reads it (with any prefix);
    :attr:`limit` the model's token limit."""

    def __init__(self, message: str, description: str, limit: int, *, parameters: tuple[str, ...] = ()) -> None:
        super().__init__(message, parameters=parameters)
        self.description = description
        self.limit = limit

    @classmethod
    def of(
        cls, description: str, limit: int, *, model: str, user_limit: bool, length: int | None = None
    ) -> DescriptionTooLongError:
        """The error for ``description``, too long for ``limit`` tokens (``length``: its own tokens, where the text must
        fit beside it, as in a cross-encoder's pair). ``user_limit``: the limit is the user's ``max_length``, which the
        message then names as the cause (the CLI writes it as its flag), not ``model``'s own limit."""
        within = f"max_length ({limit} tokens)" if user_limit else f"{model}'s {limit} tokens"
        what = (
            f"a label description is {length} tokens long, which leaves no room for the text within {within}"
            if length is not None
            else f"a label description is longer than {within}"
        )
        remedy = "raise max_length (or leave it out for the model's own limit), or shorten" if user_limit else "shorten"
        return cls(
            f"{what}; label descriptions are never truncated: {remedy} {quoted(description)}",
            description,
            limit,
            parameters=("max_length",) if user_limit else (),
        )


class NonFiniteScoresError(ModelError):
    """A model gave NaN or infinite scores: a fault of its weights or its precision, not of the input (the
    service answers 500). Decided on, they would pick a label silently: argmax takes the first NaN."""


class UnknownNameError(ZstcError):
    """A task, family or option value is not one zstc knows."""


class OptionError(ZstcError, ValueError):
    """An option value is out of its range, of the wrong type, or not one of its choices.

    The message names the parameter (``batch_size must be >= 1, got 0``), listed in :attr:`parameters`.
    """

    def __init__(self, message: str, *parameters: str) -> None:
        super().__init__(message, parameters=parameters)


class UnknownOptionError(OptionError, UnknownNameError):
    """An option the callee does not take, or a value that is not one of an option's named choices."""


class OutputError(ZstcError):
    """An output path cannot be written: it is an input, a directory, in a missing or read-only folder, or the
    disk refused the write."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every ``except KeyboardInterrupt`` that saves finished work runs for it too.

    The CLI exits 143 (128 + SIGTERM) for it instead of Ctrl-C's 130.
    """

    exit_code: int = 143


STOPS: dict[int, tuple[str, int]] = {
    signal.SIGINT: ("interrupted (SIGINT)", 130),
    signal.SIGTERM: ("terminated (SIGTERM)", 143),
}
"""Per signal: the one line zstc prints on stderr and its exit status (128 + the signal's number)."""


def stopped(signum: int) -> NoReturn:
    """Exit as a command stopped by ``signum`` does, after its message."""
    message, status = STOPS[signum]
    print(message, file=sys.stderr)
    sys.exit(status)


def quoted(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut after ``limit`` characters (saying how long it was): a message names what the user
    gave without echoing a 10,000-character label back at them (or into a server's response and log)."""
    text = str(value) if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(value)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the closest of ``choices`` to a mistyped ``name`` (case-insensitive), or ``""``."""
    import difflib

    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""
