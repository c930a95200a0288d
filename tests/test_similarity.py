"""The paper's dataset similarity analysis (PROTOCOL.md section 6): weighted Jaccard similarity of token
distributions, by hand and on the shared BTZSC test sets, through ``zstc dataset-similarity``."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from zstc.benchmark.similarity import dataset_similarity, token_counts, tokens, weighted_jaccard
from zstc.errors import DataError


def test_tokens_are_lower_cased_word_runs_in_any_script():
    assert tokens("Don't PANIC: 42 Ärger, naïve_x!") == ["don", "t", "panic", "42", "ärger", "naïve_x"]
    assert token_counts(["a b a", "B"]) == {"a": 2, "b": 2}


def test_weighted_jaccard_by_hand():
    p = {"a": 0.5, "b": 0.5}
    q = {"a": 0.25, "c": 0.75}
    # min: a 0.25; max: a 0.5 + b 0.5 + c 0.75 = 1.75
    assert weighted_jaccard(p, q) == pytest.approx(0.25 / 1.75, abs=1e-15)
    assert weighted_jaccard(q, p) == weighted_jaccard(p, q)
    assert weighted_jaccard(p, p) == 1.0
    assert weighted_jaccard(p, {"z": 1.0}) == 0.0


def test_similarity_compares_distributions_not_counts():
    """A dataset and the same texts twice over have one distribution: similarity 1, not 0.5 (raw counts)."""
    texts = ["the cat sat", "a dog ran"]
    found = dataset_similarity({"once": texts, "twice": texts * 2, "other": ["the bank rate rose"]})
    assert found.matrix[0, 1] == pytest.approx(1.0)
    # other vs once: "the" is 1/4 of other and 1/6 of once; max sums to 1 + 1 - 1/6
    assert found.matrix[0, 2] == pytest.approx((1 / 6) / (2 - 1 / 6))
    assert np.array_equal(found.matrix, found.matrix.T) and np.all(np.diag(found.matrix) == 1.0)
    assert found.texts == {"once": 2, "twice": 4, "other": 1}
    assert found.vocabulary == {"once": 6, "twice": 6, "other": 4}


def test_fewer_than_two_datasets_or_no_words_are_refused():
    with pytest.raises(DataError, match="at least two"):
        dataset_similarity({"one": ["a text"]})
    with pytest.raises(DataError, match="empty: its 1 texts hold no word"):
        dataset_similarity({"fine": ["a text"], "empty": ["?!"]})


def test_on_the_shared_test_sets_movie_reviews_are_each_others_nearest(zstc_cli, btzsc_dir, tmp_path):
    """Real data: IMDB's and Rotten Tomatoes' movie reviews are more alike than either is to any other set, and
    banking77's short requests are least like the financial news. The CSV holds the printed matrix."""
    out, figure = tmp_path / "similarity.csv", tmp_path / "similarity.svg"
    code, stdout, err = zstc_cli(
        "dataset-similarity",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "imdb,rottentomatoes,financialphrasebank,banking77,agnews",
        "--out",
        str(out),
        "--figure",
        str(figure),
    )
    assert code == 0, err
    with out.open(encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    names = rows[0][1:]
    assert names == ["imdb", "rottentomatoes", "financialphrasebank", "banking77", "agnews"]  # BTZSC's order
    matrix = np.array([[float(cell) for cell in row[1:]] for row in rows[1:]])
    assert [row[0] for row in rows[1:]] == names
    assert np.array_equal(matrix, matrix.T) and np.all(np.diag(matrix) == 1.0)
    assert matrix[0, 1] == pytest.approx(0.501329, abs=1e-6)  # measured: the two review sets, all their texts
    assert int(np.argmax(matrix[0] - np.eye(5)[0])) == 1 and int(np.argmax(matrix[1] - np.eye(5)[1])) == 0
    assert matrix[3, 2] == matrix[2].min()
    assert "imdb" in stdout and "0.501" in stdout and "rottentomatoes" in stdout
    assert figure.read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_a_sample_reads_only_its_texts(zstc_cli, btzsc_dir):
    code, stdout, err = zstc_cli(
        "dataset-similarity",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "imdb,agnews",
        "--max-samples",
        "50",
        "--sampling",
        "paper",
    )
    assert code == 0, err
    assert [
        line.split("│")[2].strip()
        for line in stdout.splitlines()
        if line.startswith("│ imdb") or line.startswith("│ agnews")
    ][:2] == ["50", "50"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tasks", "imdb"], "give at least two (got 1)"),
        (["--figure", "x.jpg"], "--figure x.jpg: expected a path ending in .png or .svg"),
        (["--sampling", "nope"], "--sampling must be one of stratified, paper, harness"),
        (["--tasks", "imdb,nope"], "unknown"),
    ],
)
def test_user_errors_are_one_line(zstc_cli, btzsc_dir, extra, message):
    code, _, err = zstc_cli("dataset-similarity", "--data", str(btzsc_dir), *extra)
    assert code == 2 and message in err and "Traceback" not in err


def test_no_data_folder_and_an_input_as_output_are_refused(zstc_cli, btzsc_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ZSTC_SHARED_DATA", raising=False)
    monkeypatch.delenv("ZSTC_DATA", raising=False)
    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path / "cache"))  # nothing pulled by `zstc data pull` either
    code, _, err = zstc_cli("dataset-similarity")
    assert code == 2 and "no BTZSC data found: run `zstc data pull`" in err
    code, _, err = zstc_cli("dataset-similarity", "--data", str(tmp_path / "missing"))
    assert code == 2 and "no such directory" in err
    target = btzsc_dir / "imdb.jsonl"
    before = target.stat().st_mtime_ns
    code, _, err = zstc_cli("dataset-similarity", "--data", str(btzsc_dir), "--out", str(target))
    assert code == 2 and "would destroy it" in err and target.stat().st_mtime_ns == before
