"""zstc's embedding classify path against sentence-transformers' own ``encode``: speed, and argmax agreement with it.

Both sides run the same model (``--model``, default classify's all-MiniLM-L6-v2) on the same texts, each with its own
default batch size unless ``--batch-size`` gives one to both (the reference's: 64 texts a pass; zstc's: 64 under torch,
16 under ONNX Runtime, whose kernels ran 8-16 texts a run fastest here). The reference is what the BTZSC harness does: ``SentenceTransformer.encode`` of the label descriptions
(once per dataset) and of the texts in fp32, then cosines and the argmax. zstc's side is ``zstc.Classifier.predict``
as a user calls it, its hypotheses as label descriptions, with the path asked for (default: what ``classify`` runs
without flags, ``--precision auto``, which on a CPU is ONNX Runtime fp32 with torch fp32's recheck of near decisions
where the onnx extra is installed; ``$ZSTC_AUTO_PRECISION`` is cleared unless ``--keep-auto-env``). The two
alternate chunk by chunk in one process on each dataset, so background load on a shared machine falls on both alike
(``nli_vs_pipeline.timed_rounds``).

    python benchmarks/embedding_speed.py --data ../shared/data/btzsc [--texts 1000] [--precision fp32|bf16|auto]
        [--backend torch|onnxruntime] [--batch-size N]

Per dataset it prints both times, the speedup (reference s / zstc s) and agreement (the share of texts whose best
label is the reference's); then each side's fraction of the machine's fp32 matmul peak (``hardware.py``; zstc's
against the bf16 peak too when it ran in bf16). The last line is ``speedup=<all reference s / all zstc s>
agreement=<over all texts> worst_dataset_speedup=<the lowest dataset's>``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import numpy as np
from hardware import embedding_flops, peak_line, peaks_around
from nli_vs_pipeline import timed_rounds
from options import Parser, non_negative_float, positive_int

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
"""The default model: classify's and the Classifier's."""
REFERENCE_BATCH_SIZE = 64
"""The reference's texts per ``encode`` pass where ``--batch-size`` gives none (zstc's torch default)."""
DATASETS = ("agnews", "banking77", "imdb")
"""Short texts with 4 labels, short texts with 72+ labels, long reviews with 2."""


def main() -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument(
        "--model", default=MINILM, help="embedding model (hub id, paper name or folder; default: all-MiniLM-L6-v2)"
    )
    parser.add_argument(
        "--datasets", default=",".join(DATASETS), help=f"comma-separated BTZSC datasets (default: {','.join(DATASETS)})"
    )
    parser.add_argument(
        "--texts", type=positive_int, default=1000, help="texts per dataset (a stratified sample; default 1000)"
    )
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        help=f"texts per forward pass, both sides (default: each side's own; the reference's {REFERENCE_BATCH_SIZE})",
    )
    parser.add_argument(
        "--chunk",
        type=positive_int,
        default=250,
        help="texts per round; the two alternate round by round (default 250)",
    )
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16", "auto"),
        default="auto",
        help="zstc's precision (default: auto, classify's); the reference stays fp32",
    )
    parser.add_argument(
        "--recheck-margin", type=non_negative_float, help="zstc in bf16: its recheck margin (default: zstc's)"
    )
    parser.add_argument(
        "--backend",
        choices=("torch", "onnxruntime"),
        help="zstc's backend (default: zstc's: with --precision auto on a CPU, onnxruntime where the onnx extra is "
        "installed, else torch)",
    )
    parser.add_argument("--keep-auto-env", action="store_true", help="let $ZSTC_AUTO_PRECISION decide what auto means")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.datasets = [name.strip() for name in args.datasets.split(",") if name.strip()]
    from zstc.benchmark.catalog import catalog
    from zstc.scorers.runtime import AUTO_PRECISION_ENV

    unknown = [name for name in args.datasets if name not in catalog()]
    if unknown or not args.datasets:
        parser.error(
            f"argument --datasets: unknown dataset {', '.join(map(repr, unknown)) or 'none given'}; known: {', '.join(catalog())}"
        )
    if not args.keep_auto_env:
        os.environ.pop(AUTO_PRECISION_ENV, None)
    run(args)


def reference_predictor(model: Any, descriptions: list[str], batch_size: int) -> Callable[[list[str]], np.ndarray]:
    """sentence-transformers as the harness uses it: the descriptions encoded once (on the first call), each chunk's
    texts encoded in fp32, normalised, then cosines and the argmax."""
    import torch

    cached: list[torch.Tensor] = []

    def predict(texts: list[str]) -> np.ndarray:
        with torch.inference_mode():
            if not cached:
                cached.append(
                    model.encode(descriptions, batch_size=batch_size, convert_to_tensor=True, normalize_embeddings=True)
                )
            embedded = model.encode(texts, batch_size=batch_size, convert_to_tensor=True, normalize_embeddings=True)
            return (embedded @ cached[0].T).argmax(dim=1).cpu().numpy()

    return predict


def zstc_predictor(classifier: Any, labels: list[str], descriptions: list[str]) -> Callable[[list[str]], np.ndarray]:
    """``Classifier.predict`` as a user calls it: each text's best label, as its index."""

    def predict(texts: list[str]) -> np.ndarray:
        predictions = classifier.predict(texts, labels, descriptions)
        return np.array([labels.index(p.label) for p in predictions])

    return predict


def run(args: argparse.Namespace) -> None:
    """Each dataset's alternating rounds, its line, and the summary lines."""
    from sentence_transformers import SentenceTransformer

    from zstc.api import Classifier
    from zstc.benchmark.data import load_btzsc_sample
    from zstc.models.loading import model_source
    from zstc.models.registry import get_model_spec

    spec = get_model_spec(args.model)
    reference = SentenceTransformer(model_source(spec), device="cpu")
    reference.eval()
    options = {
        **({} if args.batch_size is None else {"batch_size": args.batch_size}),
        **({} if args.recheck_margin is None else {"recheck_margin": args.recheck_margin}),
        **({} if args.backend is None else {"backend": args.backend}),
    }
    classifier = Classifier(args.model, device="cpu", precision=args.precision, **options)
    path = classifier.scorer.describe()
    reference_batch = args.batch_size or REFERENCE_BATCH_SIZE
    print(
        f"{args.model}: zstc {path.get('precision')} {path.get('backend', 'torch')} (batch_size={path.get('batch_size')}"
        f"{''.join(f', {k}={v}' for k, v in sorted(options.items()) if k != 'batch_size')}) "
        f"against sentence-transformers fp32 encode, batch size {reference_batch}; alternating in chunks of {args.chunk} texts;"
        f" load {os.getloadavg()[0]:.1f} (1-minute average, {os.cpu_count()} CPUs)",
        flush=True,
    )
    totals = {"reference": 0.0, "zstc": 0.0}
    agreed, counted, worst = 0, 0, float("inf")
    flops_all = 0.0

    def every_dataset() -> None:
        nonlocal agreed, counted, worst, flops_all
        for name in args.datasets:
            task = load_btzsc_sample(name, args.data, max_samples=args.texts, seed=args.seed)[0]
            texts, descriptions = list(task.texts), list(task.hypotheses)
            labels = [
                f"label {j}" for j in range(len(descriptions))
            ]  # names only: the descriptions are what is embedded
            queries = [spec.format_query(text) for text in texts]
            documents = [spec.format_document(description) for description in descriptions]
            print(f"{name}: {len(texts)} texts x {len(labels)} labels", flush=True)
            predictors = {
                "reference": _with_queries(
                    reference_predictor(reference, documents, reference_batch), dict(zip(texts, queries))
                ),
                "zstc": zstc_predictor(classifier, labels, descriptions),
            }
            results = timed_rounds(predictors, texts, args.chunk)
            (expected, reference_s), (decided, zstc_s) = results["reference"], results["zstc"]
            same = int(np.sum(expected == decided))
            agreed, counted = agreed + same, counted + len(texts)
            totals["reference"] += reference_s
            totals["zstc"] += zstc_s
            worst = min(worst, reference_s / zstc_s)
            flops_all += embedding_flops(args.model, queries)
            print(
                f"{name}: reference {reference_s:.2f} s, zstc {zstc_s:.2f} s, speedup {reference_s / zstc_s:.2f}, "
                f"agreement {same / len(texts):.4f} (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )

    _, peaks = peaks_around(every_dataset)
    print(peak_line("sentence-transformers fp32 peak fraction", flops_all, totals["reference"], peaks, "fp32"))
    print(peak_line("zstc peak fraction", flops_all, totals["zstc"], peaks, "fp32"))
    if path.get("precision") == "bf16":
        print(peak_line("zstc peak fraction", flops_all, totals["zstc"], peaks, "bf16"))
    print(
        f"speedup={totals['reference'] / totals['zstc']:.2f} agreement={agreed / counted:.4f} worst_dataset_speedup={worst:.2f}"
    )


def _with_queries(
    predict: Callable[[list[str]], np.ndarray], queries: dict[str, str]
) -> Callable[[list[str]], np.ndarray]:
    """``predict`` over the texts' query-side forms (the model's own prefix or instruction, as zstc embeds them)."""
    return lambda texts: predict([queries[text] for text in texts])


if __name__ == "__main__":
    main()
