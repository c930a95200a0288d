"""The root command group, ``app``, that every command module registers its commands on (:mod:`zstc.cli` imports
them all). A module of its own so that a command imports ``app`` without importing every other command."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

import typer
from typer.core import TyperGroup


class CommandGroup(TyperGroup):
    """zstc's command groups (``zstc``, ``zstc cache``). A value missing after an option (``zstc classify f
    --labels``) is refused by click's option parser, which raises it with no context, so its line named ``zstc
    --help``: it gets its command's context, so that it names ``zstc classify --help`` (``python -m zstc classify
    --help`` under ``python -m``) as every other usage error does."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]  # typer's own Context, as typer passes
        try:
            return super().invoke(ctx)
        except typer.TyperException as error:
            name = ctx.invoked_subcommand  # set once the command is known, before its options are parsed
            command = self.get_command(ctx, name) if name is not None else None
            if command is not None and hasattr(error, "ctx") and error.ctx is None:
                error.ctx = type(ctx)(command, info_name=name, parent=ctx)
            raise


app = typer.Typer(
    cls=CommandGroup,
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
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Only results and errors: no progress bars, notes or summaries.")
    ] = False,
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Let the model libraries print their own logs and progress bars too."),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print zstc's version and exit.")
    ] = False,
) -> None:
    """Options for every command; they go before the command: `zstc --quiet classify ...`."""
    from zstc.cli.verbosity import configure

    configure(quiet=quiet, verbose=verbose)


def prose(text: str) -> str:
    """Help text as rich should wrap it: each paragraph on one line. typer's rich help keeps a docstring's single
    line breaks (its command list and every paragraph after a command's first), so docstrings wrapped at 120
    columns printed as ragged lines ("... Cross-encoders\n score each pair")."""
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in inspect.cleandoc(text).split("\n\n"))


def help_as_prose(group: typer.Typer) -> None:
    """Every command's and subgroup's help in ``group`` as :func:`prose`: the first paragraph, a one-line summary, is
    what ``zstc --help`` lists; the rest is the command's own ``--help``."""
    for info in group.registered_commands:
        text = info.help if isinstance(info.help, str) else inspect.getdoc(info.callback)
        if text:
            info.help = prose(text)
    for sub in group.registered_groups:
        assert sub.typer_instance is not None, sub
        if isinstance(sub.typer_instance.info.help, str):
            sub.typer_instance.info.help = prose(sub.typer_instance.info.help)
        help_as_prose(sub.typer_instance)
