"""Levers on the embedding path, each against sentence-transformers' fp32 ``encode``: speed, argmax agreement, cosine error.

One model (``--model``, default all-MiniLM-L6-v2), the same texts and label descriptions, the same batch size; each
lever embeds the descriptions once and each chunk of texts, then cosines and the argmax. The levers alternate
chunk by chunk in one process (``nli_vs_pipeline.timed_rounds``), so background load on a shared machine falls on all
alike:

- ``fp32``: sentence-transformers' ``encode`` (the reference);
- ``bf16``: the same under bf16 autocast (no recheck: what bf16 alone costs and changes);
- ``int8``: ``torch.ao.quantization.quantize_dynamic`` of the linear layers (int8 weights, activations quantized per
  batch), no recheck;
- ``ort``: ONNX Runtime fp32, as zstc's ``backend="onnxruntime"`` runs it (zstc.scorers.ort_backend; the ``onnx`` extra).

    python benchmarks/embedding_levers.py --data ../shared/data/btzsc --dataset banking77 --texts 200 [--levers bf16,int8,ort]

One line per lever: its time, ``speedup`` (fp32 s / lever s), ``agreement`` (share of texts with fp32's best label) and
``max_cosine_error`` (the largest |lever - fp32| cosine: a recheck margin would have to exceed twice it).
"""

from __future__ import annotations

import argparse
import copy
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from nli_vs_pipeline import timed_rounds
from options import Parser, positive_int

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
LEVERS = ("bf16", "int8", "ort")
Embed = Callable[[list[str]], torch.Tensor]


def main() -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument("--model", default=MINILM, help="embedding model (default: all-MiniLM-L6-v2)")
    parser.add_argument("--dataset", default="banking77", help="the BTZSC dataset (default: banking77)")
    parser.add_argument("--texts", type=positive_int, default=200, help="texts (a stratified sample; default 200)")
    parser.add_argument(
        "--batch-size", type=positive_int, default=64, help="texts per forward pass (default: zstc's, 64)"
    )
    parser.add_argument("--chunk", type=positive_int, default=50, help="texts per round (default 50)")
    parser.add_argument(
        "--levers", default=",".join(LEVERS), help=f"comma-separated, of {', '.join(LEVERS)} (default: all)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.levers = [name.strip() for name in args.levers.split(",") if name.strip()]
    unknown = [name for name in args.levers if name not in LEVERS]
    if unknown or not args.levers:
        parser.error(
            f"argument --levers: unknown lever {', '.join(map(repr, unknown)) or 'none given'}; known: {', '.join(LEVERS)}"
        )
    if "ort" in args.levers:
        try:
            import onnxruntime  # noqa: F401
        except ModuleNotFoundError:
            parser.error("the ort lever needs onnxruntime: pip install -e '.[onnx]' (from the repository root)")
    run(args)


def st_embed(model: Any, batch_size: int, autocast: bool = False) -> Embed:
    """``encode`` of sentence-transformers, normalised (under bf16 autocast when ``autocast``)."""

    def embed(texts: list[str]) -> torch.Tensor:
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = model.encode(texts, batch_size=batch_size, convert_to_tensor=True)
        return torch.nn.functional.normalize(out.float(), dim=-1)

    return embed


def ort_embed(model: Any, batch_size: int) -> Embed:
    """ONNX Runtime fp32 as zstc's ``backend="onnxruntime"`` runs it (:mod:`zstc.scorers.ort_backend`), normalised."""
    from zstc.scorers.ort_backend import ort_encoder

    encoder = ort_encoder(model)
    return lambda texts: torch.nn.functional.normalize(encoder(texts, batch_size).float(), dim=-1)


def run(args: argparse.Namespace) -> None:
    from sentence_transformers import SentenceTransformer

    from zstc.benchmark.data import load_btzsc_sample
    from zstc.models.loading import model_source
    from zstc.models.registry import get_model_spec

    spec = get_model_spec(args.model)
    model = SentenceTransformer(model_source(spec), device="cpu").eval()
    task = load_btzsc_sample(args.dataset, args.data, max_samples=args.texts, seed=args.seed)[0]
    texts = [spec.format_query(text) for text in task.texts]
    documents = [spec.format_document(description) for description in task.hypotheses]
    embeds: dict[str, Embed] = {"fp32": st_embed(model, args.batch_size)}
    for name in args.levers:
        if name == "bf16":
            embeds[name] = st_embed(model, args.batch_size, autocast=True)
        elif name == "int8":
            quantized = torch.ao.quantization.quantize_dynamic(
                copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8
            )
            embeds[name] = st_embed(quantized, args.batch_size)
        else:
            embeds[name] = ort_embed(model, args.batch_size)
    cosines: dict[str, list[np.ndarray]] = {name: [] for name in embeds}

    def predictor(name: str) -> Callable[[list[str]], np.ndarray]:
        labels: list[torch.Tensor] = []

        def predict(part: list[str]) -> np.ndarray:
            if not labels:
                labels.append(embeds[name](documents))
            matrix = (embeds[name](part) @ labels[0].T).numpy()
            cosines[name].append(matrix)
            return matrix.argmax(axis=1)

        return predict

    print(
        f"{args.model}: {len(texts)} {args.dataset} texts x {len(documents)} labels, batch size {args.batch_size}, "
        f"chunks of {args.chunk}; load {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)",
        flush=True,
    )
    results = timed_rounds({name: predictor(name) for name in embeds}, texts, args.chunk)
    reference, reference_s = results["fp32"]
    exact = np.concatenate(cosines["fp32"][1:])  # past the warm-up
    for name in args.levers:
        decided, seconds = results[name]
        error = float(np.abs(np.concatenate(cosines[name][1:]) - exact).max())
        print(
            f"{name}: {seconds:.2f} s against fp32's {reference_s:.2f} s: speedup={reference_s / seconds:.2f} "
            f"agreement={float(np.mean(decided == reference)):.4f} max_cosine_error={error:.4f} (load {os.getloadavg()[0]:.1f})"
        )


if __name__ == "__main__":
    main()
