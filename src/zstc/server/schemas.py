"""Request and response bodies of the HTTP service, as pydantic models (they are also the OpenAPI schema).

Three request shapes:

* zstc's own (:class:`ClassifyRequest`): texts, labels or one label set per text, descriptions or a
  template, multi-label with a threshold;
* the Hugging Face inference task for zero-shot classification (:class:`HFZeroShotRequest`:
  ``{"inputs", "parameters": {"candidate_labels", "hypothesis_template", "multi_label"}}``), accepted by
  ``POST /classify`` (recognised by its ``inputs`` key) and ``POST /``, so clients written for the hub work
  unchanged;
* the Cohere/Jina rerank body (:class:`RerankRequest`: ``query``, ``documents``, ``top_n``,
  ``return_documents``), which infinity, vLLM and TEI serve too.

The models check only shape and types. Everything a CLI user could also get wrong (an empty text, one label,
duplicate labels, a bad template) is checked by :mod:`zstc.validation` and :mod:`zstc.api` in the route, so the
message reads exactly as it does on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from zstc.policy import DEFAULT_THRESHOLDS, family_thresholds
from zstc.validation import OPTIONS


def _cuts(cuts: Mapping[str, float]) -> str:
    """``name cut, ...``: a table of thresholds as the field descriptions list them."""
    return ", ".join(f"{name} {cut:g}" for name, cut in cuts.items())


def _valid_unicode(value: str) -> str:
    # JSON may carry a lone UTF-16 surrogate ("\ud800"); Python decodes it into a str that no tokenizer
    # and no UTF-8 encoder accepts. Refused here, it is a 422 instead of an error deep inside the model.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        bad = value[error.start]
        raise ValueError(f"contains a lone UTF-16 surrogate (U+{ord(bad):04X}), which is not text") from None
    return value


Text = Annotated[str, AfterValidator(_valid_unicode)]
"""A string that is valid Unicode (no lone surrogates)."""


class ErrorResponse(BaseModel):
    """Every error, in text-embeddings-inference's shape: ``{"error": ..., "error_type": ...}``."""

    error: str
    error_type: Literal[
        "validation",
        "too_large",
        "timeout",
        "overloaded",
        "unhealthy",
        "unauthorized",
        "not_found",
        "method_not_allowed",
        "unsupported_media_type",
        "backend",
    ]
    request_id: str | None = Field(
        default=None, description="The request's X-Request-ID (the client's, or one made up)."
    )


# -- zstc's own shape ---------------------------------------------------------------------------------------


class ClassifyRequest(BaseModel):
    """Classify texts into labels (one label set for all texts, or one per text)."""

    # A misspelt "multilabel" is an error, not silently ignored; strict: "multi_label": "yes" or "threshold": true is
    # an error too, not a guess (an int still passes as a float).
    model_config = ConfigDict(extra="forbid", strict=True)

    texts: Text | list[Text] = Field(
        description="One text, or a list of texts.", examples=[["The striker scored twice."]]
    )
    labels: list[Text] | list[list[Text]] = Field(
        description="Candidate labels for every text, or one list of labels per text (as many lists as texts).",
        examples=[["sports", "economy", "politics"]],
    )
    descriptions: list[Text] | list[list[Text]] | None = Field(
        default=None, description="One description per label (same shape as labels), scored instead of the label names."
    )
    template: Text | None = Field(
        default=None,
        description="Turns each label name into its description, e.g. 'This text is about {}.' "
        "(refused with descriptions other than the names: those are scored as written).",
    )
    multi_label: bool = Field(default=False, description="Every label whose score reaches the threshold, or 'none'.")
    threshold: float | None = OPTIONS["threshold"].field(
        description="Multi-label threshold on the raw score (on the probability when the server has a Platt calibration "
        f"file). Default: the family's measured cut ({_cuts(family_thresholds())} on the cosine), else the score type's "
        f"({_cuts(DEFAULT_THRESHOLDS)}), which GET /info gives as own_probability_center; 0.5 with a Platt calibration. "
        "Without a threshold, an embedding model's label must also be at least half as probable as the text's best one "
        "(the margin rule); a threshold given is a plain cut.",
    )
    label_thresholds: dict[Text, Annotated[float, Field(allow_inf_nan=False)]] | None = Field(
        default=None,
        description="Multi-label: a threshold per label name, overriding `threshold` (with one label set "
        "per text, for the texts whose set has that label).",
    )
    precision: int | None = Field(
        default=None, ge=0, le=12, description="Round scores and probabilities to this many decimals."
    )


class LabelScore(BaseModel):
    """One label's score for one text."""

    label: str
    score: float = Field(description="The model's raw score (see score_type in GET /info).")
    probability: float = Field(
        description="Single-label: softmax over this text's labels of score / single_label_temperature (GET /info). "
        "Multi-label: this label's own probability, sigmoid((score - own_probability_center) / own_probability_temperature) "
        "(GET /info; another temperature than the softmax's), or a Platt calibration file's."
    )
    passed: bool | None = Field(default=None, description="Multi-label: whether the score reached its threshold.")


class TextResult(BaseModel):
    """One text's answer: its labels, highest score first, and the decision."""

    text: str
    label: str | None = Field(default=None, description="Single-label: the best label (the first on ties).")
    labels: list[str] | None = Field(default=None, description="Multi-label: every label that passed, or ['none'].")
    scores: list[LabelScore] = Field(description="Every label, highest score first.")


class ClassifyResponse(BaseModel):
    """The answer of ``POST /classify`` in zstc's shape: one result per text, in request order."""

    model: str
    family: str
    score_type: str | None
    multi_label: bool
    results: list[TextResult]
    notes: list[str] = Field(
        default_factory=list,
        description="What applies to this request's own inputs, in the words "
        "`zstc classify` prints: texts longer than the model reads, named by position ('text 3 exceeds "
        "256 tokens and was truncated': scored on their beginning). Empty when nothing applies.",
    )


# -- the Hugging Face inference task shape ---------------------------------------------------------------------


def _nullable(schema: dict[str, Any]) -> None:
    """A field's JSON schema saying that it accepts null too (which a route reads as "not given"), so that a
    validating gateway or a generated client lets through what the server accepts."""
    kind = schema.pop("type")
    schema["anyOf"] = [{"type": kind}, {"type": "null"}]


class HFParameters(BaseModel):
    """The ``parameters`` of the Hugging Face zero-shot classification task."""

    # A misspelt key ("multilabel") was ignored and answered single-label with a 200: refused, as the zstc shape does.
    model_config = ConfigDict(extra="forbid", strict=True)

    candidate_labels: list[Text] | Text = Field(
        description="Labels, as a list or one comma-separated string (as the pipeline takes them)."
    )
    hypothesis_template: Text = Field(
        default="This example is {}.",
        description="The pipeline's default is 'This example is {}.' (null: the default)",
        json_schema_extra=_nullable,
    )
    multi_label: bool = Field(
        default=False, description="Score each label on its own (null: the default, false)", json_schema_extra=_nullable
    )

    @model_validator(mode="before")
    @classmethod
    def _null_is_the_default(cls, data: Any) -> Any:
        # Clients built from the task's spec send optional parameters as null ("hypothesis_template": null);
        # null says "not given", so the pipeline's default applies rather than a 422 (and the schema says so).
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if not (value is None and key in NULLABLE)}
        return data


NULLABLE = ("hypothesis_template", "multi_label")
"""The Hugging Face parameters whose null means "the default" (:func:`_nullable` in their schema)."""


class HFOptions(BaseModel):
    """The ``options`` hub clients send (``{"wait_for_model": true}``): transport settings that change no score."""

    model_config = ConfigDict(extra="forbid", strict=True)

    use_cache: bool | None = None
    wait_for_model: bool | None = None


class HFZeroShotRequest(BaseModel):
    """``{"inputs": text, "parameters": {...}}``: answered as ``[{"label", "score"}]``, highest score first
    (a list of such lists when ``inputs`` is a list)."""

    model_config = ConfigDict(extra="forbid", strict=True)  # {"inputs", "texts"} dropped texts in silence

    inputs: Text | list[Text]
    parameters: HFParameters
    options: HFOptions | None = Field(
        default=None,
        description="The hub's request options, which hold here as they "
        "are: the model is always loaded before an answer (wait_for_model) and no answer "
        "comes from a cache (use_cache).",
    )


class HFLabelScore(BaseModel):
    """One label of a Hugging Face answer (a list of these per text, highest score first)."""

    label: str
    score: float


def _request_shape(body: Any) -> str | None:
    if isinstance(body, dict):
        return "hf" if "inputs" in body else "zstc"
    return None


AnyClassifyRequest = Annotated[
    Union[Annotated[ClassifyRequest, Tag("zstc")], Annotated[HFZeroShotRequest, Tag("hf")]],
    Discriminator(
        _request_shape,
        custom_error_type="shape",
        custom_error_message="expected a JSON object: {texts, labels, ...} or the Hugging Face shape {inputs, parameters}",
    ),
]
"""What ``POST /classify`` accepts: an object with ``inputs`` is the Hugging Face shape, any other zstc's."""


# -- rerank ---------------------------------------------------------------------------------------------------


class RerankDocument(BaseModel):
    """A document given as an object, as Cohere and Jina clients may send it: its ``text``, or the fields
    ``rank_fields`` names (other fields are the client's own, returned with ``return_documents``)."""

    model_config = ConfigDict(extra="allow")

    text: Text | None = None


class RerankRequest(BaseModel):
    """Cohere (v1 and v2) and Jina rerank: score every document against the query, best first. Every field has its
    effect (:mod:`zstc.server.rerank`); any other field is refused, naming it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    query: Text
    documents: list[Text | RerankDocument] = Field(
        description="Strings, or objects with a 'text' field (or the fields rank_fields names)."
    )
    top_n: int | None = Field(default=None, ge=1, description="Return only the best n.")
    return_documents: bool | None = Field(
        default=None, description="Return each document with its result (default: no)."
    )
    model: str | None = Field(
        default=None, description="The served model's id (GET /info) or its last part; another is refused."
    )
    rank_fields: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Object documents: the fields read, one 'key: value' line each (Cohere v1).",
    )
    max_tokens_per_doc: int | None = Field(
        default=None,
        ge=1,
        description="Cut each document to its first n tokens, "
        "as Cohere does (said in x-zstc-notes); without it a document too long is refused.",
    )
    raw_scores: bool | None = Field(
        default=None, description="relevance_score is the model's raw score (as TEI's raw_scores)."
    )


class RerankResult(BaseModel):
    """One document's place in a rerank answer: its index in the request and its relevance."""

    index: int
    relevance_score: float = Field(
        description="sigmoid((score - own_probability_center) / own_probability_temperature) "
        "(GET /info; the score itself when it is a probability): order as the raw score."
    )
    document: RerankDocument | None = None


class RerankResponse(BaseModel):
    """The answer of ``POST /rerank`` in the Cohere/Jina shape: documents best first."""

    id: str
    model: str
    results: list[RerankResult]
    meta: dict[str, Any] = Field(
        description="Cohere's: api_version, billed_units (search_units 1), tokens (input_tokens: "
        "the query's and the documents' tokens as read, without special tokens)."
    )
    usage: dict[str, int] = Field(description="Jina's: total_tokens, the same count.")


# -- health and info ------------------------------------------------------------------------------------------


class HealthResponse(BaseModel):
    """The state of the server and the model it serves."""

    status: Literal["ok", "ready", "loading", "draining", "failed"]
    model: str
    family: str


class InfoResponse(BaseModel):
    """What the server serves and the limits it enforces."""

    model: str
    family: str
    score_type: str | None
    temperature: float = Field(
        description="The same as single_label_temperature (kept for older clients); not the "
        "temperature of multi-label and rerank probabilities (own_probability_temperature)."
    )
    single_label_temperature: float = Field(
        description="Single-label probabilities: softmax over a text's labels of "
        "score / single_label_temperature (the family's measured one, or a calibration file's)."
    )
    own_probability_temperature: float | None = Field(
        description="Multi-label and rerank: each label's own probability is "
        "sigmoid((score - own_probability_center) / own_probability_temperature); "
        "null when the scores are probabilities already (passed through). "
        "A Platt calibration file gives multi-label probabilities of its own."
    )
    own_probability_center: float | None = Field(
        description="The score at which a label's own probability is 0.5: the "
        "default multi-label threshold on the raw score; null as own_probability_temperature."
    )
    scorer: dict[str, Any]
    limits: dict[str, int | float]  # as Limits holds them: 128 texts, not 128.0
    batching: dict[str, Any]
    version: str
