"""The machine's matmul peak and a model's FLOPs, so a benchmark can say how close to the hardware it ran.

``matmul_peak`` times a large square matrix product (best of a few runs) in fp32 and in bf16 with the same
torch thread setting as the benchmark; ``encoder_flops`` counts the multiply-adds a transformer encoder does
on given sequence lengths (its linear layers on every real token, plus attention's two ``seq x seq``
products). ``fraction = model FLOPs / seconds / peak FLOP/s`` is then what a run reached of what the CPU (or
GPU) can do; padding is not counted as useful work, so batching waste lowers the fraction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch

T = TypeVar("T")


def matmul_peak(dtype: torch.dtype = torch.float32, size: int = 2048, repeats: int = 5, device: str = "cpu") -> float:
    """FLOP/s of the best of ``repeats`` ``size x size`` products in ``dtype`` (2 * size^3 FLOPs each)."""
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    torch.matmul(a, b)  # warm-up: kernel selection, page faults
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        torch.matmul(a, b)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - started)
    return 2.0 * size**3 / best


def machine_peaks(size: int = 2048, repeats: int = 5, device: str = "cpu") -> dict[str, float]:
    """fp32 and bf16 matmul FLOP/s on ``device`` (the CPU unless told), measured now."""
    return {
        "fp32": matmul_peak(torch.float32, size, repeats, device),
        "bf16": matmul_peak(torch.bfloat16, size, repeats, device),
    }


def peaks_around(run: Callable[[], T], device: str = "cpu") -> tuple[T, dict[str, float]]:
    """``run()``'s result and the machine's peaks measured before and after it, the higher of each pair kept:
    the machine is shared, and the higher of two measurements is the nearer to what it can do."""
    before = machine_peaks(device=device)
    result = run()
    after = machine_peaks(device=device)
    return result, {name: max(before[name], after[name]) for name in before}


def encoder_linear_weights(model: Any) -> int:
    """Weights of the transformer layers' linear maps (an encoder's ``layer.N``, a decoder's ``layers.N``): each
    runs on every token (the pooler and heads, on one vector per sequence, are not counted)."""
    return sum(
        module.weight.numel()
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and (".layer." in f".{name}." or ".layers." in f".{name}.")
    )


def encoder_flops(model: Any, lengths: Sequence[int], cached: Sequence[int] | None = None) -> float:
    """FLOPs of one forward pass of a BERT-like encoder (or a decoder) over sequences of these real lengths.

    Per token: 2 x (weights of the layers' linear maps); per sequence and layer: 4 x hidden x seq^2 for the
    attention scores and their weighted sum. Embedding lookups, layer norms, softmax and the classification
    head (run on one vector per sequence) are left out: they are a few percent at most. ``cached`` gives, per
    sequence, the tokens whose keys and values a cache already holds (a decoder continuing a shared prefix):
    only the ``lengths`` new tokens run, their attention reading ``cached + length`` keys each.
    """
    config = getattr(model, "config", None)
    backbone = getattr(model, "backbone", None)  # a zstc-trained NLI model: backbone + head
    if backbone is not None:
        config = backbone.config
    linear = encoder_linear_weights(model)
    hidden, layers = config.hidden_size, config.num_hidden_layers
    total = 0.0
    for length, before in zip(lengths, cached or [0] * len(lengths), strict=True):
        total += 2.0 * linear * length + 4.0 * layers * hidden * length * (before + length)
    return total


def embedding_flops(model: str, texts: Sequence[str]) -> float:
    """FLOPs of an embedding model (hub id, paper name or folder, as zstc resolves it) embedding each text once
    (:func:`encoder_flops` over their real token counts, truncated at the model's limit); label embeddings, cached
    per label set, count as time, not as work."""
    from transformers import AutoModel, AutoTokenizer

    from zstc.models.loading import model_source
    from zstc.models.registry import get_model_spec

    source = model_source(get_model_spec(model))
    tokenizer = AutoTokenizer.from_pretrained(source)
    limit = min(tokenizer.model_max_length, 512)
    lengths = [len(tokenizer(text, truncation=True, max_length=limit)["input_ids"]) for text in texts]
    return encoder_flops(AutoModel.from_pretrained(source), lengths)


def peak_line(label: str, flops: float, seconds: float, peaks: dict[str, float], precision: str) -> str:
    """``label: X GFLOP/s = F of the fp32|bf16 matmul peak (P GFLOP/s)``."""
    rate = flops / seconds
    peak = peaks[precision]
    return f"{label}: {rate / 1e9:.1f} GFLOP/s = {rate / peak:.2f} of the {precision} matmul peak ({peak / 1e9:.1f} GFLOP/s)"
