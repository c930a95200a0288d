"""The ``zstc`` command line. Each command lives in its own module and registers itself on ``app``.

Errors a user can cause (:class:`zstc.errors.ZstcError`) are printed as one line and exit non-zero;
Ctrl-C (SIGINT) exits 130 and SIGTERM 143, each with a message, after the command has saved what it finished
(:mod:`zstc.entry`, the console command's entry point, covers the time this package takes to import).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType

import typer

from zstc.cli.root import app, help_as_prose
from zstc.errors import Terminated, ZstcError, stopped


# Command modules: importing one registers its commands on app. Heavy imports stay inside the commands.
from zstc.cli import bench, cache, classify, demo, experiments, info, probe, pull, report, serve, sweep, train  # noqa: F401

help_as_prose(app)


_signals: list[int] = []
"""The signals received, in order: typer turns the KeyboardInterrupt they raise into a bare exit code 130."""


SIGNAL_RETRY_S = 0.05
"""How soon a signal that arrived during an import is delivered again (:func:`_on_signal`)."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _importing(frame):
        # Raised inside an import, the interrupt became that module's ImportError ("initialization failed": a
        # traceback, exit 1), or a try/except ImportError around an optional import swallowed it and the command
        # went on as if never interrupted. Commands import their libraries lazily, so a signal early in a run
        # often lands in one: it is sent again until it arrives after the import, where it unwinds as any other.
        retry = threading.Timer(SIGNAL_RETRY_S, os.kill, (os.getpid(), signum))
        retry.daemon = True
        retry.start()
        return
    _signals.append(signum)
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


def _importing(frame: FrameType | None) -> bool:
    """Whether ``frame`` (where a signal interrupted the main thread) runs inside an import."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _install_signal_handlers() -> None:
    """SIGTERM unwinds like Ctrl-C (every ``except KeyboardInterrupt`` that saves finished work runs), and
    Ctrl-C raises even where a parent replaced Python's default handler (a shell's background job)."""
    try:
        signal.signal(signal.SIGTERM, _on_signal)
        signal.signal(signal.SIGINT, _on_signal)
    except ValueError:  # not the main thread (zstc's main called from a thread): leave signals alone
        pass


def _stopped(terminated: bool) -> None:
    stopped(signal.SIGTERM if terminated else signal.SIGINT)


def _usage_line(error: Exception) -> str | None:
    """A usage error (a value out of range, an unknown option, a missing argument) as one ``error:`` line, like
    every other user error; None for the help a bare ``zstc`` shows. By class name: typer vendors its click."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if "UsageError" not in names or "NoArgsIsHelpError" in names:
        return None
    context = getattr(error, "ctx", None)
    command = context.command_path if context is not None else "zstc"
    return f"error: {' '.join(error.format_message().split())} (see {command} --help)"  # type: ignore[attr-defined]


def main() -> None:
    """The command line, for a caller that has imported it (the ``zstc`` command starts in :mod:`zstc.entry`)."""
    try:
        _install_signal_handlers()  # inside the try: a signal right after it is an interrupt like any other
        # standalone_mode=False lets zstc's own errors reach the handler below; typer then returns the exit
        # code of typer.Exit, and 130 for a KeyboardInterrupt, instead of exiting itself.
        result = app(standalone_mode=False)
    except ZstcError as error:
        from zstc.cli.options import cli_message

        print("error: " + " ".join(cli_message(error).split()), file=sys.stderr)  # one line, whatever a message quotes
        sys.exit(error.exit_code)
    except KeyboardInterrupt as error:
        _stopped(isinstance(error, Terminated))
    except UnicodeEncodeError as error:  # a terminal or PYTHONIOENCODING whose encoding cannot write a text shown
        print(
            f"error: the output's encoding ({error.encoding}) cannot write {error.object[error.start : error.end]!a}: "
            "set PYTHONIOENCODING=utf-8 (or a UTF-8 locale)",
            file=sys.stderr,
        )
        sys.exit(2)
    except typer.Abort as error:
        if isinstance(error.__cause__, EOFError):
            raise error.__cause__  # an end of file nobody caught is a bug: show it, never call it an interrupt
        _stopped(False)
    except typer.TyperException as error:  # usage errors: unknown option, missing argument, bad value
        show = getattr(error, "show", None)
        if show is None:
            raise
        line = _usage_line(error)
        if line is None:
            show()
        else:
            print(line, file=sys.stderr)
        sys.exit(getattr(error, "exit_code", 2))
    if result == 130:  # typer's code for a KeyboardInterrupt it caught
        _stopped(bool(_signals) and _signals[-1] == signal.SIGTERM)
    sys.exit(result if isinstance(result, int) else 0)
