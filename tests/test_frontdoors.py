"""Every front door decides the same way (issue 38): the Python API (:class:`Classifier` and :func:`classify`),
``zstc classify``, ``bench``'s multi-label summary and the service's shapes (zstc's ``/classify``, the Hugging Face
``POST /``) give identical decisions and identical probabilities for the same texts, labels and options, for every
family with an offline model (embedding and encoder: all-MiniLM-L6-v2; NLI: the same encoder with a fresh head;
yes/no and LLM: SmolLM2; a cascade), single- and multi-label, with and without thresholds and calibration. And a
multi-label probability means its decision: it is >= 0.5 exactly when its label passed.

One model per family for the module (the CLI loads its own, as a user's run does); two texts, three labels.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from zstc.api import Classifier, MultiLabelPrediction, Prediction, classify
from zstc.benchmark.records import DatasetResult
from zstc.benchmark.runner import multi_label_summary
from zstc.defaults import DEFAULT_TEMPLATE
from zstc.probabilities import Calibration
from zstc.server.app import create_app
from zstc.server.settings import EngineConfig, ServeSettings

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"
TEXTS = [
    "The central bank raised interest rates for the third time this year.",
    "The striker scored twice in the final.",
]
LABELS = ["economy", "sports", "weather"]
PLATT = {"slope": 20.0, "intercept": -4.0}
TEMPERATURE = {"temperature": 0.5}


@dataclass(frozen=True)
class Family:
    """How a family's model is named on the command line and built in Python."""

    model: Callable[[pytest.FixtureRequest], str]
    family: str
    shortlist: str | None = None


FAMILIES: dict[str, Family] = {
    "embedding": Family(lambda _: MINILM, "embedding"),
    "encoder": Family(lambda _: MINILM, "encoder"),
    "nli": Family(lambda request: str(request.getfixturevalue("nli_folder")), "nli"),
    "yesno": Family(lambda request: (request.getfixturevalue("smollm2_folder"), SMOLLM2)[1], "yesno"),
    "llm": Family(lambda request: (request.getfixturevalue("smollm2_folder"), SMOLLM2)[1], "llm"),
    "cascade": Family(lambda request: str(request.getfixturevalue("nli_folder")), "nli", f"{MINILM}:2"),
}


@dataclass(frozen=True)
class Options:
    """One way of asking: single- or multi-label, a threshold, per-label cuts, a calibration (method, parameters)."""

    multi_label: bool
    threshold: float | None = None
    per_label: dict[str, float] | None = None
    calibration: tuple[str, dict[str, float]] | None = None

    def __str__(self) -> str:
        parts = ["multi" if self.multi_label else "single"]
        parts += [f"t{self.threshold:g}"] if self.threshold is not None else []
        parts += ["per-label"] if self.per_label else []
        parts += [self.calibration[0]] if self.calibration else []
        return "-".join(parts)


SINGLE, MULTI = Options(False), Options(True)
CASES: list[tuple[str, Options]] = [
    ("embedding", SINGLE),
    ("embedding", MULTI),
    ("embedding", Options(True, threshold=0.2)),
    ("embedding", Options(True, per_label={"sports": 0.1})),
    ("embedding", Options(False, calibration=("temperature", TEMPERATURE))),
    ("embedding", Options(True, calibration=("temperature", TEMPERATURE))),  # the margin rule at the file's temperature
    ("embedding", Options(True, calibration=("platt", PLATT))),
    ("embedding", Options(True, threshold=0.7, calibration=("platt", PLATT))),
    ("encoder", SINGLE),
    ("encoder", MULTI),
    ("encoder", Options(True, threshold=0.3)),
    ("nli", SINGLE),
    ("nli", MULTI),
    ("nli", Options(True, threshold=0.5, per_label={"weather": -0.5})),
    ("nli", Options(True, calibration=("platt", {"slope": 1.5, "intercept": 0.2}))),
    ("yesno", SINGLE),
    ("yesno", MULTI),
    ("yesno", Options(True, threshold=0.3)),
    ("llm", SINGLE),
    ("llm", Options(True, threshold=0.3)),
    ("llm", Options(True, per_label=dict.fromkeys(LABELS, 0.2))),
    ("cascade", SINGLE),
    ("cascade", MULTI),
    ("cascade", Options(True, threshold=-0.5)),
]


class Doors:
    """The module's classifiers and services, one per (family, calibration), built on first use."""

    def __init__(self, request: pytest.FixtureRequest, stack: ExitStack) -> None:
        self.request, self.stack = request, stack
        self.classifiers: dict[tuple[str, Any], Classifier] = {}
        self.clients: dict[tuple[str, Any], TestClient] = {}

    def classifier(self, family: str, calibration: Calibration | None) -> Classifier:
        key = (family, repr(calibration))
        if key not in self.classifiers:
            spec = FAMILIES[family]
            base = self.classifiers.get((family, repr(None)))
            if base is None or calibration is None:
                built = Classifier(
                    spec.model(self.request),
                    family=spec.family,
                    precision="fp32",
                    device="cpu",
                    shortlist=spec.shortlist,
                    calibration=calibration,
                )
            else:  # the same loaded scorer under another calibration
                built = Classifier(base.scorer, calibration=calibration)
            self.classifiers[key] = built
        return self.classifiers[key]

    def client(self, family: str, calibration: Calibration | None) -> TestClient:
        key = (family, repr(calibration))
        if key not in self.clients:
            client = self.stack.enter_context(
                TestClient(
                    create_app(self.classifier(family, calibration), ServeSettings(engine=EngineConfig(max_wait_ms=0)))
                )
            )
            deadline = time.monotonic() + 600
            while client.get("/health/ready").status_code != 200:
                assert time.monotonic() < deadline, "the model did not get ready"
                time.sleep(0.05)
            self.clients[key] = client
        return self.clients[key]


@pytest.fixture(scope="module")
def doors(request: pytest.FixtureRequest) -> Iterator[Doors]:
    with ExitStack() as stack:
        yield Doors(request, stack)


def _calibration(options: Options, family: str) -> Calibration | None:
    if options.calibration is None:
        return None
    method, parameters = options.calibration
    return Calibration(method, parameters, family=FAMILIES[family].family)


def _probabilities_mean_decisions(predictions: list[Any]) -> None:
    for prediction in predictions:
        passed = set(prediction.labels) - {"none"}
        assert {label for label, p in prediction.scores.items() if p >= 0.5} == passed, prediction


@pytest.mark.slow
@pytest.mark.parametrize("family, options", CASES, ids=[f"{family}-{options}" for family, options in CASES])
def test_every_front_door_decides_alike(doors: Doors, zstc_cli, tmp_path: Path, family: str, options: Options) -> None:
    calibration = _calibration(options, family)
    classifier = doors.classifier(family, calibration)
    # -- the library: Classifier, the reference ----------------------------------------------------------------
    if options.multi_label:
        expected: list[Any] = classifier.predict_multi_label(
            TEXTS, LABELS, threshold=options.threshold, per_label=options.per_label, scores="probs"
        )
        _probabilities_mean_decisions(expected)
    else:
        expected = classifier.predict(TEXTS, LABELS)
    decisions = [p.labels if isinstance(p, MultiLabelPrediction) else p.label for p in expected]
    probabilities = [p.scores for p in expected]
    assert all(isinstance(p, MultiLabelPrediction if options.multi_label else Prediction) for p in expected)

    # -- classify(): the same classifier's scorer, built again ----------------------------------------------------
    if options.per_label is None:
        again = classify(
            TEXTS,
            LABELS,
            model=classifier.scorer,
            multi_label=options.multi_label,
            threshold=options.threshold,
            calibration=calibration,
            scores="probs",
        )
        assert [p.labels if isinstance(p, MultiLabelPrediction) else p.label for p in again] == decisions
        assert [p.scores for p in again] == probabilities

    # -- zstc classify: its own model, loaded as a user's run loads it -------------------------------------------
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(TEXTS) + "\n")
    spec = FAMILIES[family]
    args = [
        "classify",
        str(texts),
        "-l",
        ",".join(LABELS),
        "-m",
        spec.model(doors.request),
        "--family",
        spec.family,
        "--precision",
        "fp32",
        "--device",
        "cpu",
        "--scores",
        "probs",
    ]
    args += ["--shortlist", spec.shortlist] if spec.shortlist else []
    args += ["--multi-label"] if options.multi_label else []
    args += ["--threshold", str(options.threshold)] if options.threshold is not None else []
    for name, cut in (options.per_label or {}).items():
        args += ["--label-threshold", f"{name}={cut}"]
    if options.calibration is not None:
        file = tmp_path / "calibration.json"
        file.write_text(
            json.dumps(
                {
                    "format": "zstc-calibration",
                    "method": options.calibration[0],
                    "parameters": options.calibration[1],
                    "family": spec.family,
                }
            )
        )
        args += ["--calibration", str(file)]
    code, out, err = zstc_cli(*args)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["labels" if options.multi_label else "label"] for row in rows] == decisions
    for row, expected_scores in zip(rows, probabilities, strict=True):
        assert row["scores"] == pytest.approx(expected_scores, abs=1e-4)  # written with 4 decimals
        assert list(row["scores"]) == list(expected_scores)  # the same ranking

    # -- the service: zstc's shape and the Hugging Face shape -----------------------------------------------------
    client = doors.client(family, calibration)
    body: dict[str, Any] = {"texts": TEXTS, "labels": LABELS, "multi_label": options.multi_label}
    body.update({"threshold": options.threshold} if options.threshold is not None else {})
    body.update({"label_thresholds": options.per_label} if options.per_label else {})
    response = client.post("/classify", json=body)
    assert response.status_code == 200, response.text
    for result, decision, expected_scores in zip(response.json()["results"], decisions, probabilities, strict=True):
        assert result["labels" if options.multi_label else "label"] == decision
        assert {entry["label"]: entry["probability"] for entry in result["scores"]} == pytest.approx(
            expected_scores, abs=1e-6
        )
        if options.multi_label:
            assert {entry["label"] for entry in result["scores"] if entry["passed"]} == set(decision) - {"none"}
    # An NLI model's Hugging Face shape gives transformers' pipeline's numbers instead (zstc.server.hf; tested against
    # the pipeline in test_server.test_hugging_face_shape_gives_the_pipelines_numbers_for_nli).
    if (
        family != "nli"
        and options.threshold is None
        and options.per_label is None
        and (options.multi_label or calibration is None or calibration.method == "temperature")
    ):
        hf = client.post(
            "/",
            json={
                "inputs": TEXTS,
                "parameters": {
                    "candidate_labels": LABELS,
                    "multi_label": options.multi_label,
                    "hypothesis_template": DEFAULT_TEMPLATE,
                },
            },
        )
        assert hf.status_code == 200, hf.text
        for answer, expected_scores in zip(hf.json(), probabilities, strict=True):
            assert {entry["label"]: entry["score"] for entry in answer} == pytest.approx(expected_scores, abs=1e-6)

    # -- bench's multi-label summary: the library's decisions as gold score perfectly -----------------------------
    if options.multi_label and options.per_label is None and calibration is None:
        matrix = classifier.scores(TEXTS, LABELS)
        gold = np.array([[label in decision for label in LABELS] for decision in decisions])
        result = DatasetResult.model_construct(label_names=LABELS, scores=matrix, gold=gold)
        summary = multi_label_summary({"probe": result}, classifier.scorer, options.threshold)
        metrics = summary.by_dataset["probe"]
        assert metrics["micro_f1"] == 1.0 and metrics["none_predicted"] == metrics["none_gold"], metrics


@pytest.mark.slow
def test_the_hugging_face_probe_passes_one_label_and_reports_one_above_a_half(doors: Doors) -> None:
    """The issue's probe: the default model, multi_label true. POST / gave economy 0.996, technology 0.951, politics
    0.914, sports 0.823, cooking 0.753, weather 0.738 while only economy passed: a client thresholding at 0.5 got six
    labels. Now only economy passes, and only economy is >= 0.5, in every shape."""
    classifier = Classifier(
        doors.classifier("embedding", None).scorer
    )  # the default template, as the default model's service
    text = "The central bank raised interest rates for the third time this year."
    labels = ["economy", "technology", "politics", "sports", "cooking", "weather"]
    (prediction,) = classifier.predict_multi_label([text], labels, scores="probs")
    assert prediction.labels == ["economy"]
    assert [label for label, p in prediction.scores.items() if p >= 0.5] == ["economy"]
    with TestClient(create_app(classifier, ServeSettings(engine=EngineConfig(max_wait_ms=0)))) as client:
        while client.get("/health/ready").status_code != 200:
            time.sleep(0.05)
        hf = client.post("/", json={"inputs": text, "parameters": {"candidate_labels": labels, "multi_label": True}})
        zstc = client.post("/classify", json={"texts": [text], "labels": labels, "multi_label": True})
    assert hf.status_code == 200 and [entry["label"] for entry in hf.json() if entry["score"] >= 0.5] == ["economy"], (
        hf.text
    )
    (result,) = zstc.json()["results"]
    assert result["labels"] == ["economy"]
    assert [entry["label"] for entry in result["scores"] if entry["probability"] >= 0.5] == ["economy"]


# -- scorer capabilities: declared as data, and true ----------------------------------------------------------------

CAPABILITY_METHODS: dict[str, tuple[str, ...]] = {
    "notes": ("score_with_notes",),
    "pair_scoring": ("score_pairs", "score_pairs_with_notes"),
    "request_batching": ("score_requests",),
    "twin": ("twin",),
    "read_apart": ("indistinguishable",),
}


def _implements(cls: type, capability: str) -> bool:
    """Whether ``cls`` defines the methods of ``capability`` (asked of the class: an instance may forward attributes);
    ``rechecks``: whether its ``score_with_notes`` takes ``thresholds``."""
    import inspect

    if capability == "rechecks":
        method = getattr(cls, "score_with_notes", None)
        return method is not None and "thresholds" in inspect.signature(method).parameters
    return all(callable(getattr(cls, name, None)) for name in CAPABILITY_METHODS[capability])


def test_each_scorer_declares_what_it_implements() -> None:
    """Callers read a scorer's capabilities (zstc.scorers.base.capabilities) instead of probing it with getattr: each
    family's scorer class declares exactly the methods it implements, and a cascade declares its own (no pair scoring,
    no twin; cuts where its main scorer takes them), not its main scorer's."""
    from dataclasses import fields

    from zstc.scorers import make_scorer
    from zstc.scorers.base import NO_CAPABILITIES, Capabilities, capabilities
    from zstc.scorers.cascade import CascadeScorer
    from zstc.models.families import families

    for family in families():
        cls = family.scorer_class()
        declared = cls.CAPABILITIES
        assert isinstance(declared, Capabilities), family.name
        for capability in fields(Capabilities):
            assert getattr(declared, capability.name) == _implements(cls, capability.name), (
                family.name,
                capability.name,
            )
    main, shortlister = make_scorer(MINILM, "nli"), make_scorer(MINILM, "embedding")  # constructors load nothing
    cascade = CascadeScorer(main, shortlister, 2)
    declared = capabilities(cascade)
    for capability in fields(Capabilities):
        implemented = _implements(CascadeScorer, capability.name) and (
            capability.name != "rechecks" or capabilities(main).rechecks
        )
        assert getattr(declared, capability.name) == implemented, capability.name
    assert declared != capabilities(main)  # its own, not forwarded

    class OwnScorer:  # a user's object with score() alone
        def score(self, texts: list[str], labels: list[str]) -> np.ndarray:
            return np.zeros((len(texts), len(labels)))

    assert capabilities(OwnScorer()) == NO_CAPABILITIES
