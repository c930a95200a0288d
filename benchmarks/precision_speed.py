"""bf16 against fp32 on this machine: a 2048x2048 matrix product and all-MiniLM-L6-v2 on 32 x 128 tokens.

Both precisions run in the same process, round by round, so load from other processes hits both alike; the
ratio (fp32 time / bf16 time, above 1 means bf16 is faster) is what ``--precision auto`` is decided by.

    python benchmarks/precision_speed.py [--repeats 5] [--device cpu]

bf16 is measured the way zstc runs it: ``torch.autocast(dtype=torch.bfloat16)`` over fp32 weights. Before the
last line, each run's fraction of the machine's matmul peak in its precision (``hardware.py``); the last line is
``matmul fp32/bf16 time ratio=<r> minilm fp32/bf16 time ratio=<r> (>1: bf16 faster) minilm max_abs_diff=<d>``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from hardware import encoder_flops, peak_line, peaks_around
from options import Parser, positive_int

from zstc.scorers.runtime import Precision, bf16_fast, cpu_flags, inference_context, resolve_device


def interleaved_medians(runs: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Median seconds of each run, the runs alternating round by round so a change in load hits all alike."""
    for run in runs.values():
        run()  # warm-up: kernel selection and first-call allocations stay out of the timing
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--device", default=None)
    parser.add_argument("--size", type=positive_int, default=2048)
    parser.add_argument("--pairs", type=positive_int, default=32)
    parser.add_argument("--tokens", type=positive_int, default=128)
    args = parser.parse_args()
    device = resolve_device(args.device)
    flags = (
        sorted(cpu_flags() & {"avx512_bf16", "amx_bf16", "amx_tile", "avx512f", "avx2"}) if device.type == "cpu" else []
    )
    print(
        f"device {device}; CPU flags {flags}; auto picks bf16: {bf16_fast(device)}; threads {torch.get_num_threads()}"
    )

    from transformers import AutoModel

    from zstc.models.loading import model_source
    from zstc.models.registry import get_model_spec

    a = torch.randn(args.size, args.size, device=device)
    b = torch.randn(args.size, args.size, device=device)
    model = (
        AutoModel.from_pretrained(model_source(get_model_spec("sentence-transformers/all-MiniLM-L6-v2")))
        .to(device)
        .eval()
    )
    ids = torch.randint(1000, 20000, (args.pairs, args.tokens), device=device)
    mask = torch.ones_like(ids)
    outputs: dict[str, torch.Tensor] = {}

    def matmul(precision: Precision) -> Callable[[], object]:
        def run() -> None:
            with inference_context(device, precision):
                (a @ b).sum().item()

        return run

    def minilm(precision: Precision) -> Callable[[], object]:
        def run() -> None:
            with inference_context(device, precision):
                outputs[precision] = model(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0].float()

        return run

    runs = {f"{kind.__name__} {p}": kind(p) for kind in (matmul, minilm) for p in ("fp32", "bf16")}
    timings, peaks = peaks_around(lambda: interleaved_medians(runs, args.repeats), str(device))
    for name, seconds in timings.items():
        print(f"{name:12s} {seconds * 1000:10.2f} ms")
    # The peak is a 2048^2 product's best of 5; the median matmul above is --size's, so it can sit above or below 1.
    flops = {"matmul": 2.0 * args.size**3, "minilm": encoder_flops(model, [args.tokens] * args.pairs)}
    for name, seconds in timings.items():
        kind, precision = name.split()
        print(peak_line(f"{name} peak fraction", flops[kind], seconds, peaks, precision))
    diff = float((outputs["fp32"] - outputs["bf16"]).abs().max())
    print(
        f"matmul fp32/bf16 time ratio={timings['matmul fp32'] / timings['matmul bf16']:.2f} "
        f"minilm fp32/bf16 time ratio={timings['minilm fp32'] / timings['minilm bf16']:.2f} "
        f"(>1: bf16 faster) minilm max_abs_diff={diff:.2e}"
    )


if __name__ == "__main__":
    main()
