"""Every failure a user can cause: one line on stderr, non-zero exit, no traceback."""

import json
import sys

import pytest

from shared_data import REPO
from zstc.cli import main


def run_cli(args, capsys, monkeypatch, stdin: str | None = None):
    monkeypatch.setattr(sys, "argv", ["zstc", *args])
    if stdin is not None:
        import io

        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with pytest.raises(SystemExit) as exit_info:
        main()
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


@pytest.fixture
def texts_file(tmp_path):
    path = tmp_path / "texts.jsonl"
    path.write_text('{"text": "The match ended 2-1."}\n{"text": "Rates were raised."}\n')
    return path


@pytest.mark.parametrize(
    "args, message",
    [
        (["classify", "missing.jsonl", "--labels", "a,b"], "missing.jsonl: no such file"),
        (["classify", "{texts}", "--labels", ""], "no labels given"),
        (["classify", "{texts}", "--labels", "sports"], "only one label given"),
        # Multi-label, one label is a yes/no question, but the embedding default rule (near the best label) says yes to all.
        (
            ["classify", "{texts}", "--labels", "sports", "--multi-label"],
            "a single label would pass on every text; give --threshold",
        ),
        (["classify", "{texts}", "--labels", "a,b,a"], "duplicate labels: 'a'"),
        # Read alike (the same opinion phrases): they would tie on every text, the first always winning.
        (
            ["classify", "{texts}", "--labels", "positive,Positive"],
            "labels 'positive' and 'Positive' have the same description",
        ),
        # Descriptions that differ only where the default model's uncased tokenizer does not look: the same token ids.
        (
            ["classify", "{texts}", "--labels", "Sports,sports,politics"],
            "labels 'Sports' and 'sports' read the same to sentence-transformers/all-MiniLM-L6-v2 (its tokenizer lowercases)",
        ),
        (
            ["classify", "{texts}", "--labels", "a,b", "--model", "no-such/model-xyz"],
            "unknown model 'no-such/model-xyz'",
        ),
        (["classify", "{texts}", "--labels", "a,b", "--family", "nonsense"], "unknown family 'nonsense'"),
        (
            ["classify", "{texts}", "--labels", "a,b", "--model", "foo/not-a-model", "--family", "embedding"],
            "cannot load model 'foo/not-a-model'",
        ),
        (["classify", "{texts}", "--labels", "a,b", "--template", "no slot"], "exactly one '{}'"),
        # The flag, as calibrate says it, not the Python parameter ("error: template '{}{}' cannot be filled").
        (
            ["classify", "{texts}", "--labels", "a,b", "--template", "{}{}"],
            "error: --template '{}{}' cannot be filled: it must contain exactly one",
        ),
        (
            [
                "bench",
                "-m",
                "all-MiniLM-L6-v2",
                "--data",
                "{shared}",
                "--tasks",
                "agnews",
                "--hypotheses",
                "name",
                "--template",
                "a {",
            ],
            "error: --template 'a {' cannot be filled",
        ),
        # Not "unknown --pooling 'mean': --pooling must be ...": the CLI writes the parameter's name as its flag everywhere.
        (
            ["classify", "{texts}", "--labels", "a,b", "--pooling", "mean"],
            "--pooling must be one of native, cls, got 'mean'",
        ),
        (["classify", "{empty}", "--labels", "a,b"], "empty text"),
        (["classify", "{malformed}", "--labels", "a,b"], "malformed JSON"),
        (["bench", "-m", "all-MiniLM-L6-v2", "--data", "{shared}", "--tasks", "agnewz"], "unknown task 'agnewz'"),
        (["bench", "-m", "all-MiniLM-L6-v2", "--data", "/no/such/dir", "--tasks", "agnews"], "no such directory"),
        (["bench", "-m", "all-MiniLM-L6-v2", "--data", "{tmp}", "--tasks", "agnews"], "no file for task 'agnews'"),
        (
            ["bench", "-m", "all-MiniLM-L6-v2", "--data", "{shared}", "--tasks", "agnews", "--score-type", "prob"],
            "--score-type does not apply to embedding",
        ),
        (
            ["bench", "-m", "all-MiniLM-L6-v2", "--data", "{shared}", "--tasks", "agnews", "--prompt-style", "harness"],
            "--prompt-style does not apply to embedding",
        ),
        (
            [
                "classify",
                "{texts}",
                "--labels",
                "a,b",
                "--model",
                "HuggingFaceTB/SmolLM2-135M-Instruct",
                "--prompt-style",
                "harnes",
            ],
            "--prompt-style must be one of paper, harness, got 'harnes'",
        ),
        (
            ["bench", "-m", "all-MiniLM-L6-v2", "--data", "{shared}", "--tasks", "agnews", "--unlabelled", "drop"],
            "--unlabelled must be one of",
        ),
        # What a Ray actor reserves: Ray's own ValueError traceback, after Ray had started, before these were checked.
        (
            ["classify", "{texts}", "--labels", "a,b", "--engine", "ray", "--out", "{tmp}", "--cpus-per-actor", "-1"],
            "--cpus-per-actor must be >= 0, got -1",
        ),
        (
            ["classify", "{texts}", "--labels", "a,b", "--engine", "ray", "--out", "{tmp}", "--gpus-per-actor", "nan"],
            "--gpus-per-actor must be a finite number, got nan",
        ),
        (
            [
                "sweep",
                "--models",
                "all-MiniLM-L6-v2",
                "--data",
                "{shared}",
                "--tasks",
                "financialphrasebank",
                "--out",
                "{tmp}",
                "--engine",
                "ray",
                "--cpus-per-model",
                "-2",
            ],
            "--cpus-per-model must be >= 0, got -2",
        ),
    ],
)
def test_user_errors_are_one_line(args, message, capsys, monkeypatch, tmp_path, texts_file, btzsc_dir):
    (tmp_path / "empty.jsonl").write_text('{"text": "fine"}\n{"text": ""}\n')
    (tmp_path / "malformed.jsonl").write_text('{"text": "fine"}\n{"text": \n')
    fill = {
        "{texts}": str(texts_file),
        "{empty}": str(tmp_path / "empty.jsonl"),
        "{malformed}": str(tmp_path / "malformed.jsonl"),
        "{shared}": str(btzsc_dir),
        "{tmp}": str(tmp_path),
    }
    code, out, err = run_cli([fill.get(a, a) for a in args], capsys, monkeypatch)
    assert code not in (0, None)
    assert message in err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err


def test_classify_prints_one_json_line_per_text(capsys, monkeypatch, texts_file):
    code, out, err = run_cli(
        ["classify", str(texts_file), "--labels", "sports,economy", "--template", "This text is about {}."],
        capsys,
        monkeypatch,
    )
    assert code in (0, None)
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["label"] for line in lines] == ["sports", "economy"]
    assert set(lines[0]["scores"]) == {"sports", "economy"}


def test_classify_reads_stdin_and_label_files(capsys, monkeypatch, tmp_path):
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"pos": "This review is positive.", "neg": "This review is negative."}))
    code, out, _ = run_cli(
        ["classify", "-", "--labels-file", str(labels)], capsys, monkeypatch, stdin="I loved every minute of it.\n"
    )
    assert code in (0, None) and json.loads(out)["label"] == "pos"


def test_usage_errors_show_usage_without_traceback(capsys, monkeypatch):
    code, _, err = run_cli(["tasks", "--bogus"], capsys, monkeypatch)
    assert code == 2 and "No such option: --bogus" in err and "Traceback" not in err


def test_the_demo_runs_where_there_is_no_runs_folder(zstc_cli, monkeypatch, tmp_path, btzsc_dir):
    """`make demo` on a fresh clone: the demo creates the folder of its own default output (it stopped at the
    benchmark with 'folder runs does not exist'); an --out the user gives is checked before any work."""
    monkeypatch.chdir(tmp_path)
    status, out, err = zstc_cli("demo", "--data", str(btzsc_dir), "--max-samples", "5")
    assert status == 0, err
    assert (
        "Manchester United" in out
        and json.loads((tmp_path / "runs" / "demo.json").read_text())["results"]["by_dataset"]
    )
    status, out, err = zstc_cli("demo", "--out", str(tmp_path / "missing" / "d.json"))
    assert status == 2 and "folder" in err and "does not exist" in err and "Manchester United" not in out
    # So is a --data without the demo's datasets (it failed only after the example classification).
    status, out, err = zstc_cli("demo", "--data", str(tmp_path), "--out", str(tmp_path / "d.json"))
    assert (
        status == 2 and f"{tmp_path}: no file for task 'financialphrasebank'" in err and "Manchester United" not in out
    )


def test_multi_label_takes_one_label_from_a_labels_file_as_from_labels(capsys, monkeypatch, tmp_path, texts_file):
    """One label is a yes/no question under --multi-label, whichever option gives it; a labels file holding one
    was refused ("zero-shot classification needs at least two") where --labels was not."""
    labels = tmp_path / "labels.txt"
    labels.write_text("sports\tThis text is about sports.\n")
    code, out, err = run_cli(
        ["classify", str(texts_file), "--labels-file", str(labels), "--multi-label", "--threshold", "0.12"],
        capsys,
        monkeypatch,
    )
    assert code in (0, None), err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["labels"] for row in rows] == [["sports"], ["none"]] and all(
        set(row["scores"]) == {"sports"} for row in rows
    )
    code, _, err = run_cli(["classify", str(texts_file), "--labels-file", str(labels)], capsys, monkeypatch)
    assert code == 2 and "only one label given ('sports')" in err


def test_a_missing_gpu_is_said_in_words_the_flag_rewriting_leaves_alone(capsys, monkeypatch, texts_file):
    """The CLI writes a parameter's name as its flag wherever an error says it: "no CUDA device is available"
    read "no CUDA --device is available"."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, _, err = run_cli(["classify", str(texts_file), "--labels", "a,b", "--device", "cuda"], capsys, monkeypatch)
    assert code == 2 and err == "error: --device asks for 'cuda', but this machine has no CUDA GPU\n"


def test_the_flag_rewriting_leaves_the_users_quoted_value_alone(capsys, monkeypatch, texts_file):
    """A message quotes what the user typed; only the parameter's own name becomes its flag: a template
    "the template: {} {}" was echoed back as 'the --template: {} {}'."""
    code, _, err = run_cli(
        ["classify", str(texts_file), "--labels", "a,b", "--template", "the template: {} {}"], capsys, monkeypatch
    )
    assert code == 2 and err.startswith("error: --template 'the template: {} {}' cannot be filled"), err
    code, _, err = run_cli(
        ["classify", str(texts_file), "--labels", "a,b", "--template", "it's a template: {} {}"], capsys, monkeypatch
    )
    assert code == 2 and err.startswith("""error: --template "it's a template: {} {}" cannot be filled"""), err


def test_a_blank_label_description_is_refused(capsys, monkeypatch, tmp_path, texts_file):
    """A labels file may describe a label with "" (JSON) or spaces: the model read nothing for it, and
    all-MiniLM-L6-v2 gave that label both texts, silently."""
    from zstc.api import Classifier
    from zstc.errors import LabelError

    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"sports": "  ", "economy": "This text is about the economy."}))
    code, out, err = run_cli(["classify", str(texts_file), "--labels-file", str(labels)], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert (
        err
        == "error: the description of 'sports' is empty: describe the label, or give no description to use its name\n"
    )
    with pytest.raises(LabelError, match="the description of 'economy' is NoneType, expected a string"):
        Classifier().scores(["a text"], ["sports", "economy"], ["This text is about sports.", None])  # type: ignore[list-item]


def test_label_descriptions_with_a_name_based_hypothesis_variant_are_refused(capsys, monkeypatch, tmp_path, texts_file):
    """--hypotheses name/definition/both/ensemble describe the labels from their names: the descriptions of a
    --labels-file were dropped, silently."""
    labels = tmp_path / "labels.tsv"
    labels.write_text("sports\tThis text is about football and tennis.\neconomy\tThis text is about prices and jobs.\n")
    code, _, err = run_cli(
        ["classify", str(texts_file), "--labels-file", str(labels), "--hypotheses", "name"], capsys, monkeypatch
    )
    assert code == 2 and err == (
        "error: --hypotheses name describes each label from its name, so the labels' own descriptions "
        "would go unused: give --hypotheses dataset to use them, or the labels alone\n"
    )
    names = tmp_path / "names.txt"  # a labels file of names alone has nothing to lose
    names.write_text("sports\neconomy\n")
    code, out, err = run_cli(
        ["classify", str(texts_file), "--labels-file", str(names), "--hypotheses", "name"], capsys, monkeypatch
    )
    assert code in (0, None), err
    assert [json.loads(line)["label"] for line in out.splitlines()] == ["sports", "economy"]


def test_a_template_with_label_descriptions_is_refused(capsys, monkeypatch, tmp_path, texts_file):
    """Descriptions from a --labels-file are used as written (README): --template rewrote them, so the model read
    "Nothing to do with This text is about sports.". Refused, naming both; a labels file of names alone still takes
    --template, as --labels does, and the Python API scores the descriptions a call gives as written."""
    from zstc.api import Classifier, label_hypotheses
    from zstc.errors import LabelError

    labels = REPO / "examples" / "topics.tsv"
    code, out, err = run_cli(
        ["classify", str(texts_file), "--labels-file", str(labels), "--template", "Nothing to do with {}"],
        capsys,
        monkeypatch,
    )
    assert code == 2 and out == ""
    assert err == (
        "error: --template is for label names; with --labels-file descriptions, which are used as written, it would "
        "rewrite them: give one or the other\n"
    )
    names = tmp_path / "names.txt"
    names.write_text("sports\neconomy\n")
    runs = [
        run_cli(
            ["classify", str(texts_file), *given, "--template", "Nothing to do with {}", "--scores", "raw"],
            capsys,
            monkeypatch,
        )
        for given in (["--labels-file", str(names)], ["--labels", "sports,economy"])
    ]
    assert [code for code, _, _ in runs] == [0, 0] and runs[0][1] == runs[1][1], runs
    with pytest.raises(LabelError, match="template is for label names") as refused:
        label_hypotheses(
            ["sports", "economy"], template="Nothing to do with {}", descriptions=["about sports", "about money"]
        )
    assert refused.value.parameters == ("template", "descriptions")
    descriptions = ["This text is about sports.", "This text is about the economy."]
    assert (
        Classifier(template="Nothing to do with {}", precision="fp32").scores(
            ["A late goal won the derby."], ["sports", "economy"], descriptions
        )
        == Classifier(precision="fp32").scores(["A late goal won the derby."], ["sports", "economy"], descriptions)
    ).all()


def test_a_quoted_label_may_hold_a_comma(capsys, monkeypatch, texts_file):
    """--labels is read as one CSV row: '"sports, games",economy' is two labels, not '"sports' and 'games"' and
    'economy' (a plain split, silently); an unterminated quote is an error naming --labels."""
    code, out, err = run_cli(
        ["classify", str(texts_file), "--labels", '"sports, games", economy', "--template", "This text is about {}."],
        capsys,
        monkeypatch,
    )
    assert code in (0, None), err
    assert [set(json.loads(line)["scores"]) for line in out.splitlines()] == [{"sports, games", "economy"}] * 2
    code, _, err = run_cli(["classify", str(texts_file), "--labels", '"sports, economy'], capsys, monkeypatch)
    assert code == 2 and err.startswith("error: --labels '\"sports, economy': unexpected end of data")
