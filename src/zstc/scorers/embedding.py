"""Embedding models and base encoders: cosine similarity of text and label-description embeddings.

Pooling is ``native`` (the model's own sentence-transformers configuration: mean, CLS, last token, with
or without normalisation) or ``cls`` (final-layer [CLS] vector of the raw encoder, the paper's
computation, which reproduces its all-MiniLM-L6-v2 row). Base encoders are always scored with ``cls``.
Label embeddings are computed once per label set and reused for every batch of texts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from zstc.errors import ModelError, UnknownNameError
from zstc.models.loading import load_error, model_source
from zstc.models.registry import ModelSpec
from zstc.scorers.runtime import Precision, inference_context
from zstc.scorers.base import TorchScorer

POOLINGS: tuple[str, ...] = ("native", "cls")


class EmbeddingScorer(TorchScorer):
    family: ClassVar[str] = "embedding"
    SCORING_VERSION: ClassVar[str] = "1"
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""

    def __init__(
        self,
        spec: ModelSpec,
        *,
        pooling: str = "native",
        device: str | None = None,
        precision: Precision = "fp32",
        batch_size: int = 64,
        max_length: int | None = None,
    ) -> None:
        super().__init__(spec, device=device, precision=precision, batch_size=batch_size, max_length=max_length)
        if pooling not in POOLINGS:
            raise UnknownNameError(f"unknown pooling {pooling!r}; expected one of {', '.join(POOLINGS)}")
        self.pooling = pooling
        self._model: Any = None
        self._label_cache: dict[tuple[str, ...], torch.Tensor] = {}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "pooling": self.pooling}

    # -- loading --------------------------------------------------------------------------------------

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

        source = model_source(self.spec)
        try:
            if self.pooling == "native":
                model = SentenceTransformer(source, device=str(self.device))
            else:
                transformer = Transformer(source)
                pooling = Pooling(transformer.get_embedding_dimension(), pooling_mode="cls")
                model = SentenceTransformer(modules=[transformer, pooling], device=str(self.device))
        except Exception as error:
            raise load_error(self.spec, error) from None
        if self.max_length is not None:
            model.max_seq_length = self.max_length
        self.max_length = model.max_seq_length
        model.eval()
        self._count_parameters(model)
        self._model = model
        return model

    # -- scoring --------------------------------------------------------------------------------------

    def _encode(self, sentences: list[str], show_progress: bool) -> torch.Tensor:
        model = self._load()
        with inference_context(self.device, self.precision):
            embeddings = model.encode(
                sentences,
                batch_size=self.batch_size,
                convert_to_tensor=True,
                show_progress_bar=show_progress,
            )
        return torch.nn.functional.normalize(embeddings.float(), dim=-1)

    def _count_truncated(self, sentences: list[str]) -> int:
        tokenizer = self._load().tokenizer
        # Cutting one token past the limit still shows which are too long, without tokenizing whole documents
        # (and without transformers' "longer than the maximum" warning, which the note replaces).
        lengths = tokenizer(sentences, add_special_tokens=True, truncation=True, max_length=self.max_length + 1,
                            return_length=True)["length"]
        return int(sum(length > self.max_length for length in lengths))

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        self.notes = []
        documents = tuple(self.spec.format_document(label) for label in labels)
        if documents not in self._label_cache:
            # Checked before caching: a refused description must be refused again, not served truncated.
            if self._count_truncated(list(documents)):
                raise ModelError(
                    f"a label description is longer than {self.spec.model_id}'s {self.max_length} tokens; "
                    "label descriptions are never truncated: shorten it"
                )
            self._label_cache[documents] = self._encode(list(documents), show_progress=False)
        queries = [self.spec.format_query(text) for text in texts]
        truncated = self._count_truncated(queries)
        if truncated:
            self._note(f"{truncated} of {len(queries)} texts exceed {self.max_length} tokens and were truncated")
        text_embeddings = self._encode(queries, show_progress=show_progress)
        return (text_embeddings @ self._label_cache[documents].T).cpu().numpy().astype(np.float32)


class EncoderScorer(EmbeddingScorer):
    """A base encoder (no sentence-embedding training): final-layer [CLS] cosine, as the paper scores them."""

    family: ClassVar[str] = "encoder"
    SCORING_VERSION: ClassVar[str] = "1"
    """Part of every result's fingerprint: bump it when a change to this scorer's math changes its scores."""

    def __init__(self, spec: ModelSpec, *, device: str | None = None, precision: Precision = "fp32", batch_size: int = 64, max_length: int | None = None) -> None:
        super().__init__(spec, pooling="cls", device=device, precision=precision, batch_size=batch_size, max_length=max_length)
