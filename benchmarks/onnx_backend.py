"""ONNX Runtime against torch for zstc's NLI cross-encoder path: speed and argmax agreement, same batches.

The NLI model is exported once with ``torch.onnx.export`` (dynamic batch and sequence axes) and run by
ONNX Runtime's CPU provider with all graph optimisations (``zstc.scorers.ort_backend.onnx_session``, the export the
embedding models' ``backend="onnxruntime"`` uses), on exactly the batches zstc's pair planner makes
(pairs sorted by length, token budget per batch). Torch and ORT alternate batch by batch, so background load
on a shared machine falls on both alike; only the forward passes are timed. The decision rule of issue 15:
adopt ORT behind ``--backend`` only if it is at least 1.3x faster at identical argmax.

    python benchmarks/onnx_backend.py --data ../shared/data/btzsc --texts 24 [--model FOLDER]

The last line is ``speedup=<torch s / ort s> argmax_agreement=<share of texts with the same prediction>
max_abs_diff=<largest entailment-logit difference>``; the two lines before it give each run's fraction of the
machine's fp32 matmul peak (``hardware.py``).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from hardware import encoder_flops, peak_line, peaks_around
from nli_vs_pipeline import fresh_head_model, pipeline_model
from options import Parser, positive_int


def main() -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument(
        "--texts", type=positive_int, default=24, help="banking77 texts (stratified sample) x 72 hypotheses"
    )
    parser.add_argument("--model", help="NLI model folder; default: MiniLM with a fresh 3-way head")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        import onnxruntime as ort
    except ModuleNotFoundError:  # an optional extra: say how to get it, not a traceback
        raise SystemExit(
            "error: onnxruntime is not installed; install it with pip install -e '.[onnx]' (from the repository root)"
        ) from None

    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import stratified_sample
    from zstc.scorers.ort_backend import onnx_session
    from zstc.scorers.pairs import plan_pairs

    task, _ = load_btzsc_task("banking77", args.data)
    task = stratified_sample(task, args.texts, args.seed)
    texts, hypotheses = list(task.texts), list(task.hypotheses)
    with tempfile.TemporaryDirectory() as scratch:
        model_path = args.model or str(fresh_head_model(Path(scratch) / "fresh", args.seed))
        network, tokenizer = pipeline_model(model_path)
        network.eval()
        plan = plan_pairs(tokenizer, texts, hypotheses, max_length=min(tokenizer.model_max_length, 512))
        use_types = plan.padding.token_types
        names = ["input_ids", "attention_mask", *(["token_type_ids"] if use_types else [])]
        session = onnx_session(network, names, "logits", {0: "batch"})
        torch_logits = np.zeros((len(texts), len(hypotheses), 3), dtype=np.float32)
        ort_logits = np.zeros_like(torch_logits)
        seconds = {"torch": 0.0, "ort": 0.0}
        batches = list(plan.batches())
        # Real tokens of every pair (padding is waste, not work), for the FLOPs both runs did.
        flops = encoder_flops(network, [int(n) for batch in batches for n in batch.inputs["attention_mask"].sum(dim=1)])
        with torch.inference_mode():  # warm-up both on the first (largest) batch
            network(**batches[0].inputs)
        session.run(None, {name: batches[0].inputs[name].numpy() for name in names})

        def alternate() -> None:
            for batch in batches:
                started = time.perf_counter()
                with torch.inference_mode():
                    out = network(**batch.inputs).logits.float().numpy()
                seconds["torch"] += time.perf_counter() - started
                torch_logits[batch.firsts, batch.seconds] = out
                feed = {name: batch.inputs[name].numpy() for name in names}
                started = time.perf_counter()
                ort_logits[batch.firsts, batch.seconds] = session.run(None, feed)[0]
                seconds["ort"] += time.perf_counter() - started

        _, peaks = peaks_around(alternate)
    entailment = 0
    agreement = float(np.mean(torch_logits[..., entailment].argmax(1) == ort_logits[..., entailment].argmax(1)))
    diff = float(np.abs(torch_logits - ort_logits).max())
    print(
        f"{len(texts)} texts x {len(hypotheses)} hypotheses = {plan.n_pairs} pairs in {len(batches)} batches; "
        f"torch threads {torch.get_num_threads()}; onnxruntime {ort.__version__}"
    )
    print(f"torch fp32: {seconds['torch']:.2f} s   onnxruntime fp32: {seconds['ort']:.2f} s")
    print(peak_line("torch peak fraction", flops, seconds["torch"], peaks, "fp32"))
    print(peak_line("onnxruntime peak fraction", flops, seconds["ort"], peaks, "fp32"))
    print(f"speedup={seconds['torch'] / seconds['ort']:.2f} argmax_agreement={agreement:.4f} max_abs_diff={diff:.2e}")


if __name__ == "__main__":
    main()
