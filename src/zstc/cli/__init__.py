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
from zstc.cli import bench, classify, demo, info, nli_probe  # noqa: E402,F401


def main() -> None:
    try:
        app(standalone_mode=False)
    except ZstcError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as error:  # click's own usage errors
        import click

        if isinstance(error, click.exceptions.Abort):
            print("interrupted", file=sys.stderr)
            sys.exit(130)
        if isinstance(error, click.ClickException):
            error.show()
            sys.exit(error.exit_code)
        raise
