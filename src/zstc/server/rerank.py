"""What ``POST /rerank`` (``/v1/rerank``, ``/v2/rerank``) does with the fields of Cohere's and Jina's rerank APIs
beyond the query and the documents, so that their SDKs work unchanged and no field is accepted without effect.

* ``rank_fields`` (Cohere v1): an object document is read as its named fields, one ``key: value`` line each in the
  order given (Cohere reads such a document as YAML of those keys); without it, an object's ``text``.
* ``max_tokens_per_doc`` (Cohere v2): a document longer than that many of the model's tokens is cut to its first
  that many, as Cohere does, and the answer says so (``x-zstc-notes``). Without it documents are never cut: one too
  long for the model is refused, naming it.
* ``model``: the served model's hub id or its last part (``all-MiniLM-L6-v2``); any other is refused, naming both.

The query is scored as a text against each document as a label description; ``relevance_score`` is a document's own
probability at the default cut (:meth:`zstc.policy.DecisionPolicy.relevance`), or its raw score with ``raw_scores``.
"""

# No `from __future__ import annotations` here: FastAPI reads the route signatures' annotations at runtime.

import asyncio
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from zstc.errors import DataError, DescriptionTooLongError, LabelError, OptionError, quoted
from zstc.server.openapi import WORK_ERRORS
from zstc.server.schemas import RerankRequest, RerankResponse
from zstc.server.service import notes_header, service_of, timing_headers
from zstc.validation import blank_detail, check_encodable, check_labels, is_blank

router = APIRouter(tags=["rerank"])


async def rerank(request: Request, body: RerankRequest) -> JSONResponse:
    """Cohere/Jina rerank: the query is scored as a text against each document as a label description."""
    service = service_of(request)
    model_id = service.model_id
    started = time.perf_counter()
    check_model(body.model, model_id)
    given = [d if isinstance(d, str) else d.model_dump(exclude_none=True) for d in body.documents]
    documents = [document_text(d, body.rank_fields, i + 1) for i, d in enumerate(given)]
    service.check_size("documents", len(documents), "max_labels")
    service.check_field_chars("query", body.query)
    check_encodable(body.query, "query")  # first: a NUL is binary data, not an invisible character
    if is_blank(body.query):
        raise DataError(f"query is empty{blank_detail(body.query)}")
    service.check_chars("document", documents)
    if not documents:
        raise LabelError("no documents given")
    loaded = await asyncio.to_thread(service.engine.backend.tokenizer)
    notes: list[str] = []
    if body.max_tokens_per_doc is not None:
        if loaded is None:
            raise OptionError(
                f"max_tokens_per_doc is not supported for {model_id} (no tokenizer to count its tokens)",
                "max_tokens_per_doc",
            )
        documents, cut, _ = await asyncio.to_thread(truncate, *loaded, documents, body.max_tokens_per_doc)
        if cut:
            notes.append(truncation_note(cut, body.max_tokens_per_doc))
    # Positions as the client gave them (a repeated document is scored once, but an error names where it is).
    stripped = check_labels(documents, what="documents", allow_single=True, allow_repeats=True)
    distinct = list(dict.fromkeys(stripped))
    try:
        rows, job = await service.score(request, [body.query], [tuple(distinct)])
    except DescriptionTooLongError as error:  # the scorer's words are classification's ("label description")
        spec = service.scorer.spec
        index = next((i for i, d in enumerate(stripped) if error.description in (d, spec.format_document(d))), None)
        which = f"document {index + 1}" if index is not None else "a document"
        raise LabelError(
            f"{which} is too long for {model_id}'s limit of {error.limit} tokens (a cross-encoder reads it "
            "with the query); documents are scored whole unless max_tokens_per_doc cuts them: "
            "set it, shorten or split it"
        ) from None
    relevance = dict(zip(distinct, rows[0] if body.raw_scores else service.policy.relevance(rows[0])))
    ranked = sorted(range(len(documents)), key=lambda i: -relevance[stripped[i]])[: body.top_n]
    results = [
        {
            "index": i,
            "relevance_score": float(relevance[stripped[i]]),
            **(
                {"document": {"text": given[i]} if isinstance(given[i], str) else given[i]}
                if body.return_documents
                else {}
            ),
        }
        for i in ranked
    ]
    tokens = await asyncio.to_thread(count_tokens, *loaded, [body.query, *documents]) if loaded is not None else 0
    version = "2" if request.url.path.startswith("/v2/") else "1"
    content = {
        "id": str(uuid.uuid4()),
        "model": model_id,
        "results": results,
        "meta": {
            "api_version": {"version": version},
            "billed_units": {"search_units": 1},
            "tokens": {"input_tokens": tokens, "output_tokens": 0},
        },
        "usage": {"total_tokens": tokens},
    }
    headers = {**timing_headers(job, started), **notes_header([*notes, *service.request_notes(job, "query")])}
    return JSONResponse(content, headers=headers)


for _path in ("/rerank", "/v1/rerank", "/v2/rerank"):  # Cohere's v1 and v2 SDKs post to the last two
    router.post(_path, response_model=RerankResponse, responses=WORK_ERRORS)(rerank)


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
