"""Errors a user can cause. The CLI prints them as one line and exits non-zero; no traceback.

Everything raised for bad input derives from :class:`ZstcError`, so callers of the Python API can catch
one type. Programming errors (bugs) are left as ordinary exceptions on purpose.
"""

from __future__ import annotations


class ZstcError(Exception):
    """Base class for every error caused by input, configuration or environment."""

    exit_code: int = 2


class DataError(ZstcError):
    """A data file or dataset is missing, unreadable or malformed."""


class LabelError(ZstcError):
    """The candidate labels are unusable (empty, a single one, duplicates)."""


class ModelError(ZstcError):
    """A model cannot be resolved, loaded, or lacks what its family needs."""


class UnknownNameError(ZstcError):
    """A task, family or option value is not one zstc knows."""


class OptionError(ZstcError):
    """An option's value is out of its range or of the wrong kind (the message names the option)."""


class OutputError(ZstcError):
    """An output path cannot be written: it is an input, a directory, in a missing or read-only folder, or the
    disk refused the write."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so every ``except KeyboardInterrupt`` that saves finished work runs for it too.

    The CLI exits 143 (128 + SIGTERM) for it instead of Ctrl-C's 130.
    """

    exit_code: int = 143
