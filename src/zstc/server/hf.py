"""``POST /``: the Hugging Face inference task for zero-shot classification, where hub clients post it
(``huggingface_hub.InferenceClient.zero_shot_classification``); ``POST /classify`` answers the same shape.

Its numbers, for NLI models, are what transformers' ``pipeline("zero-shot-classification")`` returns on the same
weights and inputs, so that a client moving from the hub's inference API to ``zstc serve`` reads the same
probabilities (zstc's own ``/classify`` shape keeps zstc's scores and probabilities). Single-label: a softmax over the
labels' entailment logits. Multi-label (or one candidate label): per label, a softmax of its entailment logit against
its contradiction logit. The logits are :meth:`zstc.scorers.nli.NliScorer.pipeline_logits`' (fp32), computed by the
batching engine like any other work (batched across requests, bounded by the queue: 429 with Retry-After). A client
that takes a label when its score is >= 0.5 (multi-label) makes the pipeline's decision. For other families, the
scores are :mod:`zstc.policy`'s probabilities, whose 0.5 is zstc's decision cut.
"""

# No `from __future__ import annotations` here: FastAPI reads the route signatures' annotations at runtime.

import time
from typing import Union

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from zstc.server.openapi import WORK_ERRORS
from zstc.server.schemas import HFLabelScore, HFZeroShotRequest
from zstc.server.service import notes_header, service_of, timing_headers
from zstc.validation import check_labels, check_template, check_texts, is_blank

router = APIRouter(tags=["classify"])

HF_ANSWER = Union[list[HFLabelScore], list[list[HFLabelScore]]]


def pipeline_scores(logits: np.ndarray, multi_label: bool) -> np.ndarray:
    """One text's ``(labels, 2)`` contradiction and entailment logits -> the pipeline's score per label."""
    pairs = np.asarray(logits, dtype=np.float64)
    if multi_label:
        shifted = np.exp(pairs - pairs.max(axis=1, keepdims=True))
        return np.asarray(shifted[:, 1] / shifted.sum(axis=1))
    entailment = np.exp(pairs[:, 1] - pairs[:, 1].max())
    return np.asarray(entailment / entailment.sum())


@router.post(
    "/",
    response_model=HF_ANSWER,
    responses=WORK_ERRORS,
    response_description="[{label, score}] sorted by score; a list of them per text when `inputs` is a list",
)
async def hugging_face(request: Request, body: HFZeroShotRequest) -> Response:
    """The Hugging Face inference task for zero-shot classification, where hub clients post it."""
    return await classify_hf(request, body)


async def classify_hf(request: Request, body: HFZeroShotRequest) -> JSONResponse:
    """``[{label, score}]`` per text, highest score first (one list for a single text)."""
    service = service_of(request)
    started = time.perf_counter()
    single = isinstance(body.inputs, str)
    texts: list[str] = [body.inputs] if isinstance(body.inputs, str) else list(body.inputs)
    service.check_size("texts", len(texts), "max_texts")
    texts = check_texts(texts)
    given = body.parameters.candidate_labels
    candidates = [label for label in given.split(",") if not is_blank(label)] if isinstance(given, str) else list(given)
    service.check_size("labels", len(candidates), "max_labels")
    service.check_chars("text", texts)
    service.check_chars("candidate label", candidates)
    service.check_field_chars("hypothesis_template", body.parameters.hypothesis_template)
    check_template(body.parameters.hypothesis_template, what="hypothesis_template")  # named as this shape names it
    # One candidate label is scored on its own, as with multi_label: the pipeline's rule (a softmax over one label would
    # always say 1).
    multi_label = body.parameters.multi_label or len(candidates) == 1
    names = check_labels(candidates, what="candidate_labels", allow_single=multi_label)
    (descriptions,), (variants,) = await service.label_descriptions(
        [(names, None, body.parameters.hypothesis_template)]
    )
    if service.engine.backend.pipeline_numbers and variants == 1:  # the pipeline's numbers
        rows, job = await service.score(request, texts, [descriptions] * len(texts), pipeline=True)
        answers = [pipeline_scores(logits, multi_label) for logits in rows]
    else:
        # Multi-label: zstc's default rule, whose probabilities are >= 0.5 exactly where a label passed (a client
        # thresholding at 0.5, as Hugging Face clients do, gets zstc's decisions); the cuts are rechecked in bf16.
        rule = service.policy.rule_without_options(names) if multi_label else None
        cuts = [None if rule is None else tuple(rule.recheck_cuts())] * len(texts)
        margins = [None if rule is None or rule.margin is None else tuple(rule.recheck_margins() or ())] * len(texts)
        rows, job = await service.score(
            request, texts, [descriptions] * len(texts), cuts, margins, [variants] * len(texts)
        )
        answers = []
        for row in rows:
            matrix = np.asarray(row, dtype=np.float64)[None, :]
            answers.append(
                rule.probabilities(matrix, service.probability_model.scored(matrix))[0]
                if rule is not None
                else service.single_label_probabilities(row)
            )
    ranked = []
    for probabilities in answers:
        order = np.argsort(-probabilities, kind="stable")
        ranked.append([{"label": names[j], "score": float(probabilities[j])} for j in order])
    return JSONResponse(
        ranked[0] if single else ranked,
        headers={**timing_headers(job, started), **notes_header(service.request_notes(job))},
    )
