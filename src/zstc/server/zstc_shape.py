"""``POST /classify``: zstc's own shape (:class:`~zstc.server.schemas.ClassifyRequest`), or the Hugging Face shape when
the body has ``inputs`` (answered by :mod:`zstc.server.hf`). Scores are the model's; decisions and probabilities are
:mod:`zstc.policy`'s, as the library's and ``zstc classify``'s.
"""

# No `from __future__ import annotations` here: FastAPI reads the route signatures' annotations at runtime.

import time
from typing import Any, Union

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from zstc.errors import LabelError
from zstc.policy import (
    MultiLabelRule,
    argmax_decisions,
    check_label_thresholds,
    check_multi_label_options,
    check_multilabel_names,
)
from zstc.server.hf import HF_ANSWER, classify_hf
from zstc.server.openapi import WORK_ERRORS
from zstc.server.schemas import AnyClassifyRequest, ClassifyRequest, ClassifyResponse, HFZeroShotRequest
from zstc.server.service import Service, service_of, timing_headers
from zstc.validation import check_labels, check_texts

router = APIRouter(tags=["classify"])


@router.post(
    "/classify",
    response_model=Union[ClassifyResponse, HF_ANSWER],
    responses=WORK_ERRORS,
    response_description="zstc's shape: ClassifyResponse; the Hugging Face shape: [{label, score}] "
    "(a list of them per text when `inputs` is a list)",
)
async def classify(request: Request, body: AnyClassifyRequest) -> Response:
    """Classify texts: zstc's shape, or the Hugging Face zero-shot shape when the body has `inputs`."""
    if isinstance(body, HFZeroShotRequest):
        return await classify_hf(request, body)
    return await classify_zstc(service_of(request), request, body)


async def classify_zstc(service: Service, request: Request, body: ClassifyRequest) -> JSONResponse:
    """zstc's shape: each text's label (or labels, multi-label) with every label's score and probability."""
    started = time.perf_counter()
    texts = [body.texts] if isinstance(body.texts, str) else list(body.texts)
    service.check_size("texts", len(texts), "max_texts")
    service.check_chars("text", texts)  # every size before any other check: no message quotes a string past the limits
    if body.template is not None:
        service.check_field_chars("template", body.template)
    texts = check_texts(texts)
    per_text = bool(body.labels) and isinstance(body.labels[0], list)
    label_lists: list[list[str]] = list(body.labels) if per_text else [list(body.labels)]  # type: ignore[arg-type]
    given_lists: list[Any] = [None] * len(label_lists)  # one list of descriptions per label set, or None
    if body.descriptions is not None:
        descriptions_per_text = bool(body.descriptions) and isinstance(body.descriptions[0], list)
        if descriptions_per_text != per_text:
            raise LabelError("descriptions must have the shape of labels: one list for all texts, or one list per text")
        given_lists = list(body.descriptions) if per_text else [list(body.descriptions)]
        if len(given_lists) != len(label_lists):
            raise LabelError(f"{len(given_lists)} description lists for {len(label_lists)} label lists")
    if per_text and len(label_lists) != len(texts):
        raise LabelError(
            f"{len(label_lists)} label sets for {len(texts)} texts: give one label set per text, or one list for all"
        )
    names_per_set, label_sets = [], []
    for names, given in zip(label_lists, given_lists):
        service.check_size("labels", len(names), "max_labels")
        service.check_chars("label", names)
        if given is not None:
            service.check_chars("label description", given)
        names = check_labels(names, allow_single=body.multi_label)
        if body.multi_label:
            check_multilabel_names(names)
        # Label names without a template get the classifier's (zstc's default "This is {}."), as classify does.
        template = (
            body.template if body.template is not None or given is not None else service.probability_model.template
        )
        names_per_set.append(names)
        label_sets.append((names, given, template))
    descriptions_per_set, variants_per_set = await service.label_descriptions(label_sets)
    if not per_text:
        names_per_set, descriptions_per_set = names_per_set * len(texts), descriptions_per_set * len(texts)
        variants_per_set = variants_per_set * len(texts)
    check_multi_label_options(body.multi_label, threshold=body.threshold, label_thresholds=body.label_thresholds)
    rules: list[MultiLabelRule | None] = [None] * len(texts)
    if body.multi_label:
        # With one label set per text, a threshold names a label of any set and applies where that label is.
        every_name = list(dict.fromkeys(name for names in names_per_set for name in names))
        given = check_label_thresholds(body.label_thresholds or {}, every_name, "label_thresholds")
        by_set: dict[tuple[str, ...], MultiLabelRule] = {}
        for names in names_per_set:
            if tuple(names) not in by_set:
                own = {name: value for name, value in given.items() if name in names}
                by_set[tuple(names)] = service.policy.multi_label(
                    names, body.threshold, own, per_label_parameter="label_thresholds"
                )
        rules = [by_set[tuple(names)] for names in names_per_set]
    # bf16 rechecks the scores near each label's cut and, under the embedding family's default rule, near the text's
    # best minus the margin, as the library does; for an average of description variants, on the average (the
    # engine's Backend.answer).
    cuts = [None if rule is None else tuple(rule.recheck_cuts()) for rule in rules]
    margins = [None if rule is None or rule.margin is None else tuple(rule.recheck_margins() or ()) for rule in rules]
    rows, job = await service.score(request, texts, descriptions_per_set, cuts, margins, variants_per_set)
    results = [
        text_result(service, text, row, names, rule, body.precision)
        for text, row, names, rule in zip(texts, rows, names_per_set, rules)
    ]
    content = {
        "model": service.model_id,
        "family": service.family,
        "score_type": service.score_type,
        "multi_label": body.multi_label,
        "results": results,
        "notes": service.request_notes(job),
    }
    return JSONResponse(content, headers=timing_headers(job, started))


def text_result(
    service: Service, text: str, row: np.ndarray, names: list[str], rule: MultiLabelRule | None, decimals: int | None
) -> dict[str, Any]:
    """One text's answer: its label (single-label) or labels (``rule``'s, multi-label), and each label's score and
    probability, highest score first (ties keep the label order)."""

    def rounded(value: float) -> float:
        return round(float(value), decimals) if decimals is not None else float(value)

    order = np.argsort(-row, kind="stable")
    if rule is not None:
        matrix = np.asarray(row, dtype=np.float64)[None, :]
        scored = service.probability_model.scored(matrix)
        passed, probabilities = rule.decide(matrix, scored)[0], rule.probabilities(matrix, scored)[0]
        scores = [
            {
                "label": names[j],
                "score": rounded(row[j]),
                "probability": rounded(probabilities[j]),
                "passed": bool(passed[j]),
            }
            for j in order
        ]
        return {"text": text, "labels": rule.label_sets(matrix, scored)[0], "scores": scores}
    probabilities = service.single_label_probabilities(row)
    scores = [{"label": names[j], "score": rounded(row[j]), "probability": rounded(probabilities[j])} for j in order]
    return {"text": text, "label": names[int(argmax_decisions(row[None, :])[0])], "scores": scores}
