"""Multi-label decisions with "none": thresholds, label-wise weighted F1, threshold fitting, API and CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.metrics import f1_score
from yin_helpers import MINILM, WordOverlapScorer

from zstc.errors import LabelError, OptionError, UnknownNameError
from zstc.multilabel import fit_thresholds, gold_matrix, multilabel_metrics
from zstc.policy import DEFAULT_THRESHOLDS, decide, default_threshold, label_sets, parse_label_thresholds, score_type_of

LABELS = ["a", "b", "c"]
SCORES = np.array([[0.9, 0.6, 0.1], [0.2, 0.1, 0.3], [0.4, 0.8, 0.7]], dtype=np.float32)


def test_threshold_decisions_with_none_and_overrides() -> None:
    chosen = decide(SCORES, LABELS, 0.5)
    assert label_sets(chosen, LABELS) == [["a", "b"], ["none"], ["b", "c"]]
    chosen = decide(SCORES, LABELS, 0.5, {"c": 0.25, "b": 0.65})
    assert label_sets(chosen, LABELS) == [["a"], ["c"], ["b", "c"]]


def test_gold_matrix_maps_no_candidate_to_none() -> None:
    np.testing.assert_array_equal(gold_matrix(np.array([2, -1, 0]), 3), [[0, 0, 1], [0, 0, 0], [1, 0, 0]])


def test_weighted_f1_by_hand() -> None:
    gold = np.array([[1, 0, 0], [0, 0, 0], [0, 1, 1]], dtype=bool)
    chosen = decide(SCORES, LABELS, 0.5)
    report = multilabel_metrics(gold, chosen, LABELS)
    # Columns a, b, c, none; gold none only in row 2, predicted none only in row 2.
    truth = np.column_stack([gold, ~gold.any(axis=1)])
    predicted = np.column_stack([chosen, ~chosen.any(axis=1)])
    assert report["weighted_f1"] == pytest.approx(f1_score(truth, predicted, average="weighted"))
    per = report["per_label"]
    assert per["a"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert per["b"]["precision"] == 0.5 and per["b"]["recall"] == 1.0
    assert per["none"]["f1"] == 1.0 and report["none_gold"] == 1 and report["none_predicted"] == 1


def test_fit_thresholds_separates_dev_set() -> None:
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, size=60)
    scores = rng.uniform(0.0, 0.4, size=(60, 3)).astype(np.float32)
    scores[np.arange(60), gold] += 0.5  # gold scores in [0.5, 0.9], the rest below 0.4
    threshold, overrides = fit_thresholds(scores, gold, LABELS, per_label=True)
    assert 0.4 <= threshold <= 0.5
    assert multilabel_metrics(gold, decide(scores, LABELS, threshold), LABELS)["weighted_f1"] == 1.0
    assert set(overrides) == set(LABELS) and all(0.4 <= v <= 0.5 for v in overrides.values())


def test_defaults_per_score_type() -> None:
    assert default_threshold("prob") == 0.5 and default_threshold("logodds") == 0.0
    assert score_type_of(WordOverlapScorer()) == "cosine"
    assert default_threshold("cosine") == DEFAULT_THRESHOLDS["cosine"]
    # Named as the parameter (the CLI prints it as --threshold), and an LLM's scores as what they are, not "type None".
    with pytest.raises(
        UnknownNameError,
        match=r"^llm models' scores \(a distribution over the labels\) have no default "
        r"multi-label cut; give threshold, a per-label one for every label",
    ) as missing:
        default_threshold(None, "llm")
    assert missing.value.parameters == ("threshold",)


def test_parse_label_thresholds() -> None:
    assert parse_label_thresholds(["a=0.4", "c=-1"], LABELS) == {"a": 0.4, "c": -1.0}
    with pytest.raises(LabelError, match="LABEL=NUMBER"):
        parse_label_thresholds(["a:0.4"], LABELS)
    with pytest.raises(LabelError, match="not one of the labels"):
        parse_label_thresholds(["z=0.4"], LABELS)


def test_api_multi_label(monkeypatch: pytest.MonkeyPatch) -> None:
    from zstc.api import Classifier

    classifier = Classifier()  # builds the scorer lazily: nothing loads
    classifier.scorer = WordOverlapScorer()
    predictions = classifier.predict_multi_label(
        ["sports and politics", "cooking"], ["sports", "politics"], threshold=0.5
    )
    assert [p.labels for p in predictions] == [["sports", "politics"], ["none"]]
    assert predictions[1].none and not predictions[0].none
    with pytest.raises(LabelError, match="'none'"):
        classifier.predict_multi_label(["x"], ["none", "sports"])
    single = classifier.predict_multi_label(["sports"], ["sports"], threshold=0.5)  # one yes/no label is fine
    assert single[0].labels == ["sports"]
    # ... but not under the embedding family's default rule (labels near the best one): it said yes to every text.
    with pytest.raises(
        LabelError, match=r"one label \('sports'\) with the default multi-label rule .* give threshold"
    ) as refused:
        classifier.predict_multi_label(["sports", "cooking"], ["sports"])
    assert refused.value.parameters == ("threshold",)
    assert classifier.predict_multi_label(["cooking"], ["sports"], per_label={"sports": 0.5})[0].labels == ["none"]
    # per_label is checked as --label-threshold is: a NaN made its label never pass, silently; an unknown label
    # was a ValueError, not a zstc error.
    from zstc.errors import OptionError

    with pytest.raises(OptionError, match=r"per_label\['sports'\] must be a finite number, got nan"):
        classifier.predict_multi_label(["sports"], ["sports", "politics"], per_label={"sports": float("nan")})
    with pytest.raises(LabelError, match="per_label: threshold given for 'cooking', which is not one of the labels"):
        classifier.predict_multi_label(["sports"], ["sports", "politics"], per_label={"cooking": 0.5})


class ProbabilityScorer(WordOverlapScorer):
    """Scores that are probabilities (as a yes/no reranker's, or NLI with score_type prob)."""

    family = "yesno"
    score_type = "prob"


def test_thresholds_on_probabilities_lie_in_0_1() -> None:
    """On probabilities (a Platt calibration's, or probability scores) --threshold 2 made every text "none" and -1
    passed every label, silently; raw cuts (cosines, log-odds) are not bounded."""
    from zstc.api import Classifier
    from zstc.errors import OptionError
    from zstc.probabilities import Calibration

    labels = ["sports", "politics"]
    platt = Classifier(WordOverlapScorer(), calibration=Calibration("platt", {"slope": 1.0, "intercept": 0.0}))
    probability = Classifier(ProbabilityScorer())
    for classifier, scale in ((platt, "a Platt calibration's"), (probability, "the model's scores are probabilities")):
        with pytest.raises(
            OptionError,
            match=re.escape(
                f"threshold must be >= 0 and <= 1, got 2: multi-label decides on probabilities here ({scale})"
            ),
        ) as refused:
            classifier.predict_multi_label(["sports"], labels, threshold=2)
        assert refused.value.parameters == ("threshold",)
        with pytest.raises(
            OptionError, match=re.escape("per_label: the threshold of 'politics' must be >= 0 and <= 1, got -1")
        ):
            classifier.predict_multi_label(["sports"], labels, per_label={"politics": -1})
        assert classifier.predict_multi_label(["sports"], labels, threshold=1)[0].labels == [
            "none"
        ]  # the bounds themselves pass
    raw = Classifier(LogOddsScorer())  # log-odds: a raw cut, any finite number
    assert raw.predict_multi_label(["sports"], labels, threshold=2)[0].labels == ["none"]
    assert raw.predict_multi_label(["sports"], labels, threshold=-1)[0].labels == ["sports", "politics"]


class LogOddsScorer(WordOverlapScorer):
    """Scores that are unbounded log-odds (an NLI model's)."""

    family = "nli"
    score_type = "logodds"


def test_thresholds_on_cosines_lie_in_minus_1_1() -> None:
    """A cosine lies in [-1, 1]: a cut of 5 made every text "none" and -5 passed every label, silently, as 2 and -1
    did on probabilities."""
    from zstc.api import Classifier
    from zstc.errors import OptionError

    labels = ["sports", "politics"]
    cosine = Classifier(WordOverlapScorer())  # the embedding family's score type: cosine
    with pytest.raises(
        OptionError,
        match=re.escape(
            "threshold must be >= -1 and <= 1, got 5: multi-label decides on cosine "
            "similarities here, which lie in [-1, 1]"
        ),
    ) as refused:
        cosine.predict_multi_label(["sports"], labels, threshold=5)
    assert refused.value.parameters == ("threshold",)
    with pytest.raises(
        OptionError, match=re.escape("per_label: the threshold of 'politics' must be >= -1 and <= 1, got -5")
    ):
        cosine.predict_multi_label(["sports"], labels, per_label={"politics": -5})
    assert cosine.predict_multi_label(["sports"], labels, threshold=-1)[0].labels == [
        "sports",
        "politics",
    ]  # the bounds pass


def test_api_fits_thresholds_on_labelled_texts() -> None:
    from zstc.api import Classifier

    classifier = Classifier()
    classifier.scorer = WordOverlapScorer()
    labels = ["sports", "politics"]
    dev = ["sports results", "politics today", "sports and politics", "a cake recipe", "weather report"]
    gold = [["sports"], ["politics"], ["sports", "politics"], ["none"], []]
    # Overlap scores are ~1 for a present label and ~0 otherwise: the fitted cut must fall between.
    threshold, per_label = classifier.fit_thresholds(dev, gold, labels, per_label=True)
    assert 0 < threshold < 0.99 and set(per_label) == set(labels)
    predictions = classifier.predict_multi_label(["politics again", "gardening"], labels, threshold=threshold)
    assert [p.labels for p in predictions] == [["politics"], ["none"]]
    with pytest.raises(LabelError, match="'cooking', which is not one of the labels"):
        classifier.fit_thresholds(["a cake"], [["cooking"]], labels)


@pytest.mark.slow
def test_classify_cli_fits_thresholds_on_a_labelled_file(tmp_path) -> None:
    from typer.testing import CliRunner

    from zstc.cli import app

    dev = tmp_path / "dev.jsonl"
    dev.write_text(
        "\n".join(
            json.dumps(row)
            for row in [
                {"text": "The striker scored a late winner.", "label": "sports"},
                {"text": "I was charged twice for one card payment.", "label": "banking"},
                {"text": "Parliament passed the budget after a long debate.", "label": "none"},
                {"text": "The bank froze my account after the match tickets purchase.", "label": ["sports", "banking"]},
            ]
        )
        + "\n"
    )
    texts = tmp_path / "t.txt"
    texts.write_text("The goalkeeper saved a penalty.\nThe weather will be sunny tomorrow.\n")
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "classify",
            str(texts),
            "-l",
            "sports,banking",
            "-m",
            MINILM,
            "--multi-label",
            "--fit-thresholds",
            str(dev),
            "--precision",
            "fp32",
        ],
    )  # thresholds: the same numbers everywhere
    assert result.exit_code == 0, result.output
    assert re.search(r"threshold [0-9.]+ fitted on 4 texts", result.stderr)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert "sports" in rows[0]["labels"] and rows[1]["labels"] == ["none"]
    refused = runner.invoke(
        app, ["classify", str(texts), "-l", "sports,banking", "-m", MINILM, "--fit-thresholds", str(dev)]
    )
    assert isinstance(refused.exception, OptionError) and "fit_thresholds applies to multi_label" in str(
        refused.exception
    )


@pytest.mark.slow
def test_classify_cli_multi_label(tmp_path) -> None:
    from typer.testing import CliRunner

    from zstc.cli import app

    texts = tmp_path / "t.txt"
    # The third text's cooking score (0.31 with the bare name) passes --threshold 0.12: only its --label-threshold stops it.
    texts.write_text(
        "The match ended 2-1 after extra time.\nMy card still hasn't arrived.\nBake the bread for forty minutes.\n"
    )
    result = CliRunner().invoke(
        app,
        [
            "classify",
            str(texts),
            "-l",
            "sports,banking,cooking",
            "-m",
            MINILM,
            "--multi-label",
            "--template",
            "{}",
            "--threshold",
            "0.12",
            "--label-threshold",
            "cooking=0.99",
            "--precision",
            "fp32",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [row["labels"] for row in rows] == [["sports"], ["banking"], ["none"]]
    assert set(rows[0]["scores"]) == {"sports", "banking", "cooking"}
    assert 0.12 < rows[2]["scores"]["cooking"] < 0.99  # the override, not the threshold, made it "none"


@pytest.mark.slow
def test_bench_multi_label_decides_by_the_default_rule_classify_uses(btzsc_dir, tmp_path) -> None:
    """``bench --multi-label`` without a threshold decides as ``classify --multi-label`` does: the embedding
    family's cut and its margin. With the cut 0.0 alone, nearly every one of banking77's 72 labels passed on every
    text (weighted F1 0.08), where the same model and hypotheses through the API give about one label a text."""
    from typer.testing import CliRunner

    from zstc.api import Classifier
    from zstc.benchmark.data import load_btzsc_sample
    from zstc.cli import app

    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "-m",
            MINILM,
            "--data",
            str(btzsc_dir),
            "--tasks",
            "banking77",
            "--max-samples",
            "24",
            "--multi-label",
            "--no-cache",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())["multi_label"]
    task, _, _ = load_btzsc_sample("banking77", btzsc_dir, max_samples=24)
    classifier = Classifier(MINILM, family="embedding")
    predictions = classifier.predict_multi_label(task.texts, task.label_names, descriptions=task.hypotheses)
    chosen = np.array([[label in p.labels for label in task.label_names] for p in predictions])
    assert summary["threshold"] == classifier.default_threshold() and summary["margin"] == classifier.default_margin()
    assert summary["by_dataset"]["banking77"] == multilabel_metrics(task.gold, chosen, task.label_names)
    assert chosen.sum() < 3 * len(task)  # a few labels a text, not nearly all 72


@pytest.mark.slow
def test_a_cut_for_one_label_leaves_the_other_labels_rule_as_it_was() -> None:
    """``--label-threshold sports=0.5`` turned every other label's default rule (cut 0.0 and the margin below the
    best label) into the plain cut 0.0: "Goal" went from ["sports"] to ["economy", "politics"], two labels whose
    scores (0.196, 0.180) had not changed passing because of a stricter cut on a third. A label's own cut decides
    that label; the others keep the rule, and the recorded settings say the margin still applies."""
    from zstc.api import Classifier

    classifier = Classifier(MINILM, family="embedding")
    labels = ["sports", "economy", "politics"]
    assert classifier.predict_multi_label(["Goal"], labels)[0].labels == ["sports"]
    assert classifier.predict_multi_label(["Goal"], labels, per_label={"sports": 0.5})[0].labels == ["none"]
    assert classifier.predict_multi_label(["Goal"], labels, per_label={"economy": 0.1})[0].labels == [
        "sports",
        "economy",
    ]
    assert (
        classifier.policy.multi_label(labels, None, {"sports": 0.5}).margin == classifier.default_margin() is not None
    )
    assert (
        classifier.policy.multi_label(labels, None, dict.fromkeys(labels, 0.5)).margin is None
    )  # each label its own cut
    assert classifier.policy.multi_label(labels, 0.1, {}).margin is None
    # One label with a cut of its own is a yes/no question, not the margin rule's one label that always passes.
    assert classifier.predict_multi_label(["Goal"], ["economy"], per_label={"economy": 0.5})[0].labels == ["none"]


class FixedProbabilityScorer(ProbabilityScorer):
    """The same probabilities for every call: texts are rows of ``matrix``."""

    def __init__(self, matrix: list[list[float]]) -> None:
        super().__init__()
        self.matrix = np.asarray(matrix, dtype=np.float32)

    def score(self, texts, labels, *, show_progress: bool = False) -> np.ndarray:
        return self.matrix[: len(texts), : len(labels)]


def test_a_fitted_threshold_on_probabilities_is_one_predict_accepts() -> None:
    """The fit's cut below the dev set's lowest score (every label passes: here, every dev text has both labels) is
    that score minus 1e-6: with a probability of 0.0 (a saturated model's), -1e-06, which predict_multi_label then
    refused ("threshold must be >= 0"), so a user could not use the threshold just fitted. Per-label cuts too."""
    from zstc.api import Classifier

    labels = ["sports", "politics"]
    classifier = Classifier(FixedProbabilityScorer([[0.0, 0.3], [0.9, 0.0], [0.4, 0.7]]))
    texts = ["one", "two", "three"]
    threshold, own = classifier.fit_thresholds(texts, [labels] * 3, labels, per_label=True)
    assert threshold == 0.0 and own == {"sports": 0.0, "politics": 0.0}
    predicted = classifier.predict_multi_label(texts, labels, threshold=threshold, per_label=own)
    assert [p.labels for p in predicted] == [["politics", "sports"], ["sports", "politics"], ["politics", "sports"]]
