"""Issue 17, through the real command line: every user-caused failure is exit 2, one ``error:`` line, no
traceback, no file touched; interrupts exit 130/143 with a message; and fuzzed loaders raise only zstc's errors.

Checks that must run before the model loads are asserted by what was not written (no details, no output).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import MINILM
from zstc.errors import DataError
from zstc.validation import check_texts

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_user_error(result, *fragments: str) -> None:
    status, out, err = result
    assert status == 2, (status, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, (fragment, err)


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    path = tmp_path / "texts.jsonl"
    path.write_text('{"text": "The match ended 2-1."}\n{"text": "Rates were raised."}\n', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def result_file(tmp_path_factory: pytest.TempPathFactory, btzsc_dir: Path) -> Path:
    """A real bench result: all-MiniLM-L6-v2 on 12 financialphrasebank texts, with its details folder."""
    from zstc.benchmark.runner import Bench, BenchConfig

    out = tmp_path_factory.mktemp("bench") / "r.json"
    Bench(
        BenchConfig(model=MINILM, tasks=["financialphrasebank"], data=str(btzsc_dir), max_samples=12, out=out),
        show_progress=False,
    ).run()
    return out


def copy_result(result_file: Path, directory: Path) -> Path:
    shutil.copy(result_file, directory / "r.json")
    shutil.copytree(result_file.with_name("r.details"), directory / "r.details")
    return directory / "r.json"


# -- 1. an output that is an input is refused, and the input survives ---------------------------------


@pytest.mark.parametrize("spelling", ["same", "dotted", "symlink", "hardlink"])
def test_classify_refuses_to_overwrite_its_input(zstc_cli, texts: Path, spelling: str) -> None:
    before = digest(texts)
    # pathlib drops a "." ("dir/./t.jsonl" is "dir/t.jsonl"): the other spelling goes down a folder and back up.
    (texts.parent / "sub").mkdir()
    out = {"same": texts, "dotted": texts.parent / "sub" / ".." / texts.name}.get(spelling)
    assert spelling != "dotted" or str(out) != str(texts)
    if spelling == "symlink":
        out = texts.parent / "link.jsonl"
        out.symlink_to(texts)
    elif spelling == "hardlink":
        out = texts.parent / "hard.jsonl"
        os.link(texts, out)
    assert_user_error(zstc_cli("classify", str(texts), "--labels", "a,b", "--out", str(out)), "--out", "is the input")
    assert digest(texts) == before


def test_labels_the_model_reads_alike_are_refused_before_any_output(
    zstc_cli, texts: Path, tmp_path: Path, nli_folder: Path
) -> None:
    """An uncased NLI cross-encoder reads the hypotheses 'This is Sports.' and 'This is sports.' as the same token ids:
    their scores would tie on every text and the first would always win. Refused, and no output (nor a resume
    marker) is left behind."""
    out = tmp_path / "predictions.jsonl"
    assert_user_error(
        zstc_cli(
            "classify",
            str(texts),
            "--labels",
            "Sports,sports,politics",
            "--model",
            str(nli_folder),
            "--family",
            "nli",
            "--out",
            str(out),
        ),
        "labels 'Sports' and 'sports' read the same to",
        "(its tokenizer lowercases)",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["texts.jsonl"]


def test_txt_input_and_labels_file_are_inputs_too(zstc_cli, tmp_path: Path) -> None:
    plain = tmp_path / "t.txt"
    plain.write_text("one\ntwo\n")
    labels = tmp_path / "labels.txt"
    labels.write_text("a\nb\n")
    # --format: classify's streaming writer otherwise refuses a .txt output before looking at the path.
    assert_user_error(
        zstc_cli("classify", str(plain), "--labels", "a,b", "-o", str(plain), "--format", "jsonl"), "is the input"
    )
    assert_user_error(
        zstc_cli("classify", str(plain), "--labels-file", str(labels), "-o", str(labels), "--format", "jsonl"),
        "is the input",
    )
    assert plain.read_text() == "one\ntwo\n" and labels.read_text() == "a\nb\n"
    # The --calibration file is read too: an --out there replaced it with the predictions.
    calibration = tmp_path / "calibration.json"
    calibration.write_text(
        json.dumps(
            {"format": "zstc-calibration", "method": "temperature", "parameters": {"temperature": 0.5}, "model": MINILM}
        )
    )
    before = calibration.read_bytes()
    assert_user_error(
        zstc_cli("classify", str(plain), "--labels", "a,b", "--calibration", str(calibration), "-o", str(calibration)),
        f"--out {calibration}: is the input {calibration}",
    )
    assert calibration.read_bytes() == before


def test_export_report_and_bench_refuse_their_inputs(
    zstc_cli, result_file: Path, tmp_path: Path, btzsc_dir: Path
) -> None:
    result = copy_result(result_file, tmp_path)
    before = digest(result)
    assert_user_error(zstc_cli("export", "--leaderboard", str(result), "--out", str(result)), "is the input")
    assert_user_error(zstc_cli("report", str(result), "--out", str(tmp_path / "r.json")), "is a file")
    # A results file where the report writes one of its own files (report.md, index.html) in --out.
    folder = tmp_path / "report"
    folder.mkdir()
    named_like_the_report = shutil.copy(result, folder / "report.md")
    assert_user_error(
        zstc_cli("report", str(named_like_the_report), "--out", str(folder)),
        "would overwrite the input",
        "with its report.md",
    )
    assert digest(named_like_the_report) == before
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(btzsc_dir / "financialphrasebank.jsonl", data)
    assert_user_error(
        zstc_cli(
            "bench",
            "-m",
            MINILM,
            "--data",
            str(data),
            "--tasks",
            "financialphrasebank",
            "--out",
            str(data / "financialphrasebank.jsonl"),
        ),
        "is the input",
    )
    assert digest(result) == before
    assert digest(data / "financialphrasebank.jsonl") == digest(btzsc_dir / "financialphrasebank.jsonl")


@pytest.fixture
def data_folders(tmp_path: Path, btzsc_dir: Path) -> tuple[Path, Path]:
    """Copies of a data folder (two datasets, a third, tasks.json, a README, a figure, a pairs file) and of a
    training folder (banking77's training split and a notes file): the folders the commands read."""
    data, train = tmp_path / "data", tmp_path / "train"
    data.mkdir()
    train.mkdir()
    for name in ("financialphrasebank.jsonl", "rottentomatoes.jsonl", "banking77.jsonl", "tasks.json"):
        shutil.copy(btzsc_dir / name, data)
    for name, content in (
        ("README.md", "the data's own notes\n"),
        ("similarity.png", "a figure\n"),
        ("pairs-even.jsonl", "{}\n"),
    ):
        (data / name).write_text(content)
    shutil.copy(btzsc_dir / "banking77.jsonl", train)
    (train / "notes.txt").write_text("how the split was made\n")
    return data, train


@pytest.mark.parametrize(
    "command, args, victim",
    [
        # dataset-similarity protected only the datasets compared: AG News went, replaced by a 114-byte CSV.
        (
            "dataset-similarity",
            ["--tasks", "rottentomatoes,financialphrasebank", "--max-samples", "6", "--out", "{data}/banking77.jsonl"],
            "--out {data}/banking77.jsonl",
        ),
        (
            "dataset-similarity",
            ["--tasks", "rottentomatoes,financialphrasebank", "--max-samples", "6", "--out", "{data}/notes.tsv"],
            "--out {data}/notes.tsv",
        ),
        # The others protected only .jsonl, .csv and .parquet files: tasks.json or a README went.
        (
            "calibrate",
            ["-m", MINILM, "--task", "rottentomatoes", "--max-samples", "6", "--out", "{data}/tasks.json"],
            "--out {data}/tasks.json",
        ),
        (
            "template-robustness",
            ["-m", MINILM, "--task", "rottentomatoes", "--max-samples", "6", "--out", "{data}/README.md"],
            "--out {data}/README.md",
        ),
        (
            "bench",
            [
                "-m",
                MINILM,
                "--tasks",
                "rottentomatoes",
                "--max-samples",
                "6",
                "--no-cache",
                "--out",
                "{data}/tasks.json",
            ],
            "--out {data}/tasks.json",
        ),
        (
            "unseen",
            [
                "-m",
                MINILM,
                "--train-data",
                "{train}",
                "--no-finetune",
                "--max-samples",
                "6",
                "--max-train-samples",
                "6",
                "--out",
                "{train}/notes.txt",
            ],
            "--out {train}/notes.txt",
        ),
        # Its pairs files go in --work-dir: not over a file of --data.
        (
            "unseen",
            [
                "-m",
                MINILM,
                "--train-data",
                "{train}",
                "--max-samples",
                "6",
                "--max-train-samples",
                "6",
                "--max-steps",
                "1",
                "--work-dir",
                "{data}",
            ],
            "--work-dir {data}: would overwrite the input {data}/pairs-even.jsonl",
        ),
    ],
)
def test_no_output_replaces_a_file_of_the_data_folders_read(
    zstc_cli, data_folders: tuple[Path, Path], command: str, args: list[str], victim: str
) -> None:
    """Every command that reads a data folder refuses, before any work, an output that is a data file in it (or in
    --train-data), with the line nli-probe and classify give: not only the datasets it reads now."""
    data, train = data_folders
    (data / "notes.tsv").write_text("a\tb\n")
    before = {path: digest(path) for folder in (data, train) for path in folder.iterdir()}
    fill = {"data": data, "train": train}
    result = zstc_cli(command, "--data", str(data), *(arg.format(**fill) for arg in args))
    assert_user_error(result, victim.format(**fill), "input")
    assert {path: digest(path) for folder in (data, train) for path in folder.iterdir()} == before


def test_a_result_beside_the_data_is_replaced_by_running_the_command_again(
    zstc_cli, data_folders: tuple[Path, Path]
) -> None:
    """The data-folder rule took every file there for data, so `bench --data . --out r.json` run a second time was
    refused ("--out r.json: is the input r.json"): an earlier result or figure beside the data is the command's own
    output, which running it again replaces or resumes."""
    data, _ = data_folders
    summary, figure = data / "r.json", data / "similarity.png"
    for _ in range(2):
        status, _, err = zstc_cli(
            "bench",
            "-m",
            MINILM,
            "--data",
            str(data),
            "--tasks",
            "financialphrasebank",
            "--max-samples",
            "6",
            "--no-cache",
            "--out",
            str(summary),
        )
        assert status == 0, err
        status, _, err = zstc_cli(
            "dataset-similarity",
            "--data",
            str(data),
            "--tasks",
            "rottentomatoes,financialphrasebank",
            "--max-samples",
            "6",
            "--figure",
            str(figure),
        )
        assert status == 0, err
    assert json.loads(summary.read_text())["results"]["by_dataset"]["financialphrasebank"]["n_texts"] == 6
    assert figure.read_bytes().startswith(b"\x89PNG")


def test_a_read_only_file_is_not_replaced(zstc_cli, tmp_path: Path) -> None:
    """The writer renames a new file over the old one, which a file's read-only mode (0444) does not stop: such
    a file was replaced without a word. It is refused before any work, by its mode bits (root passes os.access)."""
    from zstc.errors import OutputError
    from zstc.io import check_output_path

    kept = tmp_path / "kept.jsonl"
    kept.write_text("mine\n")
    kept.chmod(0o444)
    assert_user_error(
        zstc_cli("classify", str(tmp_path / "absent.jsonl"), "-l", "a,b", "--out", str(kept), "--format", "jsonl"),
        f"--out {kept}: is read-only",
    )
    link = tmp_path / "link.jsonl"
    link.symlink_to(kept)
    with pytest.raises(OutputError, match="is read-only"):  # through a symlink too: the file it points to would go
        check_output_path(link)
    assert kept.read_text() == "mine\n"
    kept.chmod(0o644)  # writable for its owner alone is writable
    assert check_output_path(kept) == kept


# -- 2. output paths that cannot be written: said up front, before any work ----------------------------


@pytest.mark.parametrize(
    "where, message",
    [
        ("{tmp}/missing/out.jsonl", "does not exist"),
        ("{tmp}", "is a directory"),
        ("/proc/zstc-out.jsonl", "cannot write in /proc"),
    ],
)
def test_unwritable_out_fails_before_the_texts_are_read(zstc_cli, tmp_path: Path, where: str, message: str) -> None:
    # The input does not exist: a failure about the input would mean --out was checked too late.
    out = where.format(tmp=tmp_path)
    assert_user_error(
        zstc_cli("classify", str(tmp_path / "absent.jsonl"), "-l", "a,b", "--out", out, "--format", "jsonl"),
        "--out",
        message,
    )


def test_a_read_only_folder_is_refused_even_by_root(zstc_cli, tmp_path: Path) -> None:
    """A folder with no write bit for anyone is refused by its mode bits, as a read-only file is: root (as these
    tests run) writes in it all the same, so the write probe alone let it through."""
    from zstc.errors import OutputError
    from zstc.io import check_output_dir

    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert_user_error(
            zstc_cli(
                "classify",
                str(tmp_path / "absent.jsonl"),
                "-l",
                "a,b",
                "--out",
                str(folder / "out.jsonl"),
                "--format",
                "jsonl",
            ),
            f"--out {folder / 'out.jsonl'}: cannot write in {folder} (read-only",
        )
        for out in (folder, folder / "report"):  # an output folder that is read-only, or would be made in one
            with pytest.raises(OutputError, match="cannot write in .* no write bit"):
                check_output_dir(out)
        assert list(folder.iterdir()) == []
        folder.chmod(0o755)  # writable for its owner alone is writable
        assert check_output_dir(folder / "report") == folder / "report"
    finally:
        folder.chmod(0o755)


def test_bench_refuses_a_file_where_its_details_folder_goes(zstc_cli, tmp_path: Path, btzsc_dir: Path) -> None:
    """bench --out r.json writes r.details/: a file of that name was found only when the first dataset had been
    scored, as a FileExistsError traceback that lost it. Refused up front now, before the model loads."""
    details = tmp_path / "r.details"
    details.write_text("someone's notes")
    assert_user_error(
        zstc_cli(
            "bench",
            "-m",
            MINILM,
            "--data",
            str(btzsc_dir),
            "--tasks",
            "financialphrasebank",
            "--max-samples",
            "6",
            "--no-cache",
            "--out",
            str(tmp_path / "r.json"),
        ),
        f"--out {tmp_path / 'r.json'}: its details folder {details}: is a file, expected a folder",
    )
    assert details.read_text() == "someone's notes" and not (tmp_path / "r.json").exists()


def test_full_disk_is_one_line(zstc_cli, result_file: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    assert_user_error(
        zstc_cli("export", "--leaderboard", str(result_file), "--out", "/dev/full"), "/dev/full", "No space left"
    )


def run_with_file_size_limit(limit: int, *args: str | Path) -> subprocess.CompletedProcess:
    """``zstc ARGS`` in a process that cannot write a file past ``limit`` bytes: a full disk, wherever /dev/full
    is missing (Python ignores SIGXFSZ, so a write past the limit fails with EFBIG as one past a full disk does)."""
    import resource

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, "-m", "zstc", *map(str, args)], preexec_fn=limited, capture_output=True, env=env, timeout=600
    )


def test_a_disk_that_fills_up_is_one_line_and_leaves_the_old_files(result_file: Path, tmp_path: Path) -> None:
    export_out, report_out = tmp_path / "lb.json", tmp_path / "report"
    export_out.write_text("the old export")
    report_out.mkdir()
    (report_out / "index.html").write_text("the old report")
    (report_out / ".zstc-report").write_text("an earlier report's marker")  # else the report refuses the folder
    for limit, args, out in (
        (300, ["export", "--leaderboard", result_file, "--out", export_out], export_out),
        (2000, ["report", result_file, "--out", report_out, "--bootstrap", "100"], report_out / "figures"),
    ):
        result = run_with_file_size_limit(limit, *args)
        err = result.stderr.decode()
        assert result.returncode == 2 and err.startswith("error: cannot write ") and err.count("\n") == 1, err
        assert (
            "File too large" in err and str(out) in err and ".tmp" not in err
        )  # named where the user looks, not the temporary
    assert export_out.read_text() == "the old export"
    assert sorted(p.name for p in report_out.iterdir()) == [".zstc-report", "index.html"]
    assert (report_out / "index.html").read_text() == "the old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lb.json", "report"]  # no temporary file or folder left


def test_report_export_and_train_out_paths(zstc_cli, result_file: Path, tmp_path: Path) -> None:
    existing = tmp_path / "existing.txt"
    existing.write_text("keep me")
    assert_user_error(zstc_cli("report", str(result_file), "--out", str(existing)), "is a file")
    assert_user_error(
        zstc_cli("export", "--leaderboard", str(result_file), "--out", str(tmp_path / "no" / "x.json")),
        "does not exist",
    )
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"premise": "a", "hypothesis": "b", "label": "entailment"}\n')
    # The backbone does not exist: an error about it would mean --out was checked after loading.
    assert_user_error(
        zstc_cli("train-nli", "--backbone", "no/such-backbone", "--data", str(pairs), "--out", str(existing)),
        "is a file",
    )
    assert existing.read_text() == "keep me"


def test_train_nli_refuses_a_folder_of_other_files(zstc_cli, tmp_path: Path) -> None:
    """train-nli into a folder holding another model's files moved its own in beside them (a sentence-transformers
    modules.json stayed next to the new weights): refused before anything loads, the folder untouched."""
    out = tmp_path / "model"
    out.mkdir()
    (out / "modules.json").write_text("[]")
    (out / "vocab.txt").write_text("[PAD]\n")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"premise": "a", "hypothesis": "b", "label": "entailment"}\n')
    assert_user_error(
        zstc_cli("train-nli", "--backbone", "no/such-backbone", "--data", str(pairs), "--out", str(out)),
        f"{out}: holds other files (modules.json, vocab.txt), which the trained model's would be mixed with",
    )
    assert sorted(path.name for path in out.iterdir()) == ["modules.json", "vocab.txt"]


def test_sweep_out_is_a_folder_in_a_folder_that_exists(zstc_cli, tmp_path: Path, btzsc_dir: Path) -> None:
    """sweep's --out follows every command's folder rule: an existing file, or a missing parent folder, is refused
    before any work (the model does not exist: an error about it would mean --out was checked after it)."""
    existing = tmp_path / "one.txt"
    existing.write_text("keep me")
    sweep = [
        "sweep",
        "--models",
        "no/such-model",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "rottentomatoes",
        "--max-samples",
        "10",
    ]
    assert_user_error(zstc_cli(*sweep, "--out", str(existing)), f"--out {existing}: is a file, expected a folder")
    assert existing.read_text() == "keep me"
    assert_user_error(zstc_cli(*sweep, "--out", str(tmp_path / "no" / "sweep")), "--out", "does not exist")
    assert not (tmp_path / "no").exists()


# -- 3. decoding ---------------------------------------------------------------------------------------


def test_utf8_bom_just_works(tmp_path: Path) -> None:
    from zstc.io import read_label_descriptions, read_texts

    bom = b"\xef\xbb\xbf"
    (tmp_path / "t.csv").write_bytes(bom + b"text,label\nhello,a\n")
    (tmp_path / "t.jsonl").write_bytes(bom + b'{"text": "hi"}\n')
    (tmp_path / "t.txt").write_bytes(bom + b"first\r\nsecond\r\n")
    (tmp_path / "l.json").write_bytes(bom + b'{"a": "about a", "b": "about b"}')
    assert read_texts(tmp_path / "t.csv") == ["hello"]
    assert read_texts(tmp_path / "t.jsonl") == ["hi"]
    assert read_texts(tmp_path / "t.txt") == ["first", "second"]
    assert read_label_descriptions(tmp_path / "l.json") == {"a": "about a", "b": "about b"}


@pytest.mark.parametrize(
    "name, content, offset",
    [
        ("t.txt", "caf\u00e9\n".encode("latin-1"), 3),
        ("t.jsonl", '{"text": "caf\u00e9"}\n'.encode("latin-1"), 13),
        ("t.csv", "text\ncaf\u00e9\n".encode("latin-1"), 8),
        ("t.jsonl", b'{"text": "ok"}\n' + bytes(range(128, 256)), 15),
    ],
)
def test_non_utf8_input_names_the_file_and_offset(
    zstc_cli, tmp_path: Path, name: str, content: bytes, offset: int
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert_user_error(zstc_cli("classify", str(path), "-l", "a,b"), str(path), f"byte offset {offset}")


def test_utf16_input_is_told_to_convert_from_utf16(zstc_cli, tmp_path: Path) -> None:
    """A UTF-16 file (its byte-order mark says so) was told to convert from latin1, which gives garbage."""
    path = tmp_path / "t.txt"
    path.write_bytes("first\nsecond\n".encode("utf-16"))
    assert_user_error(
        zstc_cli("classify", str(path), "-l", "a,b"),
        f"{path}: not UTF-8 text (byte offset 0: 0x",
        "iconv -f utf-16 -t utf-8",
    )
    path.write_bytes("caf\u00e9\n".encode("latin-1"))
    assert_user_error(zstc_cli("classify", str(path), "-l", "a,b"), "iconv -f latin1 -t utf-8")


def test_non_utf8_labels_and_results_files(zstc_cli, texts: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.txt"
    labels.write_bytes("caf\u00e9\nthé\n".encode("latin-1"))
    assert_user_error(zstc_cli("classify", str(texts), "--labels-file", str(labels)), "not UTF-8", "byte offset 3")
    result = tmp_path / "r.json"
    result.write_bytes(b'{"results": "\xff"}')
    assert_user_error(zstc_cli("report", str(result), "--out", str(tmp_path / "rep")), "not UTF-8")
    assert_user_error(zstc_cli("export", "--leaderboard", str(result), "--out", str(tmp_path / "x.json")), "not UTF-8")
    assert_user_error(zstc_cli("validate", str(result)), "not UTF-8")
    assert not (tmp_path / "x.json").exists()


def test_binary_on_stdin(zstc_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    stdin = io.TextIOWrapper(
        io.BytesIO(b"fine text\n\x89PNG\r\n\x1a\n\x00\xff\xfe"), encoding="utf-8", errors="surrogateescape"
    )
    monkeypatch.setattr(sys, "stdin", stdin)
    assert_user_error(zstc_cli("classify", "-", "-l", "a,b"), "<stdin>", "not UTF-8")


def test_lone_surrogate_and_nul_in_texts(zstc_cli, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"text": "fine"}\n{"text": "bad \\ud800 half"}\n')
    assert_user_error(zstc_cli("classify", str(path), "-l", "a,b"), f"{path}:2", "surrogate")
    path.write_text('{"text": "nul \\u0000 here"}\n')
    assert_user_error(zstc_cli("classify", str(path), "-l", "a,b"), "NUL")


INVISIBLE = ["\u200b\u200b", "\x01\x02", "\ufeff", "\u2060", "\u00ad "]
"""Texts str.strip() keeps but a model cannot read: zero-width spaces, control characters, a BOM, a word joiner, a soft
hyphen. Each was classified (on the template alone: every one got the very same scores) while "   " was refused."""


@pytest.mark.parametrize("text", INVISIBLE)
def test_a_text_of_only_invisible_characters_is_empty(zstc_cli, tmp_path: Path, text: str) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"text": "fine"}) + "\n" + json.dumps({"text": text}) + "\n")
    code = f"U+{ord(text.strip()[0]):04X}"
    assert_user_error(
        zstc_cli("classify", str(path), "-l", "a,b"),
        f"{path}:2: empty text (only invisible characters, such as {code})",
    )
    status, out, err = zstc_cli("classify", str(path), "-l", "a,b", "--skip-empty")
    assert status == 0, err
    assert [json.loads(line)["label"] for line in out.splitlines()][1] is None
    with pytest.raises(
        DataError, match=rf"input: text 2 is empty \(only invisible characters, such as {re.escape(code)}\)"
    ):
        check_texts(["fine", text])  # the Python API's and the service's check


def test_labels_and_descriptions_of_only_invisible_characters_are_empty(zstc_cli, texts: Path, tmp_path: Path) -> None:
    assert_user_error(
        zstc_cli("classify", str(texts), "-l", "food,\u200b"),
        "labels contain an empty entry at position 2 (only invisible characters, such as U+200B)",
    )
    labels = tmp_path / "labels.txt"
    labels.write_text("food\tAbout food.\nfinance\t\u00ad\n", encoding="utf-8")
    assert_user_error(
        zstc_cli("classify", str(texts), "--labels-file", str(labels)),
        "the description of 'finance' is empty (only invisible characters, such as U+00AD)",
    )
    # A line of nothing readable is a blank line, skipped as one: two labels remain.
    labels.write_text("food\n\u200b\nfinance\n", encoding="utf-8")
    status, out, err = zstc_cli("classify", str(texts), "--labels-file", str(labels))
    assert status == 0 and {json.loads(line)["label"] for line in out.splitlines()} <= {"food", "finance"}, err


def test_a_nul_text_is_binary_data_not_an_empty_text(zstc_cli, tmp_path: Path) -> None:
    """A NUL is a control character too, but binary data: refused as such, also under --skip-empty."""
    path = tmp_path / "nul.jsonl"
    path.write_text('{"text": "\\u0000"}\n')
    for extra in ((), ("--skip-empty",)):
        assert_user_error(zstc_cli("classify", str(path), "-l", "a,b", *extra), f"{path}:1 holds a NUL character")


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--threshold", "5"],
            "error: --threshold must be >= -1 and <= 1, got 5: multi-label decides on cosine similarities here",
        ),
        (
            ["--label-threshold", "food=-5"],
            "error: --label-threshold: the threshold of 'food' must be >= -1 and <= 1, got -5",
        ),
    ],
)
def test_a_threshold_off_the_cosine_scale_is_refused(
    zstc_cli, texts: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    """all-MiniLM-L6-v2's cosines lie in [-1, 1]: --threshold 5 made every text "none" and -5 passed every label."""
    out = tmp_path / "out.jsonl"
    assert_user_error(
        zstc_cli("classify", str(texts), "-l", "food,finance", "--multi-label", "--out", str(out), *flags), message
    )
    assert not out.exists()


def test_a_max_length_too_small_for_a_label_is_blamed_on_max_length(zstc_cli, texts: Path, nli_folder: Path) -> None:
    """--max-length 2 said "a label description is longer than all-MiniLM-L6-v2's 2 tokens ... shorten 'This is food.'": the
    model's limit is 256 (512 for the NLI head), the user's --max-length was the cause."""
    remedy = "label descriptions are never truncated: raise --max-length (or leave it out for the model's own limit), or shorten"
    assert_user_error(
        zstc_cli("classify", str(texts), "-l", "food,finance", "--max-length", "2"),
        f"error: a label description is longer than --max-length (2 tokens); {remedy} 'This is food.'",
    )
    assert_user_error(
        zstc_cli("classify", str(texts), "-l", "food,finance", "-m", str(nli_folder), "-f", "nli", "--max-length", "4"),
        f"which leaves no room for the text within --max-length (4 tokens); {remedy} 'This",
    )
    # Without --max-length the model's own limit is the cause, named as before.
    assert_user_error(
        zstc_cli("classify", str(texts), "-l", "food," + "word " * 300),
        f"error: a label description is longer than {MINILM}'s 256 tokens; label descriptions are never truncated: shorten",
    )


@pytest.mark.parametrize(
    "content, problem",
    [
        ('[{"text": "I love pizza"}, {"text": "Stocks fell"}]\n', "expected a JSON object, got list"),
        ('[\n  {"text": "I love pizza"}\n]\n', "malformed JSON (Expecting value, line 2 column 1)"),
        ('{\n  "text": "I love pizza"\n}\n', "malformed JSON"),
    ],
)
def test_a_json_file_says_it_is_read_as_json_lines(zstc_cli, tmp_path: Path, content: str, problem: str) -> None:
    """A .json file holding an array or a pretty-printed object was refused as "expected a JSON object, got list" or
    "malformed JSON" on its line 1, with no word that .json input is read as JSON Lines."""
    path = tmp_path / "in.json"
    path.write_text(content)
    assert_user_error(
        zstc_cli("classify", str(path), "-l", "food,finance"),
        f"{path}:1: {problem}",
        "; .json input is read as JSON Lines, one object per line (convert an array with jq -c '.[]')",
    )
    jsonl = tmp_path / "in.jsonl"  # a .jsonl file is JSON Lines by its name: no such note
    jsonl.write_text(content)
    status, _, err = zstc_cli("classify", str(jsonl), "-l", "food,finance")
    assert status == 2 and "read as JSON Lines" not in err, err


def test_a_null_or_empty_text_points_to_skip_empty(zstc_cli, tmp_path: Path) -> None:
    """A JSON null said "'text' is NoneType, expected a string" (Python's word) and neither it nor "empty text" said
    that --skip-empty writes such rows unlabelled."""
    hint = ": give --skip-empty to write such a row without a label"
    path = tmp_path / "in.jsonl"
    path.write_text('{"text": "fine"}\n{"text": null}\n')
    assert_user_error(
        zstc_cli("classify", str(path), "-l", "a,b"), f"error: {path}:2: 'text' is null, expected a string{hint}\n"
    )
    path.write_text('{"text": "fine"}\n{"text": "  "}\n')
    assert_user_error(zstc_cli("classify", str(path), "-l", "a,b"), f"error: {path}:2: empty text{hint}\n")
    path.write_text('{"text": "fine"}\n{"text": 3}\n')  # not a text: --skip-empty would not help, so no hint
    assert_user_error(
        zstc_cli("classify", str(path), "-l", "a,b"), f"error: {path}:2: 'text' is int, expected a string\n"
    )


def test_fit_thresholds_names_the_file_and_line_of_an_unknown_label(zstc_cli, texts: Path, tmp_path: Path) -> None:
    """A dev file's unknown gold label said "dev text 2 has label 'zzz', ..." with neither the file nor its line."""
    dev = tmp_path / "dev.jsonl"
    dev.write_text('{"text": "a pizza", "label": "food"}\n\n{"text": "stocks", "label": ["finance", "zzz"]}\n')
    out = tmp_path / "out.jsonl"
    assert_user_error(
        zstc_cli(
            "classify",
            str(texts),
            "-l",
            "food,finance",
            "--multi-label",
            "--fit-thresholds",
            str(dev),
            "--out",
            str(out),
        ),
        f"error: {dev}:3: label 'zzz' is not one of the labels: food, finance\n",
    )
    assert not out.exists()


def test_unterminated_csv_quote_does_not_swallow_the_file(zstc_cli, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('text\n"first, never closed\nsecond\n')
    assert_user_error(zstc_cli("classify", str(path), "-l", "a,b"), str(path), "malformed CSV")


@pytest.mark.parametrize(
    "rows, line, problem",
    [
        ("first,1\nsecond\n", 3, "1 field, the header has 2"),  # a missing cell read as None: written as an empty cell
        ("first,1\nsecond,2,extra\n", 3, "more fields than the header's 2"),
    ],
)
def test_a_csv_row_of_another_width_than_the_header_is_named(
    zstc_cli, tmp_path: Path, rows: str, line: int, problem: str
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("text,id\n" + rows)
    assert_user_error(
        zstc_cli("classify", str(path), "-l", "a,b", "--keep-columns", "id", "-o", str(tmp_path / "out.jsonl")),
        f"{path}:{line}: {problem}",
    )
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "name, header", [("dup.csv", "text,text"), ("dup.tsv", "id\ttext\tid"), ("later.csv", "text,label,label")]
)
def test_a_repeated_csv_column_is_an_error_not_a_dropped_column(
    zstc_cli, tmp_path: Path, name: str, header: str
) -> None:
    path = tmp_path / name
    delimiter = "\t" if name.endswith(".tsv") else ","
    path.write_text(header + "\n" + delimiter.join("abc"[: header.count(delimiter) + 1]) + "\n")
    repeated = next(column for column in header.split(delimiter) if header.split(delimiter).count(column) > 1)
    assert_user_error(
        zstc_cli("classify", str(path), "-l", "a,b", "-o", str(tmp_path / "out.jsonl")),
        str(path),
        f"column {repeated!r} is repeated in the header",
    )
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "line, key", [('{"text": "first", "text": "second"}', "text"), ('{"text": "a", "meta": {"id": 1, "id": 2}}', "id")]
)
def test_a_repeated_jsonl_key_is_an_error_not_a_dropped_value(zstc_cli, tmp_path: Path, line: str, key: str) -> None:
    """``json.loads`` keeps a repeated key's last value and drops the others without a word (and Arrow's reader,
    ``--engine ray``'s, refuses the row): the row is named instead, and nothing is written."""
    path = tmp_path / "rows.jsonl"
    path.write_text('{"text": "fine"}\n' + line + "\n")
    assert_user_error(
        zstc_cli("classify", str(path), "-l", "a,b", "-o", str(tmp_path / "out.jsonl")),
        f"{path}:2",
        f"key {key!r} appears twice in one object",
    )
    assert not (tmp_path / "out.jsonl").exists()


def test_input_columns_named_like_renamed_ones_are_not_overwritten(zstc_cli, tmp_path: Path) -> None:
    """A gold ``label`` becomes ``input_label``; an input's own ``input_label`` must not replace it (it used to):
    it becomes ``input_input_label``. A classify output classified again keeps every one of its columns."""
    source = tmp_path / "in.csv"
    source.write_text("text,label,input_label,score\nThe match ended 2-1.,x,y,z\n")
    first = tmp_path / "first.jsonl"
    status, _, err = zstc_cli("classify", str(source), "-l", "sports,economy", "--out", str(first))
    assert status == 0, err
    row = json.loads(first.read_text())
    assert (row["input_label"], row["input_input_label"], row["input_score"]) == ("x", "y", "z")
    assert row["text"] == "The match ended 2-1." and row["label"] in ("sports", "economy")
    second = tmp_path / "second.jsonl"
    status, _, err = zstc_cli("classify", str(first), "-l", "sports,economy", "--out", str(second))
    assert status == 0, err
    again = json.loads(second.read_text())
    assert {name: again["input_" + name] for name in row if name != "text"} == {
        name: value for name, value in row.items() if name != "text"
    }


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"a": ["x"], "b": "about b"}', "the description of 'a' is [\"x\"]"),
        ('{"a": null, "b": "about b"}', "the description of 'a' is null"),
        ('["a", null]', "item 2 is null"),
        ('["a", {"b": 1}]', "item 2 is {"),
        ("[" * 50000 + "]" * 50000, "nested too deeply"),
    ],
)
def test_labels_json_values_must_be_strings(zstc_cli, texts: Path, tmp_path: Path, content: str, message: str) -> None:
    labels = tmp_path / "labels.json"
    labels.write_text(content)
    assert_user_error(zstc_cli("classify", str(texts), "--labels-file", str(labels)), message)


def test_unsupported_input_names_every_accepted_type(zstc_cli, tmp_path: Path) -> None:
    """classify's error for an unsupported input said '.jsonl, .csv, .tsv or .parquet', leaving out .txt (and the
    .ndjson / .json that are read as JSON Lines), while --help listed another set. The error, --help and the README
    now all word the list as zstc.io.TEXT_SUFFIXES gives it, and each suffix listed is read."""
    import re

    from zstc.errors import DataError
    from zstc.io import TEXT_SUFFIXES, read_texts, suffix_list

    listed = suffix_list(TEXT_SUFFIXES)
    source = tmp_path / "t.md"
    source.write_text("good\nbad\n")
    assert_user_error(
        zstc_cli("classify", str(source), "--labels", "good,bad"),
        f"error: {source}: unsupported file type '.md'; expected {listed}\n",
    )
    with pytest.raises(DataError, match=re.escape(f"expected {listed}")):
        read_texts(source)
    status, help_text, _ = zstc_cli("classify", "--help")
    assert status == 0 and listed in " ".join(help_text.replace("│", " ").split())
    assert listed in (REPO / "README.md").read_text()
    for suffix in TEXT_SUFFIXES:
        if suffix != ".parquet":  # the others are text
            content = (
                "text\nhello\n"
                if suffix in (".csv", ".tsv")
                else '{"text": "hello"}\n'
                if "json" in suffix
                else "hello\n"
            )
            (tmp_path / f"t{suffix}").write_text(content)
            assert read_texts(tmp_path / f"t{suffix}") == ["hello"], suffix


def test_labels_file_that_is_a_directory(zstc_cli, texts: Path, tmp_path: Path) -> None:
    assert_user_error(zstc_cli("classify", str(texts), "--labels-file", str(tmp_path)), "is a directory")


@pytest.mark.parametrize(
    "template, message",
    [
        ("This is about {x}.", "plain '{}'"),
        ("This is about {}. {", "literal brace"),
        ("This } is about {}.", "literal brace"),
        ("{} and {}", "exactly one '{}'"),
        ("{0!r}", "plain '{}'"),
    ],
)
def test_bad_templates(zstc_cli, texts: Path, btzsc_dir: Path, template: str, message: str) -> None:
    assert_user_error(zstc_cli("classify", str(texts), "-l", "a,b", "--template", template), message)
    assert_user_error(
        zstc_cli(
            "template-robustness",
            "-m",
            MINILM,
            "--data",
            str(btzsc_dir),
            "--task",
            "financialphrasebank",
            "--template",
            "This is {}.",
            "--template",
            template,
        ),
        "--template",
        message,
    )


def test_a_valid_template_with_doubled_braces() -> None:
    from zstc.api import describe_labels

    assert describe_labels(["a"], "{{x}} is {}") == ["{x} is a"]


# -- 4. option ranges, checked before any work ---------------------------------------------------------


def test_option_ranges(zstc_cli, texts: Path, tmp_path: Path, btzsc_dir: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"premise": "a", "hypothesis": "b", "label": "entailment"}\n')
    train = ["train-nli", "--backbone", "no/such-backbone", "--data", str(pairs), "--out", str(tmp_path / "m")]
    data = ["--data", str(btzsc_dir), "--task", "financialphrasebank"]
    no_datasets = tmp_path / "no-datasets"
    no_datasets.mkdir()
    cases = [
        (
            ["classify", str(texts), "-l", "a,b", "--multi-label", "--threshold", "nan"],
            "--threshold must be a finite number",
        ),
        (
            ["classify", str(texts), "-l", "a,b", "--multi-label", "--threshold", "inf"],
            "--threshold must be a finite number",
        ),
        (
            ["classify", str(texts), "-l", "a,b", "--multi-label", "--label-threshold", "a=nan"],
            "--label-threshold: each must look like LABEL=NUMBER, got 'a=nan'",
        ),
        # Repeated for one label: the last one won, silently.
        (
            [
                "classify",
                str(texts),
                "-l",
                "a,b",
                "--multi-label",
                "--label-threshold",
                "a=0.1",
                "--label-threshold",
                "a=0.2",
            ],
            "--label-threshold: two thresholds for 'a' (0.1 and 0.2); give one",
        ),
        # The whole message: "--threshold" alone is also in bench's "--threshold applies to --multi-label decisions".
        (
            [
                "bench",
                "-m",
                MINILM,
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--threshold",
                "nan",
                "--out",
                str(tmp_path / "b.json"),
            ],
            "--threshold must be a finite number, got nan",
        ),
        ([*train, "--backbone-lr", "-1e-5"], "--backbone-lr must be > 0"),
        ([*train, "--head-lr", "0"], "--head-lr must be > 0"),
        ([*train, "--batch-size", "0"], "--batch-size must be >= 1"),
        ([*train, "--batch-size", "-4"], "--batch-size must be >= 1"),
        ([*train, "--max-length", "-1"], "--max-length must be >= 1"),
        ([*train, "--epochs", "nan"], "--epochs must be a finite number"),
        ([*train, "--device", "gpu0"], "--device must be"),
        (
            [*train, "--variant", "binry"],
            "--variant must be one of triplet, binary, got 'binry' (did you mean 'binary'?)",
        ),
        (["unseen", "-m", MINILM, *data, "--train-data", str(btzsc_dir), "--alpha", "-5"], "--alpha must be >= 0"),
        (["calibrate", "-m", MINILM, *data, "--method", "bogus"], "--method must be one of temperature, platt"),
        (
            ["calibrate", "-m", MINILM, *data, "--max-samples", "2"],
            "--max-samples must be >= 3",
        ),  # 2 to fit on, 1 to test on
        # Seeds: numpy's generators refuse a negative one, and transformers' set_seed one past 32 bits (tracebacks).
        *[
            (args, "--seed must be >= 0 and <= 4294967295, got -1")
            for args in [
                [
                    "bench",
                    "-m",
                    MINILM,
                    "--data",
                    str(btzsc_dir),
                    "--tasks",
                    "financialphrasebank",
                    "--out",
                    str(tmp_path / "b.json"),
                    "--seed",
                    "-1",
                ],
                [
                    "sweep",
                    "--models",
                    MINILM,
                    "--data",
                    str(btzsc_dir),
                    "--tasks",
                    "financialphrasebank",
                    "--out",
                    str(tmp_path),
                    "--seed",
                    "-1",
                ],
                ["calibrate", "-m", MINILM, *data, "--seed", "-1"],
                ["template-robustness", "-m", MINILM, *data, "--seed", "-1"],
                ["unseen", "-m", MINILM, *data, "--train-data", str(btzsc_dir), "--seed", "-1"],
                ["nli-probe", "-m", MINILM, "--data", str(tmp_path), "--seed", "-1"],
                ["report", str(tmp_path / "r.json"), "--out", str(tmp_path / "report"), "--seed", "-1"],
                [*train, "--seed", "-1"],
            ]
        ],
        ([*train, "--seed", str(2**70)], f"--seed must be >= 0 and <= 4294967295, got {2**70}"),
        # --task takes one dataset: a family is named as one, never "unknown task 'sentiment' (did you mean 'sentiment'?)".
        *[
            (
                [command, "-m", MINILM, "--data", str(btzsc_dir), "--task", "sentiment", *extra],
                "--task takes one dataset; 'sentiment' is a family (its datasets: amazonpolarity, imdb,",
            )
            for command, extra in [
                ("calibrate", []),
                ("template-robustness", []),
                ("unseen", ["--train-data", str(btzsc_dir)]),
            ]
        ],
        (
            ["calibrate", "-m", MINILM, "--data", str(btzsc_dir), "--task", "bankin77"],
            "unknown dataset 'bankin77' (did you mean 'banking77'?): --task takes one of",
        ),
        (
            ["demo", "--data", str(btzsc_dir), "--max-samples", "0", "--out", str(tmp_path / "b.json")],
            "--max-samples must be >= 1",
        ),
        (
            ["demo", "--data", str(btzsc_dir), "--max-samples", "-5", "--out", str(tmp_path / "b.json")],
            "--max-samples must be >= 1",
        ),
        (["classify", str(texts), "-l", "a,b", "--batch-size", "0"], "--batch-size must be >= 1"),
        (
            ["classify", str(texts), "-l", "a,b", "--chunk-size", str(2**70)],  # islice's ValueError traceback
            f"--chunk-size must be >= 1 and <= {sys.maxsize}, got {2**70}",
        ),
        (["classify", str(texts), "-l", "a,b", "--max-length", "-1"], "--max-length must be >= 1"),
        (["classify", str(texts), "-l", "a,b", "--device", "bogus"], "--device must be"),
        # Flags that would do nothing are said, not ignored.
        (
            ["classify", str(texts), "-l", "a,b", "--actors", "3"],
            "--actors applies to --engine ray; this run uses --engine local",
        ),
        (
            ["classify", str(texts), "-l", "a,b", "--address", "auto", "--gpus-per-actor", "1"],
            "--address, --gpus-per-actor apply to --engine ray",
        ),
        (
            [
                "bench",
                "-m",
                MINILM,
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--threshold",
                "0.3",
                "--out",
                str(tmp_path / "b.json"),
            ],
            "--threshold applies to --multi-label classification: give --multi-label",
        ),
        (
            [
                "bench",
                "-m",
                MINILM,
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--fresh",
                "--overwrite",
                "never",
                "--out",
                str(tmp_path / "b.json"),
            ],
            "--fresh (the same as --overwrite always) contradicts --overwrite never",
        ),
        # An empty --tasks is an error, not "every dataset at full size" (a folder without datasets: that error, quickly).
        *[
            (
                [
                    "bench",
                    "-m",
                    MINILM,
                    "--data",
                    str(no_datasets),
                    "--tasks",
                    empty,
                    "--out",
                    str(tmp_path / "b.json"),
                ],
                f"--tasks {empty!r} names no dataset",
            )
            for empty in ("", " ", ",")
        ],
        (
            ["sweep", "--models", MINILM, "--data", str(no_datasets), "--tasks", "", "--out", str(tmp_path / "sweep")],
            "--tasks '' names no dataset",
        ),
        # Choices checked below the CLI name its flags too.
        (
            ["classify", str(texts), "-l", "a,b", "--precision", "bogus"],
            "--precision must be one of fp32, bf16, auto, got 'bogus'",
        ),
        (
            ["classify", str(texts), "-l", "a,b", "--scores", "bogus"],
            "unknown score kind 'bogus': --scores must be one of probs, raw",
        ),
        (["classify", str(texts), "-l", "a,b", "--scores", "prob"], "(did you mean 'probs'?)"),
        (
            ["classify", str(texts), "-l", "a,b", "--engine", "rey"],
            "--engine must be one of local, ray, got 'rey' (did you mean 'ray'?)",
        ),
        (
            ["classify", str(texts), "-l", "a,b", "--format", "jsonlines"],
            "--format must be one of jsonl, csv, parquet, got 'jsonlines'",
        ),
        (
            [
                "sweep",
                "--models",
                MINILM,
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--engine",
                "dask",
                "--out",
                str(tmp_path / "sweep"),
            ],
            "--engine must be one of local, ray, got 'dask'",
        ),
        (
            [
                "sweep",
                "--models",
                MINILM,
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--unlabelled",
                "skip",
                "--out",
                str(tmp_path / "sweep"),
            ],
            "--unlabelled must be one of",
        ),
        (
            [
                "bench",
                "-m",
                MINILM,
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--sampling",
                "bogus",
                "--out",
                str(tmp_path / "b.json"),
            ],
            "--sampling must be one of stratified, paper, harness, got 'bogus'",
        ),
        (
            [
                "bench",
                "-m",
                MINILM,
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--overwrite",
                "bogus",
                "--out",
                str(tmp_path / "b.json"),
            ],
            "--overwrite must be one of only-missing, always, never, got 'bogus'",
        ),
        # An empty model name is no name, never the registry entry without a paper name (SmolLM2).
        (["classify", str(texts), "-l", "a,b", "--model", ""], "--model is empty"),
        (["classify", str(texts), "-l", "a,b", "--model", " "], "--model is empty"),
        (
            [
                "bench",
                "-m",
                "",
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--out",
                str(tmp_path / "b.json"),
            ],
            "--model is empty",
        ),
        (["train-nli", "--backbone", "", "--data", str(pairs), "--out", str(tmp_path / "m")], "--backbone is empty"),
        (["template-robustness", "-m", MINILM, *data, "--batch-size", "-2"], "--batch-size must be >= 1"),
        (["serve", "--port", "-1"], "--port must be between 0 and 65535"),
        (["serve", "--port", "70000"], "--port must be between 0 and 65535"),
        # The commands that take the scorer options as one bundle check them as every command does.
        (["serve", "--drain-timeout", "-1"], "--drain-timeout must be >= 0"),
        (
            [
                "nli-probe",
                "-m",
                MINILM,
                "--data",
                str(btzsc_dir.parent / "nli"),
                "--family",
                "nli",
                "--batch-size",
                "0",
            ],
            "--batch-size must be >= 1",
        ),
        (
            [
                "sweep",
                "--models",
                MINILM,
                "--data",
                str(btzsc_dir),
                "--tasks",
                "financialphrasebank",
                "--batch-size",
                "0",
                "--out",
                str(tmp_path / "sweep"),
            ],
            "--batch-size must be >= 1",
        ),
        (
            ["unseen", "-m", MINILM, *data, "--train-data", str(btzsc_dir), "--no-finetune", "--max-length", "0"],
            "--max-length must be >= 1",
        ),
    ]
    for args, message in cases:
        assert_user_error(zstc_cli(*args), message)
    assert not (tmp_path / "m").exists() and not (tmp_path / "b.json").exists() and not (tmp_path / "sweep").exists()


@pytest.mark.parametrize("sampling", ["paper", "harness"])
@pytest.mark.parametrize("command", ["bench", "sweep", "dataset-similarity"])
def test_a_draw_too_small_for_the_papers_fixed_texts_is_refused_before_any_work(
    zstc_cli, tmp_path: Path, btzsc_dir: Path, command: str, sampling: str
) -> None:
    """--sampling paper|harness --max-samples 1 ended in a 40-line ValueError traceback ("the paper's draw keeps 2 fixed
    texts") once the first dataset was drawn (after the model had loaded, in bench). Every command with --sampling
    now refuses it first, naming both options, and writes nothing."""
    args = {
        "bench": ["-m", MINILM, "--tasks", "emotiondair", "--out", str(tmp_path / "b.json")],
        "sweep": ["--models", MINILM, "--tasks", "emotiondair", "--out", str(tmp_path / "sweep")],
        "dataset-similarity": ["--tasks", "emotiondair,financialphrasebank", "--out", str(tmp_path / "s.csv")],
    }[command]
    result = zstc_cli(command, *args, "--data", str(btzsc_dir), "--sampling", sampling, "--max-samples", "1")
    assert_user_error(
        result,
        f"error: --max-samples must be >= 2 with --sampling {sampling}, got 1: the {sampling}'s draw keeps texts 0 and 1",
    )
    assert list(tmp_path.iterdir()) == []


def test_train_nli_shows_its_progress_bar_only_on_a_terminal(
    zstc_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like every zstc bar: by default only when stderr is a terminal (here it is captured, so not); --progress and
    --no-progress say so explicitly."""
    import zstc.cli.verbosity
    import zstc.training

    asked: list[bool] = []
    monkeypatch.setattr(zstc.training, "train_nli", lambda config, *, progress, **logs: asked.append(progress))
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"premise": "a", "hypothesis": "b", "label": "entailment"}\n')
    train = ["train-nli", "--backbone", "no/such-backbone", "--data", str(pairs), "--out", str(tmp_path / "m")]
    for extra in ([], ["--progress"], ["--no-progress"]):
        status, _, err = zstc_cli(*train, *extra)
        assert status == 0, err
    assert asked == [False, True, False]
    monkeypatch.setattr(zstc.cli.verbosity, "show_progress", lambda: True)  # a terminal
    assert zstc_cli(*train)[0] == 0 and asked[-1] is True


def test_usage_errors_are_one_line_too(zstc_cli, texts: Path, tmp_path: Path, result_file: Path) -> None:
    """Values out of an option's range (refused by the option's record as the flag is read, in the library's words),
    unknown options and missing arguments (click's, naming the command's --help)."""
    cases = [
        (["classify", str(texts), "-l", "a,b", "--chunk-size", "0"], "--chunk-size must be >= 1"),
        (["bench", "-m", MINILM, "--data", str(tmp_path), "--max-samples", "0"], "--max-samples must be >= 1"),
        (
            ["report", str(result_file), "--out", str(tmp_path / "rep"), "--bootstrap", "5"],
            "--bootstrap must be >= 100",
        ),
        (["classify", str(texts), "-l", "a,b", "--bogus"], "No such option: --bogus", "zstc classify --help"),
        (["classify"], "Missing argument 'INPUT'", "zstc classify --help"),
        # A missing option value fails in click's parser, which gave no context: these said "(see zstc --help)".
        (["classify", str(texts), "--labels"], "Option '--labels' requires an argument", "zstc classify --help"),
        (["--quiet", "bench", "--model"], "Option '--model' requires an argument", "zstc bench --help"),
        (["cache", "clear", "--model"], "Option '--model' requires an argument", "zstc cache clear --help"),
    ]
    for args, *fragments in cases:
        assert_user_error(zstc_cli(*args), *fragments)
    assert not (tmp_path / "rep").exists()
    # Under `python -m zstc` the line names the command as the user ran it, like every other usage error.
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "zstc", "classify", str(texts), "--labels"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "error: Option '--labels' requires an argument. (see python -m zstc classify --help)\n",
    )


def test_rules_are_data() -> None:
    from zstc.errors import OptionError
    from zstc.validation import OPTIONS, Interval, check_options

    check_options({"alpha": 0.05, "batch_size": 8, "threshold": None})
    with pytest.raises(OptionError, match="eval_fraction must be > 0 and <= 1, got 1.5"):
        check_options({"eval_fraction": 1.5})
    with pytest.raises(OptionError, match="max_samples must be >= 2"):
        narrower = OPTIONS["max_samples"].but(constraint=Interval(2))
        check_options({"max_samples": 1}, {**OPTIONS, "max_samples": narrower})


def test_calibrate_help_states_the_sample_floor_it_enforces() -> None:
    """`calibrate --help` showed `--max-samples [x>=1]` while the command refuses 1 (it needs a text to fit on and
    one to test on): the help states the floor the command checks."""
    from typer.main import get_command

    from zstc.cli import app

    command = get_command(app).commands["calibrate"]  # type: ignore[attr-defined]
    option = next(param for param in command.params if param.name == "max_samples")
    assert option.min in (None, 3) and "N >= 3" in (option.help or "")


def test_no_model_lookup_matches_an_empty_name() -> None:
    from zstc.errors import OptionError
    from zstc.models.registry import _REGISTRY, _lookup, get_model_spec

    assert any(spec.paper_name is None for spec in _REGISTRY.values())  # what an empty name used to match
    for name in ("", " "):
        assert _lookup(name) is None
        for family in (None, "nli"):
            with pytest.raises(OptionError, match="model is empty"):
                get_model_spec(name, family)


def test_bench_with_a_later_dataset_missing_fails_before_scoring(zstc_cli, tmp_path: Path, btzsc_dir: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(btzsc_dir / "financialphrasebank.jsonl", data)
    out = tmp_path / "r.json"
    assert_user_error(
        zstc_cli(
            "bench",
            "-m",
            MINILM,
            "--data",
            str(data),
            "--tasks",
            "financialphrasebank,banking77",
            "--max-samples",
            "5",
            "--out",
            str(out),
        ),
        "no file for task 'banking77'",
    )
    assert not out.with_name("r.details").exists()  # financialphrasebank was not computed first


# -- 5. corrupt results: named, never half-used; bench recomputes them ---------------------------------


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(np.random.default_rng(0).bytes(len(data)))
    elif how == "crc":  # one flipped byte in the middle of the compressed scores: the zip's CRC-32 catches it
        with zipfile.ZipFile(path) as archive:
            info = archive.getinfo("scores.npy")
        # the member's data starts after its local header, whose extra field differs from the central directory's
        name_length, extra_length = (
            int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little"),
            int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little"),
        )
        start = info.header_offset + 30 + name_length + extra_length
        flipped = bytearray(data)
        flipped[start + info.compress_size // 2] ^= 0xFF
        path.write_bytes(bytes(flipped))


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage", "crc"])
def test_damaged_details_are_named_by_report(zstc_cli, result_file: Path, tmp_path: Path, how: str) -> None:
    result = copy_result(result_file, tmp_path)
    npz = tmp_path / "r.details" / "financialphrasebank.npz"
    damage(npz, how)
    assert_user_error(
        zstc_cli("report", str(result), "--out", str(tmp_path / "rep"), "--no-paper"), str(npz), "damaged result file"
    )
    assert not (tmp_path / "rep" / "index.html").exists()


def test_damaged_details_are_recomputed_by_bench_and_orphans_removed(
    result_file: Path, tmp_path: Path, btzsc_dir: Path
) -> None:
    from zstc.benchmark.runner import Bench, BenchConfig
    from zstc.benchmark.store import ResultStore

    result = copy_result(result_file, tmp_path)
    details = tmp_path / "r.details"
    damage(details / "financialphrasebank.npz", "truncated")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphans = [details / f".financialphrasebank.npz.abc.{dead.pid}.tmp", tmp_path / f".r.json.xyz.{dead.pid}.tmp"]
    for orphan in orphans:
        orphan.write_bytes(b"half")
    events = []
    Bench(
        BenchConfig(model=MINILM, tasks=["financialphrasebank"], data=str(btzsc_dir), max_samples=12, out=result),
        show_progress=False,
        on_event=lambda kind, payload: events.append(kind),
    ).run()
    assert events[:2] == ["orphan", "orphan"] and "damaged" in events and "done" in events
    assert not any(orphan.exists() for orphan in orphans)
    assert ResultStore(result).load("financialphrasebank").scores.shape == (12, 3)


def test_non_numeric_metric_and_deep_json(zstc_cli, result_file: Path, tmp_path: Path) -> None:
    summary = json.loads(result_file.read_text())
    summary["results"]["by_dataset"]["financialphrasebank"]["macro_f1"] = "0.5x"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(summary))
    message = "results.by_dataset.financialphrasebank.macro_f1 is '0.5x', expected a number"
    assert_user_error(zstc_cli("report", str(bad), "--out", str(tmp_path / "rep")), message)
    assert_user_error(zstc_cli("export", "--leaderboard", str(bad), "--out", str(tmp_path / "x.json")), message)
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' * 100000 + "1" + "}" * 100000)
    assert_user_error(zstc_cli("report", str(deep), "--out", str(tmp_path / "rep")), "nested too deeply")
    assert_user_error(zstc_cli("validate", str(deep)), "nested too deeply")


# -- 6. writes are atomic ------------------------------------------------------------------------------


def test_atomic_write_keeps_the_old_file_until_complete(tmp_path: Path) -> None:
    from zstc.io import atomic_write

    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(target) as handle:
            handle.write("half")
            raise KeyboardInterrupt
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.json"]
    fresh = tmp_path / "new.json"
    with atomic_write(fresh) as handle:
        handle.write("done")
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.read_text() == "done" and fresh.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_folder_written_all_at_once_gets_the_usual_permissions(tmp_path: Path) -> None:
    """``train-nli`` wrote its safetensors 0600 under umask 022 (safetensors' own mode): a folder filled by
    :func:`atomic_directory` gets what :func:`atomic_write` gives a file, the replaced file's mode or the umask's."""
    import stat

    import torch
    from safetensors.torch import save_file

    from zstc.io import atomic_directory

    kept = tmp_path / "model" / "kept.json"
    kept.parent.mkdir()
    kept.write_text("{}")
    kept.chmod(0o640)
    old = os.umask(0o022)
    try:
        with atomic_directory(tmp_path / "model") as staging:
            save_file({"w": torch.zeros(2)}, staging / "model.safetensors")
            (staging / "tokenizer").mkdir()
            save_file({"w": torch.zeros(2)}, staging / "tokenizer" / "head.safetensors")
            (staging / "kept.json").write_text("{}")
    finally:
        os.umask(old)
    modes = {str(path.relative_to(tmp_path)): stat.S_IMODE(path.stat().st_mode) for path in sorted(tmp_path.rglob("*"))}
    assert modes == {
        "model": 0o755,
        "model/kept.json": 0o640,
        "model/model.safetensors": 0o644,
        "model/tokenizer": 0o755,
        "model/tokenizer/head.safetensors": 0o644,
    }


def test_atomic_write_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    from zstc.io import atomic_write

    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "real.json")
    with atomic_write(tmp_path / "link.json") as handle:
        handle.write("new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"


def test_atomic_write_to_a_device_writes_directly(tmp_path: Path) -> None:
    """A target that is not a regular file is opened and written, never replaced by a temporary renamed over it.
    A FIFO first, in a folder of the test's own: a temporary would be left beside it or would replace it (and a
    broken rule is caught there, before the write to /dev/null, which as root it would replace with a file)."""
    import stat

    from zstc.io import atomic_write

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # open first, so that the writer's open does not block
    try:
        with atomic_write(fifo) as handle:
            handle.write("through the pipe")
        assert os.listdir(tmp_path) == ["pipe"] and stat.S_ISFIFO(fifo.lstat().st_mode)
        assert os.read(reader, 100) == b"through the pipe"
    finally:
        os.close(reader)
    with atomic_write(Path(os.devnull)) as handle:
        handle.write("discarded")
    assert Path(os.devnull).is_char_device()


def test_out_dev_stdout_is_written_as_a_pipe_and_as_a_shells_file(result_file: Path, tmp_path: Path) -> None:
    """``--out /dev/stdout`` names this process's stdout: a pipe (``| cat``), whose /proc target
    (``pipe:[N]``) cannot be opened by name (it failed after all the work, ``cannot write /proc/PID/fd/pipe:[N]``),
    or a shell's ``> file``, which is written through the descriptor, never replaced by a file renamed over it."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    # export writes the sampled, partial run as asked and exits 1, as what it wrote is not a complete leaderboard entry.
    for args, status in ((["schema", "result"], 0), (["export", "--leaderboard", str(result_file)], 1)):
        command = [sys.executable, "-m", "zstc", *args, "--out", "/dev/stdout"]
        piped = subprocess.run(command, capture_output=True, env=env, timeout=300)
        assert piped.returncode == status, piped.stderr.decode()
        expected = json.loads(piped.stdout)
        redirected = tmp_path / f"{args[0]}.json"
        with redirected.open("wb") as shell_file:
            ran = subprocess.run(command, stdout=shell_file, stderr=subprocess.PIPE, env=env, timeout=300)
            assert ran.returncode == status, ran.stderr.decode()
            assert os.fstat(shell_file.fileno()).st_ino == redirected.stat().st_ino  # the shell's file, not a new one
        assert json.loads(redirected.read_text()) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.json", "schema.json"]  # no temporary left
    # bench keeps its details beside --out: /dev/stdout is refused before any work, not read as an old summary.
    with (tmp_path / "bench.txt").open("wb") as shell_file:
        ran = subprocess.run(
            [
                sys.executable,
                "-m",
                "zstc",
                "bench",
                "-m",
                MINILM,
                "--data",
                str(result_file.parent),
                "--tasks",
                "financialphrasebank",
                "--out",
                "/dev/stdout",
            ],
            stdout=shell_file,
            stderr=subprocess.PIPE,
            env=env,
            timeout=300,
        )
    assert ran.returncode == 2 and ran.stderr.decode().startswith("error: --out /dev/stdout: not a regular file"), (
        ran.stderr.decode()
    )


def test_bench_refuses_an_out_that_is_not_a_regular_file(zstc_cli, tmp_path: Path, btzsc_dir: Path) -> None:
    """bench's details folder (its resume state) goes beside --out: a device or a FIFO there is refused before any
    work (the folder was created and filled, then the summary failed to write or went to the FIFO's reader)."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that a bench that opens it does not block
    targets = [fifo]
    if Path("/dev/full").exists():
        (tmp_path / "full.json").symlink_to("/dev/full")
        targets.append(tmp_path / "full.json")
    try:
        for out in targets:
            assert_user_error(
                zstc_cli(
                    "bench",
                    "-m",
                    MINILM,
                    "--data",
                    str(btzsc_dir),
                    "--tasks",
                    "financialphrasebank",
                    "--max-samples",
                    "6",
                    "--no-cache",
                    "--out",
                    str(out),
                ),
                f"--out {out}: not a regular file",
                f"{out.stem}.details/ beside --out: give a file path",
            )
    finally:
        os.close(reader)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in targets)  # no details folder


# -- 7. interruption -----------------------------------------------------------------------------------


def wait_for_handlers(process: subprocess.Popen, timeout: float = 120) -> None:
    """Until the process runs its own program (not the copy of pytest before exec, which has pytest's handlers:
    in-process CLI tests leave zstc's there) and catches SIGTERM (zstc has started): /proc says both."""
    status, cmdline = Path(f"/proc/{process.pid}/status"), Path(f"/proc/{process.pid}/cmdline")
    if not status.exists():
        time.sleep(15)
        return
    program = b"\0".join(os.fsencode(str(arg)) for arg in process.args) + b"\0"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        caught = next((line.split()[1] for line in status.read_text().splitlines() if line.startswith("SigCgt:")), "0")
        if cmdline.read_bytes() == program and int(caught, 16) & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.05)
    raise AssertionError("zstc never installed its signal handlers")


@pytest.mark.parametrize(
    "signum, status, message",
    [(signal.SIGINT, 130, "interrupted (SIGINT)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
)
def test_signals_exit_with_a_message(tmp_path: Path, signum: int, status: int, message: str) -> None:
    # classify reading stdin that never ends: the command is busy (as if scoring) when the signal comes.
    # zstc.cli's own main, not the console entry point: its handlers are installed once the command line has
    # been imported, so the signal is sure to reach a running command.
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from zstc.cli import main; main()",
            "classify",
            "-",
            "-l",
            "a,b",
            "-o",
            str(tmp_path / "o.jsonl"),
        ],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    process.stdin.write(b"one text\n")
    process.stdin.flush()
    wait_for_handlers(process)
    time.sleep(1)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == status
    assert err.decode().strip().splitlines()[-1] == message and b"Traceback" not in err
    assert not (tmp_path / "o.jsonl").exists()


INTERRUPTED_IN_AN_IMPORT = """
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from zstc.cli import _install_signal_handlers

_install_signal_handlers()
try:
    try:
        import sets_a_name  # the signal arrives while the import runs
    except Exception as error:  # a library probing for an optional dependency
        print(f"swallowed {type(error).__name__}")
    time.sleep(5)  # after the import: the interrupt belongs here
    print("never interrupted")
except KeyboardInterrupt:
    print("interrupted after the import")
"""

SETS_A_NAME = """
import os, signal, time

class Field:
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)


class Holder:
    value = Field()
"""


def test_a_signal_during_an_import_interrupts_after_it(tmp_path: Path) -> None:
    """Commands import their libraries lazily, so an early Ctrl-C often lands inside an import. There the interrupt
    turned into the import's own error (scipy.stats: "RuntimeError: Error calling __set_name__", a traceback and
    exit 1), or, caught by a library's try/except around an optional import, vanished: the command went on.
    Seen in the full suite, where the signal test's interrupt hit sklearn's import of scipy. The interrupt is now
    delivered once the import is done."""
    (tmp_path / "sets_a_name.py").write_text(SETS_A_NAME)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_IN_AN_IMPORT, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.stdout.splitlines() == ["interrupted after the import"], (done.stdout, done.stderr[-2000:])


BENCH_BUSY_ON_BANKING77 = """
import pathlib, sys, time
import zstc.benchmark.runner as runner

scored, busy = runner.evaluate_task, pathlib.Path(sys.argv.pop(1))

def busy_on_banking77(scorer, task, *args, **kwargs):  # the second dataset: as if scoring for minutes
    if task.name == "banking77":
        busy.write_text("busy")
        time.sleep(600)
    return scored(scorer, task, *args, **kwargs)

runner.evaluate_task = busy_on_banking77
from zstc.entry import main
main()
"""


def test_sigterm_stops_bench_with_a_message_keeping_finished_datasets(tmp_path: Path, btzsc_dir: Path) -> None:
    busy, out = tmp_path / "busy", tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            BENCH_BUSY_ON_BANKING77,
            str(busy),
            "bench",
            "-m",
            MINILM,
            "--data",
            str(btzsc_dir),
            "--tasks",
            "financialphrasebank,banking77",
            "--max-samples",
            "6",
            "--no-cache",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    deadline = time.monotonic() + 600
    while not busy.exists():
        assert process.poll() is None and time.monotonic() < deadline, (
            process.stderr.read().decode() if process.poll() is not None else "slow"
        )
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    text = err.decode()
    assert process.returncode == 143 and "Traceback" not in text, text
    assert text.strip().splitlines()[-1] == "terminated (SIGTERM)"
    assert "terminated: finished datasets are saved in" in " ".join(text.split())
    details = tmp_path / "r.details"
    assert sorted(p.name for p in details.iterdir()) == ["financialphrasebank.json", "financialphrasebank.npz"]
    assert not out.exists() and not list(tmp_path.glob(".*.tmp"))


SIGNAL_DURING_IMPORT = """
import os, signal, sys
from zstc.entry import main

class SignalOnImport:  # delivers the signal while zstc.cli is importing typer: as early as a user can press Ctrl-C
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            os.kill(os.getpid(), int(sys.argv.pop(1)))
        return None

sys.meta_path.insert(0, SignalOnImport())
main()
"""


@pytest.mark.parametrize(
    "signum, status, message",
    [(signal.SIGINT, 130, "interrupted (SIGINT)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
)
def test_a_signal_while_the_command_line_imports_exits_with_one_line(
    tmp_path: Path, signum: int, status: int, message: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            SIGNAL_DURING_IMPORT,
            str(int(signum)),
            "classify",
            "-",
            "-l",
            "a,b",
            "-o",
            str(tmp_path / "o.jsonl"),
        ],
        input=b"a text\n",
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == status, result.stderr
    assert result.stderr.decode() == message + "\n" and result.stdout == b""
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize(
    "signum, status, message",
    [(signal.SIGINT, 130, "interrupted (SIGINT)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
)
def test_the_console_command_answers_signals_from_its_first_moments(
    tmp_path: Path, signum: int, status: int, message: str
) -> None:
    """The real entry point (``python -m zstc`` runs what the ``zstc`` script runs), signalled as soon as it
    catches signals: still importing or already waiting for its input, a one-line message and the signal's
    status, no traceback (classify reads a stdin that stays open, so it cannot finish first)."""
    entry = (REPO / "pyproject.toml").read_text()
    assert 'zstc = "zstc.entry:main"' in entry
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    process = subprocess.Popen(
        [sys.executable, "-m", "zstc", "classify", "-", "-l", "a,b", "-o", str(tmp_path / "o.jsonl")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    wait_for_handlers(process)
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == status and b"Traceback" not in err, err
    assert err.decode() == message + "\n" and out == b""
    assert not (tmp_path / "o.jsonl").exists()


def test_max_length_beyond_the_models_positions_is_a_user_error(zstc_cli, tmp_path: Path) -> None:
    """A --max-length the model has no position embeddings for fails when the model loads, before any text is
    scored: not a tensor-size RuntimeError from inside the model at the first long text."""
    long_text = tmp_path / "long.txt"
    long_text.write_text(" ".join(["word"] * 900) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert_user_error(
        zstc_cli("classify", str(long_text), "-l", "a,b", "--max-length", "100000", "--out", str(out)),
        "--max-length 100000 is more than",
        "(512)",
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "value, shown", [(7.5, "less than or equal to 1"), ("NaN", "finite number"), (True, "is True, expected a number")]
)
def test_a_hand_edited_impossible_metric_is_refused_not_reported(
    zstc_cli, result_file: Path, tmp_path: Path, value: object, shown: str
) -> None:
    """A macro-F1 of 7.5 or NaN in a result file was shown, averaged into the mean and exported (NaN: not JSON)."""
    result = copy_result(result_file, tmp_path)
    text = result.read_text()
    content = json.loads(text)
    content["results"]["by_dataset"]["financialphrasebank"]["macro_f1"] = "__value__"
    result.write_text(json.dumps(content).replace('"__value__"', json.dumps(value) if value != "NaN" else "NaN"))
    assert_user_error(zstc_cli("report", str(result), "--out", str(tmp_path / "rep"), "--no-paper"), "macro_f1", shown)
    assert_user_error(
        zstc_cli("export", "--leaderboard", str(result), "--out", str(tmp_path / "lb.json")), "macro_f1", shown
    )
    assert not (tmp_path / "rep").exists() and not (tmp_path / "lb.json").exists()


def test_bench_refuses_a_multi_label_threshold_outside_the_scores_range(
    zstc_cli, btzsc_dir, tmp_path, monkeypatch
) -> None:
    """classify refused a cosine cut of 5 (every text "none") or a p_yes cut of 2; bench --multi-label took them and
    printed a table of zeros after scoring every dataset. Now refused before any model loads, naming --threshold;
    log-odds cuts stay unbounded."""
    import zstc.scorers.embedding

    def not_now(self):
        raise AssertionError("the model loaded before --threshold was checked")

    monkeypatch.setattr(zstc.scorers.embedding.EmbeddingScorer, "_load_model", not_now)
    for threshold in ("5", "-1.5"):
        code, out, err = zstc_cli(
            "bench",
            "-m",
            "all-MiniLM-L6-v2",
            "--data",
            str(btzsc_dir),
            "--tasks",
            "banking77",
            "--multi-label",
            "--threshold",
            threshold,
            "--out",
            str(tmp_path / "r.json"),
        )
        assert (
            code == 2
            and err.startswith("error: --threshold must be >= -1 and <= 1, got ")
            and "cosine similarities" in err
        ), err
    assert not (tmp_path / "r.json").exists()


# -- issue 43: runs that share an output coordinate ---------------------------------------------------------------


def _wait_until(condition, timeout: float = 180, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _marker_rows(marker: Path) -> int:
    try:
        return int(json.loads(marker.read_text())["rows"])
    except (OSError, ValueError, KeyError):
        return 0


def test_two_runs_on_one_output_never_write_into_each_other(tmp_path: Path) -> None:
    """Two real classify processes on one --out: the second is refused at once, naming the live run's PID (it took
    the first's live partial output for an interrupted run's, and both wrote into it); with --wait it waits, and a
    SIGKILL of the run it waits for frees the output (the kernel releases the lock) for it to start over."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    out = tmp_path / "o.jsonl"
    marker = out.with_name("o.jsonl.partial.json")
    texts = tmp_path / "in.txt"
    texts.write_text("The match ended 2-1.\nRates were raised.\n", encoding="utf-8")
    command = [sys.executable, "-m", "zstc", "classify", "-l", "sports,economy", "-o", str(out), "--chunk-size", "1"]
    first = subprocess.Popen([*command, "-"], stdin=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    try:
        first.stdin.write(b"one text\n")
        first.stdin.flush()
        _wait_until(lambda: _marker_rows(marker) >= 1 or first.poll() is not None, what="the first run's first chunk")
        assert first.poll() is None
        started = time.monotonic()
        second = subprocess.run([*command, str(texts)], capture_output=True, env=env, timeout=120, check=False)
        err = second.stderr.decode()
        assert second.returncode == 2 and err.count("\n") == 1 and err.startswith("error: "), err
        assert f"{out}: another zstc run (PID {first.pid}) is writing it now" in err and "--wait" in err, err
        assert time.monotonic() - started < 60  # refused before any model loads
        assert _marker_rows(marker) == 1 and not out.exists()  # the live run's state untouched

        log = tmp_path / "waiting.log"
        with log.open("wb") as handle:
            waiting = subprocess.Popen([*command, str(texts), "--wait"], stderr=handle, env=env)
        _wait_until(
            lambda: "waiting for" in log.read_text(errors="replace") or waiting.poll() is not None,
            what="the --wait run to wait",
        )
        assert f"waiting for the zstc run (PID {first.pid}) that is writing {out}" in log.read_text(), log.read_text()
        first.kill()  # SIGKILL: the lock goes with the process
        first.wait(60)
        assert waiting.wait(180) == 0, log.read_text()
    finally:
        first.kill()
        first.wait(60)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["text"] for row in rows] == ["The match ended 2-1.", "Rates were raised."]
    assert "starting" in log.read_text() and f"{out}" in log.read_text()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt", "o.jsonl", "waiting.log"]


def test_a_sweep_or_ray_classify_folder_is_written_by_one_run_at_a_time(
    zstc_cli, texts: Path, tmp_path: Path, btzsc_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sweeps (or Ray classify runs) on one --out computed everything twice, each summary over the other's. A
    sweep holds its folder's lock while it computes (a folder it creates, from when it exists); a second run is
    refused at once, before any work, naming the live run's PID; the lock file goes with the run."""
    from zstc.benchmark.runner import Bench
    from zstc.errors import OutputError
    from zstc.output import FOLDER_LOCK, OutputLock

    out = tmp_path / "sweep"
    live = f"{out}: another zstc run (PID {os.getpid()}) is writing it now; let it finish, or choose another --out"
    args = ["sweep", "--models", MINILM, "--data", str(btzsc_dir), "--tasks", "financialphrasebank"]
    args += ["--max-samples", "4", "--out", str(out)]
    computed, compute = [], Bench.compute

    def locked_while_computing(bench: Bench, prepared):
        with pytest.raises(OutputError, match=re.escape(live)):
            OutputLock(out, folder=True)
        computed.append(prepared)
        return compute(bench, prepared)

    with monkeypatch.context() as patched:
        patched.setattr(Bench, "compute", locked_while_computing)
        status, _, err = zstc_cli(*args)
    assert status == 0 and len(computed) == 1, err
    assert not (out / FOLDER_LOCK).exists()
    held = OutputLock(out, folder=True)  # a live run's
    try:
        assert_user_error(zstc_cli(*args, "--fresh"), live)
        assert_user_error(zstc_cli("classify", str(texts), "-l", "a,b", "--engine", "ray", "--out", str(out)), live)
    finally:
        held.release()
    stem = MINILM.replace("/", "__")
    assert sorted(path.name for path in out.iterdir()) == [f"{stem}.details", f"{stem}.json"]


def test_a_sweep_stopped_before_any_unit_leaves_no_folder_and_a_missing_nli_folder_is_missing(
    zstc_cli, tmp_path: Path, btzsc_dir: Path
) -> None:
    """``sweep --engine ray`` with no cluster at --address left the empty --out folder it had made; ``nli-probe
    --data`` naming nothing said "not a directory"."""
    pytest.importorskip("ray")
    out = tmp_path / "sweep"
    args = ["sweep", "--models", MINILM, "--data", str(btzsc_dir), "--tasks", "financialphrasebank"]
    status, _, err = zstc_cli(*args, "--engine", "ray", "--address", "127.0.0.1:1", "--out", str(out))
    assert status == 2 and err.splitlines()[-1].startswith("error: --address 127.0.0.1:1: nothing accepts"), err
    assert not out.exists()
    assert_user_error(
        zstc_cli("nli-probe", "-m", MINILM, "--data", str(tmp_path / "nli")), f"{tmp_path / 'nli'}: no such directory"
    )


@pytest.mark.parametrize("companion", ["o.jsonl.partial", "o.jsonl.partial.json", "o.jsonl.partial.lock"])
def test_an_input_named_like_a_file_the_run_writes_is_refused(zstc_cli, tmp_path: Path, companion: str) -> None:
    """An input file named like the output's marker (``X.partial.json`` for ``--out X``) was overwritten by it."""
    source = tmp_path / companion
    source.write_text('{"text": "The match ended 2-1."}\n', encoding="utf-8")
    before = digest(source)
    out = tmp_path / "o.jsonl"
    assert_user_error(
        zstc_cli("classify", str(source), "-l", "a,b", "--out", str(out)),
        f"writes {tmp_path / companion} as it runs, which is the input {source}",
    )
    assert digest(source) == before and not out.exists()


def test_sweep_refuses_two_models_written_to_one_file(
    zstc_cli, tmp_path: Path, own_minilm: Path, btzsc_dir: Path
) -> None:
    """``mm/a b`` and ``mm/a+b`` are both ``mm__a__b.json``: "wrote 2 summaries", one over the other. Refused before
    any work, naming both; the sweep folder is not created."""
    models = tmp_path / "mm"
    models.mkdir()
    for name in ("a b", "a+b"):
        shutil.copytree(own_minilm, models / name, symlinks=True)
    out = tmp_path / "sweep"
    status, _, err = zstc_cli(
        "sweep",
        "--models",
        f"{models / 'a b'},{models / 'a+b'}",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "4",
        "--out",
        str(out),
    )
    assert status == 2 and err.count("\n") == 1, err
    assert f"--models '{models / 'a b'}' and '{models / 'a+b'}' would be written to one file name" in err, err
    assert not out.exists()


# -- issue 43: every write failure one error line, finished work kept ---------------------------------------------


def _limited(size: int):
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_write_over_the_file_size_limit_is_one_error_line_and_resumes(tmp_path: Path, fmt: str) -> None:
    """``ulimit -f``: a traceback (``OSError: File too large``, pyarrow's EFBIG) instead of the README's one line.
    Now one ``error:`` line naming the file and the cause; the complete chunks stay and the next run resumes."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    source = tmp_path / "in.jsonl"
    source.write_text(
        "".join(json.dumps({"text": f"The match ended {i}-1 after extra time. " * 10}) + "\n" for i in range(40)),
        encoding="utf-8",
    )
    out = tmp_path / f"o.{fmt}"
    command = [
        sys.executable,
        "-m",
        "zstc",
        "classify",
        str(source),
        "-l",
        "sports,economy",
        "-o",
        str(out),
        "--chunk-size",
        "10",
    ]
    limited = subprocess.run(
        command, capture_output=True, env=env, timeout=300, preexec_fn=_limited(12_000), check=False
    )
    err = limited.stderr.decode()
    assert limited.returncode == 2 and err.splitlines()[-1].startswith("error: cannot write "), err
    assert err.splitlines()[-1].endswith(": File too large") and "Traceback" not in err, err
    assert not out.exists() and out.with_name(out.name + ".partial.json").exists()
    assert not out.with_name(out.name + ".partial.lock").exists()
    again = subprocess.run(command, capture_output=True, env=env, timeout=300, check=False)
    assert again.returncode == 0, again.stderr.decode()
    if fmt == "jsonl":
        assert f"resuming {out}: " in again.stderr.decode()
        assert [json.loads(line)["text"] for line in out.read_text().splitlines()] == [
            json.loads(line)["text"] for line in source.read_text().splitlines()
        ]


@pytest.mark.parametrize("cause, fmt", [("ENOSPC", "jsonl"), ("EROFS", "parquet")])
def test_a_disk_that_fills_up_or_turns_read_only_mid_run_is_one_line_and_resumes(
    zstc_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cause: str, fmt: str
) -> None:
    """ENOSPC and EROFS as the second chunk is written (synced): one ``error:`` line naming the output and the cause,
    the first chunk kept, and the next run resumes after it to the complete output."""
    import errno

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc/self/fd")
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    failing, synced, real_fsync = getattr(errno, cause), [], os.fsync

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if ".partial" in path and ".partial.json" not in path:
            synced.append(path)
            if len(synced) > 1:
                raise OSError(failing, os.strerror(failing))
        real_fsync(fd)

    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps({"text": f"The match ended {i}-1."}) + "\n" for i in range(6)))
    out = tmp_path / f"o.{fmt}"
    args = ["classify", str(source), "-l", "sports,economy", "-o", str(out), "--chunk-size", "3"]
    with monkeypatch.context() as patched:
        patched.setattr(os, "fsync", fsync)
        status, _, err = zstc_cli(*args)
    line = err.splitlines()[-1] if err else ""
    assert status == 2 and "Traceback" not in err, err
    assert line.startswith(f"error: cannot write {out}") and line.endswith(os.strerror(failing)), err
    marker = out.with_name(out.name + ".partial.json")
    assert not out.exists() and json.loads(marker.read_text())["rows"] == 3  # the first chunk is kept
    status, _, err = zstc_cli(*args)
    assert status == 0 and "resuming" in err and not marker.exists(), err
    if fmt == "jsonl":
        rows = [json.loads(row)["text"] for row in out.read_text().splitlines()]
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(out).column("text").to_pylist()
    assert rows == [f"The match ended {i}-1." for i in range(6)]


def test_a_read_only_file_system_is_said_before_any_work(
    zstc_cli, texts: Path, tmp_path: Path, btzsc_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EROFS (a read-only mount, where the mode bits still say writable): one line naming the folder and the cause,
    before the model loads; nothing written."""
    import errno
    import tempfile

    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    out = tmp_path / "o.jsonl"
    said = f"cannot write in {tmp_path} ({os.strerror(errno.EROFS)})"
    assert_user_error(zstc_cli("classify", str(texts), "-l", "a,b", "-m", MINILM, "-o", str(out)), said)
    bench = ["bench", "-m", MINILM, "--data", str(btzsc_dir), "--tasks", "financialphrasebank"]
    assert_user_error(zstc_cli(*bench, "--out", str(tmp_path / "r.json")), said)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["texts.jsonl"]


def test_predictions_to_a_stdout_of_another_encoding_are_utf8(tmp_path: Path) -> None:
    """``PYTHONIOENCODING=ascii``: a UnicodeEncodeError traceback after the chunk was scored. JSON Lines is UTF-8
    whatever the locale: the bytes go through stdout's buffer."""
    source = tmp_path / "in.txt"
    source.write_text("Café au lait, résumé\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONIOENCODING": "ascii"}
    result = subprocess.run(
        [sys.executable, "-m", "zstc", "classify", str(source), "-l", "food,économie"],
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr.decode()
    row = json.loads(result.stdout.decode("utf-8"))
    assert row["text"] == "Café au lait, résumé" and set(row["scores"]) == {"food", "économie"}


def test_a_result_cache_that_is_no_folder_is_refused_before_scoring(
    zstc_cli, tmp_path: Path, btzsc_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ZSTC_CACHE`` naming a file: bench scored every dataset, then failed with a traceback as it cached the first.
    Now one line naming the cache and why, before any model loads; nothing written."""
    blocker = tmp_path / "cache-file"
    blocker.write_text("")
    monkeypatch.setenv("ZSTC_RESULTS_CACHE", str(blocker / "results"))
    out = tmp_path / "r.json"
    assert_user_error(
        zstc_cli(
            "bench",
            "-m",
            MINILM,
            "--data",
            str(btzsc_dir),
            "--tasks",
            "financialphrasebank",
            "--max-samples",
            "4",
            "--out",
            str(out),
        ),
        f"result cache {blocker / 'results'}: {blocker} is not a folder",
        "ZSTC_CACHE",
    )
    assert not out.exists() and not tmp_path.joinpath("r.details").exists()


# -- issue 43: CSV as users have it ---------------------------------------------------------------------------------


def test_a_csv_cell_over_128_kib_is_read_whole(tmp_path: Path) -> None:
    """A long document in one CSV cell was "malformed CSV ... an unterminated quote?" (Python's 128 KiB cell limit);
    JSON Lines with the same text worked."""
    from zstc.io import read_records, read_texts

    long_text = "word " * 60_000  # 300 KB
    for suffix, delimiter in ((".csv", ","), (".tsv", "\t")):
        path = tmp_path / f"long{suffix}"
        path.write_text(f'id{delimiter}text\n1{delimiter}"{long_text}"\n2{delimiter}short\n', encoding="utf-8")
        assert read_texts(path) == [long_text, "short"]
        assert [record["id"] for _, record in read_records(path)] == ["1", "2"]


def test_a_line_break_in_an_unquoted_label_is_said_in_the_users_words(zstc_cli) -> None:
    """Python's "do you need to open the file in universal-newline mode?" is advice about Python's open()."""
    status, _, err = zstc_cli("classify", "-", "--labels", "sports\rnews,economy")
    assert status == 2 and "a line break inside an unquoted cell" in err and "universal-newline" not in err, err


def test_classifys_own_csv_output_is_a_fit_thresholds_input(tmp_path: Path) -> None:
    """``--fit-thresholds`` refused a CSV whose label cell is a JSON list, the way classify --multi-label writes it."""
    from zstc.io import read_label_sets

    path = tmp_path / "dev.csv"
    path.write_text(
        'text,labels\n"Goal, then rain.","[""sports"", ""weather""]"\nQuiet day.,"[]"\nRates rose.,economy\n'
        "Odd one,[not json\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError, match="dev.csv:5: label '\\[not json' is not one of the labels"):
        read_label_sets(path, label_column="labels", labels=["sports", "weather", "economy"])
    path.write_text(path.read_text().rsplit("Odd one", 1)[0], encoding="utf-8")
    texts, gold = read_label_sets(path, label_column="labels", labels=["sports", "weather", "economy"])
    assert texts == ["Goal, then rain.", "Quiet day.", "Rates rose."] and gold == [
        ["sports", "weather"],
        [],
        ["economy"],
    ]


def test_fit_thresholds_refuses_none_together_with_a_label(minilm_cls) -> None:
    """A gold set holding a label and "none" was accepted (the label counted, "none" ignored)."""
    from zstc.api import Classifier
    from zstc.errors import LabelError

    with pytest.raises(LabelError, match="dev text 2 has 'none' together with 'sports'"):
        Classifier(minilm_cls).fit_thresholds(
            ["Rates rose.", "Goal!"], [["economy"], ["none", "sports"]], ["sports", "economy"]
        )


# -- issue 43: the Python API takes the types it documents ----------------------------------------------------------


def test_a_mapping_or_dataframe_is_never_read_as_its_keys(minilm_cls) -> None:
    """``predict(texts, {"sports": "About sport.", ...})`` ignored the descriptions; a dict or a DataFrame as texts
    classified its keys or column names."""
    import pandas as pd

    from zstc.api import Classifier
    from zstc.errors import DataError, LabelError

    classifier = Classifier(minilm_cls)
    with pytest.raises(
        LabelError,
        match="labels must be .*got a dict, whose iteration gives its keys alone: for a "
        "\\{label: description\\} mapping m, pass labels=list\\(m\\)",
    ):
        classifier.predict(["The match ended 2-1."], {"sports": "About sport.", "economy": "About money."})
    with pytest.raises(DataError, match="texts must be .*got a dict"):
        classifier.predict({"a": "The match ended 2-1."}, ["sports", "economy"])
    frame = pd.DataFrame({"text": ["The match ended 2-1.", "Rates rose."]})
    with pytest.raises(DataError, match="texts must be .*got a DataFrame, whose iteration gives its column names"):
        classifier.predict(frame, ["sports", "economy"])
    assert [p.label for p in classifier.predict(frame["text"], ["sports", "economy"])] == ["sports", "economy"]
    with pytest.raises(TypeError, match="notes must be a list .* got tuple"):  # it failed on extend, after the scoring
        classifier.predict(["The match ended 2-1."], ["sports", "economy"], notes=())


class _OwnScorer:
    """A user's scorer with the documented ``score(texts, labels)``, returning what it is told to."""

    family = "embedding"

    def __init__(self, result) -> None:
        self.result = result
        self.spec = None

    def score(self, texts, labels):
        return self.result(texts, labels)

    def describe(self):
        return {}


@pytest.mark.parametrize(
    "result, message",
    [
        (
            lambda texts, labels: np.ones((len(texts) - 1, len(labels))),
            r"returned a matrix of shape \(1, 2\) for 2 texts and 2 labels",
        ),
        (lambda texts, labels: [["a", "b"]] * len(texts), "returned <U1 values, expected numbers"),
        (lambda texts, labels: [[1.0], [1.0, 2.0]], "no matrix of numbers"),
        (lambda texts, labels: np.full((len(texts), len(labels)), np.nan), "non-finite scores"),
    ],
)
def test_a_custom_scorer_is_checked_and_named(result, message) -> None:
    """A custom scorer returning fewer rows than texts gave fewer predictions in silence; the documented
    ``score(texts, labels)`` signature failed with "unexpected keyword argument 'show_progress'"."""
    from zstc.api import Classifier
    from zstc.errors import ModelError

    with pytest.raises(ModelError, match=message):
        Classifier(_OwnScorer(result)).predict(["a text", "another"], ["sports", "economy"])
    good = Classifier(_OwnScorer(lambda texts, labels: np.array([[0.9, 0.1], [0.2, 0.8]])))
    assert [p.label for p in good.predict(["a text", "another"], ["sports", "economy"])] == ["sports", "economy"]


def test_numpy_numbers_are_numbers_and_bools_are_not() -> None:
    """``threshold=numpy.float32(0.3)`` failed in ``zstc.classify`` (numpy's ``!= []`` is an array, whose truth
    value numpy refuses) and a numpy temperature made a calibration that JSON could not record. A numpy scalar is a
    number wherever one is taken; a bool, Python's or numpy's, is none."""
    import zstc
    from zstc.api import Classifier
    from zstc.errors import OptionError
    from zstc.probabilities import Calibration
    from zstc.validation import Option

    scorer = _OwnScorer(lambda texts, labels: np.array([[0.6, 0.1]] * len(texts)))
    texts, labels = ["The match ended 2-1."], ["sports", "economy"]
    for number in (np.float32(0.3), np.float64(0.3), np.float16(0.3)):
        assert zstc.classify(texts, labels, model=scorer, multi_label=True, threshold=number)[0].labels == ["sports"]
        per_label = Classifier(scorer).predict_multi_label(texts, labels, per_label={"economy": number})
        assert per_label[0].labels == ["sports"]
    assert type(Option(int).check("batch_size", np.int64(4))) is int
    calibration = Calibration("temperature", {"temperature": np.float32(2.0)})
    assert json.loads(json.dumps(calibration.parameters)) == {"temperature": 2.0}
    for flag in (True, np.bool_(True)):
        with pytest.raises(OptionError, match="threshold must be a number, got"):
            zstc.classify(texts, labels, model=scorer, multi_label=True, threshold=flag)
        with pytest.raises(OptionError, match="temperature must be a finite number"):
            Calibration("temperature", {"temperature": flag})


def test_the_service_refuses_repeated_and_unknown_keys(minilm_cls) -> None:
    """Through the real app: a key given twice (any endpoint) and a key the Hugging Face shape does not know are 422s
    naming the key; the hub's own ``options`` are taken."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from zstc.api import Classifier
    from zstc.server.app import create_app

    with TestClient(create_app(Classifier(minilm_cls))) as client:
        deadline = time.monotonic() + 300
        while client.get("/health/ready").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        refused = {
            "/classify": [
                '{"texts": ["a"], "labels": ["x", "y"], "labels": ["p", "q"]}',
                '{"inputs": "a", "inputs": "b", "parameters": {"candidate_labels": ["x", "y"]}}',
            ],
            "/rerank": ['{"query": "a", "documents": ["x"], "query": "b"}'],
        }
        for path, bodies in refused.items():
            for body in bodies:
                answer = client.post(path, content=body, headers={"content-type": "application/json"})
                assert answer.status_code == 422 and "appears twice in one object" in answer.json()["error"], (
                    answer.text
                )
        for body, key in [
            ({"inputs": "a", "parameters": {"candidate_labels": ["x", "y"]}, "texts": ["b"]}, "texts"),
            (
                {"inputs": "a", "parameters": {"candidate_labels": ["x", "y"], "multilabel": True}},
                "parameters.multilabel",
            ),
        ]:
            answer = client.post("/", json=body)
            assert answer.status_code == 422 and answer.json()["error"].startswith(f"{key}: "), answer.text
        answer = client.post(
            "/",
            json={"inputs": "a", "parameters": {"candidate_labels": ["x", "y"]}, "options": {"wait_for_model": True}},
        )
        assert answer.status_code == 200 and [entry["label"] for entry in answer.json()] != [], answer.text


# -- issue 43: calibrations that would silently mislead --------------------------------------------------------------


def test_a_degenerate_or_foreign_calibration_is_refused(minilm_cls, tmp_path: Path) -> None:
    """A temperature of 1e-320 gave NaN probabilities (written into JSONL, exit 0; serve answered 500 to every
    request); files of another family, score type or format_version 99 were used without a word;
    ``Classifier(calibration={...})`` was a traceback."""
    from zstc.api import Classifier
    from zstc.errors import OptionError
    from zstc.probabilities import Calibration, load_calibration

    with pytest.raises(OptionError, match="temperature must be positive, at least 1e-06 .* got 1e-320"):
        Calibration("temperature", {"temperature": 1e-320})
    path = tmp_path / "calibration.json"
    path.write_text(
        json.dumps(
            {
                "format": "zstc-calibration",
                "format_version": 99,
                "method": "temperature",
                "parameters": {"temperature": 0.5},
            }
        )
    )
    with pytest.raises(DataError, match="format_version 99 is not one this zstc reads"):
        load_calibration(path)
    with pytest.raises(
        TypeError, match="calibration must be a file path or a zstc.probabilities.Calibration, got dict"
    ):
        Classifier(minilm_cls, calibration={"temperature": 0.5})
    with pytest.raises(OptionError, match="fitted on scores of the family 'nli', and this model's are 'embedding'"):
        Classifier(minilm_cls, calibration=Calibration("temperature", {"temperature": 0.5}, family="nli"))
    with pytest.raises(OptionError, match="fitted on scores of the score type 'prob', and this model's are 'cosine'"):
        Classifier(
            minilm_cls,
            calibration=Calibration("temperature", {"temperature": 0.5}, family="embedding", score_type="prob"),
        )
    assert (
        Classifier(
            minilm_cls,
            calibration=Calibration("temperature", {"temperature": 0.5}, family="embedding", score_type="cosine"),
        ).temperature()
        == 0.5
    )


def test_a_label_or_text_of_combining_marks_alone_is_empty(minilm_cls) -> None:
    """A label or text made only of combining marks was scored as if it were text (the service too: it shares the
    rule); a mark on a letter is part of the letter."""
    from zstc.api import Classifier
    from zstc.errors import LabelError
    from zstc.validation import is_blank

    classifier = Classifier(minilm_cls)
    with pytest.raises(LabelError, match="empty entry at position 2 \\(only combining marks, such as U\\+0301\\)"):
        classifier.predict(["The match ended 2-1."], ["sports", "\u0301\u20dd"])
    with pytest.raises(DataError, match="text 1 is empty \\(only combining marks, such as U\\+0308\\)"):
        classifier.predict(["\u0308 \u0301"], ["sports", "economy"])
    assert not is_blank("e\u0301") and not is_blank("\u0915\u093f")


def test_cache_clear_takes_a_short_name_and_needs_an_answer(
    zstc_cli, tmp_path: Path, btzsc_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``cache clear --model all-MiniLM-L6-v2`` removed 0 entries stored under the hub id; ``cache clear < /dev/null``
    said "interrupted (SIGINT)"."""
    status, _, err = zstc_cli(
        "bench",
        "-m",
        "all-MiniLM-L6-v2",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "4",
        "--out",
        str(tmp_path / "r.json"),
    )
    assert status == 0, err
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    status, _, err = zstc_cli("cache", "clear")
    assert status == 2 and err.splitlines()[-1].startswith("error: cache clear asks before it removes anything"), err
    status, _, err = zstc_cli("cache", "clear", "--model", "all-MiniLM-L6-v2", "--yes")
    assert status == 0 and "removed 1 cached results" in err, err


def test_out_edge_cases_are_said_as_what_they_are(zstc_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--out`` an existing directory said "cannot tell the output format"; ``--out - --format jsonl`` wrote a file
    named ``-``; ``--out`` through a dangling symlink created the missing folder it points into; a NaN in a kept
    column was written as ``NaN`` (invalid JSON), exit 0."""
    monkeypatch.chdir(tmp_path)
    texts = tmp_path / "in.txt"
    texts.write_text("The match ended 2-1.\n", encoding="utf-8")
    assert_user_error(
        zstc_cli("classify", str(texts), "-l", "sports,economy", "--out", str(tmp_path)),
        f"--out {tmp_path}: is a directory, expected a file",
    )
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "missing" / "o.jsonl")
    assert_user_error(
        zstc_cli("classify", str(texts), "-l", "sports,economy", "--out", str(link)),
        f"folder {tmp_path / 'missing'} does not exist",
    )
    assert not (tmp_path / "missing").exists()
    status, out, err = zstc_cli("classify", str(texts), "-l", "sports,economy", "--out", "-", "--format", "jsonl")
    assert status == 0 and json.loads(out)["text"] == "The match ended 2-1." and not (tmp_path / "-").exists(), err
    source = tmp_path / "nan.jsonl"
    source.write_text('{"text": "The match ended 2-1.", "x": NaN}\n', encoding="utf-8")
    assert_user_error(
        zstc_cli("classify", str(source), "-l", "sports,economy", "--out", str(tmp_path / "o.jsonl")),
        f"{source}:1: column 'x' holds NaN or infinite values, which JSON Lines cannot hold",
    )
    assert not (tmp_path / "o.jsonl").exists()


def test_a_bad_api_key_names_where_it_came_from(zstc_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ZSTC_API_KEY`` with a leading space blamed ``--api-key``, a flag the user never typed; an empty one was read
    as unset (click drops empty variables), so the service started without authentication."""
    pytest.importorskip("fastapi")
    monkeypatch.setenv("ZSTC_API_KEY", " s3cret")
    assert_user_error(zstc_cli("serve", "--port", "0"), "error: ZSTC_API_KEY must be printable ASCII")
    monkeypatch.setenv("ZSTC_API_KEY", "")
    assert_user_error(zstc_cli("serve", "--port", "0"), "error: ZSTC_API_KEY is empty: give a key")
    assert_user_error(zstc_cli("serve", "--port", "0", "--api-key", " s3cret"), "error: --api-key must be printable")
    monkeypatch.delenv("ZSTC_API_KEY")
    assert_user_error(zstc_cli("serve", "--port", "0", "--api-key", ""), "error: --api-key is empty")


def test_data_that_is_a_file_is_said_to_be_one(zstc_cli, btzsc_dir: Path, tmp_path: Path) -> None:
    """``tasks --data FILE`` said "no such directory" and ``bench``/``sweep`` "no BTZSC dataset files in FILE": the
    file exists, it is no folder. ``tasks --data hub`` said "hub: no such directory"."""
    file = btzsc_dir / "financialphrasebank.jsonl"
    said = f"{file} is a file, not a folder: expected a folder of dataset files"
    assert_user_error(zstc_cli("tasks", "--data", str(file)), said)
    assert_user_error(zstc_cli("bench", "-m", MINILM, "--data", str(file)), said)
    assert_user_error(zstc_cli("sweep", "--models", MINILM, "--data", str(file), "--out", str(tmp_path / "x")), said)
    status, out, err = zstc_cli("tasks", "--data", "hub")
    assert status == 0 and "financialphrasebank" in out and "hub only" in out and not err, err


@pytest.fixture(scope="module")
def own_code_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random embedding model whose classes are defined by its own files (gte-v1.5's stand-in)."""
    from standins import ARCHS

    return ARCHS["gte-v1.5"].build(tmp_path_factory.mktemp("own-code") / "gte")


@pytest.mark.parametrize("command", ["sweep", "nli-probe", "template-robustness", "calibrate", "unseen"])
def test_every_scoring_command_takes_trust_remote_code(
    zstc_cli, own_code_model: Path, shared_data: Path, tmp_path: Path, command: str
) -> None:
    """sweep, nli-probe and Yin's experiments had no --trust-remote-code, so a model with its own code could not be
    run by them at all. Without the flag the model is refused in classify's words; with it, its code runs."""
    model, out = str(own_code_model), tmp_path / "out"
    nli = tmp_path / "nli"
    nli.mkdir()
    pairs = (shared_data / "nli" / "mnli_matched.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (nli / "mnli_matched.jsonl").write_text("".join(pairs[:12]), encoding="utf-8")
    btzsc = ["--data", str(shared_data / "btzsc"), "--max-samples", "3"]
    args = {
        "sweep": ["--models", model, *btzsc, "--tasks", "financialphrasebank", "--out", str(out)],
        "nli-probe": ["--model", model, "--data", str(nli), "--out", str(out)],
        "template-robustness": ["--model", model, *btzsc, "--task", "financialphrasebank", "--template", "It is {}."],
        "calibrate": ["--model", model, *btzsc, "--task", "financialphrasebank", "--out", str(out)],
        "unseen": ["--model", model, *btzsc, "--train-data", str(shared_data / "btzsc-train"), "--no-finetune"],
    }[command]
    if command == "unseen":
        args += ["--max-train-samples", "3", "--work-dir", str(tmp_path / "work")]
    if command in ("template-robustness", "calibrate", "unseen"):
        args += ["--family", "embedding"]
    status, _, err = zstc_cli(command, *args)
    refusal = err.strip().splitlines()[-1]
    assert status == 2 and refusal == (
        f"error: {model} runs modelling code of its own (an auto_map in its config), which zstc runs only when "
        "asked: give --trust-remote-code to run it"
    ), err
    status, _, err = zstc_cli(command, *args, "--trust-remote-code")
    assert status == 0, err
    if command == "sweep":  # part of the result's identity, as bench records it
        identity = json.loads(next(out.glob("*.json")).read_text())["evaluation"]["run_identity"]
        assert identity["scorer_options"]["trust_remote_code"] is True


def test_a_labels_json_nan_description_is_refused(tmp_path: Path) -> None:
    """Labels JSON ``{"food": NaN}`` became the description "nan"."""
    from zstc.io import read_label_descriptions

    path = tmp_path / "labels.json"
    path.write_text('{"food": NaN, "travel": "Trips."}', encoding="utf-8")
    with pytest.raises(DataError, match="the description of 'food' is NaN, expected a string"):
        read_label_descriptions(path)
