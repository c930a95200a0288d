"""What ``POST /rerank`` (``/v1/rerank``, ``/v2/rerank``) does with the fields of Cohere's and Jina's rerank APIs
beyond the query and the documents, so that their SDKs work unchanged and no field is accepted without effect.

* ``rank_fields`` (Cohere v1): an object document is read as its named fields, one ``key: value`` line each in the
  order given (Cohere reads such a document as YAML of those keys); without it, an object's ``text``.
* ``max_tokens_per_doc`` (Cohere v2): a document longer than that many of the model's tokens is cut to its first
  that many, as Cohere does, and the answer says so (``x-zstc-notes``). Without it documents are never cut: one too
  long for the model is refused, naming it.
* ``model``: the served model's hub id or its last part (``all-MiniLM-L6-v2``); any other is refused, naming both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zstc.errors import LabelError, OptionError, quoted


def document_text(document: str | Mapping[str, Any], rank_fields: Sequence[str] | None, position: int) -> str:
    """The text the model reads for one document (``position`` counts from 1, for the messages)."""
    if isinstance(document, str):
        return document
    fields = list(rank_fields) if rank_fields else ["text"]
    missing = [name for name in fields if name not in document]
    if missing:
        where = "rank_fields" if rank_fields else "'text' (or name the fields to read in rank_fields)"
        raise LabelError(f"document {position} has no field {quoted(missing[0])}, which {where} asks for")
    values = [document[name] for name in fields]
    if not all(isinstance(value, str) for value in values):
        raise LabelError(f"document {position}: the fields read for ranking must be strings")
    if not rank_fields:
        return str(values[0])
    return "\n".join(f"{name}: {value}" for name, value in zip(fields, values))


def check_model(asked: str | None, served: str) -> None:
    """Refuse a ``model`` that is not the served one (the server serves one model)."""
    if asked is None:
        return
    if asked.strip().lower() not in {served.lower(), served.rsplit("/", 1)[-1].lower()}:
        raise OptionError(
            f"model {quoted(asked)} is not served here: this server serves {served!r} (GET /info)", "model"
        )


def truncate(tokenizer: Any, lock: Any, documents: Sequence[str], max_tokens: int) -> tuple[list[str], list[int], int]:
    """Each document cut to its first ``max_tokens`` tokens (without special tokens), the positions of those cut, and
    the tokens of all documents as read (the answer's usage)."""
    kept, cut, total = [], [], 0
    with lock:
        encoded = tokenizer(list(documents), add_special_tokens=False, return_offsets_mapping=True)
    for i, (document, ids, offsets) in enumerate(zip(documents, encoded["input_ids"], encoded["offset_mapping"])):
        if len(ids) > max_tokens:
            document = document[: offsets[max_tokens - 1][1]]
            cut.append(i)
        kept.append(document)
        total += min(len(ids), max_tokens)
    return kept, cut, total


def count_tokens(tokenizer: Any, lock: Any, texts: Sequence[str]) -> int:
    """The tokens of ``texts`` (without special tokens): the answer's ``meta`` and ``usage``."""
    with lock:
        return sum(len(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"])


def truncation_note(cut: Sequence[int], max_tokens: int) -> str:
    """The note naming the documents ``max_tokens_per_doc`` cut (positions from 0, named from 1)."""
    numbers = [str(i + 1) for i in cut]
    which = f"document {numbers[0]}" if len(numbers) == 1 else f"documents {', '.join(numbers[:-1])} and {numbers[-1]}"
    return f"{which} {'was' if len(numbers) == 1 else 'were'} cut to its first {max_tokens} tokens (max_tokens_per_doc)"
