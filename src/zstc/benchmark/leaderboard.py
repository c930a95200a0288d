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
from typing import Any

from zstc import __version__
from zstc.benchmark.catalog import FAMILY_ORDER, catalog
from zstc.errors import DataError
from zstc.scorers.families import FamilyTable
from zstc.benchmark.metrics import METRICS, aggregate, aggregate_by_family
from zstc.benchmark.store import SCHEMA_VERSION, write_json
from zstc.io import read_json

PUBLIC_MODEL_TYPES: FamilyTable[str] = FamilyTable(lambda family: family.model_type)
"""zstc model family -> the leaderboard's ``model_type`` (a view of the ``Family`` records: base encoders
are ``embedding``, generative yes/no rerankers ``reranker``)."""

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
    return ({m: round(overall[m], DECIMALS) for m in METRICS},
            {f: {m: round(by_family[f][m], DECIMALS) for m in METRICS} for f in ordered})


def export_leaderboard(summary: dict[str, Any]) -> dict[str, Any]:
    """The leaderboard file for a ``zstc bench`` summary (only its BTZSC datasets; a custom task has no place there)."""
    model = summary.get("model", {})
    evaluation = summary.get("evaluation", {})
    run = summary.get("run", {})
    family = model.get("family")
    if family not in PUBLIC_MODEL_TYPES:
        raise DataError(f"model family {family!r} has no leaderboard model_type; expected one of {', '.join(PUBLIC_MODEL_TYPES)}")
    rows = summary["results"]["by_dataset"]
    for name in catalog():
        missing = [m for m in METRICS if name in rows and rows[name].get(m) is None]
        if missing:
            raise DataError(f"results.by_dataset.{name}: no {', '.join(missing)}")
    by_dataset = {name: {m: float(rows[name][m]) for m in METRICS} for name in catalog() if name in rows}
    if not by_dataset:
        raise DataError("the result has none of the 22 BTZSC datasets: nothing to put on the leaderboard")
    for name, row in by_dataset.items():
        if "n_texts" in rows[name]:
            row["n_texts"] = int(rows[name]["n_texts"])
    overall, by_task = _averages({name: {m: row[m] for m in METRICS} for name, row in by_dataset.items()})
    name = str(model.get("name", ""))
    return {
        "schema_version": SCHEMA_VERSION,
        "model": {
            "name": name,
            "model_type": PUBLIC_MODEL_TYPES[family],
            "params": short_params(model.get("parameters_millions")),
            "revision": model.get("revision") or "unknown",
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
        },
        "results": {"overall": overall, "by_task": by_task, "by_dataset": by_dataset},
    }


def write_leaderboard(summary: dict[str, Any], out: str | Path) -> dict[str, Any]:
    content = export_leaderboard(summary)
    write_json(Path(out), content)
    return content


# -- validation ---------------------------------------------------------------------------------------


def _metric_problems(block: Any, where: str) -> list[str]:
    if not isinstance(block, dict):
        return [f"{where}: expected an object of metrics, found {type(block).__name__}"]
    problems = []
    for metric in METRICS:
        value = block.get(metric)
        if value is None:
            problems.append(f"{where}.{metric}: missing")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            problems.append(f"{where}.{metric}: expected a number, found {value!r}")
        elif not 0.0 <= value <= 1.0:
            problems.append(f"{where}.{metric}: {value} is outside [0, 1]")
    return problems


def _is_metric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and 0.0 <= value <= 1.0


def _average_problems(stored: Any, members: dict[str, Any], where: str) -> list[str]:
    """Whether each stored average equals the unweighted mean of its datasets."""
    if not isinstance(stored, dict) or not members:
        return []
    problems = []
    for metric in METRICS:
        values = [row.get(metric) for row in members.values() if isinstance(row, dict)]
        if len(values) != len(members) or not all(_is_metric(v) for v in values) or not _is_metric(stored.get(metric)):
            continue  # already reported as a missing, malformed or out-of-range number
        mean = sum(values) / len(values)
        if abs(stored[metric] - mean) > AVERAGE_TOLERANCE:
            problems.append(f"{where}.{metric}: {stored[metric]:.6f} is not the mean of its {len(values)} datasets ({mean:.6f})")
    return problems


def validate_leaderboard(content: Any) -> list[str]:
    """Every problem that keeps ``content`` from being a complete, consistent schema 1.0 leaderboard entry."""
    if not isinstance(content, dict):
        return [f"expected a JSON object, found {type(content).__name__}"]
    problems: list[str] = []
    if content.get("schema_version") != SCHEMA_VERSION:
        problems.append(f"schema_version: expected {SCHEMA_VERSION!r}, found {content.get('schema_version')!r}")

    model = content.get("model") if isinstance(content.get("model"), dict) else {}
    if not model.get("name"):
        problems.append("model.name: missing")
    if model.get("model_type") not in set(PUBLIC_MODEL_TYPES.values()):
        hint = " (a zstc result file? export it first: zstc export --leaderboard RESULT.json --out FILE)" if "family" in model else ""
        expected = ", ".join(sorted(set(PUBLIC_MODEL_TYPES.values())))
        problems.append(f"model.model_type: expected one of {expected}, found {model.get('model_type')!r}{hint}")

    evaluation = content.get("evaluation") if isinstance(content.get("evaluation"), dict) else {}
    for key in ("btzsc_version", "btzsc_commit"):
        if not evaluation.get(key):
            problems.append(f"evaluation.{key}: missing")
    if evaluation.get("max_samples") is not None:
        problems.append(f"sampled run: evaluation.max_samples is {evaluation['max_samples']}; a leaderboard entry scores every text")
    elif evaluation.get("sampled"):
        problems.append("sampled run: evaluation.sampled is true; a leaderboard entry scores every text")

    results = content.get("results")
    if not isinstance(results, dict):
        return [*problems, "results: missing"]
    by_dataset = results.get("by_dataset") if isinstance(results.get("by_dataset"), dict) else {}
    by_task = results.get("by_task") if isinstance(results.get("by_task"), dict) else {}
    if not by_dataset:
        problems.append("results.by_dataset: missing or empty")

    missing = [name for name in catalog() if name not in by_dataset]
    if missing and by_dataset:
        problems.append(f"partial run: results.by_dataset lacks {len(missing)} of {len(catalog())} datasets: {', '.join(missing)}")
    elif evaluation.get("partial") and not missing:
        problems.append("evaluation.partial is true although all datasets are present")
    problems += [f"results.by_dataset.{name}: not a BTZSC dataset" for name in by_dataset if name not in catalog()]
    for name, row in by_dataset.items():
        problems += _metric_problems(row, f"results.by_dataset.{name}")

    for family in FAMILY_ORDER:
        if family not in by_task:
            problems.append(f"results.by_task.{family}: missing")
            continue
        problems += _metric_problems(by_task[family], f"results.by_task.{family}")
        # Checked against the datasets present, so a partial file is checked for consistency too.
        members = {n: by_dataset[n] for n, spec in catalog().items() if spec.family == family and n in by_dataset}
        problems += _average_problems(by_task[family], members, f"results.by_task.{family}")
    problems += [f"results.by_task.{family}: not a BTZSC task family" for family in by_task if family not in FAMILY_ORDER]

    if "overall" not in results:
        problems.append("results.overall: missing")
    else:
        problems += _metric_problems(results["overall"], "results.overall")
        problems += _average_problems(results["overall"], {n: by_dataset[n] for n in catalog() if n in by_dataset}, "results.overall")
    return problems


def validate_file(path: str | Path) -> list[str]:
    """Problems of a leaderboard file on disk; an unreadable file is an error, not a list of problems."""
    return validate_leaderboard(read_json(path))
