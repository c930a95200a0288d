"""The NLI cross-encoder that ``zstc train-nli`` trains: an encoder backbone plus the paper's [CLS] head.

PROTOCOL.md section 5 (paper appendix C.1): the head reads the final-layer [CLS] vector and applies
Dropout(0.1) -> Linear(H, H) -> GELU -> LayerNorm -> Linear(H, C). No transformers ``*ForSequenceClassification``
class has exactly this head, so a trained model is saved as two parts in one folder:

- the backbone, with ``save_pretrained`` (``config.json``, ``model.safetensors``, tokenizer files): it loads in
  plain transformers with ``AutoModel.from_pretrained(folder)``; its config carries ``id2label``;
- the head, in ``nli_head.safetensors`` (keys ``dense.*``, ``norm.*``, ``out_proj.*``);
- ``zstc_training.json``: the training configuration, the data checksums, and ``head`` (hidden size, number
  of outputs, ``id2label``), which is also what marks the folder as a zstc NLI model.

:func:`load_zstc_nli_model` puts the two parts back together.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase
from transformers.modeling_outputs import SequenceClassifierOutput

from zstc.errors import ModelError

TRAINING_FILE = "zstc_training.json"
HEAD_FILE = "nli_head.safetensors"

VARIANT_LABELS: dict[str, tuple[str, ...]] = {
    "triplet": ("entailment", "neutral", "contradiction"),
    "binary": ("entailment",),  # one logit: entailment against neutral and contradiction collapsed
}
"""Output names per variant, in output order; ``id2label`` is built from these."""


class NliHead(nn.Module):
    """Dropout(p) -> Linear(H, H) -> GELU -> LayerNorm -> Linear(H, C), applied to the [CLS] vector."""

    def __init__(self, hidden_size: int, num_outputs: int, dropout: float = 0.1, layer_norm_eps: float = 1e-12) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.activation = nn.GELU()
        self.norm = nn.LayerNorm(hidden_size, eps=layer_norm_eps)
        self.out_proj = nn.Linear(hidden_size, num_outputs)

    def forward(self, cls_vectors: torch.Tensor) -> torch.Tensor:
        """Class logits from the backbone's [CLS] vectors (dropout, dense, activation, norm, projection)."""
        logits: torch.Tensor = self.out_proj(self.norm(self.activation(self.dense(self.dropout(cls_vectors)))))
        return logits


class NliCrossEncoder(nn.Module):
    """Backbone encoder plus :class:`NliHead`; ``forward`` returns an object with ``.logits`` (batch, C)."""

    def __init__(self, backbone: nn.Module, head: NliHead, id2label: dict[int, str]) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.id2label = dict(id2label)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> SequenceClassifierOutput:
        """The head's logits on the backbone's [CLS] vectors for a batch of tokenized (premise, hypothesis) pairs."""
        inputs: dict[str, torch.Tensor] = {"input_ids": input_ids}
        if attention_mask is not None:
            inputs["attention_mask"] = attention_mask
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        hidden = self.backbone(**inputs).last_hidden_state
        return SequenceClassifierOutput(logits=self.head(hidden[:, 0]))

    def save(self, folder: Path, tokenizer: PreTrainedTokenizerBase, training: dict[str, Any]) -> None:
        """Write the backbone, tokenizer, head and ``zstc_training.json`` (written last: it marks completeness)."""
        from safetensors.torch import save_file

        folder.mkdir(parents=True, exist_ok=True)
        backbone: Any = self.backbone  # a transformers model: save_pretrained and config are not nn.Module's
        backbone.config.id2label = dict(self.id2label)
        backbone.config.label2id = {name: index for index, name in self.id2label.items()}
        backbone.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        save_file(
            {name: tensor.detach().contiguous().cpu() for name, tensor in self.head.state_dict().items()},
            folder / HEAD_FILE,
        )
        record = dict(training)
        record["head"] = {
            "hidden_size": self.head.dense.in_features,
            "num_outputs": self.head.out_proj.out_features,
            "dropout": self.head.dropout.p,
            "layer_norm_eps": self.head.norm.eps,
            "id2label": {str(index): name for index, name in self.id2label.items()},
        }
        (folder / TRAINING_FILE).write_text(json.dumps(record, indent=2) + "\n")


def build_nli_model(backbone: nn.Module, variant: str, dropout: float = 0.1) -> NliCrossEncoder:
    """A fresh head of the given variant on ``backbone`` (an ``AutoModel``)."""
    if variant not in VARIANT_LABELS:
        raise ModelError(f"unknown NLI variant {variant!r}; expected one of {', '.join(VARIANT_LABELS)}")
    labels = VARIANT_LABELS[variant]
    config: Any = backbone.config
    head = NliHead(config.hidden_size, len(labels), dropout, getattr(config, "layer_norm_eps", 1e-12))
    return NliCrossEncoder(backbone, head, dict(enumerate(labels)))


def is_zstc_nli_model(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by ``zstc train-nli`` (it has ``zstc_training.json``)."""
    return (Path(path).expanduser() / TRAINING_FILE).is_file()


def read_training_record(path: str | Path) -> dict[str, Any]:
    """The ``zstc_training.json`` of a trained model folder."""
    file = Path(path).expanduser() / TRAINING_FILE
    try:
        record: dict[str, Any] = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ModelError(f"{file}: not a readable zstc training record ({error})") from error
    return record


def load_zstc_nli_model(
    path: str | Path, device: torch.device
) -> tuple[NliCrossEncoder, PreTrainedTokenizerBase, dict[int, str]]:
    """Load a folder written by ``zstc train-nli``: (model in eval mode on ``device``, tokenizer, id2label)."""
    from safetensors.torch import load_file
    from transformers import AutoModel, AutoTokenizer

    folder = Path(path).expanduser()
    if not is_zstc_nli_model(folder):
        raise ModelError(
            f"{folder}: not a zstc NLI model folder (expected {TRAINING_FILE}, written by `zstc train-nli`)"
        )
    head_record = read_training_record(folder).get("head")
    if not isinstance(head_record, dict) or not (folder / HEAD_FILE).is_file():
        raise ModelError(
            f"{folder}: incomplete zstc NLI model (expected {HEAD_FILE} and a 'head' entry in {TRAINING_FILE})"
        )
    id2label = {int(index): str(name) for index, name in head_record["id2label"].items()}
    try:
        backbone = AutoModel.from_pretrained(folder)
    except (OSError, ValueError) as error:
        raise ModelError(f"{folder}: cannot load the backbone ({type(error).__name__}: {error})") from error
    tokenizer = AutoTokenizer.from_pretrained(folder)
    head = NliHead(
        int(head_record["hidden_size"]),
        int(head_record["num_outputs"]),
        float(head_record.get("dropout", 0.1)),
        float(head_record.get("layer_norm_eps", 1e-12)),
    )
    head.load_state_dict(load_file(folder / HEAD_FILE))
    model = NliCrossEncoder(backbone, head, id2label).to(device).eval()
    return model, tokenizer, id2label
