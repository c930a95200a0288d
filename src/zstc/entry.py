"""The ``zstc`` console command (and ``python -m zstc``): Ctrl-C and SIGTERM are answered from the very start.

Importing the command line (typer, rich and every command module) takes a while; a signal in that time used
to end in a traceback from whatever import it hit. This module imports nothing heavy, so it can install its
handlers first: until :func:`zstc.cli.main` takes over with handlers that let a command save finished work,
a signal prints one line and exits 130 (SIGINT) or 143 (SIGTERM) at once, as nothing has been done yet.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

from zstc.errors import STOPS


def _while_starting(signum: int, frame: FrameType | None) -> None:
    # Raising here would unwind through half-finished imports (and any library's cleanup of them); with no
    # work begun there is nothing to save, so leave at once.
    message, status = STOPS[signum]
    try:
        os.write(sys.stderr.fileno(), f"{message}\n".encode())
    except (OSError, ValueError, AttributeError):  # no usable stderr: the status still says it
        pass
    os._exit(status)


def main() -> None:
    """Run the ``zstc`` command line."""
    try:
        for signum in STOPS:
            signal.signal(signum, _while_starting)
    except ValueError:  # not the main thread: leave signals alone
        pass
    from zstc.cli import main as cli_main

    cli_main()
