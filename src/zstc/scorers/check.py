"""A dry run for a model not yet run: what zstc would do with it, read from its config and tokenizer only.

``zstc models check MODEL`` reports the family and why, the pooling, the prefixes or instruction, the score rule,
the output column read (entailment or relevance, from ``id2label``), the token limit, and the exact input for a
sample text and label, without loading any weights (a hub model costs its small config and tokenizer files). Every
fact comes from the code that scores: the registry entry, the family's option defaults, the scorer's own token facts
(yes/no answer tokens, option symbols) and prompts, so the dry run cannot drift from a real run. What zstc cannot
handle (code it would have to trust, an output column it cannot name, an answer that is not one token, a missing
length limit) is listed as a problem instead of raised, so one run names them all.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zstc.errors import ModelError, ZstcError
from zstc.models.families import get_family
from zstc.models.registry import MODEL_FILE, ModelSpec, get_model_spec


@dataclass
class ModelCheck:
    """What a dry run found: ``facts`` in report order, and what zstc cannot handle (``problems``)."""

    model: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    problems: list[ZstcError] = field(default_factory=list)
    """Each thing zstc cannot handle, as the error a real run would raise."""

    def add(self, name: str, value: Any) -> None:
        """One fact, as the report prints it."""
        self.facts.append((name, str(value)))


def _why(model: str, family: str | None, spec: ModelSpec) -> str:
    folder = Path(model).expanduser()
    if family is not None:
        return "given with family"
    if folder.is_dir() and (folder / MODEL_FILE).is_file():
        return f"the folder's {MODEL_FILE} names {spec.paper_name or 'a registry entry'}"
    if spec.paper_name is not None or not folder.is_dir():
        return f"registry entry {spec.model_id}"
    if (folder / "zstc_training.json").is_file():
        return "written by `zstc train-nli` (zstc_training.json)"
    return "a sentence-transformers folder (modules.json)"


def _file(source: str, name: str) -> Path | None:
    """A file of the model's (a folder's, or fetched alone from the hub at the pinned commit); None when absent."""
    folder = Path(source).expanduser()
    if folder.is_dir():
        return folder / name if (folder / name).is_file() else None
    from zstc.models.loading import pinned

    try:
        import huggingface_hub

        return Path(huggingface_hub.hf_hub_download(source, name, **pinned(source)))
    except Exception:  # not in the repository, or the hub did not answer: the file is simply not there
        return None


def _json(path: Path | None) -> Any:
    """A JSON file's content; ``{}`` for a file that is not there."""
    return json.loads(path.read_text(encoding="utf-8")) if path is not None else {}


def _pooling(source: str) -> str:
    """The pooling of a sentence-transformers model, from its Pooling module's config."""
    modules = _json(_file(source, "modules.json"))
    for module in modules if isinstance(modules, list) else []:
        if str(module.get("type", "")).endswith("Pooling"):
            config = _json(_file(source, f"{module.get('path', '')}/config.json".lstrip("/")))
            if "pooling_mode" in config:
                return str(config["pooling_mode"])
            modes = [
                key.removeprefix("pooling_mode_").removesuffix("_tokens").removesuffix("_token")
                for key, on in config.items()
                if key.startswith("pooling_mode_") and on is True
            ]
            return ", ".join(modes) or "none"
    return "mean (no sentence-transformers config: sentence-transformers' default)"


def check_model(
    model: str,
    family: str | None = None,
    *,
    text: str = "The quarterly profit rose by 20 percent.",
    labels: Sequence[str] = ("positive", "negative"),
    **options: Any,
) -> ModelCheck:
    """What zstc will do with ``model`` (hub id, paper short name or local folder) as ``family`` (None: the
    registry's or its folder's), read from its config and tokenizer only; ``options`` as for :func:`make_scorer`."""
    from zstc.models.loading import model_source, remote_code
    from zstc.scorers import make_scorer
    from zstc.scorers.base import LoadedModel, model_max_length

    spec = get_model_spec(model, family)
    result = ModelCheck(spec.model_id)
    scorer: Any = make_scorer(spec, **options)  # checks the options; loads nothing
    result.add("family", f"{spec.family} ({_why(model, family, spec)})")
    if spec.paper_name:
        result.add("paper name", spec.paper_name)
    try:
        remote_code(spec, scorer.options.get("trust_remote_code", False))
    except ZstcError as error:
        result.problems.append(error)
    source = model_source(spec)
    config = _json(_file(source, "config.json"))
    result.add("architecture", ", ".join(config.get("architectures") or []) or config.get("model_type", "unknown"))
    if spec.family in ("embedding", "encoder"):
        pooling = scorer.pooling
        result.add(
            "pooling",
            f"{_pooling(source)} (the model's own)" if pooling == "native" else f"{pooling} (pooling {pooling})",
        )
        result.add("query side", repr(spec.format_query("{text}")))
        result.add("document side", repr(spec.format_document("{label}")))
    result.add("score rule", get_family(spec.family).score_rule or spec.family)
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(source, **_tokenizer_kwargs(source, scorer))
    except Exception as error:  # any failure to read the tokenizer is reported, with the others
        reason = f"{type(error).__name__}: {str(error).splitlines()[0]}" if str(error) else type(error).__name__
        result.problems.append(ModelError(f"cannot read the tokenizer ({reason})"))
        return result
    try:
        limit = model_max_length(spec, tokenizer, config.get("max_position_embeddings"))
        sentence = _json(_file(source, "sentence_bert_config.json")).get("max_seq_length")
        if spec.family in ("embedding", "encoder") and isinstance(sentence, int):
            limit = min(limit, sentence) if scorer.pooling == "native" else limit
        result.add(
            "max length", f"{scorer.max_length or limit} tokens" + ("" if scorer.max_length else " (the model's own)")
        )
    except ZstcError as error:
        result.problems.append(error)
        limit = 0
    _sample(result, scorer, spec, tokenizer, config, limit, text, list(labels), LoadedModel)
    return result


def _tokenizer_kwargs(source: str, scorer: Any) -> dict[str, Any]:
    from zstc.models.loading import pinned

    # False when not given: transformers would otherwise ask on the terminal whether to run the code.
    return {**pinned(source), "trust_remote_code": bool(scorer.options.get("trust_remote_code"))}


def _sample(
    result: ModelCheck,
    scorer: Any,
    spec: ModelSpec,
    tokenizer: Any,
    config: dict[str, Any],
    limit: int,
    text: str,
    labels: list[str],
    loaded_type: Any,
) -> None:
    """The output column, the answer facts and the exact input for ``text`` and the first of ``labels`` (an LLM: all of
    them, as options), from the scorer's own code."""
    label = labels[0]
    if spec.family in ("nli", "reranker"):
        id2label = {int(index): str(name) for index, name in (config.get("id2label") or {}).items()}
        training = _json(_file(str(Path(spec.model_id)), "zstc_training.json")) if Path(spec.model_id).is_dir() else {}
        if training.get("head"):
            id2label = {int(index): str(name) for index, name in training["head"]["id2label"].items()}
        elif not any("ForSequenceClassification" in name for name in config.get("architectures") or []):
            result.problems.append(
                ModelError(
                    f"{spec.model_id} has no {spec.family} head (its architectures are "
                    f"{config.get('architectures')}): transformers would initialise one at random"
                )
            )
        try:
            column = scorer._resolve_outputs(id2label)
            result.add(
                "entailment index" if spec.family == "nli" else "relevance index",
                f"{column.index} ({column.name!r} in id2label)",
            )
        except ZstcError as error:
            result.problems.append(error)
        ids = tokenizer(text, label)["input_ids"]
        result.add("input", repr(tokenizer.decode(ids)))
        return
    if spec.family in ("embedding", "encoder"):
        for side, string in (("text input", spec.format_query(text)), ("label input", spec.format_document(label))):
            result.add(side, repr(tokenizer.decode(tokenizer(string)["input_ids"])))
        return
    dry = copy.copy(scorer)  # the scorer's own prompt code, over the tokenizer alone: no weights
    try:
        dry._loaded = loaded_type(None, tokenizer, limit, 0, scorer._facts(tokenizer))
        if spec.family == "yesno":
            yes, no = dry.loaded.facts
            result.add("answer tokens", f"yes {yes}, no {no}")
            result.add("prompt", repr(dry.prompt(text, label)))
        else:
            symbols = dry.loaded.facts
            result.add(
                "option symbols",
                f"{len(symbols)} single-token symbols ({''.join(symbol for symbol, _ in symbols[:8])}...)",
            )
            result.add("prompt", repr(dry.prompt(text, labels)))
    except ZstcError as error:
        result.problems.append(error)
