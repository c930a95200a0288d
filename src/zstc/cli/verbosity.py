"""How much the command line says: quiet by default about other libraries, zstc's own progress on a terminal.

Third-party progress bars and load reports (transformers' "Loading weights", sentence-transformers'
batches, the hub's downloads) are switched off through the environment variables those libraries read
when they are imported, so nothing heavy is imported here; a library imported already is told directly.
"""

from __future__ import annotations

import logging
import os
import sys

LEVEL = {"quiet": 0, "normal": 1, "verbose": 2}
_level = LEVEL["normal"]

_NOISY_LOGGERS = ("transformers", "sentence_transformers", "huggingface_hub", "accelerate", "datasets", "torch")
_NOTE_LOGGERS = ("zstc.models.offline",)
"""zstc's library modules that log notes (a one-time model conversion): shown unless ``--quiet``, like :func:`note`."""


def configure(*, quiet: bool = False, verbose: bool = False) -> None:
    """Set the level for this process: ``--verbose`` lets every library talk, else they stay silent."""
    global _level
    _level = LEVEL["verbose"] if verbose else LEVEL["quiet"] if quiet else LEVEL["normal"]
    for name in _NOTE_LOGGERS:  # set either way: one process may run several commands (tests, a caller of main)
        logging.getLogger(name).setLevel(logging.ERROR if _level == LEVEL["quiet"] else logging.NOTSET)
    if verbose:
        return
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    for name in _NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    if "transformers" in sys.modules:  # imported before the environment was set (tests, the API)
        from transformers.utils import logging as transformers_logging

        transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
        transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars  # type: ignore[attr-defined]  # not in its __all__

        disable_progress_bars()


def show_progress() -> bool:
    """zstc's own progress bars: on a terminal, unless ``--quiet``."""
    return _level > LEVEL["quiet"] and sys.stderr.isatty()


def quiet() -> bool:
    """Whether notes and summary lines on stderr are wanted (``--quiet`` turns them off)."""
    return _level == LEVEL["quiet"]


def say(line: str) -> None:
    """Print a progress or summary line on stderr, unless ``--quiet``: what a command tells while it works, not
    its results (tables, records, the files it wrote) or its errors, which ``--quiet`` keeps."""
    if not quiet():
        print(line, file=sys.stderr)


def note(message: str) -> None:
    """Print ``note: message`` on stderr, unless ``--quiet``."""
    say(f"note: {message}")


def wrote(what: str) -> None:
    """Print ``wrote WHAT`` on stderr, even under ``--quiet`` (it names a result): one plain line, so a long path is
    never wrapped at the terminal's width nor read as rich markup, and a script or a copy and paste gets it whole."""
    print(f"wrote {what}", file=sys.stderr)
