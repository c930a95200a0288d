"""A small HTTP service for practitioners: POST texts and labels, get labels back.

One model per process, loaded once at start-up (``zstc serve --model M``); requests are validated by the
same functions as the CLI and the Python API, so error messages read the same everywhere.
"""

# No `from __future__ import annotations` here: FastAPI must see the request models defined inside
# create_app as real classes, not as strings it cannot resolve.

from typing import Any

from zstc.api import Classifier, describe_labels
from zstc.errors import ZstcError


def create_app(classifier: Classifier) -> Any:
    from fastapi import FastAPI, HTTPException
    from pydantic import BaseModel, Field

    from zstc import __version__

    class ClassifyRequest(BaseModel):
        texts: list[str] = Field(min_length=1, description="Texts to classify.")
        labels: list[str] = Field(description="Candidate labels (at least two, no duplicates).")
        descriptions: list[str] | None = Field(default=None, description="One description per label; default: the labels through the template.")
        template: str | None = Field(default=None, description="E.g. 'This text is about {}.'")

    class LabelScore(BaseModel):
        text: str
        label: str
        scores: dict[str, float]

    app = FastAPI(title="zstc", version=__version__, description="Zero-shot text classification.")

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "model": classifier.scorer.spec.model_id, "family": classifier.scorer.family}

    @app.post("/classify", response_model=list[LabelScore])
    def classify(request: ClassifyRequest) -> list[dict[str, Any]]:
        try:
            descriptions = request.descriptions
            if descriptions is None and request.template is not None:
                descriptions = describe_labels(request.labels, request.template)
            predictions = classifier.predict(request.texts, request.labels, descriptions)
        except ZstcError as error:
            raise HTTPException(status_code=422, detail=str(error)) from None
        return [{"text": p.text, "label": p.label, "scores": p.scores} for p in predictions]

    return app
