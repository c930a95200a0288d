"""Hypothesis variants (Yin et al. 2019), WordNet definitions, the ensemble and template robustness."""

from __future__ import annotations

import json

import numpy as np
import pytest
from yin_helpers import MINILM, SHARED_DATA, WordOverlapScorer

from zstc.errors import LabelError, UnknownNameError
from zstc.hypotheses.variants import (
    ASPECT_TEMPLATES,
    HypothesisSet,
    aspect_template,
    build_hypotheses,
    make_hypothesis_provider,
    readable_label,
    score_hypotheses,
)
from zstc.benchmark.tasks import Task
from zstc.hypotheses.wordnet import wordnet_available
from zstc.yin.robustness import template_robustness

needs_wordnet = pytest.mark.skipif(
    not wordnet_available(), reason="WordNet not installed: run scripts/setup-system-packages.sh (Debian wordnet-base)"
)


def small_task() -> Task:
    texts = ["the match was a great sports event", "parliament voted on politics today", "sports fans cheered"]
    return Task(
        "toy", texts, np.array([0, 1, 0]), ["sports", "politics"], ["It is sports.", "It is politics."], family="topic"
    )


def test_aspect_templates_are_yins() -> None:
    """PROTOCOL.md s.7, verbatim: topic "this text is about {label}", emotion "this text expresses {label}",
    situation "the people there need {label}" (lower case, no period). The code had "This text is about {}."
    etc., which a cased model reads as another input."""
    assert ASPECT_TEMPLATES == {
        "topic": "this text is about {}",
        "emotion": "this text expresses {}",
        "situation": "the people there need {}",
    }
    assert aspect_template("emotion") == "this text expresses {}"
    assert aspect_template("sentiment") == "this text expresses {}"
    assert aspect_template("intent") == "this text is about {}"  # measured better than situation on banking77
    assert aspect_template(None) == "this text is about {}"
    from zstc.yin.robustness import DEFAULT_ROBUSTNESS_TEMPLATES

    assert DEFAULT_ROBUSTNESS_TEMPLATES[:3] == tuple(ASPECT_TEMPLATES.values())  # "Yin's three" are the protocol's


def test_name_variant_fills_template_with_readable_label() -> None:
    assert readable_label("Refund_not_showing_up") == "Refund not showing up"
    hypotheses = build_hypotheses(["card_arrival", "Sci/Tech"], "name", "This text is about {}.")
    assert list(hypotheses) == ["This text is about card arrival.", "This text is about Sci/Tech."]


def test_dataset_variant_keeps_the_verbalizers() -> None:
    task = small_task()
    assert list(make_hypothesis_provider("dataset")(task)) == task.hypotheses


def test_bad_template_and_variant_are_user_errors() -> None:
    with pytest.raises(LabelError, match="exactly one"):
        build_hypotheses(["a", "b"], "name", "no placeholder")
    # One message for the rule, whoever checks it (the API, build_hypotheses, the bench's provider, calibrate).
    one = r"^unknown hypothesis variant '{}': hypotheses must be one of dataset, name, definition, both, ensemble"
    with pytest.raises(UnknownNameError, match=one.format("synonyms")):
        build_hypotheses(["a", "b"], "synonyms", "{}")
    with pytest.raises(UnknownNameError, match=one.format("bogus")):
        make_hypothesis_provider("bogus")


def test_single_variant_is_scored_once_and_ensemble_averages() -> None:
    scorer = WordOverlapScorer()
    texts = ["sports on tv", "politics news"]
    single = HypothesisSet({"name": ["about sports", "about politics"]})
    np.testing.assert_allclose(
        score_hypotheses(scorer, texts, single), scorer.score(texts, ["about sports", "about politics"])
    )
    scorer.calls.clear()
    ensemble = HypothesisSet({"a": ["sports", "politics"], "b": ["sports on tv", "politics news here"]})
    averaged = score_hypotheses(scorer, texts, ensemble)
    assert len(scorer.calls) == 2
    expected = (
        scorer.score(texts, ["sports", "politics"]) + scorer.score(texts, ["sports on tv", "politics news here"])
    ) / 2
    np.testing.assert_allclose(averaged, expected, rtol=1e-6)
    assert list(ensemble)[0] == "sports | sports on tv"  # what result files record


def test_template_robustness_summary() -> None:
    # "{}s" fills in words no text has ("sportss"): every text ties and goes to the first label, sports (macro-F1
    # (0.8 + 0) / 2); the others name the label a text shares: every text right.
    report = template_robustness(WordOverlapScorer(), small_task(), ["This text is about {}.", "{}s", "{}"])
    values = [row["macro_f1"] for row in report["templates"]]
    assert values == pytest.approx([1.0, 0.4, 1.0])
    assert (report["best"], report["best_template"], report["worst"], report["worst_template"]) == (
        max(values),
        "This text is about {}.",
        min(values),
        "{}s",
    )
    assert report["spread"] == pytest.approx(max(values) - min(values))
    assert report["mean"] == pytest.approx(np.mean(values))
    assert report["templates"][0]["example"] == "This text is about sports."


@needs_wordnet
def test_template_robustness_keeps_the_notes_of_its_hypotheses() -> None:
    """The notes of how the hypotheses were built (labels WordNet lacks, labels tied by one definition), which
    bench says, were dropped by template-robustness: said on stderr and recorded in the report now."""
    labels = ["sports", "passcode_forgotten"]  # WordNet has no definition for the second
    task = Task("toy", ["a sports match", "I forgot my passcode"], np.array([0, 1]), labels, labels, family="intent")
    report = template_robustness(WordOverlapScorer(), task, ["{}", "It is {}."], variant="definition")
    assert report["notes"] == ["no WordNet definition for 1 label(s), described by name: passcode_forgotten"]
    assert template_robustness(WordOverlapScorer(), task, ["{}"], variant="name")["notes"] == []


@needs_wordnet
@pytest.mark.slow
def test_yin_commands_say_and_record_the_notes_of_their_hypotheses(zstc_cli, btzsc_dir, tmp_path) -> None:
    """`template-robustness --hypotheses definition` on banking77 printed nothing of the 49 labels WordNet gives
    one definition in 14 groups, nor of the label it lacks (bench says both); calibrate dropped them too."""
    common = ("-m", MINILM, "--data", str(btzsc_dir), "--task", "banking77", "--hypotheses", "definition")
    for command, extra in (
        ("template-robustness", ["--template", "this text is about {}", "--max-samples", "5"]),
        ("calibrate", ["--template", "this text is about {}", "--max-samples", "8"]),
    ):
        out = tmp_path / f"{command}.json"
        code, _, err = zstc_cli(command, *common, *extra, "--out", str(out))
        assert code == 0, err
        notes = json.loads(out.read_text())["notes"]
        assert any("get the same WordNet definition" in note for note in notes), notes
        assert any(note.startswith("no WordNet definition for 1 label(s)") for note in notes), notes
        assert "get the same WordNet" in " ".join(err.split()) and "no WordNet definition" in err, err


def test_a_template_given_twice_is_refused(zstc_cli, btzsc_dir) -> None:
    """A repeated template was scored twice and counted twice in the mean and the standard deviation (spread
    over the wrong set of templates). It is refused, by the API and, before the model loads, by the command."""
    with pytest.raises(LabelError, match="duplicate templates"):
        template_robustness(WordOverlapScorer(), small_task(), ["{}", "This text is about {}.", "{}"])
    padded = template_robustness(
        WordOverlapScorer(), small_task(), ["{} ", "{}"]
    )  # as given, not stripped like a label
    assert [row["template"] for row in padded["templates"]] == ["{} ", "{}"]
    code, _, err = zstc_cli(
        "template-robustness",
        "-m",
        "no-such/model",
        "--data",
        str(btzsc_dir),
        "--task",
        "rottentomatoes",
        "--template",
        "{}",
        "--template",
        "It is {}.",
        "--template",
        "{}",
    )
    assert code != 0 and err.startswith("error: duplicate --template: '{}'"), err


@pytest.mark.parametrize("command", ["bench", "sweep", "calibrate", "unseen"])
def test_a_template_with_the_datasets_own_hypotheses_is_refused(zstc_cli, btzsc_dir, tmp_path, command) -> None:
    """--hypotheses dataset (the default) uses the dataset's own hypotheses, which have no slot: a --template
    beside them was silently ignored. Every command with both options refuses it, naming both, before the
    model is even looked up."""
    data = ["--data", str(btzsc_dir)]
    args = {
        "bench": ["-m", "no-such/model", *data, "--tasks", "financialphrasebank", "--out", str(tmp_path / "r.json")],
        "sweep": [
            "--models",
            "no-such/model",
            *data,
            "--tasks",
            "financialphrasebank",
            "--out",
            str(tmp_path / "sweep"),
        ],
        "calibrate": ["-m", "no-such/model", *data, "--task", "financialphrasebank"],
        "unseen": [
            "-m",
            "no-such/model",
            *data,
            "--train-data",
            str(btzsc_dir.parent / "btzsc-train"),
            "--task",
            "banking77",
            "--no-finetune",
        ],
    }[command]
    for hypotheses in ([], ["--hypotheses", "dataset"]):
        code, _, err = zstc_cli(command, *args, *hypotheses, "--template", "It is about {}.")
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith("error: --template ") and "--hypotheses dataset" in err, err
    assert list(tmp_path.iterdir()) == []


# --- WordNet ------------------------------------------------------------------------------------------


@needs_wordnet
@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("sports", "an active diversion requiring physical exertion and competition"),
        ("Refund_not_showing_up", "money returned to a payer"),  # head noun before a verb phrase
        ("Civil Rights", "right or rights belonging to a person"),  # the whole phrase is a WordNet entry
        ("positive", "characterized by or displaying affirmation"),  # adjective sense beats the grammar noun
        ("love", "a strong positive emotion of regard and affection"),  # noun sense beats the verb
        ("Domestic Commerce", "transactions (sales and purchases)"),  # last noun of a noun compound
    ],
)
def test_label_definitions(label: str, expected: str) -> None:
    from zstc.hypotheses.wordnet import label_definition

    assert label_definition(label).startswith(expected)


@needs_wordnet
def test_coordinations_negations_and_unknown_labels() -> None:
    from zstc.hypotheses.wordnet import head_noun, label_definition, load_wordnet

    wordnet = load_wordnet()
    business, finance = label_definition("Business", wordnet), label_definition("Finance", wordnet)
    assert label_definition("Business & Finance", wordnet) == f"{business} or {finance}"
    assert label_definition("not_insult", wordnet) == "not " + label_definition("insult", wordnet)
    assert head_noun("activate my card".split(), wordnet) == "card"  # "my" is a function word, "activate" no noun
    assert label_definition("xqzv_wplk", wordnet) is None


@needs_wordnet
def test_definition_variant_falls_back_to_the_name_with_a_note() -> None:
    hypotheses = build_hypotheses(["sports", "xqzv"], "both", "This text is about {}.")
    assert hypotheses.variants["both"][0].startswith("This text is about sports, an active diversion")
    assert hypotheses.variants["both"][1] == "This text is about xqzv."
    assert any("xqzv" in note for note in hypotheses.notes)


def test_missing_wordnet_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from zstc.hypotheses.wordnet import WordNetUnavailable, load_wordnet

    monkeypatch.setenv("ZSTC_WORDNET_DIR", str(tmp_path))
    with pytest.raises(WordNetUnavailable, match="wordnet-base"):
        load_wordnet()


# --- wired into bench and classify ---------------------------------------------------------------------


def test_evaluate_task_records_ensemble_hypotheses() -> None:
    from zstc.benchmark.runner import evaluate_task

    task = small_task()
    descriptions = HypothesisSet(
        {"a": ["sports", "politics"], "b": ["about sports", "about politics"]}, notes=["a note"]
    )
    result, _ = evaluate_task(WordOverlapScorer(), task, descriptions)
    assert result.hypotheses == ["sports | about sports", "politics | about politics"]
    assert "a note" in result.notes
    assert result.metrics["accuracy"] == 1.0


@needs_wordnet
@pytest.mark.slow
def test_bench_cli_ensemble_and_multi_label(tmp_path) -> None:
    from typer.testing import CliRunner

    from zstc.cli import app

    data = SHARED_DATA / "btzsc"
    if not (data / "financialphrasebank.jsonl").exists():
        pytest.skip(f"BTZSC data not found at {data}")
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "-m",
            MINILM,
            "--data",
            str(data),
            "--tasks",
            "financialphrasebank",
            "--max-samples",
            "12",
            "--hypotheses",
            "ensemble",
            "--multi-label",
            "--threshold",
            "0.08",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(out.read_text())
    assert summary["evaluation"]["hypotheses"] == "ensemble"
    report = summary["multi_label"]["by_dataset"]["financialphrasebank"]
    # The report is the threshold's decisions on the run's own (ensemble-averaged) scores. At 0.08, where the 12
    # texts' cosines lie (0.2 left every text "none", weighted F1 0), some texts get labels and some "none".
    from zstc.multilabel import multilabel_metrics
    from zstc.policy import decide

    stored = np.load(tmp_path / "r.details" / "financialphrasebank.npz")
    labels = ["negative", "neutral", "positive"]
    assert summary["multi_label"]["threshold"] == 0.08
    assert report == multilabel_metrics(stored["gold"], decide(stored["scores"], labels, 0.08), labels)
    assert 0 < report["none_predicted"] < 12 and report["weighted_f1"] > 0
    details = json.loads((tmp_path / "r.details" / "financialphrasebank.json").read_text())
    assert details["hypotheses"][0].startswith("this text expresses negative | ")  # sentiment -> emotion aspect


@pytest.mark.parametrize(
    "command, value, extra",
    [
        ("template-robustness", "dataset", []),  # no template to fill: this command fills name, definition or both
        ("calibrate", "bogus", []),
        ("unseen", "ensemble", ["--train-data", "TRAIN", "--no-finetune"]),  # trains on one hypothesis per label
    ],
)
def test_experiment_hypotheses_are_checked_before_the_model_loads(zstc_cli, btzsc_dir, command, value, extra) -> None:
    """A --hypotheses these commands cannot use was refused only after the model had loaded (and the data been
    read), and template-robustness's message named no option. Now it is refused first, naming --hypotheses: with
    a model that cannot load, the --hypotheses error is the one shown."""
    extra = [str(btzsc_dir) if arg == "TRAIN" else arg for arg in extra]
    code, _, err = zstc_cli(
        command, "-m", "no-such/model", "--data", str(btzsc_dir), "--task", "banking77", "--hypotheses", value, *extra
    )
    assert code != 0 and err.startswith("error: ") and "--hypotheses" in err and "no-such/model" not in err, err


@pytest.mark.parametrize("variant", ["name", "both", "ensemble"])
def test_bare_template_is_used_as_given_by_classify_and_the_api(zstc_cli, tmp_path, monkeypatch, variant) -> None:
    """``--template "{}"`` (README: the labels as they are) with a Yin variant was replaced by the topic aspect's
    template in classify and ``Classifier`` (``Classifier(template="{}", hypotheses=...).template`` was None),
    while bench filled "{}" as given: the same options read other hypotheses in the two commands."""
    import zstc.api
    from zstc.api import Classifier

    classifier = Classifier(WordOverlapScorer(), template="{}", hypotheses=variant)
    assert classifier.template == "{}"
    scorer = WordOverlapScorer()
    Classifier(scorer, template="{}", hypotheses="name").scores(["sports today"], ["sports", "politics"])
    assert scorer.calls == [["sports", "politics"]]  # the bare names, as bench's provider gives them
    assert Classifier(WordOverlapScorer(), template="{}").template is None  # dataset: the labels as they are, as before
    assert Classifier(WordOverlapScorer(), hypotheses=variant).template is None  # the default: the aspect's template

    seen: list[object] = []
    real = zstc.api.label_hypotheses

    def spy(*args, **kwargs):
        seen.append(kwargs.get("template"))
        return real(*args, **kwargs)

    monkeypatch.setattr(zstc.api, "label_hypotheses", spy)
    texts = tmp_path / "t.txt"
    texts.write_text("sports today\n")
    zstc_cli(
        "classify",
        str(texts),
        "--labels",
        "sports,politics",
        "--hypotheses",
        variant,
        "--template",
        "{}",
        "-m",
        "no-such/model",
    )
    assert seen == ["{}"]


# --- labels WordNet reads badly: punctuation, accents, parts it lacks, ties ----------------------------


@needs_wordnet
def test_punctuation_does_not_pick_the_wrong_word() -> None:
    """ ":" and "?" stuck to a word made WordNet miss it, so the lookup fell to another word: "Culture: Positive"
    got "positive"'s definition alone (manifesto's 12 "X: Positive" labels shared it) and
    "reverted_card_payment?" the playing-card sense of "card". Clauses are defined each, punctuation at a
    word's ends is dropped where WordNet lacks the word as written."""
    from zstc.hypotheses.wordnet import label_definition, load_wordnet

    wordnet = load_wordnet()
    culture, military, positive = (label_definition(word, wordnet) for word in ("culture", "military", "positive"))
    assert label_definition("Culture: Positive", wordnet) == f"{culture}; {positive}"
    assert label_definition("Military: Positive", wordnet) == f"{military}; {positive}"
    assert label_definition("reverted_card_payment?", wordnet) == label_definition("card payment", wordnet)
    assert label_definition('"sports"!', wordnet) == label_definition("sports", wordnet)
    assert label_definition("U.S.", wordnet) == label_definition(
        "united states government", wordnet
    )  # WordNet's own dots kept
    assert label_definition("?", wordnet) is None


@needs_wordnet
def test_accented_labels_are_folded_for_wordnet() -> None:
    """WordNet 3.0 spells "cafe", "naive", "Zurich"; "café", "naïve", "Zürich" found nothing and fell back to the name."""
    from zstc.hypotheses.wordnet import label_definition, load_wordnet

    wordnet = load_wordnet()
    for accented, plain in [
        ("café", "cafe"),
        ("naïve", "naive"),
        ("Zürich", "Zurich"),
        ("Café_au_lait", "cafe au lait"),
    ]:
        assert label_definition(accented, wordnet) == label_definition(plain, wordnet) is not None, accented


@needs_wordnet
def test_parts_left_out_of_a_definition_are_noted() -> None:
    """AG News' "Sci/Tech": WordNet lacks "sci", so the definition is "tech"'s alone; that was silent."""
    hypotheses = build_hypotheses(["World", "Sci/Tech"], "definition", "{}")
    assert (
        hypotheses.variants["definition"][1] == build_hypotheses(["tech"], "definition", "{}").variants["definition"][0]
    )
    assert any("Sci/Tech (without 'sci')" in note for note in hypotheses.notes), hypotheses.notes
    assert (
        build_hypotheses(["World", "Business & Finance"], "definition", "{}").notes == []
    )  # every part found: nothing to say


@needs_wordnet
def test_labels_with_one_definition_are_noted_in_bench_and_refused_by_classify(zstc_cli, tmp_path) -> None:
    """banking77 under definition hypotheses: 72 labels, far fewer distinct definitions ("card_arrival" and
    "arrival" both read "accomplishment of an objective"). Bench scored them as silent ties (argmax gives each
    group's first label every time); classify refused them speaking of "descriptions" the user never gave."""
    from zstc.api import label_hypotheses
    from zstc.benchmark.runner import evaluate_task

    labels = ["card_arrival", "arrival", "sports"]
    task = Task(
        "toy",
        ["the match was a great sports event", "my card arrived"],
        np.array([2, 0]),
        labels,
        labels,
        family="topic",
    )
    hypotheses = make_hypothesis_provider("definition")(task)
    result, _ = evaluate_task(WordOverlapScorer(), task, hypotheses)
    tied = [note for note in result.notes if "same WordNet definition" in note]
    assert len(tied) == 1 and "'card_arrival', 'arrival'" in tied[0] and "sports" not in tied[0], result.notes
    assert not any("same" in note for note in build_hypotheses(labels, "both", "{}").notes)  # the names keep them apart
    assert not any("same" in note for note in build_hypotheses(labels, "ensemble", "{}").notes)  # averaged with them

    with pytest.raises(LabelError, match="same WordNet definition") as refused:
        label_hypotheses(labels, hypotheses="definition")
    assert "description" not in str(refused.value)
    texts = tmp_path / "t.txt"
    texts.write_text("my card arrived\n")
    code, _, err = zstc_cli(
        "classify", str(texts), "--labels", ",".join(labels), "--hypotheses", "definition", "-m", "no-such/model"
    )
    assert code == 2 and len(err.splitlines()) == 1, err
    assert (
        "same WordNet definition" in err and "'card_arrival', 'arrival'" in err and "--hypotheses both or name" in err
    ), err


def test_bench_identity_follows_the_wordnet_lookup_rules() -> None:
    """The tie and part notes are not in a dataset's hypotheses: a cached result of the old lookup would come back
    without them. The variants that read WordNet record the rules' version; the others' identity is unchanged."""
    from zstc.runs.identity import hypotheses_identity
    from zstc.hypotheses.wordnet import WORDNET_LOOKUP_VERSION

    for variant in ("definition", "both", "ensemble"):
        assert hypotheses_identity(variant, None)["wordnet_lookup"] == WORDNET_LOOKUP_VERSION >= 2
    assert hypotheses_identity("name", "{}") == {"variant": "name", "template": "{}"}
    assert hypotheses_identity("dataset", None) == {"variant": "dataset", "template": None}


def test_a_bf16_ensembles_identity_says_its_average_is_rechecked() -> None:
    """bf16 rechecks an ensemble's average in fp32 (not each variant alone, as results stored before did): a bf16
    ensemble's identity says so, and no other run's changes (fp32's scores, and every single variant's, are as before)."""
    from zstc.runs.identity import hypotheses_identity

    assert hypotheses_identity("ensemble", None, "bf16")["bf16_recheck"] == "average"
    assert "bf16_recheck" not in hypotheses_identity("ensemble", None, "fp32")
    assert hypotheses_identity("name", "{}", "bf16") == {"variant": "name", "template": "{}"}
