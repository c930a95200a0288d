"""``zstc tasks`` and ``zstc models``: what zstc knows, and what is found on this machine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from zstc.cli import app


def count_texts(path: Path, n_labels: int) -> int:
    """Texts in a dataset file without parsing it: JSONL lines, CSV records, Parquet rows from the footer.
    A paired file (one row per text and candidate label, a ``hypothesis`` column) holds rows / labels texts.
    Blank lines are not texts (the readers skip them); a file that cannot be read is a :class:`DataError`."""
    import csv

    from zstc.errors import DataError
    from zstc.io import utf8_lines

    suffix = path.suffix
    try:
        if suffix == ".jsonl":
            with path.open("rb") as handle:
                lines = [line for line in handle if line.strip()]
            paired = bool(lines) and b'"hypothesis"' in lines[0]
            rows = len(lines)
        elif suffix == ".csv":
            with path.open("rb") as handle:
                reader = csv.reader(utf8_lines(handle, str(path)))
                header = next(reader, [])
                rows = sum(1 for row in reader if row)  # a blank line is [] (csv.DictReader skips it too)
            paired = "hypothesis" in header
        else:
            import pyarrow.parquet as pq

            metadata = pq.ParquetFile(path)
            rows, paired = metadata.metadata.num_rows, "hypothesis" in metadata.schema_arrow.names
    except DataError:
        raise
    except Exception as error:  # OSError, csv.Error, pyarrow's several types for a damaged file
        raise DataError(f"{path}: cannot be read ({type(error).__name__}: {error})") from None
    return rows // n_labels if paired else rows


@app.command()
def tasks(
    family: Annotated[Optional[str], typer.Option(help="Only this task family.")] = None,
    data: Annotated[Optional[Path], typer.Option(help="Directory of dataset files to look in; default: $ZSTC_DATA, $ZSTC_SHARED_DATA/btzsc or shared/data/btzsc beside or above the working directory.")] = None,
) -> None:
    """List the 22 BTZSC datasets: family, domain, labels, and how many texts are found locally, where."""
    from zstc.benchmark.catalog import catalog, default_data_dir, families, local_task_file
    from zstc.errors import DataError, UnknownNameError, did_you_mean

    groups = families()
    if family is not None and family not in groups:
        raise UnknownNameError(f"unknown task family {family!r}{did_you_mean(family, groups)}; expected one of {', '.join(groups)}")
    if data is not None and not data.is_dir():
        raise DataError(f"{data}: no such directory")
    directory = data or default_data_dir()
    table = Table(title="BTZSC tasks" + (f" (files looked for in {directory})" if directory else ""))
    for column in ("dataset", "family", "domain", "labels", "no hypothesis", "texts here", "file"):
        table.add_column(column, no_wrap=column in ("dataset", "file"), justify="right" if column in ("labels", "no hypothesis", "texts here") else "left")
    found = 0
    for spec in catalog().values():
        if family is not None and spec.family != family:
            continue
        path = local_task_file(directory, spec.name) if directory else None
        found += path is not None
        texts = f"{count_texts(path, len(spec.labels)):,}" if path else ""
        table.add_row(spec.name, spec.family, spec.domain, str(len(spec.labels)), str(len(spec.labels_without_hypothesis) or ""),
                      texts, path.name if path else "hub only")
    console = Console(width=max(Console().width, 130))
    console.print(table)
    where = f"in {directory}" if directory else "locally (no data directory found; give --data)"
    console.print(f"{found} found {where}; `zstc bench --data DIR --tasks available` runs them; "
                  "the others load with --data hub.", style="dim")


@app.command()
def models(family: Annotated[Optional[str], typer.Option(help="Only this model family.")] = None) -> None:
    """List registered models: family, paper name, size, and whether they run offline here."""
    from zstc.models.registry import FAMILIES, registered_models

    if family is not None and family not in FAMILIES:
        from zstc.errors import UnknownNameError, did_you_mean

        raise UnknownNameError(f"unknown model family {family!r}{did_you_mean(family, FAMILIES)}; expected one of {', '.join(FAMILIES)}")
    table = Table("model", "family", "paper name", "params (M)", "offline", title="Registered models")
    for spec in registered_models():
        if family is None or spec.family == family:
            offline = "yes" if spec.available_offline() else ""
            params = f"{spec.params_millions:g}" if spec.params_millions else ""
            table.add_row(spec.model_id, spec.family, spec.paper_name or "", params, offline)
    Console(width=max(Console().width, 120)).print(table)
    Console().print("Any other hub model or local folder works with --family.", style="dim")
