"""Where an fp32 cross-encoder pass spends its time, and what ``torch.compile`` would give: a probe, not a feature.

With passes of 256 pairs / 16,384 tokens zstc's fp32 NLI path reached about 0.6 of the machine's fp32 matmul
peak (``nli_vs_pipeline.py``). This script says why and what would change it. On real banking77 (text,
hypothesis) pairs, batched by zstc's own pair planner (``--batch-size`` and ``--max-batch-tokens``, zstc's
defaults unless given), it

1. profiles eager passes of the backbone (torch.profiler): the share of time in matrix products (``addmm``)
   against everything between them (GELU, copies, attention, layer norms), and the matmul rate alone;
2. times the same batches eager and through ``torch.compile(dynamic=True)`` (the peer, alternating, same
   process) and prints the ratio, the largest output difference and both peak fractions.

    python benchmarks/fp32_breakdown.py --data ../shared/data/btzsc --model MODEL [--texts 8]

MODEL is an NLI folder trained by ``zstc train-nli`` (or any BERT-like encoder). The last line is
``compile_speedup=<eager s / compiled s> max_abs_diff=<...> eager_fraction=<...> compiled_fraction=<...>``.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from hardware import encoder_flops, encoder_linear_weights, machine_peaks
from options import Parser, positive_int
from transformers import AutoModel, AutoTokenizer

from zstc.models.families import DEFAULT_MAX_BATCH_TOKENS, DEFAULT_MAX_PAIRS


def batches(
    tokenizer: Any, texts: list[str], hypotheses: list[str], max_length: int, max_pairs: int, max_batch_tokens: int
) -> list[dict[str, torch.Tensor]]:
    """Every (text, hypothesis) pair's model inputs, batched exactly as zstc's cross-encoders batch them."""
    from zstc.scorers.pairs import plan_pairs

    plan = plan_pairs(
        tokenizer, texts, hypotheses, max_length=max_length, max_pairs=max_pairs, max_batch_tokens=max_batch_tokens
    )
    return [batch.inputs for batch in plan.batches()]


def run(model: Any, inputs: list[dict[str, torch.Tensor]]) -> tuple[float, list[torch.Tensor]]:
    with torch.inference_mode():
        started = time.perf_counter()
        outputs = [model(**batch).last_hidden_state for batch in inputs]
        return time.perf_counter() - started, outputs


def main() -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument("--model", required=True, help="an NLI folder from zstc train-nli, or an encoder")
    parser.add_argument("--texts", type=positive_int, default=8, help="banking77 texts (x 72 hypotheses each)")
    parser.add_argument(
        "--batch-size", type=positive_int, default=DEFAULT_MAX_PAIRS, help="pairs per pass at most (zstc's default)"
    )
    parser.add_argument(
        "--max-batch-tokens",
        type=positive_int,
        default=DEFAULT_MAX_BATCH_TOKENS,
        help="padded tokens per pass at most (zstc's default)",
    )
    parser.add_argument("--rounds", type=positive_int, default=3, help="timed rounds of each (best kept)")
    args = parser.parse_args()

    from zstc.benchmark.data import load_btzsc_sample

    task = load_btzsc_sample("banking77", args.data, max_samples=args.texts, seed=0)[0]
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModel.from_pretrained(args.model).eval()  # the encoder alone: the NLI head is one vector a pair
    inputs = batches(
        tokenizer,
        list(task.texts),
        list(task.hypotheses),
        model.config.max_position_embeddings,
        args.batch_size,
        args.max_batch_tokens,
    )
    real_lengths = [int(length) for batch in inputs for length in batch["attention_mask"].sum(dim=1)]
    padded = sum(batch["input_ids"].numel() for batch in inputs)
    flops = encoder_flops(model, real_lengths)
    print(
        f"{len(real_lengths)} pairs in {len(inputs)} batches; padding {1 - sum(real_lengths) / padded:.1%} of tokens; "
        f"torch threads {torch.get_num_threads()}",
        flush=True,
    )

    run(model, inputs)  # warm-up
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as profiler:
        profiled_s, _ = run(model, inputs)
    table = {event.key: event.self_cpu_time_total for event in profiler.key_averages()}
    total = sum(table.values())
    print("eager time by operator (profiled pass):")
    for name, micros in sorted(table.items(), key=lambda item: -item[1])[:6]:
        print(f"  {name:<55} {micros / total:6.1%}")
    matmul_flops = 2.0 * encoder_linear_weights(model) * padded
    matmul_s = table.get("aten::addmm", 0.0) / 1e6 * (profiled_s * 1e6 / total if total else 1.0)
    peaks = machine_peaks()
    if matmul_s:
        print(
            f"matrix products alone (padded tokens): {matmul_flops / matmul_s / 1e9:.1f} GFLOP/s = "
            f"{matmul_flops / matmul_s / peaks['fp32']:.2f} of the fp32 matmul peak ({peaks['fp32'] / 1e9:.1f} GFLOP/s)"
        )

    _, reference = run(model, inputs)
    compiled = torch.compile(model, dynamic=True)
    started = time.perf_counter()
    run(compiled, inputs)  # compiles (once per shape family) and warms up
    print(f"torch.compile warm-up: {time.perf_counter() - started:.1f} s", flush=True)
    eager_s = compiled_s = float("inf")
    max_diff = 0.0
    for _ in range(args.rounds):  # alternating, so background load falls on both alike
        seconds, _ = run(model, inputs)
        eager_s = min(eager_s, seconds)
        seconds, outputs = run(compiled, inputs)
        compiled_s = min(compiled_s, seconds)
        max_diff = max(max_diff, max(float((a - b).abs().max()) for a, b in zip(outputs, reference)))
    eager_fraction = flops / eager_s / peaks["fp32"]
    compiled_fraction = flops / compiled_s / peaks["fp32"]
    print(
        f"eager {eager_s:.2f} s ({flops / eager_s / 1e9:.1f} GFLOP/s), compiled {compiled_s:.2f} s "
        f"({flops / compiled_s / 1e9:.1f} GFLOP/s), model FLOPs over real tokens"
    )
    print(
        f"compile_speedup={eager_s / compiled_s:.2f} max_abs_diff={max_diff:.2e} "
        f"eager_fraction={eager_fraction:.2f} compiled_fraction={compiled_fraction:.2f}"
    )


if __name__ == "__main__":
    main()
