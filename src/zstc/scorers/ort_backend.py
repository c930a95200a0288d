"""ONNX Runtime fp32 for an embedding model's transformer: the embedding families' ``backend="onnxruntime"``.

The sentence-transformers model's first module (its Hugging Face transformer) is exported once per load with
``torch.onnx`` (dynamic batch and sequence axes) and run by ONNX Runtime's CPU provider with every graph
optimisation; tokenization, batching by length (longest first, as ``encode`` does) and the model's own pooling and
normalisation stay sentence-transformers'. It is fp32 throughout, so its cosines are fp32's up to float noise (ONNX
Runtime picks its kernels by the CPU's instruction set, so the noise is the machine's): the embedding scorer rescores
in torch fp32 the texts with a decision that noise could change, so the decisions are torch fp32's on every machine
(:meth:`zstc.scorers.embedding.EmbeddingScorer._recheck_texts`; docs/performance-embedding.md measures speed and
agreement). :func:`onnx_session` is the one export (the NLI benchmark's ``benchmarks/onnx_backend.py`` uses it too).
"""

from __future__ import annotations

import importlib.util
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zstc.errors import OptionError

ONNX_MODULES: tuple[str, ...] = ("onnx", "onnxruntime")
"""What ``backend="onnxruntime"`` imports (torch.onnx's exporter needs ``onnx``): the ``onnx`` extra."""

OrtEncoder = Callable[[list[str], int], torch.Tensor]
"""``encoder(sentences, batch_size)``: the sentences' embeddings, as ``encode`` returns them (before cosines)."""


def onnxruntime_missing() -> str | None:
    """The first of :data:`ONNX_MODULES` not installed, else None (looked up, not imported: cheap)."""
    return next((name for name in ONNX_MODULES if importlib.util.find_spec(name) is None), None)


def onnx_session(
    model: torch.nn.Module,
    names: Sequence[str],
    output: str,
    output_axes: dict[int, str],
    threads: int | None = None,
) -> Any:
    """``model`` exported with ``torch.onnx`` and loaded in an ONNX Runtime CPU session with every graph optimisation:
    it is called with ``names`` as keyword inputs (integer ids, dynamic batch and sequence axes) and its output's
    attribute ``output`` (``last_hidden_state``, ``logits``) is the graph's one output, named so, with ``output_axes``
    dynamic. ``threads``: ONNX Runtime's intra-op threads (default torch's). An error naming ``backend`` where
    onnxruntime or onnx is not installed."""
    missing = onnxruntime_missing()
    if missing is not None:
        raise OptionError(f"backend 'onnxruntime' needs {missing}: pip install 'zstc[onnx]'", "backend")
    import onnxruntime as ort

    inputs = list(names)

    class Output(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *values: torch.Tensor) -> torch.Tensor:
            return getattr(self.inner(**dict(zip(inputs, values))), output)

    with tempfile.TemporaryDirectory(prefix="zstc-ort-") as folder:
        path = Path(folder) / "model.onnx"
        example = tuple(torch.ones(2, 8, dtype=torch.long) for _ in inputs)
        axes = {name: {0: "batch", 1: "sequence"} for name in inputs} | {output: output_axes}
        with warnings.catch_warnings():  # the tracer's notes on the transformer's code, not the user's concern
            warnings.simplefilter("ignore")
            torch.onnx.export(
                Output().eval(),
                example,
                str(path),
                input_names=inputs,
                output_names=[output],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or torch.get_num_threads()
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])  # reads the file now


def ort_encoder(model: Any, threads: int | None = None) -> OrtEncoder:
    """An encoder running ``model``'s transformer in ONNX Runtime fp32 (``threads``: its intra-op threads, default
    torch's). An error naming ``backend`` where onnxruntime or onnx is not installed."""
    names = [
        name
        for name in ("input_ids", "attention_mask", "token_type_ids")
        if name in model[0].tokenizer.model_input_names or name != "token_type_ids"
    ]
    output = "last_hidden_state"
    session = onnx_session(model[0].auto_model.eval(), names, output, {0: "batch", 1: "sequence"}, threads)
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
            hidden = torch.from_numpy(session.run([output], inputs)[0])
            with torch.inference_mode():
                pooled = tail({**features, "token_embeddings": hidden})["sentence_embedding"]
            for row, i in zip(pooled, chosen):
                rows[int(i)] = row
        return torch.stack(rows)

    return encode
