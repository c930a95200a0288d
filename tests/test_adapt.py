"""Corpus adaptation (zstc.adapt): reads only scores, deterministic, sane on degenerate and extreme corpora."""

from __future__ import annotations

import numpy as np
import pytest

from zstc.adapt import METHODS, estimate
from zstc.errors import DataError, UnknownOptionError

ADAPTING = [m for m in METHODS if m != "none"]


def biased_corpus(seed: int = 0, texts: int = 300, labels: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Cosine-like scores of a model biased toward label 0: each text's own label scores 0.1 above the rest on
    average, label 0 another 0.12 above every text's others."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, labels, texts)
    scores = 0.3 + 0.03 * rng.standard_normal((texts, labels))
    scores[np.arange(texts), gold] += 0.1
    scores[:, 0] += 0.12
    return scores, gold


@pytest.mark.parametrize("method", ["centre", "balance"])
def test_balancing_undoes_a_label_bias(method: str) -> None:
    scores, gold = biased_corpus()
    before = (scores.argmax(axis=1) == gold).mean()
    after = (estimate(scores, method, temperature=0.061).decisions(scores) == gold).mean()
    assert (scores.argmax(axis=1) == 0).mean() > 0.75  # today's decisions: nearly everything is label 0
    assert after > before + 0.2


@pytest.mark.parametrize("method", ["em", "em-map"])
def test_em_finds_a_skewed_prior(method: str) -> None:
    """An unbiased model on a corpus 80% of one label: EM's prior follows the corpus, where balancing would not."""
    rng = np.random.default_rng(0)
    gold = (rng.random(1000) > 0.8).astype(int)  # label 0 for 80% of the texts
    scores = 0.3 + 0.03 * rng.standard_normal((1000, 2))
    scores[np.arange(1000), gold] += 0.05
    adaptation = estimate(scores, method, temperature=0.018)  # the calibrated one: 2 * 0.03**2 / 0.1
    assert 0.7 < adaptation.shares[0] < 0.9
    assert (adaptation.decisions(scores) == gold).mean() > (scores.argmax(axis=1) == gold).mean()


def test_adapt_estimates_on_a_stated_sample_and_applies_to_every_text() -> None:
    from zstc.adapt import adapt

    scores, _ = biased_corpus()
    sample = np.arange(0, 300, 3)
    adapted = adapt(scores, "balance", temperature=0.061, sample=sample)
    np.testing.assert_array_equal(adapted, estimate(scores[sample], "balance", temperature=0.061).logits(scores))
    assert not np.allclose(adapted, adapt(scores, "balance", temperature=0.061))  # another basis, other offsets


def test_balance_gives_equal_label_mass() -> None:
    scores, _ = biased_corpus(texts=2000)
    adaptation = estimate(scores, "balance", temperature=0.061)
    # Shrunk by n / (n + K): within a fraction of a percent of equal mass on 2000 texts.
    np.testing.assert_allclose(adaptation.shares, 1 / 3, atol=0.01)


@pytest.mark.parametrize("method", list(METHODS))
def test_deterministic_and_independent_of_text_order(method: str) -> None:
    scores, _ = biased_corpus()
    first = estimate(scores, method, temperature=0.061)
    again = estimate(scores.copy(), method, temperature=0.061)
    np.testing.assert_array_equal(first.offsets, again.offsets)
    # The same texts in another order: the same per-label offsets (up to float rounding) and the same decisions.
    order = np.random.default_rng(1).permutation(len(scores))
    shuffled = estimate(scores[order], method, temperature=0.061)
    np.testing.assert_allclose(shuffled.offsets, first.offsets, atol=1e-9)
    np.testing.assert_array_equal(shuffled.decisions(scores), first.decisions(scores))


@pytest.mark.parametrize("method", list(METHODS))
def test_one_text_keeps_its_decision(method: str) -> None:
    scores = np.array([[0.2, 0.5, 0.4]])
    adaptation = estimate(scores, method, temperature=0.061)
    assert adaptation.decisions(scores).tolist() == [1]
    assert np.isfinite(adaptation.probabilities(scores)).all()


@pytest.mark.parametrize("method", list(METHODS))
def test_one_label(method: str) -> None:
    scores = np.array([[0.2], [0.9], [-0.4]])
    adaptation = estimate(scores, method, temperature=0.061)
    assert adaptation.offsets.tolist() == [0.0]
    assert adaptation.decisions(scores).tolist() == [0, 0, 0]
    np.testing.assert_array_equal(adaptation.probabilities(scores), 1.0)


@pytest.mark.parametrize("method", ADAPTING)
def test_a_label_no_text_prefers(method: str) -> None:
    scores, _ = biased_corpus(texts=200)
    scores[:, 2] = -1.0  # far below every other score of every text
    adaptation = estimate(scores, method, temperature=0.061)
    assert np.isfinite(adaptation.offsets).all() and np.isfinite(adaptation.shares).all()
    assert adaptation.iterations <= 200


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("scale", ["cosine", "prob", "distribution"])
def test_extreme_scores_give_no_nan(method: str, scale: str) -> None:
    if scale == "cosine":
        scores = np.array([[1e30, -1e30, 0.0], [-1e30, 1e30, 0.0], [0.0, 0.0, 1e-300], [1e30, 1e30, -1e30]])
    else:  # probabilities: 0 and 1 exactly
        scores = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    adaptation = estimate(scores, method, scale=scale, temperature=0.001)
    assert np.isfinite(adaptation.offsets).all()
    assert np.isfinite(adaptation.probabilities(scores)).all()


def test_refusals() -> None:
    with pytest.raises(UnknownOptionError, match="adapt must be one of none, centre, balance"):
        estimate(np.zeros((2, 2)), "sinkhorn")
    with pytest.raises(DataError, match="1 NaN or infinite"):
        estimate(np.array([[0.1, np.nan]]), "balance")
    with pytest.raises(DataError, match=r"shape \(0, 2\)"):
        estimate(np.zeros((0, 2)), "balance")
    with pytest.raises(DataError, match="estimated for 2"):
        estimate(np.zeros((2, 2)), "balance").decisions(np.zeros((2, 3)))


def test_classifier_adapts_a_corpus_on_a_real_model(minilm_native) -> None:
    """all-MiniLM-L6-v2 on the review files: predict(adapt=...) decides by the adaptation estimated from the texts'
    own score matrix, its probabilities agree with its labels, and one text keeps its unadapted label."""
    import csv
    from pathlib import Path

    from zstc.api import Classifier

    rows = [
        row
        for name in ("reviews.csv", "reviews_heldout.csv")
        for row in csv.DictReader((Path(__file__).parent / "data" / name).open(encoding="utf-8"))
    ]
    texts, labels = [row["text"] for row in rows], ["positive", "negative", "about delivery"]
    classifier = Classifier(minilm_native)
    matrix = classifier.scores(texts, labels)
    adaptation = classifier.adaptation(matrix, "balance")
    assert adaptation.temperature == classifier.temperature() and adaptation.texts == len(texts)
    plain = classifier.predict(texts, labels)
    adapted = classifier.predict(texts, labels, adapt="balance")
    assert [p.label for p in adapted] == [labels[i] for i in adaptation.decisions(matrix)]
    assert [p.label for p in adapted] != [p.label for p in plain]  # the offsets moved some decision
    assert all(max(p.scores, key=p.scores.__getitem__) == p.label for p in adapted)
    assert [p.label for p in classifier.predict(texts, labels, adapt="none")] == [p.label for p in plain]
    [alone] = classifier.predict(texts[:1], labels, adapt="balance")
    assert alone.label == plain[0].label


def test_api_refusals(minilm_native) -> None:
    from zstc.api import Classifier, classify
    from zstc.errors import OptionError

    with pytest.raises(UnknownOptionError, match="adapt must be one of"):
        Classifier(minilm_native).predict(["a text"], ["a", "b"], adapt="yes")
    with pytest.raises(OptionError, match="adapt balance applies to single-label"):
        classify(["a text"], ["a", "b"], model=minilm_native, multi_label=True, adapt="balance")


def _small_data(btzsc_dir, folder, shuffle_gold: bool):
    """Every 12th text of financialphrasebank (all three classes), gold labels kept or shuffled among the texts."""
    import json
    import random

    folder.mkdir()
    (folder / "tasks.json").write_bytes((btzsc_dir / "tasks.json").read_bytes())
    rows = [
        json.loads(line) for line in (btzsc_dir / "financialphrasebank.jsonl").read_text(encoding="utf-8").splitlines()
    ][::12]
    if shuffle_gold:
        golds = [(row["label"], row["label_text"]) for row in rows]
        random.Random(0).shuffle(golds)
        rows = [{**row, "label": label, "label_text": text} for row, (label, text) in zip(rows, golds)]
    (folder / "financialphrasebank.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return folder


def test_bench_adapts_without_reading_gold(zstc_cli, tmp_path, btzsc_dir):
    """bench --adapt: decisions of the stored scores adapted as one corpus, the same with the gold labels shuffled,
    recorded in the run identity and the title, reused on a rerun (its stored decisions checked), off by default."""
    import json

    from zstc.adapt import corpus_decisions
    from zstc.benchmark.store import ResultStore

    MINILM = "sentence-transformers/all-MiniLM-L6-v2"
    predicted = {}
    for shuffled in (False, True):
        data = _small_data(btzsc_dir, tmp_path / f"data-{shuffled}", shuffled)
        out = tmp_path / f"r-{shuffled}.json"
        args = [
            "bench",
            "--model",
            MINILM,
            "--data",
            str(data),
            "--tasks",
            "financialphrasebank",
            "--out",
            str(out),
            "--no-cache",
            "--adapt",
            "balance",
        ]
        code, stdout, err = zstc_cli(*args)
        assert code == 0, err
        assert "decisions adapted to each dataset: balance" in stdout
        summary = json.loads(out.read_text())
        assert summary["evaluation"]["run_identity"]["adapt"] == "balance"
        result = ResultStore(out).load("financialphrasebank")
        predicted[shuffled] = result.predicted
        assert (result.predicted == corpus_decisions(result.scores, "balance", result.scorer)).all()
        assert (result.predicted != result.scores.argmax(axis=1)).any()  # the adaptation moved some decision
    assert (predicted[False] == predicted[True]).all()
    code, _, err = zstc_cli(*args)  # the same run again: its stored result passes the check and is reused
    assert code == 0 and "reusing a finished result" in err
    code, _, err = zstc_cli(*args[:-2])  # without --adapt: a run of other settings, refused at the same --out
    assert code == 2 and "adapt" in err
    refused = [tmp_path / "refused.json" if arg == str(out) else arg for arg in args[:-2]]
    for extra, message in (
        (["--adapt", "balance", "--multi-label"], "applies to single-label"),
        (["--adapt", "sinkhorn"], "adapt must be one of"),
    ):
        code, _, err = zstc_cli(*map(str, refused), *extra)
        assert code == 2 and message in err and not (tmp_path / "refused.json").exists(), err


def test_classify_adapts_a_whole_file_and_a_resumed_run_equals_one_run(zstc_cli, tmp_path, monkeypatch):
    """classify --adapt: one adaptation estimated from the whole file, applied to every chunk, the API's decisions on
    the same texts; a run killed after its first chunk and resumed writes the same bytes as one uninterrupted run."""
    import json
    from pathlib import Path

    from test_classify_stream import _interrupted_after_first_chunk
    from zstc.api import Classifier

    source = Path(__file__).parent / "data" / "reviews.csv"
    labels = "positive,negative,about delivery"
    args = ["classify", str(source), "--labels", labels, "--chunk-size", "7", "--adapt", "balance"]
    code, _, err = zstc_cli(*args, "--out", str(tmp_path / "one.jsonl"))
    assert code == 0 and "--adapt balance: estimated from 20 texts" in err, err
    written = [json.loads(line) for line in (tmp_path / "one.jsonl").read_text().splitlines()]
    plain = Classifier().predict([row["text"] for row in written], labels.split(","))
    adapted = Classifier().predict([row["text"] for row in written], labels.split(","), adapt="balance")
    assert [row["label"] for row in written] == [p.label for p in adapted] != [p.label for p in plain]

    resumed = tmp_path / "resumed.jsonl"
    assert (
        _interrupted_after_first_chunk(
            zstc_cli, monkeypatch, [*args, "--out", str(resumed)], tmp_path / "resumed.jsonl.partial.json"
        )["rows"]
        == 7
    )
    code, _, err = zstc_cli(*args, "--out", str(tmp_path / "resumed.jsonl"))
    assert code == 0 and "7 predictions from an interrupted run are kept" in err, err
    assert (tmp_path / "resumed.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()


@pytest.mark.slow
def test_classify_adapt_on_ray_decides_as_one_local_run(zstc_cli, tmp_path):
    """classify --adapt --engine ray: the actors score the input's chunks, the adaptation is estimated from all their
    scores, then every chunk is decided with it: the labels and scores of one in-process run, which the
    adaptation changed (chunks of 7: no chunk alone is the corpus)."""
    from pathlib import Path

    pq = pytest.importorskip("pyarrow.parquet")
    from test_scale import run_child

    source = Path(__file__).parent / "data" / "reviews.csv"
    args = ["--labels", "positive,negative,about delivery", "--chunk-size", "7", "--precision", "fp32"]
    for adapt, name in (("none", "plain"), ("balance", "local")):
        code, _, err = zstc_cli(
            "classify", str(source), *args, "--adapt", adapt, "--out", str(tmp_path / f"{name}.parquet")
        )
        assert code == 0, err
    done = run_child("classify", str(source), *args, "--adapt", "balance", "--out", str(tmp_path / "ray"))
    assert "--adapt balance: estimated from 20 texts" in done.stderr, done.stderr
    plain, local = (pq.read_table(tmp_path / f"{name}.parquet").to_pylist() for name in ("plain", "local"))
    remote = pq.read_table(tmp_path / "ray" / "reviews.parquet").to_pylist()
    assert [row["label"] for row in remote] == [row["label"] for row in local] != [row["label"] for row in plain]
    for a, b in zip(remote, local):
        assert a["scores"] == pytest.approx(b["scores"], abs=1e-6)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--adapt", "sinkhorn"], "adapt must be one of none, centre, balance"),
        (["--adapt-sample", "5"], "--adapt-sample applies to --adapt"),
        (["--adapt", "balance", "--multi-label"], "applies to single-label"),
        (["--adapt", "balance", "--shortlist", "1"], "shortlist scores only each text's top labels"),
    ],
)
def test_classify_adapt_refusals(zstc_cli, extra, message):
    from pathlib import Path

    source = Path(__file__).parent / "data" / "reviews.csv"
    code, _, err = zstc_cli("classify", str(source), "--labels", "positive,negative", *extra)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_classify_adapt_refuses_stdin(zstc_cli, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("a text\n"))
    code, _, err = zstc_cli("classify", "-", "--labels", "positive,negative", "--adapt", "balance")
    assert code == 2 and "reads the input twice" in err and "stdin" in err, err
