"""ONNX Runtime fp32 for an embedding model's transformer: the embedding families' ``backend="onnxruntime"``.

The sentence-transformers model's first module (its Hugging Face transformer) is exported once per load with
``torch.onnx`` (dynamic batch and sequence axes) and run by ONNX Runtime's CPU provider with every graph
optimisation; tokenization, batching by length (longest first, as ``encode`` does) and the model's own pooling and
normalisation stay sentence-transformers'. It is fp32 throughout, so its decisions are fp32's (cosines within float
noise of torch's: docs/performance-embedding.md measures speed and agreement).
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zstc.errors import OptionError

OrtEncoder = Callable[[list[str], int], torch.Tensor]
"""``encoder(sentences, batch_size)``: the sentences' embeddings, as ``encode`` returns them (before cosines)."""


def ort_encoder(model: Any, threads: int | None = None) -> OrtEncoder:
    """An encoder running ``model``'s transformer in ONNX Runtime fp32 (``threads``: its intra-op threads, default
    torch's). An error naming ``backend`` where onnxruntime or onnx is not installed."""
    try:
        import onnx  # noqa: F401  # torch.onnx.export needs it
        import onnxruntime as ort
    except ModuleNotFoundError as error:
        raise OptionError(f"backend 'onnxruntime' needs {error.name}: pip install 'zstc[onnx]'", "backend") from None
    transformer = model[0].auto_model.eval()
    names = [
        name
        for name in ("input_ids", "attention_mask", "token_type_ids")
        if name in model[0].tokenizer.model_input_names or name != "token_type_ids"
    ]

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.inner(**dict(zip(names, inputs))).last_hidden_state

    with tempfile.TemporaryDirectory(prefix="zstc-ort-") as folder:
        path = Path(folder) / "model.onnx"
        example = tuple(torch.ones(2, 8, dtype=torch.long) for _ in names)
        axes = {name: {0: "batch", 1: "sequence"} for name in names} | {"hidden": {0: "batch", 1: "sequence"}}
        with warnings.catch_warnings():  # the tracer's notes on the transformer's code, not the user's concern
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Hidden().eval(),
                example,
                str(path),
                input_names=names,
                output_names=["hidden"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or torch.get_num_threads()
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])  # reads the file now
    tail = torch.nn.Sequential(*list(model)[1:])  # pooling, and normalisation where the model has it

    def encode(sentences: list[str], batch_size: int) -> torch.Tensor:
        order = np.argsort([-len(sentence) for sentence in sentences], kind="stable")  # encode's order: longest first
        rows: list[torch.Tensor] = [torch.empty(0)] * len(sentences)
        for start in range(0, len(sentences), batch_size):
            chosen = order[start : start + batch_size]
            features = model.preprocess([sentences[i] for i in chosen])
            inputs = {
                name: features[name].numpy() if name in features else np.zeros_like(features["input_ids"].numpy())
                for name in names
            }
            hidden = torch.from_numpy(session.run(["hidden"], inputs)[0])
            with torch.inference_mode():
                pooled = tail({**features, "token_embeddings": hidden})["sentence_embedding"]
            for row, i in zip(pooled, chosen):
                rows[int(i)] = row
        return torch.stack(rows)

    return encode
