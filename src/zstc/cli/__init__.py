"""The ``zstc`` command line. Each command lives in its own module and registers itself on ``app``.

Errors a user can cause (:class:`zstc.errors.ZstcError`) are printed as one line and exit non-zero;
an interrupt exits 130 after the command has saved what it finished.
"""

from __future__ import annotations

import sys
from typing import Annotated

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



def _version(value: bool) -> None:
    if value:
        from zstc import __version__

        print(f"zstc {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only results and errors: no progress bars, notes or summaries.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Let the model libraries print their own logs and progress bars too.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print zstc's version and exit.")] = False,
) -> None:
    """Options for every command; they go before the command: `zstc --quiet classify ...`."""
    from zstc.cli.verbosity import configure

    configure(quiet=quiet, verbose=verbose)


# Command modules: importing one registers its commands. Heavy imports stay inside the commands.
from zstc.cli import bench, classify, demo, experiments, info, probe, report, serve, train  # noqa: E402,F401


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
