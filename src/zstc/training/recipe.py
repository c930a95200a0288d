"""The training recipe of PROTOCOL.md section 5 (paper appendix C.1): configuration, learning rates, losses.

Where the paper is silent, the choices follow Hugging Face ``Trainer`` defaults, which the paper's numbers
(AdamW betas 0.9/0.999, eps 1e-8) suggest it used: gradients clipped to norm 1.0, and no weight decay on
biases and LayerNorm weights.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch.nn import functional as F

from zstc.validation import check_choice, check_options
from zstc.models.nli_head import VARIANT_LABELS
from zstc.scorers.pairs import log_odds
from zstc.training.nli_pairs import NLI_CLASSES

ENTAILMENT = NLI_CLASSES.index("entailment")

LEARNING_RATES_BY_SIZE: tuple[tuple[float, float, float], ...] = (
    # (backbone parameters up to, in millions; backbone rate; head rate)
    (60.0, 8e-5, 3e-4),
    (200.0, 2e-5, 1e-4),
    (float("inf"), 8e-6, 4e-5),
)
"""Default rates by backbone size. Base (<= 200M) and large rates are the paper's. Small backbones (MiniLM-L6,
22M) learn too slowly at the base rates within an epoch: measured here on MiniLM-L6, one epoch of LingNLI,
2e-5/1e-4 reached MNLI-matched accuracy 0.568 and AUROC 0.772, 8e-5/3e-4 reached 0.595 and 0.825."""


def default_learning_rates(backbone_params: int) -> tuple[float, float]:
    """(backbone rate, head rate) for a backbone with this many parameters."""
    millions = backbone_params / 1e6
    for limit, backbone_rate, head_rate in LEARNING_RATES_BY_SIZE:
        if millions <= limit:
            return backbone_rate, head_rate
    raise AssertionError("the last size class has no limit")


_RANGED = (
    "dev_size",
    "seed",
    "epochs",
    "max_steps",
    "max_minutes",
    "batch_size",
    "backbone_lr",
    "head_lr",
    "eval_fraction",
    "patience",
    "max_length",
)
"""The fields of :class:`TrainConfig` with a range in :data:`zstc.validation.OPTIONS`."""


@dataclass
class TrainConfig:
    """Everything that determines a training run; recorded in the saved model's ``zstc_training.json``."""

    backbone: str
    data: str
    out: str
    variant: str = "triplet"
    dev: str | None = None
    dev_size: int = 300
    """Pairs in the balanced dev set (held out from ``data`` when ``dev`` is not given, else sampled from it)."""
    seed: int = 42
    epochs: float = 3.0
    max_steps: int | None = None
    max_minutes: float | None = None
    """Wall-clock budget: when spent, training ends as if stopped early (the best weights so far are saved).
    The schedule still spans the full step budget, so choose ``max_steps`` to fit when you can."""
    batch_size: int = 32
    backbone_lr: float | None = None
    head_lr: float | None = None
    """``None``: the default for the backbone's size (:data:`LEARNING_RATES_BY_SIZE`)."""
    weight_decay: float = 0.01
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_eps: float = 1e-8
    warmup_fraction: float = 0.1
    max_grad_norm: float = 1.0
    head_dropout: float = 0.1
    eval_fraction: float = 0.01
    """Evaluate every this fraction of the total steps."""
    patience: int = 10
    """Stop after this many evaluations without a lower dev loss (``EarlyStoppingCallback``). Every evaluation
    is also a checkpoint, so the best weights are on disk for ``load_best_model_at_end``."""
    max_length: int | None = None
    """Token limit per pair (only the premise is cut); ``None``: the tokenizer's own, at most 512."""
    eval_batch_size: int = 64
    precision: str = "fp32"
    """``fp32``, ``bf16`` (autocast) or ``auto`` (bf16 where the hardware runs it fast); resolved once when training starts."""
    device: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_choice("variant", self.variant, tuple(VARIANT_LABELS))
        # The ranges of train-nli's (and unseen's) flags, one record each (zstc.validation.OPTIONS).
        check_options({name: getattr(self, name) for name in _RANGED})

    def to_record(self) -> dict[str, Any]:
        """The configuration as JSON-ready values (what a trained model's record and a checkpoint's resume key hold)."""
        record = asdict(self)
        record["adam_betas"] = list(self.adam_betas)
        return record

    def resume_key(self) -> dict[str, Any]:
        """What must be unchanged for a checkpoint to be continued (runtime choices may differ). The precision is
        part of it (resolved: ``train_nli`` replaces ``auto`` first): steps taken in bf16 and continued in fp32 made a
        model of neither, which the trained model's record then called fp32."""
        record = self.to_record()
        for runtime_only in ("out", "max_minutes", "device", "eval_batch_size", "extra"):
            record.pop(runtime_only)
        return record


def targets_for(classes: torch.Tensor, variant: str) -> torch.Tensor:
    """Training targets from gold classes: the class index (triplet) or 1.0 for entailment (binary)."""
    if variant == "binary":
        return (classes == ENTAILMENT).float()
    return classes


def nli_loss(logits: torch.Tensor, classes: torch.Tensor, variant: str) -> torch.Tensor:
    """Binary: BCE on the single entailment logit (neutral and contradiction collapsed); triplet: 3-way CE."""
    targets = targets_for(classes, variant)
    if variant == "binary":
        return F.binary_cross_entropy_with_logits(logits[:, 0].float(), targets)
    return F.cross_entropy(logits.float(), targets)


def entailment_score(logits: torch.Tensor, variant: str) -> torch.Tensor:
    """The paper's evaluation score: the entailment logit (binary), or its log-odds against the others (triplet),
    ``l_ent - log(exp(l_neut) + exp(l_contra))``."""
    logits = logits.float()
    if variant == "binary":
        return logits[:, 0]
    return log_odds(logits, ENTAILMENT)


def predicted_classes(logits: torch.Tensor, variant: str) -> torch.Tensor:
    """Triplet: argmax class. Binary: entailment when its logit is positive, else -1 (not-entailment)."""
    if variant == "binary":
        return torch.where(logits[:, 0] > 0, ENTAILMENT, -1)
    return logits.argmax(dim=1)
