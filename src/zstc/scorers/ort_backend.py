"""ONNX Runtime fp32 for an embedding model's transformer: the embedding families' ``backend="onnxruntime"``.

The sentence-transformers model's first module (its Hugging Face transformer) is exported once per load with
``torch.onnx`` (dynamic batch and sequence axes) and run by ONNX Runtime's CPU provider with every graph
optimisation; tokenization, batching by length (longest first, as ``encode`` does) and the model's own pooling and
normalisation stay sentence-transformers'. It is fp32 throughout, so its cosines are fp32's up to float noise (ONNX
Runtime picks its kernels by the CPU's instruction set, so the noise is the machine's): the embedding scorer rescores
in torch fp32 the texts with a decision that noise could change, so the decisions are torch fp32's on every machine
(:meth:`zstc.scorers.embedding.EmbeddingScorer._recheck_texts`; docs/performance-embedding.md measures speed and
agreement). :func:`onnx_session` is the one export (the NLI benchmark's ``benchmarks/onnx_backend.py`` uses it too).

An export takes seconds (more than loading the model), so the graph is kept in ``$ZSTC_CACHE/onnx/`` under a hash of
everything it is made from (every weight's bytes, the model's class and configuration, the torch, transformers and
onnx versions, the inputs and output): the next load of the same weights reads it. A cache that cannot be written
or read is skipped (the graph is exported to a temporary folder, as without it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zstc.errors import OptionError

OPSET = 17
"""The ONNX opset of every export."""
ONNX_MODULES: tuple[str, ...] = ("onnx", "onnxruntime")
"""What ``backend="onnxruntime"`` imports (torch.onnx's exporter needs ``onnx``): the ``onnx`` extra."""

ORT_BATCH_SIZE = 16
"""Texts per ONNX Runtime run where the user gives no ``batch_size``: its CPU kernels ran all-MiniLM-L6-v2 fastest at
8-16 texts a run and 1.4-1.9x slower at 64 (torch's default), as a run's activations outgrow the core's cache
(docs/performance-embedding.md)."""

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

    def export(path: Path) -> None:
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
                opset_version=OPSET,
                dynamo=False,
            )

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or torch.get_num_threads()
    # Threads sleep between ops instead of spinning: on a loaded machine a spinning thread burns the core time its
    # siblings need (imdb, 192 texts at load 9-10: 6-8% faster; docs/performance-embedding.md).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    cached = _cached_graph(model, inputs, output, output_axes, export)
    if cached is not None:
        try:
            return ort.InferenceSession(str(cached), options, providers=["CPUExecutionProvider"])
        except Exception:  # a damaged file (a disk that filled): exported again, below  # noqa: BLE001
            cached.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="zstc-ort-") as folder:
        path = Path(folder) / "model.onnx"
        export(path)
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])  # reads the file now


def graph_key(model: torch.nn.Module, names: Sequence[str], output: str, output_axes: dict[int, str]) -> str:
    """A hash of everything an export of ``model`` is made from: every weight and buffer (name, dtype, shape, bytes),
    the model's class and configuration, the torch, transformers and onnx versions, the opset, inputs and output."""
    import onnx
    import transformers

    config = getattr(model, "config", None)
    to_json = getattr(config, "to_json_string", None)
    digest = hashlib.sha256(
        json.dumps(
            {
                "versions": [torch.__version__, transformers.__version__, onnx.__version__, OPSET],
                "class": f"{type(model).__module__}.{type(model).__qualname__}",
                "config": to_json() if callable(to_json) else repr(config),
                "graph": [list(names), output, sorted(output_axes.items())],
            },
            sort_keys=True,
        ).encode()
    )
    for name, tensor in model.state_dict().items():
        digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def _cached_graph(
    model: torch.nn.Module,
    names: Sequence[str],
    output: str,
    output_axes: dict[int, str],
    export: Callable[[Path], None],
) -> Path | None:
    """The graph's file in ``$ZSTC_CACHE/onnx/``, exported there first if it is not yet (written whole, then renamed
    into place, so a reader never sees half a file); None where the cache cannot be written."""
    from zstc.defaults import cache_root

    folder = cache_root() / "onnx"
    path = folder / f"{graph_key(model, names, output, output_axes)}.onnx"
    if path.is_file():
        return path
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=folder, prefix=".partial-", suffix=".onnx")
        os.close(handle)
        try:
            export(Path(partial))
            os.replace(partial, path)
        finally:
            Path(partial).unlink(missing_ok=True)
    except OSError:
        return None
    return path


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
