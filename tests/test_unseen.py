"""Label-partially-unseen protocol: label halves, seen-label training pairs, the harsh rule, group F1."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
from shared_data import shared_path
from yin_helpers import MINILM, SHARED_DATA, WordOverlapScorer

from zstc.benchmark.tasks import Task
from zstc.errors import DataError
from zstc.yin.unseen import (
    LabelSplit,
    UnseenConfig,
    group_f1,
    harsh_decisions,
    label_halves,
    run_unseen,
    seen_label_pairs,
)


def test_a_training_sample_without_a_seen_label_fails_only_fine_tuning_and_before_scoring(tmp_path) -> None:
    """`unseen --no-finetune --max-train-samples 1` scored every text, then failed with "no training text has a
    seen label": the pairs, which only fine-tuning needs, were built after the scoring. Without fine-tuning such a
    split counts 0 training pairs; with it, the run is refused before anything is scored."""
    labels = ["sports", "politics", "cooking", "music"]
    task = Task(
        "toy", ["sports game", "politics vote", "cooking pasta", "music song"], np.array([0, 1, 2, 3]), labels, labels
    )
    one_text = Task("toy", ["sports game"], np.array([0]), labels, labels)  # label 0: seen by the even half only
    lines: list[str] = []
    report = run_unseen(
        task, one_text, labels, WordOverlapScorer(), UnseenConfig(work_dir=tmp_path / "work"), log=lines.append
    )
    assert [split["training_pairs"] for split in report["fully_unseen"]["splits"]] == [2, 0]
    assert any("odd labels seen: no training text has a seen label (training_pairs 0" in line for line in lines), lines
    base = WordOverlapScorer()
    with pytest.raises(DataError, match=r"no training text has a seen label \(odd labels seen\).*--no-finetune"):
        run_unseen(
            task,
            one_text,
            labels,
            base,
            UnseenConfig(work_dir=tmp_path / "work"),
            lambda split, path: WordOverlapScorer(),
        )
    assert base.calls == [] and not (tmp_path / "work").exists()


def test_label_halves_are_disjoint_and_cover_all_labels() -> None:
    first, second = label_halves(5)
    assert first.seen == (0, 2, 4) and first.unseen == (1, 3)
    assert second.seen == first.unseen and second.unseen == first.seen


def test_pairs_use_only_seen_labels() -> None:
    split = LabelSplit("even", (0, 2, 4), (1, 3))
    hypotheses = [f"h{i}" for i in range(5)]
    gold = np.array([0, 1, 2, 3, 4, -1])
    pairs = seen_label_pairs([f"t{i}" for i in range(6)], gold, hypotheses, split, negatives_per_text=None)
    assert {p["premise"] for p in pairs} == {"t0", "t2", "t4"}  # unseen-label and no-candidate texts left out
    assert {p["hypothesis"] for p in pairs} == {"h0", "h2", "h4"}  # unseen hypotheses never appear
    positives = [p for p in pairs if p["label"] == "entailment"]
    assert [(p["premise"], p["hypothesis"]) for p in positives] == [("t0", "h0"), ("t2", "h2"), ("t4", "h4")]
    assert len(pairs) == 3 * 3  # one positive and two negatives per text
    sampled = seen_label_pairs(["t0"], np.array([0]), hypotheses, split, negatives_per_text=1, seed=3)
    assert len(sampled) == 2 and sampled[1]["label"] == "neutral"


def test_harsh_rule_prefers_unseen_within_the_margin() -> None:
    seen = np.array([True, False, True])
    probabilities = np.array(
        [
            [0.60, 0.57, 0.1],  # seen ahead by 0.03 < alpha: the unseen label
            [0.70, 0.60, 0.1],  # seen ahead by 0.10 > alpha: the seen label
            [0.20, 0.30, 0.1],  # unseen ahead anyway
            [0.10, 0.05, 0.1001],  # best seen is label 2, ahead by 0.0501 > alpha
        ]
    )
    assert harsh_decisions(probabilities, seen, alpha=0.05).tolist() == [1, 0, 1, 2]
    assert harsh_decisions(probabilities, seen, alpha=0.0).tolist() == [0, 0, 1, 2]


def test_group_f1_separates_seen_and_unseen_labels() -> None:
    split = LabelSplit("even", (0, 2), (1, 3))
    gold = np.array([0, 0, 1, 1, 2, 3])
    predicted = np.array([0, 0, 1, 1, 2, 2])  # all seen right; label 3 missed, predicted as seen label 2
    report = group_f1(gold, predicted, split)
    assert report["unseen_macro_f1"] == pytest.approx(0.5)  # label 1: F1 1, label 3: F1 0
    assert report["seen_macro_f1"] == pytest.approx((1.0 + 2 / 3) / 2)  # label 2: P 0.5, R 1
    assert report["seen_texts"] == 3 and report["unseen_texts"] == 3


def test_run_unseen_without_and_with_a_finetuned_scorer(tmp_path) -> None:
    labels = ["sports", "politics", "cooking", "music"]
    texts = ["sports game", "politics vote", "cooking pasta", "music song"] * 3
    task = Task("toy", texts, np.array([0, 1, 2, 3] * 3), labels, labels)
    trained: list[str] = []
    scorers: list[WordOverlapScorer] = []

    def finetuned(split: LabelSplit, pairs_path):
        trained.append(pairs_path.name)
        assert all(json.loads(line)["hypothesis"] in [labels[i] for i in split.seen] for line in pairs_path.open())
        scorers.append(WordOverlapScorer())
        return scorers[-1]

    config = UnseenConfig(work_dir=tmp_path)
    base = WordOverlapScorer()
    report = run_unseen(task, task, labels, base, config, finetuned)
    assert trained == ["pairs-even.jsonl", "pairs-odd.jsonl"]
    # Each split's partially-unseen numbers are its own fine-tuned scorer's (the base scorer scores once, for fully unseen).
    assert base.calls == [labels] and [scorer.calls for scorer in scorers] == [[labels], [labels]]
    assert report["fully_unseen"]["macro_f1"] == 1.0
    assert report["partially_unseen"]["mean"]["unseen_weighted_f1"] == 1.0
    without = run_unseen(task, task, labels, WordOverlapScorer(), config)
    assert without["partially_unseen"] is None and len(without["fully_unseen"]["splits"]) == 2


def test_banking77_training_pairs_from_the_real_training_split(tmp_path) -> None:
    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import stratified_sample

    if not (SHARED_DATA / "btzsc-train" / "banking77.jsonl").exists():
        pytest.skip(f"banking77 training split not found under {SHARED_DATA}")
    train, _ = load_btzsc_task("banking77", SHARED_DATA / "btzsc-train", unlabelled="exclude")
    train = stratified_sample(train, 300, seed=0)
    first, second = label_halves(len(train.label_names))
    assert len(first.seen) + len(second.seen) == 72
    pairs = seen_label_pairs(train.texts, train.gold, train.hypotheses, first, negatives_per_text=4)
    seen_hypotheses = {train.hypotheses[i] for i in first.seen}
    assert {p["hypothesis"] for p in pairs} <= seen_hypotheses
    assert sum(p["label"] == "entailment" for p in pairs) * 5 == len(pairs)


def _banking77_folders(tmp_path, btzsc_dir, rows: int = 400):
    """A test folder and a training folder, each with its own (small) banking77.jsonl: the first ``rows`` lines of
    the test split, and ``rows`` lines spread over the training split, which is sorted by class (a test set copied
    as training data is refused)."""
    test_dir, train_dir = tmp_path / "test", tmp_path / "train"
    for folder, source, spread in (
        (test_dir, btzsc_dir, False),
        (train_dir, shared_path("btzsc-train/banking77.jsonl").parent, True),
    ):
        folder.mkdir()
        lines = (source / "banking77.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        (folder / "banking77.jsonl").write_text(
            "".join(lines[:: len(lines) // rows if spread else 1][:rows]), encoding="utf-8"
        )
    return test_dir, train_dir


def test_unseen_never_trains_on_the_hubs_test_split(zstc_cli, tmp_path, btzsc_dir, monkeypatch) -> None:
    """`--train-data hub` loaded btzsc/btzsc's split 'test' (the only split it publishes) as training data: the model
    was fine-tuned on the texts it was then scored on. It is refused, naming --train-data, before the hub is asked."""
    calls: list[tuple] = []
    fake = types.ModuleType("datasets")
    fake.load_dataset = lambda *args, **kwargs: calls.append((args, kwargs)) or []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "datasets", fake)
    code, _, err = zstc_cli(
        "unseen",
        "-m",
        MINILM,
        "--data",
        str(btzsc_dir),
        "--train-data",
        "hub",
        "--task",
        "banking77",
        "--no-finetune",
        "--max-samples",
        "20",
    )
    assert (
        calls == [] and code == 2 and err.startswith("error: --train-data hub: btzsc/btzsc publishes only test splits")
    ), (calls, err)


def test_unseen_refuses_the_test_data_as_training_data(zstc_cli, tmp_path, btzsc_dir) -> None:
    """`--train-data` the same folder as `--data` ran silently (the report's data_sha256 equal to its
    train_data_sha256); so did a training file holding the test texts. Both are refused before the model loads,
    naming --train-data and, for shared texts, how many."""
    args = [
        "unseen",
        "-m",
        MINILM,
        "--data",
        str(btzsc_dir),
        "--task",
        "banking77",
        "--no-finetune",
        "--max-samples",
        "20",
    ]
    code, _, err = zstc_cli(*args, "--train-data", str(btzsc_dir))
    assert code == 2 and err.startswith("error: --train-data ") and "holds the same data as the test set" in err, err
    # The test split with its texts re-spaced and re-cased, behind the first 2000 training texts: another file, the same texts.
    train_dir = tmp_path / "train"
    train_dir.mkdir()
    train = (shared_path("btzsc-train/banking77.jsonl")).read_text(encoding="utf-8").splitlines(keepends=True)[:2000]
    test = [json.loads(line) for line in (btzsc_dir / "banking77.jsonl").read_text(encoding="utf-8").splitlines()]
    copied = [json.dumps({**row, "text": "  " + row["text"].upper()}) + "\n" for row in test if row["label"] >= 0]
    (train_dir / "banking77.jsonl").write_text("".join(train + copied), encoding="utf-8")
    code, _, err = zstc_cli(*args, "--train-data", str(train_dir))
    assert code == 2 and err.startswith(
        f"error: --train-data {train_dir / 'banking77.jsonl'}: 2880 of the 2880 test texts of banking77 are among"
    ), err


def test_the_real_training_split_shares_only_a_few_texts_with_the_test_set(btzsc_dir) -> None:
    """banking77's own splits share 7 texts (whitespace and case ignored): natural duplicates, counted, not refused."""
    from zstc.benchmark.data import load_btzsc_task
    from zstc.yin.unseen import check_training_data

    test, _ = load_btzsc_task("banking77", btzsc_dir, unlabelled="exclude")
    train, _ = load_btzsc_task("banking77", shared_path("btzsc-train/banking77.jsonl").parent, unlabelled="exclude")
    assert check_training_data(test, train) == 7


def test_unseen_out_may_not_be_the_training_file(zstc_cli, tmp_path, btzsc_dir) -> None:
    """--out was checked against --data's files only: `-o TRAIN/banking77.jsonl` replaced the training split with
    the report. It is now refused, naming --out, before any work, and the file is untouched."""
    test_dir, train_dir = _banking77_folders(tmp_path, btzsc_dir)
    training = train_dir / "banking77.jsonl"
    before = training.read_bytes()
    code, _, err = zstc_cli(
        "unseen",
        "-m",
        MINILM,
        "--data",
        str(test_dir),
        "--train-data",
        str(train_dir),
        "--task",
        "banking77",
        "--no-finetune",
        "--max-samples",
        "20",
        "-o",
        str(training),
    )
    assert code != 0 and err.startswith("error: ") and "--out" in err and "is the input" in err, err
    assert training.read_bytes() == before


def test_a_finished_fine_tune_is_reused_only_when_trained_as_asked(tmp_path) -> None:
    """A model already in --work-dir was reused whatever it had been trained with: another --base-model,
    --max-steps or seed, or other training pairs (another sample or --hypotheses) silently gave the old model's
    numbers. It is reused only when its training record matches; otherwise the run stops, naming what differs."""
    from zstc.runs.provenance import sha256_file
    from zstc.errors import DataError
    from zstc.yin.unseen import finetune_on_seen

    pairs = tmp_path / "pairs-even.jsonl"
    pairs.write_text('{"premise": "t", "hypothesis": "h", "label": "entailment"}\n', encoding="utf-8")
    model = tmp_path / "model-pairs-even"
    model.mkdir()
    options = {"seed": 0, "max_steps": 300, "dev_size": 300, "eval_fraction": 0.05, "device": None, "precision": "fp32"}
    record = {
        "config": {"backbone": "base", "variant": "binary", **options, "device": "cpu"},
        "data": {"train": {"sha256": sha256_file(pairs)}},
    }
    (model / "zstc_training.json").write_text(json.dumps(record), encoding="utf-8")
    assert finetune_on_seen(pairs, "base", model, **options) == str(model)  # as asked: reused
    with pytest.raises(DataError, match="max_steps 300 .now 10."):
        finetune_on_seen(pairs, "base", model, **{**options, "max_steps": 10})
    with pytest.raises(DataError, match="backbone 'base' .now 'other'."):
        finetune_on_seen(pairs, "other", model, **options)
    pairs.write_text('{"premise": "t", "hypothesis": "h2", "label": "entailment"}\n', encoding="utf-8")
    with pytest.raises(DataError, match="training pairs"):
        finetune_on_seen(pairs, "base", model, **options)


def test_a_finished_fine_tune_is_reused_only_at_the_precision_and_backbone_weights_asked(
    tmp_path, monkeypatch, nli_folder
) -> None:
    """The precision and the backbone's weights were not compared: a bf16 run then an fp32 run with one --work-dir
    reused the bf16-trained weights and the report said fp32; a local --base-model folder retrained in place was
    reused by its path. The precision is compared as resolved (``auto`` means bf16 on one machine, fp32 on another),
    the backbone by the content hash the trainer records (``backbone_revision``)."""
    import shutil

    from zstc.runs.provenance import model_identity, sha256_file
    from zstc.yin.unseen import finetune_on_seen

    backbone = tmp_path / "backbone"
    shutil.copytree(nli_folder, backbone)
    pairs = tmp_path / "pairs-even.jsonl"
    pairs.write_text('{"premise": "t", "hypothesis": "h", "label": "entailment"}\n', encoding="utf-8")
    model = tmp_path / "model-pairs-even"
    model.mkdir()
    options = {"seed": 0, "max_steps": 300, "dev_size": 300, "eval_fraction": 0.05, "device": "cpu"}
    record = {
        "config": {"backbone": str(backbone), "variant": "binary", **options, "precision": "bf16"},
        "backbone_revision": model_identity(str(backbone)),
        "data": {"train": {"sha256": sha256_file(pairs)}},
    }
    assert record["backbone_revision"].startswith("sha256:")
    (model / "zstc_training.json").write_text(json.dumps(record), encoding="utf-8")
    assert finetune_on_seen(pairs, str(backbone), model, **options, precision="bf16") == str(
        model
    )  # as trained: reused
    with pytest.raises(DataError, match=f"{model}: .*precision 'bf16' .now 'fp32'.*--work-dir"):
        finetune_on_seen(pairs, str(backbone), model, **options, precision="fp32")
    monkeypatch.setenv("ZSTC_AUTO_PRECISION", "bf16")  # auto meaning bf16 here, as on a CPU with AMX
    assert finetune_on_seen(pairs, str(backbone), model, **options, precision="auto") == str(model)
    monkeypatch.setenv("ZSTC_AUTO_PRECISION", "fp32")
    with pytest.raises(DataError, match="precision 'bf16' .now 'fp32'"):
        finetune_on_seen(pairs, str(backbone), model, **options, precision="auto")
    config = json.loads((backbone / "config.json").read_text(encoding="utf-8"))
    (backbone / "config.json").write_text(
        json.dumps({**config, "hidden_dropout_prob": 0.2}), encoding="utf-8"
    )  # retrained in place
    with pytest.raises(DataError, match="the backbone's weights sha256:"):
        finetune_on_seen(pairs, str(backbone), model, **options, precision="bf16")


def test_unseen_report_records_the_fine_tuning_precision(
    zstc_cli, tmp_path, btzsc_dir, nli_folder, monkeypatch
) -> None:
    """The report's settings did not say at which precision the models were fine-tuned; they now do, resolved
    (``auto`` as this machine resolves it), and fine-tuning is asked for that precision."""
    import zstc.yin.unseen as unseen_module

    asked: list[dict] = []

    def finetune_spy(pairs, base, out, **options):
        asked.append(options)
        return str(nli_folder)

    monkeypatch.setattr(unseen_module, "finetune_on_seen", finetune_spy)
    monkeypatch.setenv("ZSTC_AUTO_PRECISION", "bf16")
    test_dir, train_dir = _banking77_folders(tmp_path, btzsc_dir, rows=40)
    out = tmp_path / "unseen.json"
    code, _, err = zstc_cli(
        "unseen",
        "-m",
        str(nli_folder),
        "--family",
        "nli",
        "--data",
        str(test_dir),
        "--train-data",
        str(train_dir),
        "--task",
        "banking77",
        "--max-samples",
        "4",
        "--max-train-samples",
        "40",
        "--work-dir",
        str(tmp_path / "work"),
        "--precision",
        "auto",
        "-o",
        str(out),
    )
    assert code == 0, err
    assert json.loads(out.read_text(encoding="utf-8"))["settings"]["finetune_precision"] == "bf16"
    assert [options["precision"] for options in asked] == ["auto", "auto"]  # resolved by the trainer as above


def test_unseen_report_records_its_settings(zstc_cli, tmp_path, btzsc_dir) -> None:
    """The unseen report recorded alpha and the negatives but not the sample sizes, seed, hypotheses, template or
    the data's content: two reports with different numbers could not say why. They are now under settings."""
    from zstc.runs.provenance import sha256_file

    test_dir, train_dir = _banking77_folders(tmp_path, btzsc_dir)
    out = tmp_path / "unseen.json"
    code, _, err = zstc_cli(
        "unseen",
        "-m",
        MINILM,
        "--data",
        str(test_dir),
        "--train-data",
        str(train_dir),
        "--task",
        "banking77",
        "--no-finetune",
        "--hypotheses",
        "name",
        "--template",
        "It is {}.",
        "--max-samples",
        "30",
        "--max-train-samples",
        "60",
        "--seed",
        "3",
        "-o",
        str(out),
    )
    assert code == 0, err
    settings = json.loads(out.read_text(encoding="utf-8"))["settings"]
    assert settings["max_samples"] == 30 and settings["max_train_samples"] == 60 and settings["seed"] == 3
    assert settings["hypotheses"] == "name" and settings["template"] == "It is {}." and settings["finetune"] is False
    assert settings["data_sha256"] == sha256_file(test_dir / "banking77.jsonl")
    assert settings["train_data_sha256"] == sha256_file(train_dir / "banking77.jsonl")


def test_unseen_applies_the_harsh_margin_of_005_to_entailment_probabilities(
    zstc_cli, tmp_path, btzsc_dir, nli_folder, monkeypatch
) -> None:
    """PROTOCOL.md s.7: a seen label is preferred over an unseen one only if its *probability* is higher by alpha
    (0.05). `zstc unseen` scores the fine-tuned model as probabilities (score type 'prob', not the NLI default
    log-odds, on which 0.05 would be another rule) with alpha 0.05 unless told otherwise."""
    import zstc.yin.unseen as unseen_module

    assert unseen_module.DEFAULT_ALPHA == 0.05 and UnseenConfig().alpha == 0.05
    seen: dict[str, object] = {}

    class Stop(Exception):
        pass

    def run_unseen_spy(test, train, hypotheses, base_scorer, config, finetuned, *, log):
        split = label_halves(len(test.label_names))[0]
        scorer = finetuned(split, tmp_path / "pairs-even.jsonl")
        seen.update(alpha=config.alpha, score_type=scorer.score_type, family=scorer.family)
        raise Stop

    monkeypatch.setattr(unseen_module, "finetune_on_seen", lambda pairs, base, out, **options: str(nli_folder))
    monkeypatch.setattr(unseen_module, "run_unseen", run_unseen_spy)
    test_dir, train_dir = _banking77_folders(tmp_path, btzsc_dir, rows=40)
    with pytest.raises(Stop):
        zstc_cli(
            "unseen",
            "-m",
            MINILM,
            "--data",
            str(test_dir),
            "--train-data",
            str(train_dir),
            "--task",
            "banking77",
            "--work-dir",
            str(tmp_path / "work"),
        )
    assert seen == {"alpha": 0.05, "score_type": "prob", "family": "nli"}
