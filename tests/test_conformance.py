"""Every model of the BTZSC paper, proven to run through zstc: one row per paper model (38).

Each row scores a tiny random-weight stand-in of the model's architecture (tests/standins.py: same model class,
tokenizer kind and special tokens, pooling configuration, padding side and chat-template shape, at hidden size 32)
through zstc's real loading path, as the registry entry its folder names (``zstc_model.json``), and asserts:

- it loads and scores through ``bench``, ``classify`` and ``Classifier`` with the registry's family;
- the protocol reaches the model: the input ids the model receives, decoded, are PROTOCOL.md's strings (e5 prefixes,
  the instruction on the text side only, the Qwen3-Reranker prompt byte for byte, the LLM prompt and its option
  symbols, premise/hypothesis and query/document order), and a long text is cut while the hypothesis, options and
  prompt suffix are kept whole;
- the score rule is the family's (log-odds of the entailment column read from ``id2label``, relevance logit, p(yes),
  softmax over option symbols, cosine of the model's own pooling);
- scores do not depend on batch size or padding (batch 1 vs 16 with the long text in the batch: max |diff| <= 1e-5,
  same argmax), and bf16 with its recheck makes fp32's decisions.

The strings below are copied from PROTOCOL.md, not imported from zstc, so a changed byte in zstc fails here.
On a machine with the hub, ``ZSTC_TEST_HUB=1 pytest -m hub tests/test_conformance.py`` runs the real checkpoints.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Self

import numpy as np
import pytest
import torch
from standins import ROWS, Row, chat_opening, stand_in

from zstc.models.registry import get_model_spec

INSTRUCTION = "Given a piece of text, retrieve relevant label descriptions that best match the text"
INSTRUCT_QUERY = "Instruct: " + INSTRUCTION + "\nQuery: "
YESNO_PROMPT = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. "
    'Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n<Instruct>: '
    + INSTRUCTION
    + "\n<Query>: {text}\n<Document>: {label}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
)
LLM_QUESTION = (
    "You are a text classifier.\nYou will be given a text and several mutually exclusive options.\nEach option is prefixed "
    "by a single letter (e.g. A, b, ...).\nYour task is to choose the single best option.\n\nIMPORTANT:\n- Answer with "
    "EXACTLY ONE LETTER used to prefix the options.\n- Do NOT output any words, punctuation, or explanation.\n\nTEXT:\n"
    "{text}\n\nOPTIONS:\n{options}"
)
LLM_ANSWER = "Answer: The correct option is letter"

FAMILY = {  # PROTOCOL.md section 2's grouping of the paper's models
    **dict.fromkeys(["bert-large-uncased", "deberta-v3-large", "ModernBERT-large"], "encoder"),
    **dict.fromkeys(
        [
            "bart-large-mnli",
            "nli-roberta-base",
            "bert-base-uncased-nli",
            "bert-large-uncased-nli",
            "bert-large-uncased-nli-triplet",
            "deberta-v3-base-nli",
            "deberta-v3-large-nli",
            "deberta-v3-large-nli-triplet",
            "modernbert-base-nli",
            "modernbert-large-nli",
            "modernbert-large-nli-triplet",
        ],
        "nli",
    ),
    **dict.fromkeys(
        ["ms-marco-MiniLM-L6-v2", "gte-reranker-modernbert-base", "bge-reranker-base", "bge-reranker-large"], "reranker"
    ),
    **dict.fromkeys(["Qwen3-Reranker-0.6B", "Qwen3-Reranker-8B"], "yesno"),
    **dict.fromkeys(
        [
            "all-MiniLM-L6-v2",
            "e5-base-v2",
            "e5-large-v2",
            "e5-mistral-7b-instruct",
            "bge-base-en-v1.5",
            "bge-large-en-v1.5",
            "gte-base-en-v1.5",
            "gte-large-en-v1.5",
            "gte-modernbert-base",
            "Qwen3-Embedding-0.6B",
            "Qwen3-Embedding-8B",
        ],
        "embedding",
    ),
    **dict.fromkeys(
        [
            "gemma-3-270m-it",
            "gemma-3-1b-it",
            "Llama-3.2-3B-Instruct",
            "Qwen3-4B",
            "Phi-4-mini-instruct",
            "Qwen3-8B",
            "Mistral-Nemo-Instruct-2407",
        ],
        "llm",
    ),
}
QUERY_SIDE = {
    "e5-base-v2": "query: ",
    "e5-large-v2": "query: ",
    "e5-mistral-7b-instruct": INSTRUCT_QUERY,
    "Qwen3-Embedding-0.6B": INSTRUCT_QUERY,
    "Qwen3-Embedding-8B": INSTRUCT_QUERY,
}
DOCUMENT_SIDE = {"e5-base-v2": "passage: ", "e5-large-v2": "passage: "}
REMOTE_CODE = {"gte-base-en-v1.5", "gte-large-en-v1.5"}


def _texts(btzsc_dir: Path) -> tuple[list[str], list[str]]:
    rows = [json.loads(line)["text"] for line in (btzsc_dir / "financialphrasebank.jsonl").read_text().splitlines()]
    long_text = " ".join(rows[100:190])  # well past every stand-in's limit (128 tokens; 512 for the causal LMs)
    hypotheses = json.loads((btzsc_dir / "tasks.json").read_text())["financialphrasebank"]["hypotheses"]
    return [rows[0], long_text, rows[300], rows[650]], hypotheses


def test_the_rows_are_the_papers_38_models(shared_data: Path) -> None:
    names = [line.split(",")[0] for line in (shared_data / "baselines" / "f1_scores.csv").read_text().splitlines()[1:]]
    assert [row.paper_name for row in ROWS] == names and len(names) == 38
    assert set(FAMILY) == set(names)


@pytest.fixture(scope="module", autouse=True)
def _one_thread() -> Iterator[None]:
    """Hidden size 32: one thread does each product faster than two can share it (on a loaded 2-core machine the
    whole file ran 4x faster so), and the row costs the suite's budget less."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def standin_folders(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Path]]]:
    """Where the stand-ins are built, once per session; each architecture on first use."""
    yield tmp_path_factory.mktemp("standins"), {}


class Received:
    """The token ids a module is called with, padding removed (a forward pre-hook), and its outputs' logits."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.ids: list[list[int]] = []
        self.logits: list[torch.Tensor] = []
        self._hooks = [
            module.register_forward_pre_hook(self._inputs, with_kwargs=True),
            module.register_forward_hook(self._outputs),
        ]

    def _inputs(self, module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        features = (
            args[0] if args and isinstance(args[0], Mapping) else kwargs
        )  # sentence-transformers' modules take a dict
        ids = features.get("input_ids", args[0] if args else None)
        mask = features.get("attention_mask")
        for i, row in enumerate(ids.tolist()):
            keep = mask[i, -len(row) :].tolist() if mask is not None else [1] * len(row)
            self.ids.append([token for token, kept in zip(row, keep) if kept])

    def _outputs(self, module: Any, args: Any, output: Any) -> None:
        logits = getattr(output, "logits", None)
        if logits is not None:
            self.logits.append(logits.detach().float())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        for hook in self._hooks:
            hook.remove()


def _network(scorer: Any) -> torch.nn.Module:
    model = scorer.loaded.model
    return model[0] if FAMILY_OF[type(scorer).__name__] in ("embedding", "encoder") else model


FAMILY_OF = {
    "EmbeddingScorer": "embedding",
    "EncoderScorer": "encoder",
    "NliScorer": "nli",
    "RerankerScorer": "reranker",
    "YesNoScorer": "yesno",
    "LLMScorer": "llm",
}


def _options(row: Row) -> dict[str, Any]:
    return {"trust_remote_code": True} if row.paper_name in REMOTE_CODE else {}


def _flags(row: Row) -> list[str]:
    return ["--trust-remote-code"] if row.paper_name in REMOTE_CODE else []


@pytest.mark.parametrize("row", ROWS, ids=[row.paper_name for row in ROWS])
def test_paper_model_conforms(
    row: Row, standin_folders: tuple[Path, dict[str, Path]], btzsc_dir: Path, tmp_path: Path, zstc_cli: Any
) -> None:
    base, built = standin_folders
    _conforms(row, stand_in(row, base, built), btzsc_dir, tmp_path, zstc_cli)


HUB_ROWS = [
    row
    for row in ROWS
    if row.arch != "real"
    and row.paper_name
    not in (
        "bert-base-uncased-nli",
        "bert-large-uncased-nli",
        "bert-large-uncased-nli-triplet",
        "deberta-v3-base-nli",
        "deberta-v3-large-nli",
        "deberta-v3-large-nli-triplet",
        "modernbert-base-nli",
        "modernbert-large-nli",
        "modernbert-large-nli-triplet",
    )
]
"""The rows with a hub id (the paper's own NLI models have none; all-MiniLM-L6-v2 runs its real weights above)."""


@pytest.mark.hub
@pytest.mark.parametrize("row", HUB_ROWS, ids=[row.paper_name for row in HUB_ROWS])
def test_paper_checkpoint_conforms(row: Row, btzsc_dir: Path, tmp_path: Path, zstc_cli: Any) -> None:
    """The same row on the real checkpoint (ZSTC_TEST_HUB=1, a GPU advised for the 7-12B ones): everything but the
    chat template's exact text, which the real template writes with its own preamble (a date, a system turn)."""
    _conforms(row, row.paper_name, btzsc_dir, tmp_path, zstc_cli)


def _conforms(row: Row, model: Path | str, btzsc_dir: Path, tmp_path: Path, zstc_cli: Any) -> None:
    from zstc import Classifier
    from zstc.models.registry import registered_models
    from zstc.scorers import make_scorer

    folder = model if isinstance(model, Path) else None
    family = FAMILY[row.paper_name]
    texts, labels = _texts(btzsc_dir)
    # A real checkpoint's own limit (up to 128k tokens) would read the long text whole: it is cut at 512 there.
    sized = {**_options(row), **({} if folder is not None else {"max_length": 512})}

    # The registry's facts, applied to the folder that names the entry (or to the hub id).
    spec = get_model_spec(str(model))
    entry = next((s for s in registered_models() if s.paper_name == row.paper_name), None)
    assert spec.family == family and spec.paper_name == row.paper_name
    assert spec.model_id == (str(folder) if folder is not None else entry.model_id if entry else None)
    if entry is not None:
        assert (spec.query_prefix, spec.document_prefix, spec.query_template) == (
            entry.query_prefix,
            entry.document_prefix,
            entry.query_template,
        )
    assert spec.format_query("T") == QUERY_SIDE.get(row.paper_name, "") + "T"
    assert spec.format_document("L") == DOCUMENT_SIDE.get(row.paper_name, "") + "L"

    scorer = make_scorer(str(model), batch_size=16, **sized)
    assert FAMILY_OF[type(scorer).__name__] == family
    options = {"prefix_cache": False} if family == "yesno" else {}
    whole = make_scorer(str(model), batch_size=16, **options, **sized) if options else scorer
    with Received(_network(whole)) as received:
        scores = whole.score(texts, labels)
    tokenizer, limit = whole.loaded.tokenizer, whole.loaded.max_length
    _protocol_reaches_the_model(
        family, row, tokenizer, limit, received.ids, texts, labels, whole, exact_chat=folder is not None
    )

    # The score rule, on one text and every label.
    with Received(_network(scorer)) as one:
        single = scorer.score(texts[:1], labels)
    _score_rule(family, scorer, one, single, texts[0], labels)

    # Batch 1 against 16, the long text in the batch; bf16 with its recheck decides as fp32 does.
    alone = make_scorer(str(model), batch_size=1, **sized).score(texts, labels)
    assert np.abs(alone - scores).max() <= 1e-5
    # Same decisions, except where a random stand-in's best two labels are within that float noise of each other
    # (a tie: which one wins depends on the kernels' summation order, so on batch size and thread count).
    best_two = np.sort(scores, axis=1)[:, -2:]
    decided = best_two[:, 1] - best_two[:, 0] > 2e-5
    assert (alone.argmax(1) == scores.argmax(1))[decided].all()
    if family == "yesno":
        np.testing.assert_allclose(scorer.score(texts, labels), scores, atol=1e-5)  # the prefix cache changes nothing
    bf16 = make_scorer(str(model), precision="bf16", **sized).score(texts, labels)
    assert (bf16.argmax(1) == scores.argmax(1)).all()

    # The dry run (config and tokenizer only) says the same.
    code, out, err = zstc_cli(
        "models", "check", str(model), "--text", texts[0], "--labels", ",".join(labels), *_flags(row)
    )
    assert code == 0 and "cannot:" not in out, out + err
    facts = dict(line.strip().split("  ", 1) for line in out.splitlines()[1:])
    assert facts["family"].strip().startswith(f"{family} (")
    assert folder is None or facts["max length"].strip().startswith(f"{limit} tokens")
    if family == "embedding" and folder is not None:
        pooling = json.loads((folder / "1_Pooling" / "config.json").read_text())
        assert facts["pooling"].strip().split()[0] == next(k for k, on in pooling.items() if on is True).split("_")[2]
    if family == "yesno":
        assert facts["prompt"].strip() == repr(YESNO_PROMPT.format(text=texts[0], label=labels[0]))
    if family == "llm" and folder is not None:
        options = "\n".join(f"{symbol}) {label}" for symbol, label in zip("ABC", labels))
        assert facts["prompt"].strip() == repr(
            chat_opening(row.chat, LLM_QUESTION.format(text=texts[0], options=options)) + LLM_ANSWER
        )

    # The three front doors, with the registry's family.
    classifier = Classifier(str(model), **sized)
    assert classifier.family == family and len(classifier.predict(texts[:2], ["good news", "bad news"])) == 2
    inputs = tmp_path / "texts.txt"
    inputs.write_text("\n".join([texts[0], texts[2]]) + "\n")
    code, _, err = zstc_cli(
        "classify", str(inputs), "--labels", "good news,bad news", "--model", str(model), *_flags(row)
    )
    assert code == 0, err
    code, _, err = zstc_cli(
        "bench",
        "--model",
        str(model),
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "3",
        "--out",
        str(tmp_path / "r.json"),
        *_flags(row),
    )
    assert code == 0, err
    summary = json.loads((tmp_path / "r.json").read_text())
    assert summary["model"]["family"] == family


def _protocol_reaches_the_model(
    family: str,
    row: Row,
    tokenizer: Any,
    limit: int,
    seen: list[list[int]],
    texts: list[str],
    labels: list[str],
    scorer: Any,
    *,
    exact_chat: bool,
) -> None:
    if family in (
        "nli",
        "reranker",
    ):  # premise/query = text first, hypothesis/document = label second; only the text cut
        expected = [
            tokenizer(t, label, truncation="only_first", max_length=limit)["input_ids"]
            for t in texts
            for label in labels
        ]
        assert sorted(map(tuple, seen)) == sorted(set(map(tuple, expected)))
        long_pairs = [ids for ids in seen if len(ids) == limit]
        assert len(long_pairs) == len(labels)  # the long text, cut to the limit, once per label
        for label in labels:
            tail = tokenizer(label, add_special_tokens=False)["input_ids"]
            assert any(_contains(ids, tail) for ids in long_pairs)
    elif family in ("embedding", "encoder"):  # the query side and the document side, each with its own prefix
        query, document = QUERY_SIDE.get(row.paper_name, ""), DOCUMENT_SIDE.get(row.paper_name, "")
        expected = {tuple(tokenizer(query + t, truncation=True, max_length=limit)["input_ids"]) for t in texts}
        expected |= {tuple(tokenizer(document + label)["input_ids"]) for label in labels}
        assert set(map(tuple, seen)) == expected
        assert max(len(ids) for ids in seen) == limit  # the long text was cut
    elif family == "yesno":  # the Qwen3-Reranker prompt byte for byte; the long text cut, the rest whole
        decoded = {tokenizer.decode(ids) for ids in seen}
        for text in (texts[0], texts[2], texts[3]):
            assert {YESNO_PROMPT.format(text=text, label=label) for label in labels} <= decoded
        head, tail = YESNO_PROMPT.split("{text}")
        cut = decoded - {YESNO_PROMPT.format(text=t, label=label) for t in texts for label in labels}
        assert len(cut) == len(labels)
        for label in labels:
            assert any(p.startswith(head) and p.endswith(tail.format(label=label)) for p in cut)
        assert max(len(ids) for ids in seen) <= limit
    else:  # llm: the paper's prompt in the model's chat template, options A) B) C), answer start after the template
        options = "\n".join(f"{symbol}) {label}" for symbol, label in zip("ABC", labels))
        decoded = [tokenizer.decode(ids) for ids in seen]
        for text in (texts[0], texts[2], texts[3]):
            question = LLM_QUESTION.format(text=text, options=options)
            if exact_chat:
                assert chat_opening(row.chat, question) + LLM_ANSWER in decoded
            else:  # the real template: the question inside it, the answer's beginning after it
                assert any(question in p and p.endswith(LLM_ANSWER) for p in decoded)
        if not exact_chat:
            return
        head, tail = chat_opening(row.chat, LLM_QUESTION.format(text="\0", options=options)).split("\0")
        cut = [p for p in decoded if texts[1][:40] in p]
        assert len(cut) == 1 and cut[0].startswith(head) and cut[0].endswith(tail + LLM_ANSWER)
        assert texts[1] not in cut[0] and len(seen[decoded.index(cut[0])]) <= limit


def _contains(ids: list[int], part: list[int]) -> bool:
    return any(ids[i : i + len(part)] == part for i in range(len(ids) - len(part) + 1))


def _score_rule(family: str, scorer: Any, received: Received, scores: np.ndarray, text: str, labels: list[str]) -> None:
    if family in ("nli", "reranker"):
        logits = torch.cat(received.logits)
        assert len(logits) == len(labels)  # one pass each, in the label order? rebuild the map from the inputs
        by_pair = {tuple(ids): row for ids, row in zip(received.ids, logits)}
        tokenizer = scorer.loaded.tokenizer
        rows = torch.stack([by_pair[tuple(tokenizer(text, label)["input_ids"])] for label in labels])
        if family == "reranker":
            assert rows.shape[1] == 1
            expected = rows[:, 0]
        else:
            id2label = (
                scorer.loaded.model.config.id2label
                if hasattr(scorer.loaded.model, "config")
                else scorer.loaded.model.id2label
            )
            index = next(int(i) for i, name in id2label.items() if name.lower() == "entailment")
            assert scorer.loaded.facts.index == index
            others = [j for j in range(rows.shape[1]) if j != index]
            expected = rows[:, index] - (torch.logsumexp(rows[:, others], dim=1) if others else 0)
        np.testing.assert_allclose(scores[0], expected.numpy(), atol=1e-5)
    elif family in ("embedding", "encoder"):
        model = scorer.loaded.model
        spec = scorer.spec
        if family == "encoder":
            assert model[1].pooling_mode == "cls"
        vectors = model.encode(
            [spec.format_query(text), *map(spec.format_document, labels)], convert_to_tensor=True
        ).float()
        vectors = torch.nn.functional.normalize(vectors, dim=-1)
        np.testing.assert_allclose(scores[0], (vectors[1:] @ vectors[0]).numpy(), atol=1e-5)
    elif family == "yesno":
        tokenizer = scorer.loaded.tokenizer
        yes, no = (tokenizer(word, add_special_tokens=False)["input_ids"] for word in ("yes", "no"))
        assert len(yes) == len(no) == 1
        last = torch.cat([logits[:, -1] for logits in received.logits])
        pair = last[-len(labels) :, [yes[0], no[0]]]
        np.testing.assert_allclose(np.sort(scores[0]), np.sort(torch.softmax(pair, dim=1)[:, 0].numpy()), atol=1e-5)
    else:
        tokenizer = scorer.loaded.tokenizer
        symbols = [tokenizer(LLM_ANSWER + " " + s, add_special_tokens=False)["input_ids"][-1] for s in "ABC"]
        last = received.logits[-1][0, -1]
        np.testing.assert_allclose(scores[0], torch.softmax(last[symbols], dim=0).numpy(), atol=1e-5)


def test_a_model_with_its_own_code_runs_only_when_trusted(
    standin_folders: tuple[Path, dict[str, Path]], btzsc_dir: Path, tmp_path: Path, zstc_cli: Any
) -> None:
    """gte-v1.5's stand-in ships its classes (configuration.py, modeling.py, an auto_map): refused in one line naming
    the flag, run with it, and the flag is part of the result's identity."""
    from zstc.errors import ModelError
    from zstc.scorers import make_scorer

    base, built = standin_folders
    folder = stand_in(next(row for row in ROWS if row.paper_name == "gte-base-en-v1.5"), base, built)
    assert "auto_map" in json.loads((folder / "config.json").read_text())
    bench = [
        "bench",
        "--model",
        str(folder),
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "3",
        "--out",
        str(tmp_path / "r.json"),
    ]
    code, _, err = zstc_cli(*bench)
    refusal = err.strip().splitlines()[-1]  # after bench's line naming the dataset
    assert (
        code != 0 and refusal.startswith("error: ") and "--trust-remote-code" in refusal and err.count("error") == 1
    ), err
    assert not (tmp_path / "r.json").exists()
    code, _, err = zstc_cli("classify", "-", "--labels", "a,b", "--model", str(folder))
    assert code != 0 and "--trust-remote-code" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = zstc_cli("serve", "--model", str(folder), "--port", "18765")  # refused at start, before it listens
    assert code != 0 and "--trust-remote-code" in err and err.count("error") == 1, err
    assert zstc_cli(*bench, "--trust-remote-code")[0] == 0
    identity = json.loads((tmp_path / "r.json").read_text())["evaluation"]["run_identity"]
    assert identity["scorer_options"]["trust_remote_code"] is True
    with pytest.raises(ModelError, match="trust_remote_code"):
        make_scorer(str(folder)).score(["a text"], ["a label"])
    for name in ("Alibaba-NLP/gte-base-en-v1.5", "gte-large-en-v1.5"):  # the registry says so before the hub is asked
        with pytest.raises(ModelError, match="runs modelling code of its own .* give trust_remote_code"):
            make_scorer(name).score(["a text"], ["a label"])


def test_models_check_reads_no_weights_and_names_what_it_cannot_handle(
    standin_folders: tuple[Path, dict[str, Path]], tmp_path: Path, zstc_cli: Any
) -> None:
    base, built = standin_folders
    reranker = stand_in(next(row for row in ROWS if row.paper_name == "Qwen3-Reranker-0.6B"), base, built)
    config_only = tmp_path / "no-weights"
    config_only.mkdir()
    for entry in reranker.iterdir():
        if not entry.name.endswith(".safetensors"):
            (config_only / entry.name).symlink_to(entry)
    code, out, err = zstc_cli("models", "check", str(config_only), "--text", "T", "--labels", "L")
    assert code == 0 and repr(YESNO_PROMPT.format(text="T", label="L")) in out, out + err

    gte = stand_in(next(row for row in ROWS if row.paper_name == "gte-base-en-v1.5"), base, built)
    code, out, _ = zstc_cli("models", "check", str(gte))
    assert code == 1 and "embedding (" in out
    assert [line for line in out.splitlines() if "cannot:" in line and "--trust-remote-code" in line]
    code, out, _ = zstc_cli("models", "check", str(reranker), "--family", "nli")  # a causal LM has no NLI head
    assert code == 1 and "cannot:" in out and "no nli head" in out


def test_a_hub_model_with_its_own_code_is_refused_naming_the_flag() -> None:
    """A model the registry does not mark: transformers' refusal (trust_remote_code=False is passed, so it never asks on
    the terminal) becomes the same one line."""
    from zstc.models.loading import load_error
    from zstc.models.registry import ModelSpec

    error = ValueError(
        "The repository some-org/custom contains custom code which must be executed to correctly load "
        "the model. Please pass the argument `trust_remote_code=True` to allow custom code to be run."
    )
    translated = load_error(ModelSpec("some-org/custom", "embedding"), error)
    assert translated.parameters == ("trust_remote_code",) and "give trust_remote_code" in str(translated)


def test_a_folders_model_file_names_a_registry_entry_or_is_refused(tmp_path: Path, zstc_cli: Any) -> None:
    from zstc.errors import ModelError

    (tmp_path / "zstc_model.json").write_text(json.dumps({"model": "e5-base-V2"}))  # any casing of a paper name
    spec = get_model_spec(str(tmp_path))
    assert (spec.model_id, spec.family, spec.query_prefix, spec.paper_name) == (
        str(tmp_path),
        "embedding",
        "query: ",
        "e5-base-v2",
    )
    assert get_model_spec(str(tmp_path), "encoder").family == "encoder"  # a family given still wins
    (tmp_path / "zstc_model.json").write_text(json.dumps({"model": "e5-base-v3"}))
    with pytest.raises(ModelError, match=r"names unknown model 'e5-base-v3'.*did you mean.*e5-base-v2"):
        get_model_spec(str(tmp_path))
    (tmp_path / "zstc_model.json").write_text("{not json")
    code, _, err = zstc_cli("models", "check", str(tmp_path))
    assert (
        code != 0
        and err.startswith("error: ")
        and "zstc_model.json: not a readable model file" in err
        and len(err.splitlines()) == 1
    ), err
