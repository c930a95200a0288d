"""zstc's NLI scorer in bf16 against itself in fp32: speed and argmax agreement on banking77 (72 hypotheses).

The same texts, hypotheses and scorer in both precisions (``score_type="logit"``), alternating chunk by chunk
as in ``nli_vs_pipeline.py`` so background load on a shared machine falls on both alike. A random head's
near-ties exaggerate disagreement, so pass a trained model.

    python benchmarks/bf16_agreement.py --data ../shared/data/btzsc --model FOLDER --texts 40

bf16 runs as zstc runs it by default, near ties rescored in fp32 (zstc.scorers.pairs); ``--recheck-margin 0``
measures bf16 alone. The last line is ``bf16_speedup=<fp32 s / bf16 s> argmax_agreement=<share of identical
predictions>``.
"""

from __future__ import annotations

import argparse

import numpy as np
from nli_vs_pipeline import timed_rounds, zstc_predictor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument("--model", required=True, help="NLI model (hub id or folder)")
    parser.add_argument("--texts", type=int, default=40, help="banking77 texts (a stratified sample)")
    parser.add_argument("--chunk", type=int, default=10, help="texts per round; the two alternate round by round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--recheck-margin", type=float, help="bf16's fp32 recheck of near ties (default: zstc's; 0: bf16 alone)")
    args = parser.parse_args()

    from zstc.benchmark.data import load_btzsc_sample

    task = load_btzsc_sample("banking77", args.data, max_samples=args.texts, seed=args.seed)[0]
    texts, hypotheses = list(task.texts), list(task.hypotheses)
    bf16 = {"precision": "bf16", **({"recheck_margin": args.recheck_margin} if args.recheck_margin is not None else {})}
    results = timed_rounds({"fp32": zstc_predictor(args.model, hypotheses, {"precision": "fp32"}),
                            "bf16": zstc_predictor(args.model, hypotheses, bf16)}, texts, args.chunk)
    (fp32, fp32_s), (bf16, bf16_s) = results["fp32"], results["bf16"]
    print(f"{len(texts)} texts x {len(hypotheses)} hypotheses: fp32 {fp32_s:.2f} s, bf16 {bf16_s:.2f} s")
    print(f"bf16_speedup={fp32_s / bf16_s:.2f} argmax_agreement={float(np.mean(fp32 == bf16)):.4f}")


if __name__ == "__main__":
    main()
