"""Leaderboard files: export from a bench summary, validate any file, every problem listed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from zstc.benchmark.baselines import published
from zstc.benchmark.catalog import catalog
from zstc.benchmark.leaderboard import export_leaderboard, short_params, validate_leaderboard
from zstc.benchmark.metrics import METRICS, aggregate, aggregate_by_family
from shared_data import requires_baselines

MODEL = "all-MiniLM-L6-v2"


pytestmark = requires_baselines  # every summary here carries the paper's published numbers


def bench_summary(datasets: list[str] | None = None, **evaluation: Any) -> dict[str, Any]:
    """A ``zstc bench`` summary carrying the paper's published numbers for all-MiniLM-L6-v2."""
    names = datasets if datasets is not None else list(catalog())
    by_dataset = {
        name: {metric: published(metric)[MODEL][name] for metric in METRICS} | {"n_texts": 1000} for name in names
    }
    family_of = {name: catalog()[name].family for name in names}
    return {
        "schema_version": "1.0",
        "model": {
            "name": "sentence-transformers/all-MiniLM-L6-v2",
            "family": "embedding",
            "paper_name": MODEL,
            "parameters_millions": 22.7,
            "revision": None,
        },
        "evaluation": {
            "datasets": names,
            "max_samples": None,
            "sampled": False,
            "partial": len(names) < 22,
            "zstc_version": "0.1.0",
            "created": "2026-01-01T00:00:00+00:00",
            "unlabelled_policy": "paper",
            **evaluation,
        },
        "run": {"device": "cpu", "precision": "fp32", "batch_size": 64, "git_commit": "0" * 40},
        "results": {
            "by_dataset": by_dataset,
            "overall": aggregate(by_dataset),
            "by_task": aggregate_by_family(by_dataset, family_of),
        },
    }


def with_value(content: dict[str, Any], where: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``content`` with the field at the path ``where`` set to ``value``."""
    changed = copy.deepcopy(content)
    *parents, key = where
    inner = changed
    for part in parents:
        inner = inner[part]
    inner[key] = value
    return changed


@pytest.fixture
def entry() -> dict[str, Any]:
    return export_leaderboard(bench_summary())


def test_export_matches_the_public_file_for_the_same_numbers(entry: dict[str, Any]) -> None:
    """Averages as the public BTZSC results repository lists them for all-MiniLM-L6-v2."""
    assert validate_leaderboard(entry) == []
    assert entry["model"] == {
        "name": "sentence-transformers/all-MiniLM-L6-v2",
        "model_type": "embedding",
        "params": "22M",
        "revision": "unknown",
        "url": "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
    }
    assert entry["results"]["overall"] == {
        "macro_f1": 0.365998,
        "accuracy": 0.442739,
        "macro_precision": 0.500873,
        "macro_recall": 0.450317,
    }
    assert entry["results"]["by_task"]["emotion"] == {
        "macro_f1": 0.132637,
        "accuracy": 0.1405,
        "macro_precision": 0.4083,
        "macro_recall": 0.195105,
    }
    assert list(entry["results"]["by_task"]) == ["sentiment", "emotion", "intent", "topic"]
    assert entry["evaluation"]["btzsc_version"] == "zstc 0.1.0" and entry["evaluation"]["harness"] == "zstc"
    assert entry["evaluation"]["precision"] == "fp32" and entry["evaluation"]["max_samples"] is None


def test_export_names_a_local_models_weights_by_their_content_hash() -> None:
    """A local folder or packaged checkpoint has no hub commit (model.revision is null), but its run identity pins its
    weights by a content hash: the entry said "unknown"."""
    digest = "sha256:" + "5" * 64
    assert export_leaderboard(bench_summary(run_identity={"model_revision": digest}))["model"]["revision"] == digest
    summary = bench_summary(run_identity={"model_revision": digest})
    summary["model"]["revision"] = "c" * 40  # a hub commit is the revision
    assert export_leaderboard(summary)["model"]["revision"] == "c" * 40


@pytest.mark.parametrize(
    ("millions", "text"), [(22.7, "22M"), (335, "335M"), (7570, "7.6B"), (1000, "1B"), (None, "unknown")]
)
def test_short_params(millions: float | None, text: str) -> None:
    assert short_params(millions) == text


def test_partial_and_sampled_runs_are_flagged() -> None:
    entry = export_leaderboard(bench_summary(["imdb", "agnews", "banking77"], max_samples=50, sampled=True))
    problems = validate_leaderboard(entry)
    assert "sampled run: evaluation.max_samples is 50; a leaderboard entry scores every text" in problems
    assert any(
        p.startswith("partial run: results.by_dataset lacks 19 of 22 datasets: amazonpolarity, appreviews")
        for p in problems
    )
    assert "results.by_task.emotion: missing" in problems
    assert not any("is not the mean" in p for p in problems)  # the averages of what is there are consistent


def test_runs_off_the_protocol_are_flagged() -> None:
    """Other hypotheses or another unlabelled policy gave a file that validated as a complete BTZSC entry."""
    entry = export_leaderboard(
        bench_summary(hypotheses="name", template="this text is about {label}", unlabelled_policy="exclude")
    )
    assert (
        entry["evaluation"]["hypotheses"] == "name" and entry["evaluation"]["template"] == "this text is about {label}"
    )
    assert validate_leaderboard(entry) == [
        "evaluation.hypotheses is 'name' (template 'this text is about {label}'); a leaderboard entry scores BTZSC's own hypotheses ('dataset')",
        "evaluation.unlabelled_policy is 'exclude'; a leaderboard entry counts texts whose class has no hypothesis as class 0, "
        "as the benchmark does ('paper')",
    ]
    assert validate_leaderboard(export_leaderboard(bench_summary(hypotheses="dataset", template=None))) == []


def test_every_problem_is_listed(entry: dict[str, Any]) -> None:
    broken = copy.deepcopy(entry)
    broken["schema_version"] = "0.9"
    broken["model"]["model_type"] = "encoder"
    del broken["evaluation"]["btzsc_commit"]
    results = broken["results"]
    results["by_dataset"]["agnews"]["macro_f1"] = 1.5
    results["by_dataset"]["massive"]["accuracy"] = True
    results["by_dataset"]["my_dataset"] = {m: 0.5 for m in METRICS}
    results["by_task"]["topic"]["macro_recall"] += 0.01
    results["overall"]["macro_precision"] += 0.001
    del results["by_task"]["intent"]["macro_precision"]
    problems = validate_leaderboard(broken)
    expected = [
        "schema_version: expected '1.0', found '0.9'",
        "model.model_type: expected one of embedding, llm, nli, reranker, found 'encoder'",
        "evaluation.btzsc_commit: missing",
        "results.by_dataset.my_dataset: not a BTZSC dataset",
        "results.by_dataset.agnews.macro_f1: 1.5 is outside [0, 1]",
        "results.by_dataset.massive.accuracy: expected a number, found True",
        "results.by_task.intent.macro_precision: missing",
    ]
    for problem in expected:
        assert problem in problems
    assert any(
        p.startswith("results.by_task.topic.macro_recall:") and "is not the mean of its 11 datasets" in p
        for p in problems
    )
    assert "results.overall.macro_precision: 0.501873 is not the mean of its 22 datasets (0.500873)" in problems
    assert len(problems) == len(expected) + 2  # nothing else: valid parts raise no false alarms


def test_a_bench_summary_is_not_a_leaderboard_file() -> None:
    problems = validate_leaderboard(bench_summary())
    assert any("export it first: zstc export --leaderboard" in p for p in problems)
    assert validate_leaderboard([1, 2]) == ["expected a JSON object, found list"]


def test_export_rejects_a_result_without_btzsc_datasets() -> None:
    from zstc.errors import DataError

    summary = bench_summary([])
    summary["results"]["by_dataset"] = {"my_task": {m: 0.5 for m in METRICS}}
    with pytest.raises(DataError, match="none of the 22 BTZSC datasets"):
        export_leaderboard(summary)


def test_export_and_validate_commands(tmp_path: Path, zstc_cli) -> None:
    result = tmp_path / "result.json"
    result.write_text(json.dumps(bench_summary()))
    board = tmp_path / "board.json"
    status, _, err = zstc_cli("export", "--leaderboard", str(result), "--out", str(board))
    assert status == 0 and f"wrote {board}" in err and "problem" not in err
    status, out, _ = zstc_cli("validate", str(board))
    assert status == 0 and out.strip() == f"{board}: valid leaderboard file (schema 1.0)"

    sampled = tmp_path / "sampled.json"
    sampled.write_text(json.dumps(bench_summary(["imdb"], max_samples=10, sampled=True)))
    status, _, err = zstc_cli("export", "--leaderboard", str(sampled), "--out", str(board))
    # Written, but not an entry the leaderboard takes: exit 1 (it was 0, so `export && upload` sent it on).
    assert status == 1 and "problem(s)" in err and board.exists()
    status, out, _ = zstc_cli("validate", str(board))
    assert status == 1
    lines = out.splitlines()
    assert lines[0].endswith("problem(s)") and all(line.startswith("  - ") for line in lines[1:]) and len(lines) > 3

    status, _, err = zstc_cli("validate", str(tmp_path / "nope.json"))
    assert status == 2 and err.strip() == f"error: {tmp_path / 'nope.json'}: no such file"


def test_export_of_a_summary_without_text_counts(tmp_path: Path, zstc_cli) -> None:
    """A per-dataset n_texts of null, which the summary schema allows, was an int(None) TypeError traceback."""
    summary = bench_summary()
    summary["results"]["by_dataset"]["imdb"]["n_texts"] = None
    result = tmp_path / "result.json"
    result.write_text(json.dumps(summary))
    status, _, err = zstc_cli("export", "--leaderboard", str(result), "--out", str(tmp_path / "board.json"))
    assert status == 0 and "problem" not in err, err
    board = json.loads((tmp_path / "board.json").read_text())
    assert (
        "n_texts" not in board["results"]["by_dataset"]["imdb"]
        and board["results"]["by_dataset"]["agnews"]["n_texts"] == 1000
    )


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        (("evaluation", "batch_size"), True, "evaluation.batch_size: expected an integer, found True"),
        (("evaluation", "batch_size"), 0, "evaluation.batch_size: 0 is below 1"),
        (("results", "by_dataset", "imdb", "n_texts"), -5, "results.by_dataset.imdb.n_texts: -5 is below 0"),
        (
            ("results", "by_dataset", "imdb", "n_texts"),
            12.5,
            "results.by_dataset.imdb.n_texts: expected an integer, found 12.5",
        ),
        (
            ("results", "by_dataset", "imdb", "n_texts"),
            "1000",
            "results.by_dataset.imdb.n_texts: expected an integer, found '1000'",
        ),
        # "false" and 0 passed as booleans (the schema says boolean): "false" then read as true, a sampled run; 0 was "valid".
        (("evaluation", "sampled"), "false", "evaluation.sampled: expected true or false, found 'false'"),
        (("evaluation", "partial"), 0, "evaluation.partial: expected true or false, found 0"),
        (("evaluation", "partial"), "no", "evaluation.partial: expected true or false, found 'no'"),
        (("model", "name"), "", "model.name: empty"),  # it said "missing" of a field that is there
    ],
)
def test_validate_refuses_counts_that_are_not_counts(
    entry: dict[str, Any], tmp_path: Path, zstc_cli, where: tuple[str, ...], value: Any, problem: str
) -> None:
    """A batch size of true (pydantic made it 1) and a negative or fractional n_texts validated as a leaderboard entry."""
    board = tmp_path / "board.json"
    board.write_text(json.dumps(entry))
    status, out, _ = zstc_cli("validate", str(board))
    assert status == 0, out  # the file as exported is valid, n_texts and batch size included
    board.write_text(json.dumps(with_value(entry, where, value)))
    status, out, _ = zstc_cli("validate", str(board))
    assert status == 1 and out.splitlines() == [f"{board}: 1 problem(s)", f"  - {problem}"]


@pytest.mark.parametrize(
    ("where", "value", "valid"),
    [
        (("results", "by_dataset", "imdb", "n_texts"), 100, True),
        (
            ("results", "by_dataset", "imdb", "n_texts"),
            100.0,
            True,
        ),  # an integer to JSON Schema 2020-12: no fractional part
        (("results", "by_dataset", "imdb", "n_texts"), 100.5, False),
        (("results", "by_dataset", "imdb", "n_texts"), "100", False),
        (("evaluation", "batch_size"), 64.0, True),
        (("evaluation", "batch_size"), 64.5, False),
    ],
)
def test_validate_and_the_published_schema_agree_on_counts(
    entry: dict[str, Any], tmp_path: Path, zstc_cli, where: tuple[str, ...], value: Any, valid: bool
) -> None:
    """validate refused an n_texts of 100.0, which the published schema's "integer" accepts: one answer from both."""
    jsonschema = pytest.importorskip("jsonschema")
    from shared_data import REPO

    schema = json.loads((REPO / "docs" / "schemas" / "leaderboard.schema.json").read_text(encoding="utf-8"))
    changed = with_value(entry, where, value)
    board = tmp_path / "board.json"
    board.write_text(json.dumps(changed))
    status, out, _ = zstc_cli("validate", str(board))
    assert jsonschema.Draft202012Validator(schema).is_valid(changed) is valid
    assert (status == 0) is valid, out


def test_export_errors_name_the_input_file(tmp_path: Path, zstc_cli) -> None:
    """ "model family None has no leaderboard model_type" did not say which result file it was about."""
    no_family = bench_summary()
    no_family["model"]["family"] = None
    no_btzsc = bench_summary([])
    half = {m: 0.5 for m in METRICS}
    no_btzsc["results"] = {"by_dataset": {"my_task": half}, "overall": half, "by_task": {"custom": half}}
    for name, summary, message in (
        ("no_family.json", no_family, "model family None has no leaderboard model_type"),
        ("no_btzsc.json", no_btzsc, "the result has none of the 22 BTZSC datasets"),
    ):
        result = tmp_path / name
        result.write_text(json.dumps(summary))
        status, _, err = zstc_cli("export", "--leaderboard", str(result), "--out", str(tmp_path / "board.json"))
        assert status == 2 and err.startswith(f"error: {result}: {message}") and err.count("\n") == 1, err
        assert not (tmp_path / "board.json").exists()


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (("model", "parameters_millions"), "22.7", "model.parameters_millions: Input should be a valid number"),
        (("evaluation", "sampled"), "false", "evaluation.sampled: Input should be a valid boolean"),
    ],
)
def test_a_result_file_of_the_wrong_types_is_refused_as_it_is_read(
    tmp_path: Path, zstc_cli, where: tuple[str, ...], value: Any, message: str
) -> None:
    """The reader validated in pydantic's lax mode and returned the raw file: "22.7" passed as a number and broke export
    (a TypeError traceback) and report later; "false" passed as a boolean and export wrote the run as sampled."""
    summary = bench_summary()
    *parents, key = where
    inner = summary
    for part in parents:
        inner = inner[part]
    inner[key] = value
    result = tmp_path / "result.json"
    result.write_text(json.dumps(summary))
    for command in (
        ("export", "--leaderboard", str(result), "--out", str(tmp_path / "board.json")),
        ("report", str(result), "--out", str(tmp_path / "report")),
    ):
        status, _, err = zstc_cli(*command)
        assert status == 2 and err == f"error: {result}: not a valid zstc result file: {message}\n", err


def test_a_result_file_whose_run_is_null_exports_and_reports(tmp_path: Path, zstc_cli) -> None:
    """``run`` may be null (the summary schema allows it, for files from before run records): export and report
    called .get on it, an AttributeError traceback."""
    summary = bench_summary()
    summary["run"] = None
    result = tmp_path / "result.json"
    result.write_text(json.dumps(summary))
    status, _, err = zstc_cli("export", "--leaderboard", str(result), "--out", str(tmp_path / "board.json"))
    assert status == 0 and "problem" not in err, err
    assert json.loads((tmp_path / "board.json").read_text())["evaluation"]["btzsc_commit"] == "unknown"
    status, _, err = zstc_cli("report", str(result), "--out", str(tmp_path / "report"))
    assert status == 0 and (tmp_path / "report" / "index.html").exists(), err
