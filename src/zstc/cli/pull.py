"""``zstc data pull``: the BTZSC datasets downloaded once from the hub, checked, and kept for offline runs."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from zstc.cli.root import CommandGroup, app

data_app = typer.Typer(
    cls=CommandGroup,
    help="The BTZSC benchmark data: `zstc data pull` downloads and checks it once.",
    no_args_is_help=True,
)
app.add_typer(data_app, name="data")


@data_app.command("pull")
def pull(
    tasks: Annotated[
        Optional[str], typer.Option(help="Comma-separated datasets or a task family; default: all 22.")
    ] = None,
    force: Annotated[bool, typer.Option(help="Download again datasets already pulled and intact.")] = False,
) -> None:
    """Download the BTZSC datasets once and keep them for offline runs.

    Downloads them from the hub (btzsc/btzsc), checks them against tasks.json (hypotheses, and the number of
    texts where known) and keeps them in $ZSTC_CACHE/data with their sha256; afterwards every command finds them
    without the hub."""
    from zstc.benchmark.catalog import pulled_data_dir, resolve_task_names
    from zstc.benchmark.data import hub_datasets, pull_dataset, pulled_intact
    from zstc.cli.verbosity import say, show_progress
    from zstc.errors import DataError

    names = resolve_task_names(tasks, "hub")
    datasets = hub_datasets()  # missing: said once, not once per dataset
    if show_progress():  # the download's own bars on a terminal: a large dataset takes a while
        from huggingface_hub.utils import enable_progress_bars  # type: ignore[attr-defined]  # not in its __all__

        enable_progress_bars()
        datasets.utils.logging.enable_progress_bar()
    folder = pulled_data_dir()
    say(f"pulling {len(names)} BTZSC datasets into {folder}")
    failed: list[str] = []
    for number, name in enumerate(names, start=1):
        step = f"[{number}/{len(names)}] {name}"
        if not force and pulled_intact(name, folder):
            say(f"{step}: already pulled, sha256 checked")
            continue
        say(f"{step}: downloading")
        try:
            entry = pull_dataset(name, folder)
        except DataError as error:  # the others are still pulled; the command fails at the end, naming them
            say(f"{step}: failed: {error}")
            failed.append(name)
            continue
        say(f"{step}: {entry['texts']:,} texts checked, stored (sha256 {str(entry['sha256'])[:12]})")
    if failed:
        raise DataError(
            f"{len(failed)} of {len(names)} datasets not pulled: {', '.join(failed)} (see above); "
            "the others are stored; run the same command again to retry"
        )
    say(f"done: {folder} holds them; every command now finds them without --data")
