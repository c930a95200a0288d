"""The BTZSC task catalog: 22 dataset definitions shipped as package data (resources/tasks.json).

A definition is benchmark metadata, not data: family, domain, class names and one hypothesis per class,
in class order (Python ``sorted()`` of the class names, as the published data orders them).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from zstc.errors import DataError, UnknownNameError, UnknownOptionError, did_you_mean

FAMILY_ORDER: tuple[str, ...] = ("sentiment", "emotion", "intent", "topic")


@dataclass(frozen=True)
class TaskSpec:
    """One BTZSC dataset definition."""

    name: str
    family: str
    domain: str
    labels: tuple[str, ...]
    """Class names that have a hypothesis, in class order; gold indices point into this tuple."""
    hypotheses: tuple[str, ...]
    """One hypothesis per entry of ``labels``, verbatim (typos included: they are part of the benchmark)."""
    labels_without_hypothesis: tuple[str, ...] = ()
    """Gold classes the published data has no hypothesis for (banking77: 5, massive: 1)."""
    texts: int | None = None
    """How many texts the published test set holds, where known here (the six datasets rebuilt and checked against
    the published rows); ``zstc data pull`` refuses a download of another size."""

    def __post_init__(self) -> None:
        if len(self.labels) != len(self.hypotheses):
            raise ValueError(f"{self.name}: {len(self.labels)} labels but {len(self.hypotheses)} hypotheses")


@cache
def catalog() -> dict[str, TaskSpec]:
    """All 22 BTZSC task definitions, in the paper's order."""
    raw = json.loads(resources.files("zstc.resources").joinpath("tasks.json").read_text(encoding="utf-8"))
    return {
        name: TaskSpec(
            name=name,
            family=entry["family"],
            domain=entry["domain"],
            labels=tuple(entry["labels"]),
            hypotheses=tuple(entry["hypotheses"]),
            labels_without_hypothesis=tuple(entry.get("labels_without_hypothesis", ())),
            texts=entry.get("texts"),
        )
        for name, entry in raw.items()
    }


def families() -> dict[str, list[str]]:
    """Task family -> dataset names, families in the paper's order."""
    groups: dict[str, list[str]] = {family: [] for family in FAMILY_ORDER}
    for spec in catalog().values():
        groups.setdefault(spec.family, []).append(spec.name)
    return groups


def get_task_spec(name: str) -> TaskSpec:
    """The catalog entry of one BTZSC dataset; an unknown name is an error with a "did you mean"."""
    try:
        return catalog()[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown task {name!r}{did_you_mean(name, [*catalog(), *families()])}; known tasks: {', '.join(catalog())} "
            f"and families: {', '.join(families())} (see `zstc tasks`)"
        ) from None


def one_dataset(name: str, parameter: str = "task") -> TaskSpec:
    """The dataset an option that takes one (``--task``) names. A family, or a name that is no dataset, is an
    :class:`UnknownOptionError` naming ``parameter``: a family lists its datasets, and a "did you mean"
    suggests datasets only (never a family, which the option would refuse next)."""
    groups = families()
    if name in groups:
        raise UnknownOptionError(
            f"{parameter} takes one dataset; {name!r} is a family (its datasets: {', '.join(groups[name])})", parameter
        )
    if name not in catalog():
        raise UnknownOptionError(
            f"unknown dataset {name!r}{did_you_mean(name, catalog())}: {parameter} takes one of "
            f"{', '.join(catalog())} (see `zstc tasks`)",
            parameter,
        )
    return catalog()[name]


TASK_FILE_SUFFIXES: tuple[str, ...] = (".jsonl", ".csv", ".parquet")


def local_task_file(directory: str | Path, name: str) -> Path | None:
    """The file holding dataset ``name`` in ``directory`` (``NAME.jsonl``, ``.csv`` or ``.parquet``), if any."""
    for suffix in TASK_FILE_SUFFIXES:
        candidate = Path(directory) / f"{name}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def available_tasks(directory: str | Path) -> list[str]:
    """The datasets found in ``directory``, in the paper's order."""
    return [name for name in catalog() if local_task_file(directory, name) is not None]


def data_directory(data: str | Path) -> Path:
    """``--data`` as a directory of task files, or :class:`DataError` saying why it is not one (a file given for the
    folder it is in was "no such directory", or "no dataset files in" it)."""
    directory = Path(data)
    if directory.is_dir():
        return directory
    if directory.exists() or directory.is_symlink():
        what = "a file" if directory.is_file() else "not a folder" if directory.exists() else "a dangling link"
        raise DataError(
            f"{directory} is {what}, not a folder: expected a folder of dataset files (NAME.jsonl/.csv/.parquet, "
            f"as `zstc tasks` lists), 'hub' or 'sample'"
        )
    raise DataError(f"{directory}: no such directory")


SAMPLE = "sample"
"""``--data sample``: the evaluation sample shipped in the package (``zstc/resources/sample``, a few hundred texts of
each dataset whose licence allows redistribution): what ``zstc demo`` benchmarks on a machine with nothing else."""
HUB = "hub"
"""``--data hub``: the Hugging Face dataset ``btzsc/btzsc``, read at run time; only when asked for by name."""


@dataclass(frozen=True)
class DataSource:
    """Where a command reads BTZSC datasets from, and by which step of :func:`data_source`'s rule."""

    location: str
    """A folder of dataset files, or ``"hub"``."""
    origin: str
    """How it was chosen: ``--data``, ``$ZSTC_DATA``, ``pulled``, ``shared data`` or ``packaged sample``."""

    def line(self) -> str:
        """The one line a command says when it starts."""
        return f"data: {self.location} ({self.origin})"


def pulled_data_dir() -> Path:
    """Where ``zstc data pull`` keeps the BTZSC datasets it downloaded and checked: ``$ZSTC_CACHE/data``."""
    from zstc.defaults import cache_root

    return cache_root() / "data"


def data_source(data: str | Path | None) -> DataSource | None:
    """The one rule for where BTZSC datasets come from: ``--data`` (a folder, ``hub`` or ``sample``), else
    ``$ZSTC_DATA``, else the datasets ``zstc data pull`` stored, else a shared data folder (``$ZSTC_SHARED_DATA/btzsc``
    or ``shared/data/btzsc`` beside or above the working directory). The hub only when named. None when nothing is
    found; :func:`require_data_source` says what to do then."""
    if data is not None:
        if str(data) == SAMPLE:
            return DataSource(str(sample_dir()), "packaged sample: not the paper's protocol")
        return DataSource(str(data), "--data")
    if os.environ.get("ZSTC_DATA"):
        return DataSource(os.environ["ZSTC_DATA"], "$ZSTC_DATA")
    if available_tasks(pulled_data_dir()):
        return DataSource(str(pulled_data_dir()), "pulled by `zstc data pull`")
    shared = find_shared_data("btzsc")
    return DataSource(str(shared), "shared data") if shared is not None else None


NO_DATA = (
    "no BTZSC data found: run `zstc data pull` once (on a machine with the hub), set ZSTC_DATA, or pass "
    "--data DIR, --data hub or --data sample (the packaged sample)"
)


def require_data_source(data: str | Path | None) -> DataSource:
    """:func:`data_source`, or a :class:`DataError` that says how to get data when it finds none."""
    found = data_source(data)
    if found is None:
        raise DataError(NO_DATA)
    return found


def packaged_folder(name: str, marker: str) -> Path | None:
    """A folder of zstc's package data (``zstc/resources/<name>``) holding ``marker``; None if the install lacks it."""
    folder = Path(str(resources.files("zstc.resources").joinpath(name)))
    return folder if (folder / marker).is_file() else None


def sample_dir() -> Path:
    """The packaged evaluation sample (see :data:`SAMPLE`)."""
    found = packaged_folder(SAMPLE, "README.md")
    if found is None:
        raise DataError("this zstc install has no packaged sample (zstc/resources/sample); reinstall zstc")
    return found


def find_shared_data(subfolder: str, marker: str | None = None, *, override_env: str | None = None) -> Path | None:
    """A folder of the project's shared data holding the file ``marker``: ``$<override_env>``, else
    ``$ZSTC_SHARED_DATA/<subfolder>``, else ``shared/data/<subfolder>`` beside or above the working directory.
    None when none holds it. Without ``marker``, the first such folder that exists."""
    candidates = [os.environ.get(override_env) if override_env else None]
    if os.environ.get("ZSTC_SHARED_DATA"):
        candidates.append(str(Path(os.environ["ZSTC_SHARED_DATA"]) / subfolder))
    candidates += [str(base / "shared" / "data" / subfolder) for base in (Path.cwd(), *Path.cwd().parents)]
    for candidate in candidates:
        if candidate and (Path(candidate).is_dir() if marker is None else (Path(candidate) / marker).is_file()):
            return Path(candidate)
    return None


def resolve_task_names(selection: str | None, data: str | Path | None = None) -> list[str]:
    """Expand ``"t1,t2"``, a family name, ``"all"``, ``"available"`` (every dataset with a file in the
    directory ``data``) or None into dataset names, validated. None means every dataset on the hub
    (``data`` is ``"hub"`` or not given) and every available one in a directory; a selection that names
    nothing (``""``, ``" "``, ``","``) is an :class:`UnknownOptionError` naming ``tasks``, never the default."""
    local = data is not None and str(data) != "hub"
    if selection is not None and not selection.replace(",", "").strip():  # "", " ", ",": given, but naming nothing
        raise UnknownOptionError(
            f"tasks {selection!r} names no dataset: give datasets, a family, 'all' or 'available', "
            "or leave the option out",
            "tasks",
        )
    if selection is None:
        selection = "available" if local else "all"
    if selection.strip() == "all":
        return list(catalog())
    if selection.strip() == "available":
        if not local:
            raise UnknownNameError("--tasks available means the datasets found in a --data directory, not on the hub")
        found = available_tasks(data_directory(data))  # type: ignore[arg-type]
        if not found:
            raise UnknownNameError(
                f"no BTZSC dataset files in {data} (expected NAME.jsonl/.csv/.parquet; see `zstc tasks --data {data}`)"
            )
        return found
    groups = families()
    names: list[str] = []
    for part in (p.strip() for p in selection.split(",")):
        if not part:
            continue
        expanded = groups.get(part, [part])
        for name in expanded:
            get_task_spec(name)
            if name not in names:
                names.append(name)
    if not names:
        raise UnknownNameError(f"no tasks selected by {selection!r}")
    return names
