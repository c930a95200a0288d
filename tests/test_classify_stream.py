"""``zstc classify`` streams in chunks, writes JSONL/CSV/Parquet, keeps input columns, and resumes after a kill."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import retrain_in_place
from zstc.output import ResumableWriter, encode_jsonl

REPO = Path(__file__).resolve().parents[1]
LABELS = ["sports", "economy", "cooking"]
TEMPLATE = "This text is about {}."
SENTENCES = [
    "The striker scored twice in the final.",
    "Inflation rose again last quarter.",
    "Stir the sauce until it thickens.",
    "The central bank kept rates unchanged.",
    "She won the marathon in record time.",
    "Bake the bread for forty minutes.",
]


def write_texts(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            handle.write(
                json.dumps({"id": f"t{i}", "text": f"{SENTENCES[i % len(SENTENCES)]} ({i})", "source": "unit"}) + "\n"
            )
    return path


def classify_args(source: Path, out: Path, *extra: str) -> list[str]:
    return ["classify", str(source), "--labels", ",".join(LABELS), "--template", TEMPLATE, "--out", str(out), *extra]


def test_jsonl_keeps_columns_and_every_row(tmp_path, zstc_cli):
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"id": 7, "text": "The match ended 2-1.", "label": "gold-sports"}\n{"id": 8, "text": "  "}\n'
        '{"id": 9, "text": "Rates were raised."}\n'
    )
    out = tmp_path / "out.jsonl"
    status, _, err = zstc_cli(*classify_args(source, out))
    assert status == 2 and f"{source}:2: empty text" in err and not out.exists()
    status, _, err = zstc_cli(*classify_args(source, out, "--skip-empty", "--chunk-size", "2"))
    assert status == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == [7, 8, 9]
    assert (
        rows[0]["input_label"] == "gold-sports" and rows[0]["label"] == "sports"
    )  # the gold column is not overwritten
    assert rows[1]["label"] is None and rows[1]["score"] is None and rows[1]["scores"] is None
    assert rows[2]["label"] == "economy" and set(rows[2]["scores"]) == set(LABELS)
    assert f"wrote 3 predictions to {out}" in err.splitlines()[-1]
    assert "texts/s" not in err  # no progress bar when stderr is not a terminal
    assert not out.with_name("out.jsonl.partial").exists() and not out.with_name("out.jsonl.partial.json").exists()

    status, _, err = zstc_cli(*classify_args(source, tmp_path / "ids.jsonl", "--skip-empty", "--keep-columns", "id"))
    assert status == 0, err
    assert list(json.loads((tmp_path / "ids.jsonl").read_text().splitlines()[0])) == [
        "id",
        "text",
        "label",
        "score",
        "scores",
    ]


def test_csv_refuses_a_column_that_only_later_rows_have(tmp_path, zstc_cli):
    """JSON Lines rows may differ in their keys; CSV's header comes from the first row, and a key only a later row
    had was left out of the file without a word. Now an error naming the row and the column (a key a later row
    lacks is an empty cell, as before)."""
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"id": 1, "text": "The match ended 2-1.", "lang": "en"}\n{"id": 2, "text": "Rates were raised."}\n'
        '{"id": 3, "text": "Stir the sauce.", "note": "from the cookbook"}\n'
    )
    message = (
        "error: row 3 has the column 'note', which earlier rows lack and the CSV header (the first row's columns) does "
        "not name: CSV gives every row the same columns. Choose them with --keep-columns, or write --format jsonl or parquet\n"
    )
    for chunk_size in ("1", "8"):  # the row in a later chunk, or in the first chunk
        status, _, err = zstc_cli(
            *classify_args(source, tmp_path / f"out-{chunk_size}.csv", "--chunk-size", chunk_size)
        )
        assert (status, err) == (2, message), chunk_size
    # The finished chunks are kept, as for any interrupted run.
    assert [row["id"] for row in csv.DictReader(io.StringIO((tmp_path / "out-1.csv.partial").read_text()))] == [
        "1",
        "2",
    ]
    status, out, err = zstc_cli("classify", str(source), "--labels", ",".join(LABELS), "--format", "csv")  # to stdout
    assert (status, err.splitlines()[-1] + "\n") == (2, message)
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "kept.csv", "--keep-columns", "id"))
    assert status == 0, err
    with (tmp_path / "kept.csv").open(newline="") as handle:
        assert [row["id"] for row in csv.DictReader(handle)] == ["1", "2", "3"]
    lacking = tmp_path / "lacking.jsonl"  # a key later rows lack: an empty cell
    lacking.write_text(
        '{"id": 1, "text": "The match ended 2-1.", "lang": "en"}\n{"id": 2, "text": "Rates were raised."}\n'
    )
    status, _, err = zstc_cli(*classify_args(lacking, tmp_path / "lacking.csv"))
    assert status == 0, err
    with (tmp_path / "lacking.csv").open(newline="") as handle:
        assert [(row["id"], row["lang"]) for row in csv.DictReader(handle)] == [("1", "en"), ("2", "")]
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "all.jsonl"))
    assert status == 0, err
    assert json.loads((tmp_path / "all.jsonl").read_text().splitlines()[2])["note"] == "from the cookbook"


def test_csv_and_parquet_hold_the_same_predictions(tmp_path, zstc_cli):
    pq = pytest.importorskip("pyarrow.parquet")
    source = write_texts(tmp_path / "in.jsonl", 7)
    outputs = {fmt: tmp_path / f"out.{fmt}" for fmt in ("jsonl", "csv", "parquet")}
    for out in outputs.values():
        status, _, err = zstc_cli(*classify_args(source, out, "--chunk-size", "3"))
        assert status == 0, err
    expected = [json.loads(line) for line in outputs["jsonl"].read_text().splitlines()]
    with outputs["csv"].open(newline="") as handle:
        from_csv = list(csv.DictReader(handle))
    assert [row["id"] for row in from_csv] == [row["id"] for row in expected]
    assert [row["label"] for row in from_csv] == [row["label"] for row in expected]
    assert [json.loads(row["scores"]) for row in from_csv] == [row["scores"] for row in expected]
    parquet = pq.ParquetFile(outputs["parquet"])
    assert parquet.num_row_groups == 3  # one row group per chunk
    assert parquet.read().to_pylist() == expected
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "out.txt"))
    assert status == 2 and "--format" in err


def test_a_torn_chunk_is_cut_and_a_changed_input_starts_over(tmp_path):
    out = tmp_path / "out.jsonl"
    notes: list[str] = []
    writer = ResumableWriter(out, "jsonl", {"input_sha256": "a", "settings": "s"}, on_note=notes.append)
    writer.write_chunk([{"n": 1}, {"n": 2}])
    with writer.partial.open("ab") as handle:  # what a run killed mid-chunk leaves: bytes the marker does not count
        handle.write(b'{"n": 3}\n{"n"')
    writer.close()  # killed: the kernel releases the output's lock
    resumed = ResumableWriter(out, "jsonl", {"input_sha256": "a", "settings": "s"}, on_note=notes.append)
    assert resumed.resumed_rows == 2 and "resuming" in notes[-1]
    resumed.write_chunk([{"n": 3}])
    resumed.finish()
    assert out.read_bytes() == encode_jsonl([{"n": 1}, {"n": 2}, {"n": 3}])

    writer = ResumableWriter(out, "jsonl", {"input_sha256": "a", "settings": "s"})
    writer.write_chunk([{"n": 1}])
    writer.close()
    changed = ResumableWriter(out, "jsonl", {"input_sha256": "b", "settings": "s"}, on_note=notes.append)
    assert changed.resumed_rows == 0 and "starting" in notes[-1] and "changed" in notes[-1]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_a_run_killed_as_it_finishes_is_resumed_not_made_again(tmp_path, zstc_cli, monkeypatch, fmt):
    """Killed after the output was moved into place and before the marker was removed: the next run found the
    marker's partial output gone and scored every row again. Now it resumes with every row kept and writes the same
    bytes."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    from zstc.output import ChunkLabeller

    source = write_texts(tmp_path / "in.jsonl", 5)
    status, _, err = zstc_cli(*classify_args(source, tmp_path / f"reference.{fmt}", "--chunk-size", "2"))
    assert status == 0, err
    out = tmp_path / f"out.{fmt}"
    marker = out.with_name(out.name + ".partial.json")
    real_unlink = Path.unlink

    def killed_at_the_marker(self, *args, **kwargs):
        if self == marker:
            raise KeyboardInterrupt
        real_unlink(self, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(Path, "unlink", killed_at_the_marker)
        status, _, err = zstc_cli(*classify_args(source, out, "--chunk-size", "2"))
    assert status == 130 and out.exists() and marker.exists(), err

    def never_scored(*args, **kwargs):
        raise AssertionError("a row was scored again")

    monkeypatch.setattr(ChunkLabeller, "rows", never_scored)
    status, _, err = zstc_cli(*classify_args(source, out, "--chunk-size", "2"))
    assert status == 0, err
    assert f"resuming {out}: 5 predictions from an interrupted run are kept" in err and "replacing" not in err, err
    assert out.read_bytes() == (tmp_path / f"reference.{fmt}").read_bytes()
    assert not marker.exists() and not out.with_name(out.name + ".partial").exists()


def test_an_output_written_over_in_place_after_the_kill_is_not_taken_for_the_runs(tmp_path, monkeypatch):
    """Killed as it finished, then the user wrote a file of the same size over the output in place (cp keeps the
    inode): the next run took the user's file for its own output and kept it."""
    out, identity = tmp_path / "out.jsonl", {"input_sha256": "a", "settings": "s"}
    writer = ResumableWriter(out, "jsonl", identity)
    writer.write_chunk([{"n": 1}])
    real_unlink = Path.unlink
    with monkeypatch.context() as patched:
        patched.setattr(
            Path,
            "unlink",
            lambda self, *a, **k: (
                (_ for _ in ()).throw(KeyboardInterrupt) if self == writer.marker else real_unlink(self, *a, **k)
            ),
        )
        with pytest.raises(KeyboardInterrupt):
            writer.finish()
    writer.close()  # killed: the kernel releases the output's lock
    inode = out.stat().st_ino
    with out.open("r+b") as handle:  # the user's own bytes, same size, same inode
        handle.write(b'{"n": 2}\n')
    os.utime(out, ns=(out.stat().st_atime_ns, out.stat().st_mtime_ns + 1_000_000))
    assert out.stat().st_ino == inode
    notes: list[str] = []
    resumed = ResumableWriter(out, "jsonl", identity, on_note=notes.append)
    assert resumed.resumed_rows == 0 and any(note.startswith(f"replacing {out}") for note in notes), notes
    assert out.read_bytes() == b'{"n": 2}\n'  # kept until the run completes


def test_a_partial_output_without_its_marker_is_said_to_be_started_over(tmp_path):
    """A partial output whose marker is gone (a run killed as it removed its finished state) is not said to come
    from an input or settings that changed."""
    out, identity = tmp_path / "out.jsonl", {"input_sha256": "a", "settings": "s"}
    out.with_name("out.jsonl.partial").write_text('{"n": 1}\n')
    notes: list[str] = []
    writer = ResumableWriter(out, "jsonl", identity, on_note=notes.append)
    assert writer.resumed_rows == 0 and notes == [
        f"starting {out} over: {writer.partial} has no marker to resume it by"
    ]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_run_killed_before_its_first_chunk_resumes(tmp_path, fmt):
    """The marker is written before any chunk: a run killed while it scored its first chunk (loading the model, say)
    leaves a marker and no partial output. Run again, it continues (with nothing to keep), neither failing on the
    missing partial output nor saying that the input or the settings changed."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    out, identity = tmp_path / f"out.{fmt}", {"input_sha256": "a", "settings": "s"}
    ResumableWriter(out, fmt, identity)  # killed here
    notes: list[str] = []
    resumed = ResumableWriter(out, fmt, identity, on_note=notes.append)
    assert resumed.resumed_rows == 0 and notes == []
    resumed.write_chunk([{"n": 1}])
    resumed.finish()
    assert out.exists() and not resumed.marker.exists()


def _interrupted_after_first_chunk(zstc_cli, monkeypatch, args: list[str], marker: Path) -> dict:
    """Run classify ``args``, killed (Ctrl-C) once its first chunk is written; returns the marker it leaves."""
    real_write = ResumableWriter.write_chunk

    def one_chunk_then_killed(self, rows, *digest):
        real_write(self, rows, *digest)
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(ResumableWriter, "write_chunk", one_chunk_then_killed)
        status, _, err = zstc_cli(*args)
    assert status == 130, err
    return json.loads(marker.read_text())


def test_a_run_resumed_under_another_version_of_the_scoring_starts_over(tmp_path, zstc_cli, monkeypatch):
    """The family's SCORING_VERSION and classify's LABELLING_VERSION are part of the run's identity: rows written by
    one version of the scoring are never continued by another (the marker of an interrupted run says which)."""
    import zstc.output

    source = write_texts(tmp_path / "in.jsonl", 4)
    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    args = classify_args(source, out, "--chunk-size", "2")
    assert _interrupted_after_first_chunk(zstc_cli, monkeypatch, args, marker)["rows"] == 2
    with monkeypatch.context() as patched:  # the same run under a later zstc, whose labelling changed
        patched.setattr(zstc.output, "LABELLING_VERSION", "999")
        status, _, err = zstc_cli(*args)
    assert status == 0, err
    assert f"starting {out} over: the input or the settings changed" in err and "resuming" not in err


def test_auto_precision_is_recorded_resolved_and_a_resume_under_another_starts_over(tmp_path, zstc_cli, monkeypatch):
    """--precision auto (classify's default) is resolved before the marker is written: the marker holds fp32
    or bf16, so a run resumed where auto means the other precision starts over instead of mixing the two.
    ZSTC_AUTO_PRECISION stands in for machines with and without fast bf16; no bf16 forward pass runs."""
    from zstc.output import ChunkLabeller

    source = write_texts(tmp_path / "in.jsonl", 6)
    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    args = classify_args(source, out, "--chunk-size", "2")
    monkeypatch.setenv("ZSTC_AUTO_PRECISION", "fp32")
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "reference.jsonl", "--chunk-size", "2"))
    assert status == 0, err
    state = _interrupted_after_first_chunk(zstc_cli, monkeypatch, args, marker)  # an fp32 machine
    assert not out.exists()
    assert state["rows"] == 2 and state["identity"]["precision"] == "fp32"

    def killed_before_scoring(self, classifier, chunk, notes, check=None):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:  # a machine where auto means bf16: the fp32 rows are not kept
        patched.setenv("ZSTC_AUTO_PRECISION", "bf16")
        patched.setattr(ChunkLabeller, "rows", killed_before_scoring)
        status, _, err = zstc_cli(*args)
    assert status == 130
    assert f"starting {out} over: the input or the settings changed" in err
    state = json.loads(marker.read_text())
    assert state["rows"] == 0 and state["identity"]["precision"] == "bf16"

    status, _, err = zstc_cli(*args)  # back on fp32: starts over again, and the output is a clean fp32 run's
    assert status == 0, err
    assert "starting" in err and "resuming" not in err
    assert out.read_bytes() == (tmp_path / "reference.jsonl").read_bytes() and not marker.exists()


def test_the_resolved_device_is_recorded_and_a_resume_on_another_starts_over(tmp_path, zstc_cli, monkeypatch):
    """The device is resolved before the marker is written (never "auto"): a run interrupted on the CPU and resumed
    where the default device is a GPU (one that was busy, or hidden by CUDA_VISIBLE_DEVICES, is back) starts over
    instead of mixing rows of two devices, whose numbers differ. The resolver stands in for a machine with a GPU;
    no forward pass runs on it."""
    import torch

    import zstc.api as api
    import zstc.scorers.runtime as runtime
    from zstc.output import ChunkLabeller

    source = write_texts(tmp_path / "in.jsonl", 6)
    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    args = classify_args(source, out, "--chunk-size", "2")
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "reference.jsonl", "--chunk-size", "2"))
    assert status == 0, err
    state = _interrupted_after_first_chunk(zstc_cli, monkeypatch, args, marker)
    assert state["rows"] == 2 and state["identity"]["device"] == "cpu"

    real_resolve = runtime.resolve_device

    def a_gpu_by_default(device=None):
        return torch.device("cuda") if device in (None, "auto") else real_resolve(device)

    def killed_before_scoring(self, classifier, chunk, notes, check=None):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:  # the same command where auto means CUDA: the CPU's rows are not kept
        patched.setattr(runtime, "resolve_device", a_gpu_by_default)
        patched.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA Test GPU")
        # The labels' check reads them with the loaded model's tokenizer; there is no GPU here to load it on.
        patched.setattr(api, "check_labels_read_apart", lambda scorer, labels, descriptions: None)
        patched.setattr(ChunkLabeller, "rows", killed_before_scoring)
        status, _, err = zstc_cli(*args)
    assert status == 130
    assert f"starting {out} over: the input or the settings changed" in err and "resuming" not in err
    state = json.loads(marker.read_text())
    assert state["rows"] == 0 and state["identity"]["device"] == "cuda (NVIDIA Test GPU)"

    status, _, err = zstc_cli(*args)  # back on the CPU: starts over again, and the output is a clean CPU run's
    assert status == 0, err
    assert "starting" in err and "resuming" not in err
    assert out.read_bytes() == (tmp_path / "reference.jsonl").read_bytes() and not marker.exists()


NLI = "nli"
"""Stands for the nli_folder fixture's model (an NLI family) in the parameters below."""


@pytest.mark.parametrize(
    "model, interrupted_with, resumed_with, resumes",
    [
        (None, [], ["--batch-size", "64", "--device", "cpu", "--precision", "fp32"], True),
        (
            None,
            [],
            ["--model", "all-MiniLM-L6-v2", "--family", "embedding", "--pooling", "native", "--scores", "probs"],
            True,
        ),
        (None, ["--multi-label"], ["--multi-label", "--scores", "raw"], True),
        (
            NLI,
            ["--multi-label"],
            ["--multi-label", "--threshold", "0", "--batch-size", "64", "--recheck-margin", "0.1"],
            True,
        ),
        (None, [], ["--batch-size", "7"], False),  # other passes, other numbers (in bf16 visibly: see cli/classify.py)
        (None, ["--multi-label"], ["--multi-label", "--threshold", "0"], False),  # the default is 0 *and* a margin
    ],
    ids=[
        "batch-device-precision",
        "model-family-pooling-scores",
        "multi-label-scores",
        "nli-threshold-batch-margin",
        "another-batch-size",
        "embedding-threshold-without-margin",
    ],
)
def test_an_option_spelled_at_its_default_resumes(
    tmp_path, zstc_cli, monkeypatch, request, model, interrupted_with, resumed_with, resumes
):
    """The identity holds the settings as they take effect, not as they were typed: a run interrupted with the
    defaults and resumed with the same values spelled out (or the model by its short name) resumed nowhere, it
    started over and threw the finished chunks away. A setting that changes the numbers still starts over."""
    monkeypatch.setenv(
        "ZSTC_CACHE", str(tmp_path / "cache")
    )  # the file-hash cache of a local model, private to this test
    source = write_texts(tmp_path / "in.jsonl", 6)
    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    model_args = ["--model", str(request.getfixturevalue("nli_folder")), "--family", "nli"] if model == NLI else []
    status, _, err = zstc_cli(
        *classify_args(source, tmp_path / "reference.jsonl", "--chunk-size", "2", *model_args, *resumed_with)
    )
    assert status == 0, err
    args = classify_args(source, out, "--chunk-size", "2", *model_args)
    assert _interrupted_after_first_chunk(zstc_cli, monkeypatch, [*args, *interrupted_with], marker)["rows"] == 2
    status, _, err = zstc_cli(*args, *resumed_with)
    assert status == 0, err
    assert (f"resuming {out}: 2 predictions" in err) == resumes, err
    assert (f"starting {out} over: the input or the settings changed" in err) != resumes, err
    assert out.read_bytes() == (tmp_path / "reference.jsonl").read_bytes() and not marker.exists()


def test_an_existing_output_is_said_to_be_replaced_and_kept_until_the_run_completes(tmp_path, zstc_cli, monkeypatch):
    """--out naming a file that exists (an earlier run's finished output has no marker, so nothing says whose it
    is) was replaced in silence at the end of the run. It is said before any work, and replaced only when the new
    run completes: a run killed before that leaves the earlier file as it was (and resumes, saying it again)."""
    earlier = ResumableWriter(tmp_path / "unit.jsonl", "jsonl", {"input_sha256": "a", "settings": "s"})
    earlier.write_chunk([{"n": 1}])
    earlier.finish()
    notes: list[str] = []
    ResumableWriter(tmp_path / "unit.jsonl", "jsonl", {"input_sha256": "b", "settings": "s"}, on_note=notes.append)
    assert notes == [
        f"replacing {tmp_path / 'unit.jsonl'}, which exists already: it stays as it is until this run completes"
    ]

    source = write_texts(tmp_path / "in.jsonl", 6)
    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    args = classify_args(source, out, "--chunk-size", "2")
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "reference.jsonl", "--chunk-size", "2"))
    assert status == 0 and "replacing" not in err, err  # a new file: nothing to say
    out.write_text('{"an": "earlier run"}\n')
    assert _interrupted_after_first_chunk(zstc_cli, monkeypatch, args, marker)["rows"] == 2
    assert out.read_text() == '{"an": "earlier run"}\n'
    status, _, err = zstc_cli(*args)
    assert status == 0, err
    assert err.startswith(
        f"note: replacing {out}, which exists already: it stays as it is until this run completes\n"
        f"note: resuming {out}: 2 predictions"
    ), err
    assert out.read_bytes() == (tmp_path / "reference.jsonl").read_bytes() and not marker.exists()


def _calibration(path: Path, temperature: float) -> Path:
    path.write_text(
        json.dumps({"format": "zstc-calibration", "method": "temperature", "parameters": {"temperature": temperature}})
    )
    return path


def test_a_resume_under_another_calibration_starts_over(tmp_path, zstc_cli, monkeypatch):
    """--calibration's fitted parameters are part of the run's identity: a run interrupted without one (or with
    another temperature) and resumed with it kept the finished rows' uncalibrated probabilities beside calibrated
    ones. The content counts, not the path: the same temperature in another file resumes."""
    source = write_texts(tmp_path / "in.jsonl", 6)
    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    args = classify_args(source, out, "--chunk-size", "2")
    warm, warm_copy, cool = (
        _calibration(tmp_path / name, temperature)
        for name, temperature in (("warm.json", 0.5), ("warm-copy.json", 0.5), ("cool.json", 2.0))
    )
    status, _, err = zstc_cli(
        *classify_args(source, tmp_path / "reference.jsonl", "--chunk-size", "2", "--calibration", str(warm))
    )
    assert status == 0, err
    for interrupted_with, resumed in (
        ([], False),
        (["--calibration", str(cool)], False),
        (["--calibration", str(warm_copy)], True),
    ):
        assert _interrupted_after_first_chunk(zstc_cli, monkeypatch, [*args, *interrupted_with], marker)["rows"] == 2
        status, _, err = zstc_cli(*args, "--calibration", str(warm))
        assert status == 0, err
        assert (f"resuming {out}: 2 predictions" in err) == resumed, (interrupted_with, err)
        assert (f"starting {out} over: the input or the settings changed" in err) != resumed, (interrupted_with, err)
        assert out.read_bytes() == (tmp_path / "reference.jsonl").read_bytes() and not marker.exists()
        out.unlink()


def test_a_resume_after_the_models_weights_changed_starts_over(tmp_path, zstc_cli, monkeypatch, nli_folder):
    """The weights are part of the run's identity (a local folder's content hash, as bench records it): a folder
    retrained in place keeps its name, and a run resumed after its model.safetensors was replaced kept the old
    weights' rows. The same folder unchanged still resumes."""
    import shutil

    from safetensors.torch import load_file, save_file

    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path / "cache"))  # the file-hash cache, private to this test
    folder = shutil.copytree(nli_folder, tmp_path / "model")
    source = write_texts(tmp_path / "in.jsonl", 6)
    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    model_args = ("--model", str(folder), "--family", "nli", "--precision", "fp32", "--chunk-size", "2")

    def interrupted() -> None:
        assert (
            _interrupted_after_first_chunk(zstc_cli, monkeypatch, classify_args(source, out, *model_args), marker)[
                "rows"
            ]
            == 2
        )

    interrupted()
    status, _, err = zstc_cli(*classify_args(source, out, *model_args))
    assert status == 0 and f"resuming {out}: 2 predictions" in err, err
    old_weights = out.read_bytes()
    out.unlink()

    interrupted()
    weights = load_file(folder / "model.safetensors")
    head = next(name for name in weights if name.startswith("classifier.") and name.endswith("weight"))
    weights[head] = (
        weights[head].flip(0).contiguous()
    )  # entailment and contradiction swap rows: other scores, same size
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    status, _, err = zstc_cli(*classify_args(source, out, *model_args))
    assert status == 0, err
    assert f"starting {out} over: the input or the settings changed" in err and "resuming" not in err
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "reference.jsonl", *model_args))
    assert status == 0, err
    assert out.read_bytes() == (tmp_path / "reference.jsonl").read_bytes() != old_weights and not marker.exists()


def test_a_resume_after_the_shortlisters_weights_changed_starts_over(tmp_path, zstc_cli, monkeypatch, own_minilm):
    """Behind --shortlist the shortlister's weights decide which labels are scored: a shortlister folder retrained
    in place resumed with the old shortlists' rows. The same folder unchanged still resumes."""
    source = write_texts(tmp_path / "in.jsonl", 6)
    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    args = classify_args(source, out, "--chunk-size", "2", "--shortlist", f"{own_minilm}:2")
    for retrained in (False, True):
        assert _interrupted_after_first_chunk(zstc_cli, monkeypatch, args, marker)["rows"] == 2
        if retrained:
            retrain_in_place(own_minilm)
        status, _, err = zstc_cli(*args)
        assert status == 0, err
        assert (f"resuming {out}: 2 predictions" in err) != retrained, err
        assert (f"starting {out} over: the input or the settings changed" in err) == retrained, err
        out.unlink()


def _run(args: list[str], **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(
        [sys.executable, "-m", "zstc", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs
    )


@pytest.fixture(scope="module")
def stream_input(tmp_path_factory) -> tuple[Path, dict[str, bytes]]:
    """120 texts and their uninterrupted outputs (JSONL and Parquet, chunks of 10)."""
    directory = tmp_path_factory.mktemp("stream")
    source = write_texts(directory / "in.jsonl", 120)
    reference = {}
    from zstc.cli import main

    for fmt in ("jsonl", "parquet"):  # in this process: the references are about the bytes, not the process
        out = directory / f"reference.{fmt}"
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "argv", ["zstc", *classify_args(source, out, "--chunk-size", "10")])
            with pytest.raises(SystemExit) as exited:
                main()
        assert exited.value.code in (0, None)
        reference[fmt] = out.read_bytes()
    return source, reference


@pytest.mark.slow
@pytest.mark.parametrize("fmt, kill", [("jsonl", signal.SIGKILL), ("parquet", signal.SIGINT)])
def test_a_killed_run_resumes_to_the_same_bytes(tmp_path, stream_input, fmt, kill, zstc_cli):
    source, reference = stream_input
    out = tmp_path / f"out.{fmt}"
    marker = out.with_name(out.name + ".partial.json")
    args = classify_args(source, out, "--chunk-size", "10")
    process = _run(args)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if json.loads(marker.read_text())["rows"] >= 30:
                break
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be interrupted"
    process.send_signal(kill)
    _, err = process.communicate(timeout=60)
    assert process.returncode == (-signal.SIGKILL if kill == signal.SIGKILL else 130), err.decode()
    assert not out.exists()
    done = json.loads(marker.read_text())["rows"]
    assert 30 <= done < 120

    status, _, err = zstc_cli(*args)  # the resume is not about the process: in this one
    assert status == 0, err
    assert f"resuming {out}: {done} predictions" in err
    assert out.read_bytes() == reference[fmt]
    assert not marker.exists()


def test_an_out_that_is_not_a_regular_file_is_written_not_replaced(tmp_path, zstc_cli):
    """--out through a symlink, to a FIFO or to a device: written where it points, never replaced by a file renamed
    over it (which turned /dev/stdout and /dev/full into regular files, and gave a FIFO's reader nothing)."""
    import threading

    source = write_texts(tmp_path / "in.jsonl", 3)
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real.name)
    status, _, err = zstc_cli(*classify_args(source, link))
    assert status == 0, err
    assert link.is_symlink() and [json.loads(line)["id"] for line in real.read_text().splitlines()] == [
        "t0",
        "t1",
        "t2",
    ]

    fifo = tmp_path / "out.jsonl"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    status, _, err = zstc_cli(*classify_args(source, fifo))
    reader.join(60)
    assert status == 0, err
    assert fifo.is_fifo() and [json.loads(line)["id"] for line in received[0].decode().splitlines()] == [
        "t0",
        "t1",
        "t2",
    ]
    assert not (tmp_path / "out.jsonl.partial.json").exists()

    if Path("/dev/full").exists():
        full = tmp_path / "full.jsonl"
        full.symlink_to("/dev/full")
        status, _, err = zstc_cli(*classify_args(source, full))
        assert status == 2 and err.strip() == f"error: cannot write {full}: No space left on device", err
        assert full.is_symlink() and Path("/dev/full").is_char_device()
    # /dev/stdout is a link to this process's stdout, a regular file when a shell redirects it (> file).
    from zstc.io import is_special_file

    assert (
        is_special_file(Path("/dev/stdout")) and is_special_file(Path("/proc/self/fd/1")) and not is_special_file(real)
    )


def test_a_stream_with_no_suffix_is_text_one_per_line(tmp_path, zstc_cli):
    """``zstc classify <(cut -f2 data.tsv)`` or ``/dev/stdin``: a stream with no suffix is read as stdin is, a text
    per line (it was 'unsupported file type', after the model had loaded); Parquet from a stream is refused up front."""
    import threading

    source = tmp_path / "texts"
    os.mkfifo(source)
    texts = ["The central bank raised rates again.", "A late goal won the derby."]
    writer = threading.Thread(target=lambda: source.write_text("\n".join(texts) + "\n"), daemon=True)
    writer.start()
    status, out, err = zstc_cli("classify", str(source), "--labels", ",".join(LABELS), "--template", TEMPLATE)
    writer.join(10)
    assert status == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["text"] for row in rows] == texts and [row["label"] for row in rows] == ["economy", "sports"]

    parquet = tmp_path / "texts.parquet"
    os.mkfifo(parquet)  # nobody writes it: refused before it is opened, or the test would hang
    status, _, err = zstc_cli("classify", str(parquet), "--labels", ",".join(LABELS))
    assert status == 2 and "Parquet needs a file" in err.strip().splitlines()[-1]


def test_a_fifo_input_is_read_once_as_it_streams(tmp_path, zstc_cli):
    """A FIFO as the input (a named pipe, ``mkfifo``): its rows arrive once. Reading it a first time for a
    checksum and then again for the rows waited forever for a second writer."""
    import threading

    source = tmp_path / "in.jsonl"
    os.mkfifo(source)
    content = write_texts(tmp_path / "texts.jsonl", 3).read_bytes()
    done = threading.Event()

    def feed() -> None:
        source.write_bytes(content)  # waits for zstc to open the FIFO
        # Should zstc open it a second time, give it an empty writer: the test then fails instead of hanging.
        while not done.is_set():
            try:
                os.close(os.open(source, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader waiting
                pass
            time.sleep(0.05)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    try:
        status, out, err = zstc_cli("classify", str(source), "--labels", ",".join(LABELS), "--template", TEMPLATE)
    finally:
        done.set()
        writer.join(10)
    assert status == 0, err
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["t0", "t1", "t2"]


def test_a_resumed_stdin_keeps_only_the_predictions_of_rows_it_gives_again(tmp_path, zstc_cli, monkeypatch):
    """stdin (like a FIFO) has no checksum: an interrupted run's predictions were kept whatever the next run's
    stdin held, so its first rows' predictions ended up beside another input's later rows. Each chunk's input
    rows now have a digest in the marker: a resumed run keeps the chunks it reads again unchanged, cuts the
    output back at the first that differs and scores from there on; the file equals an uninterrupted run's."""

    out, marker = tmp_path / "out.jsonl", tmp_path / "out.jsonl.partial.json"
    args = [
        "classify",
        "-",
        "--labels",
        ",".join(LABELS),
        "--template",
        TEMPLATE,
        "--out",
        str(out),
        "--chunk-size",
        "2",
    ]
    first = SENTENCES[:6]
    changed = first[:2] + ["The orchestra played Mahler.", "Taxes on fuel went up."] + first[4:]

    def feed(texts: list[str]) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("".join(t + "\n" for t in texts).encode())))

    references = {}
    for name, texts in (("first", first), ("changed", changed)):
        feed(texts)
        status, _, err = zstc_cli(*args[:-4], "--out", str(tmp_path / f"{name}.jsonl"), "--chunk-size", "2")
        assert status == 0, err
        references[name] = (tmp_path / f"{name}.jsonl").read_bytes()

    real_write = ResumableWriter.write_chunk

    def killed_after(chunks: int):
        def write(self, rows, *digest):
            real_write(self, rows, *digest)
            if self.state["chunks"] == chunks:
                raise KeyboardInterrupt

        return write

    for resumed_with, kept in ((first, 4), (changed, 2)):
        with monkeypatch.context() as patched:  # interrupted after two chunks of the first input
            patched.setattr(ResumableWriter, "write_chunk", killed_after(2))
            feed(first)
            status, _, _ = zstc_cli(*args)
        assert status == 130 and json.loads(marker.read_text())["rows"] == 4
        feed(resumed_with)
        status, _, err = zstc_cli(*args)
        assert status == 0, err
        assert f"resuming {out}: 4 predictions" in err
        assert ("is not the interrupted run's input" in err) == (kept < 4)
        if kept < 4:
            assert (
                f"<stdin> is not the interrupted run's input from row {kept + 1} on: {kept} of its 4 predictions are kept"
                in err
            )
        assert out.read_bytes() == references["first" if resumed_with is first else "changed"] and not marker.exists()


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("kept", [0, 1])
def test_keep_cuts_a_resumed_output_back_to_its_first_chunks(tmp_path, fmt, kept):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    chunks = [[{"n": 1}, {"n": 2}], [{"n": 3}], [{"n": 4}]]
    identity = {"input_sha256": None, "settings": "s"}
    writer = ResumableWriter(tmp_path / f"cut.{fmt}", fmt, identity)
    for index, rows in enumerate(chunks):
        writer.write_chunk(rows, f"d{index}")
    writer.close()  # killed: the kernel releases the output's lock
    resumed = ResumableWriter(tmp_path / f"cut.{fmt}", fmt, identity)
    assert resumed.resumed_rows == 4 and resumed.chunk_inputs == ["d0", "d1", "d2"]
    resumed.keep(kept)
    assert resumed.resumed_rows == [0, 2][kept] and resumed.chunk_inputs == ["d0"][:kept]
    resumed.close()
    again = ResumableWriter(tmp_path / f"cut.{fmt}", fmt, identity)  # the marker says the same
    assert again.resumed_rows == resumed.resumed_rows
    again.write_chunk([{"n": 9}], "d9")
    again.finish()
    reference = ResumableWriter(tmp_path / f"reference.{fmt}", fmt, identity)
    for rows in [*chunks[:kept], [{"n": 9}]]:
        reference.write_chunk(rows)
    reference.finish()
    assert (tmp_path / f"cut.{fmt}").read_bytes() == (tmp_path / f"reference.{fmt}").read_bytes()


def test_an_empty_stdin_leaves_no_partial_output(tmp_path, zstc_cli, monkeypatch):
    out = tmp_path / "out.jsonl"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    status, _, err = zstc_cli("classify", "-", "--labels", ",".join(LABELS), "--out", str(out))
    assert status == 2 and err == "error: <stdin>: no texts\n"
    assert list(tmp_path.iterdir()) == []  # no out.jsonl.partial.json left behind


def test_a_parquet_input_is_converted_once(tmp_path, zstc_cli, monkeypatch):
    """Opening a Parquet input read its first row to check it has any, converting a whole batch (up to 4,096 rows,
    every column) that the run then converted again: its footer's row count says it. An empty or unreadable file
    is still refused before any model loads."""
    import zstc.io
    from zstc.cli.classify import _open_input

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    source = tmp_path / "in.parquet"
    pq.write_table(
        pa.table({"id": list(range(50)), "text": [SENTENCES[i % len(SENTENCES)] for i in range(50)]}), source
    )
    converted, batches = [], []
    read_parquet = zstc.io._read_parquet

    def counting(path, batch_rows=4096):
        batches.append(batch_rows)
        for row, record in read_parquet(path, batch_rows):
            converted.append(row)
            yield row, record

    monkeypatch.setattr(zstc.io, "_read_parquet", counting)
    opened = _open_input(str(source), "text")
    assert converted == [] and opened.total == 50
    # classify checks the first row's columns before the model loads: that row alone is converted.
    assert opened.first() == (f"{source}:1", {"id": 0, "text": SENTENCES[0]}) and (converted, batches) == ([1], [1])
    converted.clear()
    assert [record["id"] for _, record in opened.rows()] == list(range(50)) and len(converted) == 50
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), empty)
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all")
    for path, message in ((empty, "no texts"), (garbage, "not a readable Parquet file")):
        status, _, err = zstc_cli("classify", str(path), "--labels", ",".join(LABELS), "-m", "no-such-model-is-loaded")
        assert status == 2 and err.startswith(f"error: {path}: {message}"), err


def test_parquet_columns_json_has_no_type_for(tmp_path, zstc_cli):
    """A Parquet input's timestamps and decimals are written to JSON Lines as their exact text; binary data is a
    one-line error naming the column. All three ended in json's TypeError traceback."""
    import datetime
    import decimal

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    source = tmp_path / "in.parquet"
    pq.write_table(
        pa.table(
            {
                "text": SENTENCES[:2],
                "at": [datetime.datetime(2020, 1, 2, 3, 4, 5), None],
                "price": [decimal.Decimal("1.50"), None],
                "blob": [b"\x00\x01", b"\xff"],
            }
        ),
        source,
    )
    status, out, err = zstc_cli("classify", str(source), "--labels", ",".join(LABELS), "--keep-columns", "at,price")
    assert status == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(row["at"], row["price"]) for row in rows] == [("2020-01-02T03:04:05", "1.50"), (None, None)]
    status, out, err = zstc_cli("classify", str(source), "--labels", ",".join(LABELS))
    assert status == 2 and out == ""
    assert err == (
        "error: column 'blob' holds bytes values, which JSON Lines cannot hold: leave it out with --keep-columns, "
        "or write .parquet\n"
    )
    # CSV: the same text for dates, times and decimals (str() wrote '2020-01-02 03:04:05'), and binary data is the same
    # error (the csv module wrote the repr "b'\\x00\\x01'", which reads back as that text).
    status, out, err = zstc_cli(
        "classify", str(source), "--labels", ",".join(LABELS), "--keep-columns", "at,price", "--format", "csv"
    )
    assert status == 0, err
    assert [(row["at"], row["price"]) for row in csv.DictReader(io.StringIO(out))] == [
        ("2020-01-02T03:04:05", "1.50"),
        ("", ""),
    ]
    status, out, err = zstc_cli("classify", str(source), "--labels", ",".join(LABELS), "--format", "csv")
    assert status == 2 and out == ""
    assert (
        err
        == "error: column 'blob' holds bytes values, which CSV cannot hold: leave it out with --keep-columns, or write .parquet\n"
    )


def test_parquet_refuses_a_column_whose_type_changes_before_scoring_it(tmp_path, zstc_cli, monkeypatch):
    """JSON Lines rows may give a column values of two types (``"id": 1`` then ``"id": "a2"``), which a Parquet column
    cannot hold: pyarrow's traceback (exit 1) when both were in one chunk, and with the rows in two chunks every row
    was scored and the final merge failed, on every resume again. Now an error naming the row and the column before
    the chunk that holds it is scored; the finished chunks are kept and a resume stops at the same row."""
    from zstc.api import Classifier

    pytest.importorskip("pyarrow")
    scored: list[str] = []
    predict = Classifier.predict
    monkeypatch.setattr(
        Classifier, "predict", lambda self, texts, *a, **k: (scored.extend(texts), predict(self, texts, *a, **k))[1]
    )
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"id": 1, "text": "The match ended 2-1."}\n{"id": "a2", "text": "Rates were raised."}\n'
        '{"id": 3, "text": "Stir the sauce."}\n'
    )
    message = (
        f"error: {source}:2: column 'id' holds str (\"a2\") where earlier rows hold int64: a Parquet column has one type. "
        "Leave it out with --keep-columns, or write --format jsonl or csv\n"
    )
    for chunk_size in ("8", "1", "1"):  # in the first chunk; in a later one; resumed
        scored.clear()
        out = tmp_path / f"out-{chunk_size}.parquet"
        status, _, err = zstc_cli(*classify_args(source, out, "--chunk-size", chunk_size))
        assert (status, err.splitlines()[-1] + "\n") == (2, message), chunk_size
        assert not out.exists()
        assert scored == (["The match ended 2-1."] if chunk_size == "1" and "resuming" not in err else [])
    assert "resuming" in err and sorted(p.name for p in (tmp_path / "out-1.parquet.partial").iterdir()) == [
        "chunk-000000.parquet"
    ]
    status, _, err = zstc_cli(
        *classify_args(source, tmp_path / "kept.parquet", "--keep-columns", "none", "--chunk-size", "1")
    )
    assert status == 0, err

    big = tmp_path / "big.jsonl"
    big.write_text(
        '{"id": 1, "text": "The match ended 2-1."}\n{"id": 18446744073709551616, "text": "Rates were raised."}\n'
    )
    status, _, err = zstc_cli(*classify_args(big, tmp_path / "big.parquet"))
    assert (status, err) == (
        2,
        f"error: {big}:2: column 'id' holds the integer 18446744073709551616, beyond the 64 bits of a "
        "Parquet integer. Leave it out with --keep-columns, or write --format jsonl or csv\n",
    )

    numbers = tmp_path / "numbers.jsonl"  # ints then floats (and a null): one float column, as before
    numbers.write_text(
        '{"x": 1, "text": "The match ended 2-1."}\n{"x": 2.5, "text": "Rates were raised."}\n'
        '{"x": null, "text": "Stir the sauce."}\n'
    )
    status, _, err = zstc_cli(*classify_args(numbers, tmp_path / "numbers.parquet", "--chunk-size", "1"))
    assert status == 0, err
    assert pytest.importorskip("pyarrow.parquet").read_table(tmp_path / "numbers.parquet")["x"].to_pylist() == [
        1.0,
        2.5,
        None,
    ]


def test_parquet_writer_refuses_mixed_types_when_a_chunk_is_written(tmp_path):
    """Without the check before scoring (the Ray engine writes with write_chunk alone) the chunk that would break the
    final merge is refused when it is written, naming its row; the chunks before it stay."""
    from zstc.errors import DataError

    pytest.importorskip("pyarrow")
    writer = ResumableWriter(tmp_path / "out.parquet", "parquet", {"input_sha256": "a", "settings": "s"})
    writer.write_chunk([{"id": 1}, {"id": None}])
    with pytest.raises(DataError, match="^row 3: column 'id' holds str \\(\"a3\"\\) where earlier rows hold int64: "):
        writer.write_chunk([{"id": "a3"}])
    with pytest.raises(DataError, match="^row 4: column 'id' holds bool \\(true\\) where earlier rows hold int64: "):
        writer.write_chunk([{"id": 4}, {"id": True}])
    assert writer.resumed_rows == 2 and [p.name for p in writer.partial.iterdir()] == ["chunk-000000.parquet"]
    # Chunks of an older zstc, whose merge failed on them: a resume names the chunk instead of pyarrow's traceback.
    writer.write_chunk([{"other": 1}])
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pytest.importorskip("pyarrow").table({"id": ["x"]}), writer.partial / "chunk-000001.parquet")
    writer.close()
    resumed = ResumableWriter(tmp_path / "out.parquet", "parquet", {"input_sha256": "a", "settings": "s"})
    with pytest.raises(
        DataError,
        match=f"^{writer.partial / 'chunk-000001.parquet'}: column 'id' holds string values where "
        "earlier rows hold int64: ",
    ):
        resumed.write_chunk([{"id": 5}])


def test_skip_empty_does_not_hide_a_missing_text_column(tmp_path, zstc_cli):
    """--skip-empty took a row without the text column for an empty text: a misnamed --text-column wrote every row
    unlabelled with exit 0. A missing column is the error it is without --skip-empty; only a present text that is
    blank, whitespace or null is skipped."""
    reviews = REPO / "tests" / "data" / "reviews.csv"
    for extra in ((), ("--skip-empty",)):
        status, out, err = zstc_cli(
            "classify", str(reviews), "--labels", "positive,negative", "--text-column", "txt", *extra
        )
        assert (status, out, err) == (2, "", f"error: {reviews}:2: no 'txt' field (fields: id, text, expected)\n"), (
            extra
        )
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "The match ended 2-1."}\n{"text": null}\n{"text": " "}\n{"body": "Stir the sauce."}\n')
    status, out, err = zstc_cli("classify", str(source), "--labels", ",".join(LABELS), "--skip-empty")
    assert status == 2 and err == f"error: {source}:4: no 'text' field (fields: body)\n"
    source.write_text('{"text": "The match ended 2-1."}\n{"text": null}\n{"text": " "}\n')
    status, out, err = zstc_cli("classify", str(source), "--labels", ",".join(LABELS), "--skip-empty")
    assert status == 0, err
    assert [json.loads(line)["label"] is None for line in out.splitlines()] == [False, True, True]
    pa = pytest.importorskip("pyarrow")
    parquet = tmp_path / "in.parquet"
    pytest.importorskip("pyarrow.parquet").write_table(pa.table({"body": SENTENCES[:2]}), parquet)
    status, out, err = zstc_cli("classify", str(parquet), "--labels", ",".join(LABELS), "--skip-empty")
    assert (status, out, err) == (2, "", f"error: {parquet}:1: no 'text' field (fields: body)\n")


def test_a_misnamed_column_is_refused_before_the_model_loads(tmp_path, zstc_cli, monkeypatch):
    """A misnamed --text-column, a text that is no string or a missing --keep-columns column was refused only at the
    first chunk, after the model had loaded (seconds for a small model, minutes for a large one): opening the input
    read records, not texts. The first row is checked as it is opened now (a Parquet file converts that row alone)."""
    import zstc.scorers.embedding

    def not_now(self):
        raise AssertionError("the model loaded before the input's first row was checked")

    monkeypatch.setattr(zstc.scorers.embedding.EmbeddingScorer, "_load_model", not_now)
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    (tmp_path / "body.jsonl").write_text('{"body": "Stir the sauce."}\n')
    (tmp_path / "number.csv").write_text("text\n7\n")  # a CSV cell is a string: the Parquet int below is not
    pq.write_table(pa.table({"body": SENTENCES[:2]}), tmp_path / "body.parquet")
    pq.write_table(pa.table({"text": [1, 2]}), tmp_path / "ints.parquet")
    pq.write_table(pa.table({"text": SENTENCES[:2]}), tmp_path / "texts.parquet")
    cases = [
        (["body.jsonl"], "body.jsonl:1: no 'text' field (fields: body)"),
        (["body.parquet"], "body.parquet:1: no 'text' field (fields: body)"),
        (["ints.parquet"], "ints.parquet:1: 'text' is int, expected a string"),
        (["texts.parquet", "--keep-columns", "id"], "--keep-columns: no column 'id' in the input (columns: text)"),
    ]
    for args, message in cases:
        status, out, err = zstc_cli(
            "classify",
            str(tmp_path / args[0]),
            *args[1:],
            "--labels",
            ",".join(LABELS),
            "-o",
            str(tmp_path / "out.csv"),
        )
        expected = message if message.startswith("--") else f"{tmp_path / message}"
        assert (status, out, err) == (2, "", f"error: {expected}\n"), args
        assert not (tmp_path / "out.csv").exists()
    with pytest.raises(
        AssertionError, match="the model loaded"
    ):  # the right column: the model loads (here, refuses to)
        zstc_cli("classify", str(tmp_path / "number.csv"), "--labels", ",".join(LABELS))


def test_skip_empty_keeps_a_null_text_null_in_every_format(tmp_path, zstc_cli):
    """--skip-empty wrote a JSON null text as "": the kept null then differed from the written text, so the input's
    text column was renamed input_text on that row alone (CSV: exit 2, "row 2 has the column 'input_text'"; JSON
    Lines: an extra key; Parquet: an input_text column on every row). The row is written as a blank one is: no
    label, the columns of every other row, its text null."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "The match ended 2-1."}\n{"text": null}\n{"text": "Rates were raised."}\n')
    columns = ["text", "label", "score", "scores"]
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "out.csv", "--skip-empty"))
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out.csv").read_text())))
    assert list(rows[1]) == columns and rows[1]["text"] == "" and rows[1]["label"] == ""
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "out.jsonl", "--skip-empty"))
    assert status == 0, err
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [list(row) for row in lines] == [columns] * 3
    assert lines[1] == {"text": None, "label": None, "score": None, "scores": None}
    pq = pytest.importorskip("pyarrow.parquet")
    status, _, err = zstc_cli(*classify_args(source, tmp_path / "out.parquet", "--skip-empty", "--chunk-size", "1"))
    assert status == 0, err
    table = pq.read_table(tmp_path / "out.parquet")
    assert table.column_names == columns and table.column("text").to_pylist() == [
        "The match ended 2-1.",
        None,
        "Rates were raised.",
    ]
