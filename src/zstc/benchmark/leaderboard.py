"""The public BTZSC leaderboard file (schema 1.0): export it from a zstc result, validate any such file.

Schema 1.0, as the public BTZSC results repository uses it::

    {"schema_version": "1.0",
     "model": {"name", "model_type": embedding|nli|reranker|llm, "params": "22M", "revision", "url"},
     "evaluation": {"btzsc_version", "btzsc_commit", "timestamp", "device", "precision", "batch_size", "max_samples"},
     "results": {"overall": {metric: value}, "by_task": {family: {metric: value}}, "by_dataset": {dataset: {metric: value}}}}

with the four metrics macro_f1, accuracy, macro_precision and macro_recall everywhere. The harness fields
``btzsc_version``/``btzsc_commit`` name the code that produced the numbers, so a zstc export fills them with
zstc's version and commit (and says so in ``evaluation.harness``). Averages are recomputed from the
per-dataset numbers, exactly as the benchmark defines them, rather than copied.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, ValidationError
from pydantic_core import ErrorDetails

from zstc import __version__
from zstc.benchmark.catalog import FAMILY_ORDER, catalog
from zstc.errors import DataError, UnknownNameError
from zstc.models.families import families, find_family
from zstc.benchmark.metrics import METRICS, aggregate, aggregate_by_family
from zstc.benchmark.records import SCHEMAS, Metric, integral
from zstc.benchmark.store import SCHEMA_VERSION
from zstc.io import read_json
from zstc.runs.files import write_json

AVERAGE_TOLERANCE = 1e-5
"""How far a stored average may be from the mean of its datasets (files round averages to 6 decimals)."""
DECIMALS = 6
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


# -- export -------------------------------------------------------------------------------------------


def short_params(millions: float | None) -> str:
    """``22.7`` -> ``"22M"``, ``7570`` -> ``"7.6B"``, as the public files write parameter counts."""
    if not millions:
        return "unknown"
    if millions >= 1000:
        return f"{millions / 1000:.1f}B".replace(".0B", "B")
    return f"{int(millions)}M"


def _averages(by_dataset: dict[str, dict[str, float]]) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    family_of = {name: catalog()[name].family for name in by_dataset}
    overall = aggregate(by_dataset)
    by_family = aggregate_by_family(by_dataset, family_of)
    ordered = [f for f in FAMILY_ORDER if f in by_family]
    return (
        {m: round(overall[m], DECIMALS) for m in METRICS},
        {f: {m: round(by_family[f][m], DECIMALS) for m in METRICS} for f in ordered},
    )


def export_leaderboard(summary: dict[str, Any]) -> dict[str, Any]:
    """The leaderboard file for a ``zstc bench`` summary (only its BTZSC datasets; a custom task has no place there)."""
    model = summary.get("model", {})
    evaluation = summary.get("evaluation", {})
    run = summary.get("run", {})
    family = model.get("family")
    record = find_family(family)
    if record is None:
        raise DataError(
            f"model family {family!r} has no leaderboard model_type; expected one of "
            f"{', '.join(known.name for known in families())}"
        )
    rows = summary["results"]["by_dataset"]
    for name in catalog():
        missing = [m for m in METRICS if name in rows and rows[name].get(m) is None]
        if missing:
            raise DataError(f"results.by_dataset.{name}: no {', '.join(missing)}")
    by_dataset = {name: {m: float(rows[name][m]) for m in METRICS} for name in catalog() if name in rows}
    if not by_dataset:
        raise DataError("the result has none of the 22 BTZSC datasets: nothing to put on the leaderboard")
    for name, row in by_dataset.items():
        if rows[name].get("n_texts") is not None:  # null where the summary did not record it (the schema allows it)
            row["n_texts"] = int(rows[name]["n_texts"])
    overall, by_task = _averages({name: {m: row[m] for m in METRICS} for name, row in by_dataset.items()})
    name = str(model.get("name", ""))
    return {
        "schema_version": SCHEMA_VERSION,
        "model": {
            "name": name,
            "model_type": record.model_type,
            "params": short_params(model.get("parameters_millions")),
            # The hub commit; for a local folder or packaged checkpoint its content hash (sha256:...), as the run's identity holds it.
            "revision": model.get("revision")
            or (evaluation.get("run_identity") or {}).get("model_revision")
            or "unknown",
            "url": f"https://huggingface.co/{name}" if _HUB_ID.match(name) and not Path(name).exists() else None,
        },
        "evaluation": {
            "btzsc_version": f"zstc {evaluation.get('zstc_version') or __version__}",
            "btzsc_commit": run.get("git_commit") or "unknown",
            "harness": "zstc",
            "timestamp": evaluation.get("created"),
            "device": run.get("device") or model.get("device") or "unknown",
            "precision": run.get("precision") or model.get("precision") or run.get("dtype") or "unknown",
            "batch_size": run.get("batch_size") or model.get("batch_size"),
            "max_samples": evaluation.get("max_samples"),
            "partial": len(by_dataset) < len(catalog()),
            "sampled": bool(evaluation.get("sampled")),
            "unlabelled_policy": evaluation.get("unlabelled_policy"),
            # What else changes the numbers: hypotheses other than BTZSC's own, and scorer options (pooling, ...).
            "hypotheses": evaluation.get("hypotheses"),
            "template": evaluation.get("template"),
            "scorer_options": {k: v for k, v in (model.get("options") or {}).items() if k != "precision"},
        },
        "results": {"overall": overall, "by_task": by_task, "by_dataset": by_dataset},
    }


def write_leaderboard(summary: dict[str, Any], out: str | Path) -> dict[str, Any]:
    """Write a bench summary as a public leaderboard file (:func:`export_leaderboard`, atomically); returns it."""
    content = export_leaderboard(summary)
    write_json(Path(out), content)
    return content


# -- validation ---------------------------------------------------------------------------------------

ModelType = Literal["embedding", "llm", "nli", "reranker"]
"""The public leaderboard schema's own ``model_type`` values, not a table of zstc's families (a file saying
``encoder`` is refused): each ``Family`` names one of them, its ``model_type``."""
NonEmpty = Annotated[str, Field(min_length=1)]


# Strict: pydantic's default turned a batch size of true into 1 and "12" into 12, so they validated. A JSON 12.0 is
# the integer 12 to the published schema ("type": "integer" in JSON Schema 2020-12 is any number with no fractional
# part), so it is one here too: validate and the schema give one answer; 12.5, "12" and true fail both.
Count = Annotated[
    StrictInt, Field(ge=0), BeforeValidator(integral)
]  # Field first: after the validator pydantic writes "ge" into the schema, not "minimum"
Positive = Annotated[StrictInt, Field(ge=1), BeforeValidator(integral)]


class Metrics(BaseModel):
    """The four metrics of every block of a leaderboard file."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="allow")  # by_dataset rows may carry n_texts
    macro_f1: Metric
    accuracy: Metric
    macro_precision: Metric
    macro_recall: Metric


class DatasetMetrics(Metrics):
    """A ``results.by_dataset`` row: the four metrics and how many texts were scored."""

    n_texts: Count | None = None
    """Texts scored on the dataset (absent or null where the run did not record it)."""


class BoardModel(BaseModel):
    """The model of a leaderboard entry: its name, type, parameter count and where it comes from."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="allow")
    name: NonEmpty
    model_type: ModelType
    params: str | None = None
    """Parameter count as the public files write it: ``"22M"``, ``"7.6B"``."""
    revision: str | None = None
    url: str | None = None


class BoardEvaluation(BaseModel):
    """How a leaderboard entry's numbers were produced: the code, machine, precision and sampling."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="allow")
    btzsc_version: NonEmpty
    """The code that produced the numbers (``zstc 0.1.0`` for a zstc export)."""
    btzsc_commit: NonEmpty
    harness: str | None = None
    timestamp: str | None = None
    device: str | None = None
    precision: str | None = None
    batch_size: Positive | None = None
    max_samples: Positive | None = None
    """None: every text was scored (required of an entry)."""
    # Strict: "false" or 0 validated (the schema says boolean) and then read as true or false by their truthiness.
    partial: StrictBool = False
    sampled: StrictBool = False
    unlabelled_policy: str | None = None


class ByTask(BaseModel):
    """The four BTZSC task families, each the unweighted mean of its datasets."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")
    sentiment: Metrics
    emotion: Metrics
    intent: Metrics
    topic: Metrics


assert tuple(ByTask.model_fields) == tuple(FAMILY_ORDER), "ByTask lists the catalog's task families in order"


class BoardResults(BaseModel):
    """A leaderboard entry's metrics: overall, per task family and per dataset."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="allow")
    overall: Metrics
    """The unweighted mean over all datasets (not over families)."""
    by_task: ByTask
    by_dataset: dict[str, DatasetMetrics]


class LeaderboardEntry(BaseModel):
    """A public BTZSC leaderboard file, schema 1.0. Cross-field rules (all 22 datasets, averages equal to the
    means of their datasets, no sampled or partial run) are checked by :func:`validate_leaderboard`."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="allow")
    schema_version: Literal["1.0"]
    model: BoardModel
    evaluation: BoardEvaluation
    results: BoardResults


def _choices(expected: str) -> str:
    """pydantic's ``"'a', 'b' or 'c'"`` as ``"one of a, b, c"``; a single choice keeps its quotes."""
    choices = re.findall(r"'([^']*)'", expected)
    return repr(choices[0]) if len(choices) == 1 else "one of " + ", ".join(sorted(choices))


def _problem(error: ErrorDetails, content: dict[str, Any]) -> str:
    """One line per field: where it is and what is wrong with it, in the file's own terms."""
    where = ".".join(str(part) for part in error["loc"])
    kind, found = error["type"], error.get("input")
    model = content.get("model")
    hint = (
        " (a zstc result file? export it first: zstc export --leaderboard RESULT.json --out FILE)"
        if where == "model.model_type" and isinstance(model, dict) and "family" in model
        else ""
    )
    if kind == "missing":
        return f"{where}: missing{hint}"
    if kind == "string_too_short":
        return f"{where}: empty"
    if kind == "bool_type":
        return f"{where}: expected true or false, found {found!r}"
    if kind == "literal_error":
        return f"{where}: expected {_choices(error.get('ctx', {}).get('expected', ''))}, found {found!r}{hint}"
    if kind in ("float_type", "finite_number"):
        return f"{where}: expected a number, found {found!r}"
    if kind in ("greater_than_equal", "less_than_equal") and error["loc"][-1] in METRICS:
        return f"{where}: {found} is outside [0, 1]"
    if kind == "greater_than_equal":  # a count (n_texts, batch_size)
        return f"{where}: {found} is below {error.get('ctx', {}).get('ge')}"
    if kind == "int_type":
        return f"{where}: expected an integer, found {found!r}"
    if kind == "model_type" or kind == "dict_type":
        return f"{where}: expected an object, found {type(found).__name__}"
    if kind == "extra_forbidden" and where.startswith("results.by_task."):
        return f"{where}: not a BTZSC task family"
    return f"{where}: {error['msg']}"


def _is_metric(value: Any) -> bool:
    return (
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0.0 <= value <= 1.0
    )


def _average_problems(stored: Any, members: dict[str, Any], where: str) -> list[str]:
    """Whether each stored average equals the unweighted mean of its datasets."""
    if not isinstance(stored, dict) or not members:
        return []
    problems = []
    for metric in METRICS:
        values: list[Any] = [row.get(metric) for row in members.values() if isinstance(row, dict)]
        if len(values) != len(members) or not all(_is_metric(v) for v in values) or not _is_metric(stored.get(metric)):
            continue  # already reported as a missing, malformed or out-of-range number
        mean = sum(values) / len(values)
        if abs(stored[metric] - mean) > AVERAGE_TOLERANCE:
            problems.append(
                f"{where}.{metric}: {stored[metric]:.6f} is not the mean of its {len(values)} datasets ({mean:.6f})"
            )
    return problems


def _section(content: dict[str, Any], *path: str) -> dict[str, Any]:
    """``content[path[0]][path[1]]...`` when each is an object, else ``{}`` (the model has reported it)."""
    for key in path:
        inner = content.get(key)
        content = inner if isinstance(inner, dict) else {}
    return content


def _cross_field_problems(content: dict[str, Any]) -> list[str]:
    """What the model cannot see field by field: a full, unsampled run whose averages match its datasets."""
    problems: list[str] = []
    evaluation = _section(content, "evaluation")
    if evaluation.get("max_samples") is not None:
        problems.append(
            f"sampled run: evaluation.max_samples is {evaluation['max_samples']}; a leaderboard entry scores every text"
        )
    elif evaluation.get("sampled") is True:  # another value is reported as not a boolean
        problems.append("sampled run: evaluation.sampled is true; a leaderboard entry scores every text")
    # Absent in files from other harnesses (which score BTZSC's own hypotheses and count unlabelled texts as class 0).
    if evaluation.get("hypotheses") not in (None, "dataset") or evaluation.get("template") is not None:
        problems.append(
            f"evaluation.hypotheses is {evaluation.get('hypotheses')!r} (template {evaluation.get('template')!r}); "
            "a leaderboard entry scores BTZSC's own hypotheses ('dataset')"
        )
    if evaluation.get("unlabelled_policy") not in (None, "paper"):
        problems.append(
            f"evaluation.unlabelled_policy is {evaluation['unlabelled_policy']!r}; a leaderboard entry counts texts "
            "whose class has no hypothesis as class 0, as the benchmark does ('paper')"
        )
    by_dataset, by_task = _section(content, "results", "by_dataset"), _section(content, "results", "by_task")
    if _section(content, "results").get("by_dataset") == {}:  # absent or malformed: the model has said so
        problems.append("results.by_dataset: missing or empty")
    missing = [name for name in catalog() if name not in by_dataset]
    if missing and by_dataset:
        problems.append(
            f"partial run: results.by_dataset lacks {len(missing)} of {len(catalog())} datasets: {', '.join(missing)}"
        )
    elif evaluation.get("partial") is True and not missing:
        problems.append("evaluation.partial is true although all datasets are present")
    problems += [f"results.by_dataset.{name}: not a BTZSC dataset" for name in by_dataset if name not in catalog()]
    for family in FAMILY_ORDER:
        # Checked against the datasets present, so a partial file is checked for consistency too.
        members = {n: by_dataset[n] for n, spec in catalog().items() if spec.family == family and n in by_dataset}
        problems += _average_problems(by_task.get(family), members, f"results.by_task.{family}")
    overall = _section(content, "results").get("overall")
    problems += _average_problems(overall, {n: by_dataset[n] for n in catalog() if n in by_dataset}, "results.overall")
    return problems


def validate_leaderboard(content: Any) -> list[str]:
    """Every problem that keeps ``content`` from being a complete, consistent schema 1.0 leaderboard entry:
    the :class:`LeaderboardEntry` model's field errors, then the cross-field rules."""
    if not isinstance(content, dict):
        return [f"expected a JSON object, found {type(content).__name__}"]
    try:
        LeaderboardEntry.model_validate(content)
        problems = []
    except ValidationError as error:
        problems = [_problem(detail, content) for detail in error.errors()]
    return problems + _cross_field_problems(content)


def validate_file(path: str | Path) -> list[str]:
    """Problems of a leaderboard file on disk; an unreadable file is an error, not a list of problems."""
    return validate_leaderboard(read_json(path))


def json_schema(name: str) -> dict[str, Any]:
    """The JSON schema of ``result``, ``summary`` or ``leaderboard`` (``zstc schema NAME``)."""
    models: dict[str, type[BaseModel]] = {**SCHEMAS, "leaderboard": LeaderboardEntry}
    if name not in models:
        raise UnknownNameError(f"unknown schema {name!r}; expected one of {', '.join(models)}")
    return models[name].model_json_schema(mode="serialization")
