"""The result files as pydantic models: validated on write and read, older files still read, schemas published."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from zstc.benchmark.leaderboard import json_schema
from zstc.benchmark.metrics import dataset_metrics
from zstc.benchmark.records import DatasetResult, RunSummary, Timing
from zstc.benchmark.store import DamagedResult, ResultStore, load_summary
from zstc.errors import DataError, UnknownNameError

REPO = Path(__file__).resolve().parents[1]
METRICS = {"macro_f1": 0.5, "accuracy": 0.6, "macro_precision": 0.55, "macro_recall": 0.45}


def result(**overrides: object) -> DatasetResult:
    gold, predicted = np.array([0, 1, 1, 0]), np.array([1, 1, 1, 1])
    fields: dict[str, object] = dict(
        dataset="imdb",
        family="sentiment",
        metrics=dataset_metrics(gold, predicted),
        n_texts=4,
        label_names=["negative", "positive"],
        hypotheses=["bad", "good"],
        unlabelled_policy="paper",
        unlabelled_texts=0,
        wall_time_s=2.0,
        fingerprint="f" * 16,
        timing=Timing(warmup_s=0.1, batch_texts=2, batch_latencies_s=[1.0, 1.0]),
        source_texts=10,
        scores=np.arange(8, dtype=np.float32).reshape(4, 2),
        gold=gold,
        predicted=predicted,
    )
    fields.update(overrides)
    return DatasetResult(**fields)  # type: ignore[arg-type]


def test_a_dataset_result_round_trips_through_the_store(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "r.json")
    store.save(result())
    on_disk = json.loads((store.directory / "imdb.json").read_text())
    assert "scores" not in on_disk and on_disk["timing"]["batch_latencies_s"] == [1.0, 1.0]
    loaded = store.load("imdb")
    assert loaded is not None and loaded.source_texts == 10 and loaded.batch_latencies == [1.0, 1.0]
    assert np.array_equal(loaded.scores, np.arange(8).reshape(4, 2)) and loaded.source_index is None
    assert loaded.summary().latency_p50_s == 1.0 and loaded.summary().texts_per_second == 2.0


def test_invalid_results_are_refused_on_write_and_recomputed_on_read(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="n_texts"):
        result(n_texts="many")
    with pytest.raises(ValidationError, match="unknown_field"):
        result(unknown_field=1)
    valid = result()
    with pytest.raises(ValidationError, match="wall_time_s"):
        valid.wall_time_s = "slow"  # type: ignore[assignment]
    store = ResultStore(tmp_path / "r.json")
    store.save(valid)
    path = store.directory / "imdb.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "n_texts": "four"}))
    with pytest.raises(DamagedResult, match="n_texts: Input should be a valid integer"):  # named; bench recomputes it
        store.load("imdb")


def test_an_edited_metric_is_a_damaged_result_not_a_reused_one(tmp_path: Path) -> None:
    """A details file whose macro-F1 was edited was reused on resume and reported as computed."""
    store = ResultStore(tmp_path / "r.json")
    store.save(result())
    path = store.directory / "imdb.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "metrics": {**record["metrics"], "macro_f1": 0.99}}))
    with pytest.raises(DamagedResult, match="its macro_f1 0.99 is not that of its stored predictions"):
        store.finished("imdb", record["fingerprint"])
    assert store.load("imdb", with_arrays=False) is not None  # without the arrays there is nothing to check against


def test_scores_whose_argmax_is_not_the_stored_predictions_are_a_damaged_result(tmp_path: Path) -> None:
    """The score matrix is what the multi-label, calibration and cascade reports read: one edited or swapped
    apart from the predictions (and so from every metric) was reused on resume as if computed."""
    store = ResultStore(tmp_path / "r.json")
    store.save(result())
    fingerprint = json.loads((store.directory / "imdb.json").read_text())["fingerprint"]
    assert store.finished("imdb", fingerprint) is not None
    npz = store.directory / "imdb.npz"
    with np.load(npz) as stored:
        arrays = dict(stored)
    np.savez_compressed(npz, **{**arrays, "scores": arrays["scores"][:, ::-1]})  # the label columns swapped
    with pytest.raises(
        DamagedResult,
        match=r"imdb\.npz: damaged result file \(its predictions are not the argmax of its "
        r"scores \(4 of 4 texts, the first at row 0\)\)",
    ):
        store.finished("imdb", fingerprint)
    np.savez_compressed(npz, **{**arrays, "scores": arrays["scores"][:3]})
    with pytest.raises(DamagedResult, match=r"its scores have shape \(3, 2\), not \(4, labels\)"):
        store.finished("imdb", fingerprint)
    tied = np.zeros((4, 2), dtype=np.float32)  # ties: the first label, as bench decides
    store.save(
        result(
            scores=tied,
            predicted=np.zeros(4, dtype=int),
            metrics=dataset_metrics(np.array([0, 1, 1, 0]), np.zeros(4, dtype=int)),
        )
    )
    assert store.finished("imdb", fingerprint) is not None


def test_a_summary_that_is_not_one_is_a_one_line_error_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(
        json.dumps(
            {
                "schema_version": "1.0",
                "model": {"name": "m"},
                "results": {"overall": {**METRICS, "accuracy": "high"}, "by_task": {}, "by_dataset": {"imdb": METRICS}},
            }
        )
    )
    with pytest.raises(DataError) as caught:
        load_summary(path)
    message = str(caught.value)
    assert (
        message.startswith(f"{path}: not a valid zstc result file: results.overall.accuracy: ") and "\n" not in message
    )
    assert RunSummary.model_validate(
        {
            **json.loads(path.read_text()),
            "results": {"overall": METRICS, "by_task": {}, "by_dataset": {"imdb": METRICS}},
        }
    ).content()["results"]["by_dataset"]["imdb"] == METRICS | {
        "n_texts": None,
        "source_texts": None,
        "n_labels": None,
        "unlabelled_texts": None,
        "wall_time_s": None,
        "texts_per_second": None,
        "latency_p50_s": None,
        "latency_p95_s": None,
    }


@pytest.mark.parametrize("name", ["result", "summary", "leaderboard"])
def test_published_schemas_are_current(name: str) -> None:
    """docs/schemas/ is what the models say; regenerate with scripts/write_schemas.sh."""
    published = json.loads((REPO / "docs" / "schemas" / f"{name}.schema.json").read_text())
    assert published == json_schema(name)


def test_schema_command(zstc_cli, tmp_path) -> None:
    status, out, _ = zstc_cli("schema", "leaderboard")
    assert status == 0 and json.loads(out)["title"] == "LeaderboardEntry"
    status, _, err = zstc_cli(
        "schema", "summary", "--out", str(tmp_path / "missing" / "s.json")
    )  # was a FileNotFoundError traceback
    assert (
        status == 2
        and err == f"error: --out {tmp_path / 'missing' / 's.json'}: folder {tmp_path / 'missing'} does not exist\n"
    )
    status, _, err = zstc_cli("schema", "summary", "--out", str(tmp_path / "s.json"))
    assert status == 0 and json.loads((tmp_path / "s.json").read_text())["title"] == "RunSummary"
    status, _, err = zstc_cli("schema", "board")
    assert status == 2 and err.strip() == "error: unknown schema 'board'; expected one of result, summary, leaderboard"
    with pytest.raises(UnknownNameError):
        json_schema("board")


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
        (("results", "by_dataset", "imdb", "n_texts"), True, False),
        (("run", "batch_size"), 64.0, True),
        (("evaluation", "max_samples"), 200.0, True),
        (("results", "overall", "n_datasets"), 1.0, True),
    ],
)
def test_load_summary_and_the_published_schema_agree_on_counts(
    tmp_path: Path, where: tuple[str, ...], value: object, valid: bool
) -> None:
    """load_summary (strict) refused an n_texts of 100.0, which the published schema's "integer" accepts, as zstc
    validate does for a leaderboard file: one answer from both, and readers get the count as the integer it is."""
    jsonschema = pytest.importorskip("jsonschema")
    content: dict = {
        "schema_version": "1.0",
        "model": {"name": "m"},
        "run": {"batch_size": 64},
        "evaluation": {"max_samples": 200},
        "results": {
            "overall": {**METRICS, "n_datasets": 1},
            "by_task": {},
            "by_dataset": {"imdb": {**METRICS, "n_texts": 100}},
        },
    }
    inner = content
    for part in where[:-1]:
        inner = inner[part]
    inner[where[-1]] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(content))
    schema = json.loads((REPO / "docs" / "schemas" / "summary.schema.json").read_text(encoding="utf-8"))
    assert jsonschema.Draft202012Validator(schema).is_valid(content) is valid
    if not valid:
        with pytest.raises(DataError, match=rf"{re.escape('.'.join(where))}(: | is )"):
            load_summary(path)
        return
    loaded = load_summary(path)
    for part in where:
        loaded = loaded[part]
    assert loaded == value and type(loaded) is int  # 100, not 100.0: a report prints what the file means
