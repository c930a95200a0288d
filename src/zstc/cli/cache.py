"""``zstc cache list|show|clear``: the shared result cache that bench, sweep and report reuse."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from zstc.cli.root import CommandGroup, app

cache_app = typer.Typer(
    cls=CommandGroup,
    help="The shared result cache ($ZSTC_CACHE/results): what bench and sweep reuse.",
    no_args_is_help=True,
)
app.add_typer(cache_app, name="cache")
console = Console(stderr=True)

ModelFilter = Annotated[Optional[str], typer.Option("--model", "-m", help="Only this model's entries.")]


@cache_app.command("list")
def list_entries(model: ModelFilter = None) -> None:
    """One line per cached (model, revision, dataset, fingerprint) with its macro-F1."""
    from zstc.benchmark.result_cache import ResultCache

    cache = ResultCache()
    entries = cache.entries(_cached_name(model))
    table = Table(title=f"{len(entries)} cached results in {cache.root}")
    for column in ("model", "revision", "dataset", "fingerprint", "texts", "macro-F1", "created"):
        table.add_column(column, justify="right" if column in ("texts", "macro-F1") else "left")
    for entry in entries:
        f1 = entry.get("macro_f1")
        table.add_row(
            str(entry["model"]),
            str(entry.get("revision", "?"))[:12],
            str(entry["dataset"]),
            str(entry["fingerprint"]),
            str(entry.get("n_texts", "")),
            "corrupt" if entry.get("corrupt") else (f"{f1:.4f}" if f1 is not None else ""),
            str(entry.get("created") or ""),
        )
    Console(width=max(Console().width, 140)).print(table)


@cache_app.command("show")
def show(
    entry: Annotated[
        str,
        typer.Argument(
            help="An entry's fingerprint as `zstc cache list` prints it; DATASET/FINGERPRINT (or more of its path: MODEL_FOLDER/REVISION/DATASET/FINGERPRINT) where a fingerprint alone names several; or its path."
        ),
    ],
) -> None:
    """Print one entry's record (metrics, settings, timing) as JSON, after checking its checksums."""
    from zstc.benchmark.result_cache import NO_REVISION, ResultCache
    from zstc.cli.verbosity import note
    from zstc.errors import DataError

    cache = ResultCache(on_note=note)
    # Whole path components only: a bare suffix ("3", "ank/FINGERPRINT") named whichever entry ended with it.
    matches = [
        e
        for e in cache.entries()
        if entry in (e["path"], e["fingerprint"])
        or ("/" + Path(e["path"]).with_suffix("").as_posix()).endswith("/" + entry.strip("/"))
    ]
    if len(matches) != 1:
        raise DataError(
            f"{entry!r} names {len(matches)} cache entries; give a fingerprint from `zstc cache list`, DATASET/FINGERPRINT, or the entry's path"
        )
    path = Path(matches[0]["path"])
    # The entry's own folders name it: its JSON may be the damaged part (it was read first, a traceback).
    folder, revision, dataset = path.parts[-4:-1]
    result = cache.get(folder, None if revision == NO_REVISION else revision, dataset, path.stem)
    if result is None:
        raise DataError(f"{path}: corrupt entry, removed; the next bench or sweep recomputes it")
    record = json.loads(path.read_text(encoding="utf-8"))
    record["record"]["scores_shape"] = list(result.scores.shape)  # type: ignore[union-attr]  # cache.get returns results with scores
    print(json.dumps(record, indent=2, ensure_ascii=False))


@cache_app.command("clear")
def clear(
    model: ModelFilter = None, yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False
) -> None:
    """Remove every cached result (or one model's)."""
    from zstc.benchmark.result_cache import ResultCache

    from zstc.errors import OptionError

    cache = ResultCache()
    model = _cached_name(model)
    what = f"the cached results of {model}" if model else f"every cached result in {cache.root}"
    try:
        confirmed = yes or typer.confirm(f"remove {what}?", err=True)
    except typer.Abort as error:
        if not isinstance(error.__cause__ or error.__context__, EOFError):  # click raises it "from None"
            raise
        # stdin ended (< /dev/null, a script): no answer, which was reported as an interrupt
        print(file=sys.stderr)  # ends the question's line
        raise OptionError(
            "cache clear asks before it removes anything, and stdin ended without an answer: give --yes "
            "to clear without asking",
            "yes",
        ) from None
    if not confirmed:
        raise typer.Exit(1)
    console.print(f"removed {cache.clear(model)} cached results")


def _cached_name(model: str | None) -> str | None:
    """``--model`` as the cache files entries: a registered model's short name (``all-MiniLM-L6-v2``) as its hub id,
    under which bench stores it (it cleared 0 entries); any other name as given."""
    from zstc.errors import ZstcError
    from zstc.models.registry import get_model_spec

    if model is None or Path(model).expanduser().exists():
        return model
    try:
        return get_model_spec(model).model_id
    except ZstcError:
        return model
