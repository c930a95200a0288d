"""The ``zstc`` command line. Each command lives in its own module and registers itself on ``app``.

Errors a user can cause (:class:`zstc.errors.ZstcError`) are printed as one line and exit non-zero;
an interrupt exits 130 after the command has saved what it finished.
"""

from __future__ import annotations

import sys

import typer

from zstc.errors import ZstcError

app = typer.Typer(
    name="zstc",
    help="Zero-shot text classification with NLI cross-encoders, embedding models, rerankers and LLMs; "
    "and the BTZSC benchmark.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Command modules: importing one registers its commands. Heavy imports stay inside the commands.
from zstc.cli import bench, cache, classify, demo, experiments, info, probe, report, serve, sweep, train  # noqa: E402,F401


def main() -> None:
    try:
        # standalone_mode=False lets zstc's own errors reach the handler below; click then returns
        # the exit code of typer.Exit instead of raising SystemExit itself.
        result = app(standalone_mode=False)
    except ZstcError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.Abort:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.TyperException as error:  # usage errors: unknown option, missing argument, bad value
        show = getattr(error, "show", None)
        if show is None:
            raise
        show()
        sys.exit(getattr(error, "exit_code", 2))
    sys.exit(result if isinstance(result, int) else 0)
