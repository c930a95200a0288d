"""The BTZSC task catalog: 22 dataset definitions shipped as package data (resources/tasks.json).

A definition is benchmark metadata, not data: family, domain, class names and one hypothesis per class,
in class order (Python ``sorted()`` of the class names, as the published data orders them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from zstc.errors import UnknownNameError

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
    try:
        return catalog()[name]
    except KeyError:
        raise UnknownNameError(
            f"unknown task {name!r}; known tasks: {', '.join(catalog())} (see `zstc tasks`)"
        ) from None


def resolve_task_names(selection: str | None) -> list[str]:
    """Expand ``"t1,t2"``, a family name, ``"all"`` or None (= all) into dataset names, validated."""
    if selection is None or selection.strip() in ("", "all"):
        return list(catalog())
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
