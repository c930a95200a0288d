"""The scorer interface: texts x label descriptions -> score matrix (higher = more likely).

A scorer is the only code that touches a model. Constructors store parameters and do no work; the model is
loaded on first use, so building a scorer is cheap and validating options happens before any download.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from zstc.errors import ZstcError
from zstc.models.registry import ModelSpec
from zstc.scorers.runtime import Precision, check_precision, resolve_device

if TYPE_CHECKING:
    import torch


@runtime_checkable
class Scorer(Protocol):
    """What every model family offers."""

    family: ClassVar[str]
    spec: ModelSpec

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """A float32 matrix of shape ``(len(texts), len(labels))``; higher means more likely."""
        ...

    def describe(self) -> dict[str, Any]:
        """Facts about the model and settings, for the result file."""
        ...


class TorchScorer:
    """Shared plumbing for scorers that run a torch model: device, precision, batch size, notes."""

    family: ClassVar[str] = ""
    SCORING_VERSION: ClassVar[str] = ""
    """Version of the scoring math, per family (each scorer class sets its own); part of result fingerprints."""

    def __init__(
        self,
        spec: ModelSpec,
        *,
        device: str | None = None,
        precision: Precision = "fp32",
        batch_size: int = 32,
        max_length: int | None = None,
    ) -> None:
        for name, value in (("batch_size", batch_size), ("max_length", max_length)):
            if value is not None and value < 1:  # every family: a 0 would otherwise fail deep inside torch
                raise ZstcError(f"{name} must be at least 1, got {value}")
        self.spec = spec
        self.device = resolve_device(device)
        # Already resolved (fp32 or bf16): `auto` is decided once per run by resolve_precision, not here.
        self.precision: Precision = check_precision(precision)
        self.batch_size = batch_size
        self.max_length = max_length
        self.notes: list[str] = []
        """What the last :meth:`score` call did that a reader should know (e.g. texts truncated)."""
        self.parameters: int | None = None
        """Parameters of the loaded model, counted from its weights (None until it is loaded)."""

    @property
    def model_id(self) -> str:
        return self.spec.model_id

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.spec.model_id,
            "family": self.family,
            "paper_name": self.spec.paper_name,
            "parameters_millions": self.spec.params_millions,
            "device": str(self.device),
            "precision": self.precision,
            "batch_size": self.batch_size,
            "max_length": self.max_length,
            **({"parameters": self.parameters} if self.parameters is not None else {}),
        }

    def _count_parameters(self, model: torch.nn.Module) -> None:
        # Counted, not taken from the registry: a local folder or a model the registry does not know has no
        # registered size, and reports place every run by its size (Fig. 2b).
        self.parameters = sum(parameter.numel() for parameter in model.parameters())

    def _note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)


def empty_scores(n_texts: int, n_labels: int) -> np.ndarray:
    return np.zeros((n_texts, n_labels), dtype=np.float32)
