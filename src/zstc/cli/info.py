"""``zstc tasks`` and ``zstc models``: what zstc knows."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from zstc.cli import app


@app.command()
def tasks(family: Annotated[Optional[str], typer.Option(help="Only this task family.")] = None) -> None:
    """List the 22 BTZSC datasets with family, domain and number of candidate labels."""
    from zstc.benchmark.catalog import catalog, families

    groups = families()
    if family is not None and family not in groups:
        from zstc.errors import UnknownNameError

        raise UnknownNameError(f"unknown task family {family!r}; expected one of {', '.join(groups)}")
    table = Table("dataset", "family", "domain", "labels", "without hypothesis", title="BTZSC tasks")
    for spec in catalog().values():
        if family is None or spec.family == family:
            table.add_row(spec.name, spec.family, spec.domain, str(len(spec.labels)), str(len(spec.labels_without_hypothesis) or ""))
    Console().print(table)


@app.command()
def models(family: Annotated[Optional[str], typer.Option(help="Only this model family.")] = None) -> None:
    """List registered models: family, paper name, size, and whether they run offline here."""
    from zstc.models.registry import registered_models

    table = Table("model", "family", "paper name", "params (M)", "offline", title="Registered models")
    for spec in registered_models():
        if family is None or spec.family == family:
            offline = "yes" if spec.available_offline() else ""
            params = f"{spec.params_millions:g}" if spec.params_millions else ""
            table.add_row(spec.model_id, spec.family, spec.paper_name or "", params, offline)
    Console(width=max(Console().width, 120)).print(table)
    Console().print("Any other hub model or local folder works with --family.", style="dim")
