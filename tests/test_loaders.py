import json
import re
from pathlib import Path

import numpy as np
import pytest

from zstc.benchmark.catalog import get_task_spec
from zstc.errors import DataError, LabelError
from zstc.benchmark.data import load_btzsc_task, load_grouped, load_paired, load_user_task
from zstc.io import read_label_descriptions, read_records, read_texts
from zstc.benchmark.tasks import NO_HYPOTHESIS, stratified_sample


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_paired_layout_loads_to_exactly_the_grouped_file(shared_data):
    spec = get_task_spec("financialphrasebank")
    paired_path = shared_data / "btzsc-paired" / "financialphrasebank.jsonl"
    paired = load_paired(read_records(paired_path), spec, source=str(paired_path))
    grouped = load_grouped(shared_data / "btzsc" / "financialphrasebank.jsonl", spec)
    assert len(paired) == len(grouped) == 690
    assert paired.texts == grouped.texts
    np.testing.assert_array_equal(paired.gold, grouped.gold)
    assert paired.hypotheses == list(spec.hypotheses)


def test_directory_loader_detects_the_paired_layout(shared_data):
    task, affected = load_btzsc_task("financialphrasebank", shared_data / "btzsc-paired")
    assert len(task) == 690 and affected == 0


def paired_rows(groups):
    """groups: list of (text, positive index or None); hypotheses h0, h1, h2 of financialphrasebank."""
    hypotheses = get_task_spec("financialphrasebank").hypotheses
    return [
        {"text": t, "hypothesis": h, "labels": int(i == pos)} for t, pos in groups for i, h in enumerate(hypotheses)
    ]


def test_paired_groups_are_checked(tmp_path):
    spec = get_task_spec("financialphrasebank")
    rows = paired_rows([("a", 0), ("b", None), ("b", 2)])  # the same text twice in a row is two groups
    task = load_paired(enumerate(rows, 1), spec, source="x")
    assert task.texts == ["a", "b", "b"] and task.gold.tolist() == [0, NO_HYPOTHESIS, 2]

    two_positives = paired_rows([("a", 0)])
    two_positives[1]["labels"] = 1
    with pytest.raises(DataError, match="x:2: financialphrasebank: a second positive row"):
        load_paired(enumerate(two_positives, 1), spec, source="x")

    reordered = paired_rows([("a", 0), ("b", 1)])
    reordered[3], reordered[4] = reordered[4], reordered[3]
    with pytest.raises(DataError, match="group starting at row 4 has other hypotheses"):
        load_paired(enumerate(reordered, 1), spec, source="x")


def test_malformed_rows_name_file_row_and_reason(tmp_path):
    spec = get_task_spec("financialphrasebank")
    bad_json = tmp_path / "a.jsonl"
    bad_json.write_text('{"text": "ok", "label": 0}\n{"text": oops}\n')
    with pytest.raises(DataError, match=r"a.jsonl:2: malformed JSON"):
        load_grouped(bad_json, spec)
    with pytest.raises(DataError, match=r":1: empty text"):
        load_grouped(write_jsonl(tmp_path / "b.jsonl", [{"text": "  ", "label": 0}]), spec)
    with pytest.raises(DataError, match=r":1: label 7 out of range"):
        load_grouped(write_jsonl(tmp_path / "c.jsonl", [{"text": "x", "label": 7}]), spec)
    with pytest.raises(DataError, match=r"unknown class 'bullish'"):
        load_grouped(write_jsonl(tmp_path / "d.jsonl", [{"text": "x", "label_text": "bullish"}]), spec)
    with pytest.raises(DataError, match="no such file"):
        load_grouped(tmp_path / "missing.jsonl", spec)


def test_grouped_csv_and_parquet(tmp_path):
    spec = get_task_spec("financialphrasebank")
    csv_path = tmp_path / "financialphrasebank.csv"
    csv_path.write_text('text,label_text\n"Profit rose, a lot",positive\nShares fell,negative\n')
    task = load_grouped(csv_path, spec)
    assert task.texts == ["Profit rose, a lot", "Shares fell"] and task.gold.tolist() == [2, 0]
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["a", "b"], "label": [1, 0]}), tmp_path / "p.parquet")
    assert load_grouped(tmp_path / "p.parquet", spec).gold.tolist() == [1, 0]


def test_unlabelled_policy_on_banking77(btzsc_dir):
    paper, affected = load_btzsc_task("banking77", btzsc_dir, unlabelled="paper")
    assert affected == 200 and len(paper) == 3080 and paper.n_unlabelled == 0
    assert any("counted as class 0" in note for note in paper.notes)
    excluded, affected = load_btzsc_task("banking77", btzsc_dir, unlabelled="exclude")
    assert affected == 200 and len(excluded) == 2880


def test_stratified_sample_is_deterministic_exact_and_proportional(btzsc_dir):
    task, _ = load_btzsc_task("agnews", btzsc_dir)
    a = stratified_sample(task, 1000, seed=3)
    b = stratified_sample(task, 1000, seed=3)
    c = stratified_sample(task, 1000, seed=4)
    assert len(a) == 1000 and a.texts == b.texts and a.texts != c.texts
    assert np.bincount(a.gold).tolist() == [250, 250, 250, 250]  # agnews is balanced
    assert list(a.source_index) == sorted(a.source_index)
    assert stratified_sample(task, None) is task


def test_user_files(tmp_path):
    texts = write_jsonl(tmp_path / "in.jsonl", [{"text": "hello"}, {"text": "world"}])
    assert read_texts(texts) == ["hello", "world"]
    (tmp_path / "in.txt").write_text("one\n\ntwo\n")
    assert read_texts(tmp_path / "in.txt") == ["one", "two"]
    labels = tmp_path / "labels.txt"
    labels.write_text("sports\tThis text is about sport.\npolitics\n")
    assert read_label_descriptions(labels) == {"sports": "This text is about sport.", "politics": "politics"}
    (tmp_path / "dup.txt").write_text("a\na\n")
    with pytest.raises(LabelError, match=rf"^duplicate labels in {re.escape(str(tmp_path / 'dup.txt'))}: 'a'$"):
        read_label_descriptions(
            tmp_path / "dup.txt"
        )  # a user error (one line on the CLI), naming the file and the label
    data = write_jsonl(tmp_path / "mine.jsonl", [{"text": "x", "label_text": "b"}, {"text": "y", "label_text": "a"}])
    task = load_user_task(data)
    assert task.label_names == ["a", "b"] and task.gold.tolist() == [1, 0]


def test_label_file_keeps_hashtag_labels(tmp_path):
    """Lines starting with '#' were dropped from a labels file as comments, a syntax neither the README nor --help
    mentions: '#sports' and '#politics' vanished, exit 0, while --labels kept them. Every non-blank line is a label."""
    labels = tmp_path / "hashtags.tsv"
    labels.write_text("#sports\n  #politics\tThis text is about politics.\n\neconomy\nweather\n")
    assert read_label_descriptions(labels) == {
        "#sports": "#sports",
        "#politics": "This text is about politics.",
        "economy": "economy",
        "weather": "weather",
    }


def test_the_paper_policy_counts_texts_without_a_hypothesis_as_class_0_exactly(btzsc_dir):
    """The public harness's ``true_idx = ... else 0``: each of banking77's 200 such texts becomes class 0
    (Refund_not_showing_up), the others keep their class; policy 'exclude' drops exactly those 200."""
    raw = load_grouped(btzsc_dir / "banking77.jsonl", get_task_spec("banking77"))
    unlabelled = raw.gold == NO_HYPOTHESIS
    paper, _ = load_btzsc_task("banking77", btzsc_dir, unlabelled="paper")
    assert unlabelled.sum() == 200 and paper.texts == raw.texts
    np.testing.assert_array_equal(paper.gold, np.where(unlabelled, 0, raw.gold))
    np.testing.assert_array_equal(paper.counted_as_class0, unlabelled)
    excluded, _ = load_btzsc_task("banking77", btzsc_dir, unlabelled="exclude")
    np.testing.assert_array_equal(excluded.source_index, np.flatnonzero(~unlabelled))


def test_the_paper_draw_under_exclude_scores_the_papers_texts_that_have_a_hypothesis(btzsc_dir):
    """The paper's draw is positions in the whole file: under 'exclude' it is drawn first and the texts without a
    hypothesis then dropped (banking77: 929 of the paper's 1000). Drawn from the 2880 left after the policy, it
    scored only 418 of those, and the note called it the harness's sample."""
    from zstc.benchmark.data import load_btzsc_sample

    paper, _, _ = load_btzsc_sample("banking77", btzsc_dir, max_samples=1000, unlabelled="paper", sampling="paper")
    excluded, affected, source_texts = load_btzsc_sample(
        "banking77", btzsc_dir, max_samples=1000, unlabelled="exclude", sampling="paper"
    )
    kept = ~paper.counted_as_class0
    # source_texts counts the texts the policy keeps, as a stratified draw does: every one of them scored is no sample.
    assert len(excluded) == int(kept.sum()) == 929 and affected == 71 and source_texts == 2880
    np.testing.assert_array_equal(excluded.source_index, paper.source_index[kept])
    np.testing.assert_array_equal(excluded.gold, paper.gold[kept])
    assert excluded.notes[-2:] == [
        "the public harness's sample of 1000 of 3080 texts (texts 0 and 1, then random.Random(0))",
        "71 texts whose gold class has no hypothesis excluded (policy 'exclude')",
    ]
    for sampling in ("paper", "stratified"):  # uncapped: all 2880 texts with a hypothesis, recorded as every text
        whole, _, source_texts = load_btzsc_sample(
            "banking77", btzsc_dir, max_samples=None, unlabelled="exclude", sampling=sampling
        )
        assert len(whole) == source_texts == 2880, sampling


def test_yahootopics_keeps_two_business_and_finance_texts_as_the_harness_does(tmp_path):
    """PROTOCOL.md s.1: the harness drops yahootopics texts of class "Business & Finance" except the first two, but
    keeps the hypothesis as a candidate. Faithful under policy 'paper' (reported in the notes); 'exclude' keeps all."""
    spec = get_task_spec("yahootopics")
    classes = [
        "Health",
        "Business & Finance",
        "Sports",
        "Business & Finance",
        "Business & Finance",
        "Health",
        "Business & Finance",
    ]
    write_jsonl(tmp_path / "yahootopics.jsonl", [{"text": f"t{i}", "label_text": c} for i, c in enumerate(classes)])
    paper, _ = load_btzsc_task("yahootopics", tmp_path, unlabelled="paper")
    assert paper.texts == ["t0", "t1", "t2", "t3", "t5"] and paper.source_index.tolist() == [0, 1, 2, 3, 5]
    assert paper.hypotheses == list(spec.hypotheses) and paper.label_names[0] == "Business & Finance"
    assert any("dropped 2 'Business & Finance' texts" in note for note in paper.notes)
    excluded, _ = load_btzsc_task("yahootopics", tmp_path, unlabelled="exclude")
    assert len(excluded) == len(classes)


def test_subprocesses_of_the_suite_never_reach_the_hub() -> None:
    """The in-process guard (conftest's _no_hub) does not reach the zstc processes tests start; the environment does,
    so a test on a machine that reaches the hub downloads nothing there either."""
    import os
    import subprocess
    import sys

    if os.environ.get("ZSTC_TEST_HUB") == "1":
        pytest.skip("hub tests reach the hub")
    src = str(Path(__file__).resolve().parents[1] / "src")
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import zstc.models.loading as l; from huggingface_hub import constants; "
            "print(l.hub_reachable(), constants.HF_HUB_OFFLINE)",
        ],
        env={**os.environ, "PYTHONPATH": src},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert shown.stdout.split() == ["False", "True"], shown
