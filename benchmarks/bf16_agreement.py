"""zstc's NLI scorer in bf16 against itself in fp32: speed, argmax agreement, and what the fp32 recheck costs.

Three runs of the same scorer on the same banking77 texts and 72 hypotheses (``score_type="logit"``): fp32,
bf16 alone (``recheck_margin=0``) and bf16 as zstc runs it by default, with near ties rescored in fp32
(``--recheck-margin``, default zstc's; see zstc.scorers.pairs). They alternate chunk by chunk, as in
``nli_vs_pipeline.py``, so background load on a shared machine falls on all three alike. A random head's near
ties exaggerate disagreement (and make every pair a near tie), so pass a trained model.

    python benchmarks/bf16_agreement.py --data ../shared/data/btzsc --model FOLDER --texts 60

The last line is ``bf16_speedup=<fp32 s / bf16-alone s> argmax_agreement=<bf16 alone vs fp32>
recheck_cost=<rechecked s / bf16-alone s> rechecked_agreement=<rechecked bf16 vs fp32>``; the lines before it
give each run's fraction of the machine's matmul peak (``hardware.py``: fp32 against the fp32 peak, both bf16
runs against the bf16 one).
"""

from __future__ import annotations

import numpy as np
from hardware import encoder_flops, peak_line, peaks_around
from nli_vs_pipeline import pair_lengths, pipeline_model, timed_rounds, zstc_predictor
from options import Parser, non_negative_float, positive_int


def main() -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument("--model", required=True, help="NLI model (hub id or folder)")
    parser.add_argument("--texts", type=positive_int, default=60, help="banking77 texts (a stratified sample)")
    parser.add_argument("--chunk", type=positive_int, default=10, help="texts per round; the runs alternate round by round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--recheck-margin", type=non_negative_float, help="the rechecked run's margin (default: zstc's)")
    args = parser.parse_args()

    from zstc.benchmark.data import load_btzsc_sample
    from zstc.benchmark.runner import merge_batch_notes

    task = load_btzsc_sample("banking77", args.data, max_samples=args.texts, seed=args.seed)[0]
    texts, hypotheses = list(task.texts), list(task.hypotheses)
    rechecked = {"precision": "bf16", **({"recheck_margin": args.recheck_margin} if args.recheck_margin is not None else {})}
    notes: list[list[str]] = []
    predictors = {
        "fp32": zstc_predictor(args.model, hypotheses, {"precision": "fp32"}),
        "bf16": zstc_predictor(args.model, hypotheses, {"precision": "bf16", "recheck_margin": 0.0}),
        "bf16+recheck": zstc_predictor(args.model, hypotheses, rechecked, notes=notes),
    }
    results, peaks = peaks_around(lambda: timed_rounds(predictors, texts, args.chunk))
    (fp32, fp32_s), (bf16, bf16_s), (checked, checked_s) = results["fp32"], results["bf16"], results["bf16+recheck"]
    print(f"{len(texts)} texts x {len(hypotheses)} hypotheses: fp32 {fp32_s:.2f} s, bf16 alone {bf16_s:.2f} s, "
          f"bf16 rechecked {checked_s:.2f} s")
    for note in merge_batch_notes(notes[1:]):  # the first call is the warm-up
        print(f"bf16 rechecked: {note}")
    # All three run every (text, hypothesis) pair once; the pairs the recheck rescores in fp32 count as its time,
    # not as FLOPs, so its fraction shows what the recheck costs against the peak.
    flops = encoder_flops(pipeline_model(args.model)[0], pair_lengths(args.model, [(t, h) for t in texts for h in hypotheses]))
    print(peak_line("fp32 peak fraction", flops, fp32_s, peaks, "fp32"))
    print(peak_line("bf16 alone peak fraction", flops, bf16_s, peaks, "bf16"))
    print(peak_line("bf16 rechecked peak fraction", flops, checked_s, peaks, "bf16"))
    print(f"bf16_speedup={fp32_s / bf16_s:.2f} argmax_agreement={float(np.mean(fp32 == bf16)):.4f} "
          f"recheck_cost={checked_s / bf16_s:.3f} rechecked_agreement={float(np.mean(fp32 == checked)):.4f}")


if __name__ == "__main__":
    main()
