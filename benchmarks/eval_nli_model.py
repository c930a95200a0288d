"""Evaluate a model trained by ``zstc train-nli`` on every NLI test set, next to the paper's NLI models.

Reports, per set: 3-way accuracy (triplet models) and the AUROC of the entailment score (entailment vs. the
other two classes; the paper's NLI probe, PROTOCOL.md section 4), with the published AUROC of the paper's
smallest NLI cross-encoders beside it.

    PYTHONPATH=src python benchmarks/eval_nli_model.py /work/models/minilm-nli-triplet \\
        --data-dir ../shared/data/nli --sample 2000 --out runs/minilm-nli-triplet-eval.json

``--sample N`` scores a seeded random sample of N pairs per set (the full sets take long on a 2-core CPU).
``--btzsc DIR`` also scores the BTZSC sets found in DIR zero-shot (premise = text, hypothesis = the class's
hypothesis, score = entailment log-odds, argmax) and reports macro-F1 next to the paper's all-MiniLM-L6-v2
embedding row; ``--btzsc-sample N`` takes a stratified sample of N texts per set.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from options import Parser, positive_int

from zstc.benchmark.baselines import published
from zstc.models.nli_head import load_zstc_nli_model
from zstc.scorers.runtime import Precision, resolve_device, resolve_precision
from zstc.training import evaluate_pairs
from zstc.training.nli_pairs import read_nli_pairs

PAPER_COLUMNS: dict[str, str] = {
    "mnli_matched": "mnli_m",
    "mnli_mismatched": "mnli_mm",
    "anli_r1": "anli_r1",
    "anli_r2": "anli_r2",
    "anli_r3": "anli_r3",
    "lingnli_test": "lingnli",
}
"""Test-set file stem -> column of the paper's ``roc_scores.csv``."""

BTZSC_SETS: tuple[str, ...] = ("financialphrasebank", "rottentomatoes", "agnews", "banking77")
EMBEDDING_BASELINE = "all-MiniLM-L6-v2"

COMPARED_MODELS: tuple[str, ...] = (
    "nli-roberta-base",
    "bert-base-uncased-nli",
    "deberta-v3-base-nli",
    "modernbert-base-nli",
)
"""The paper's smallest NLI cross-encoders."""


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="folder written by `zstc train-nli`")
    parser.add_argument(
        "--data-dir", default="../shared/data/nli", help="folder of NLI test sets (premise, hypothesis, label)"
    )
    parser.add_argument("--sets", nargs="*", default=list(PAPER_COLUMNS), help="file stems to evaluate")
    parser.add_argument(
        "--sample", type=positive_int, default=None, help="pairs per set (seeded random sample); default all"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--device", default=None)
    parser.add_argument("--precision", choices=("fp32", "bf16", "auto"), default="fp32")
    parser.add_argument("--btzsc", default=None, help="folder of BTZSC test sets to classify zero-shot")
    parser.add_argument("--btzsc-sets", nargs="*", default=list(BTZSC_SETS))
    parser.add_argument(
        "--btzsc-sample", type=positive_int, default=None, help="texts per BTZSC set (stratified sample)"
    )
    parser.add_argument("--out", type=Path, default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)

    device = resolve_device(args.device)
    precision = resolve_precision(args.precision, device)
    model, tokenizer, id2label = load_zstc_nli_model(args.model, device)
    paper = published("auroc")
    results: dict[str, dict[str, float]] = {}
    print(f"model {args.model}: outputs {id2label}; device {device}, precision {precision}", file=sys.stderr)
    for name in args.sets:
        pairs = read_nli_pairs(Path(args.data_dir) / f"{name}.jsonl")
        total = len(pairs)
        if args.sample is not None and args.sample < total:
            pairs = pairs.subset(np.sort(np.random.default_rng(args.seed).choice(total, args.sample, replace=False)))
        started = time.monotonic()
        metrics = evaluate_pairs(
            model, tokenizer, pairs, device=device, precision=precision, batch_size=args.batch_size
        )
        results[name] = {"pairs": len(pairs), "of": total, **metrics, "seconds": round(time.monotonic() - started, 1)}
        print(
            f"{name}: {len(pairs)}/{total} pairs, accuracy {metrics['accuracy']:.4f}, AUROC {metrics['auroc']:.4f}",
            file=sys.stderr,
        )

    header = ["set", "pairs", "accuracy", "AUROC", *COMPARED_MODELS]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, row in results.items():
        column = PAPER_COLUMNS.get(name)
        baselines = [
            f"{paper[m][column]:.3f}" if column and column in paper.get(m, {}) else "" for m in COMPARED_MODELS
        ]
        print(
            f"| {name} | {row['pairs']} | {row['accuracy']:.3f} | {row['auroc']:.3f} | " + " | ".join(baselines) + " |"
        )
    btzsc = {} if args.btzsc is None else zero_shot_btzsc(model, tokenizer, args, device, precision)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "model": str(args.model),
            "sample": args.sample,
            "seed": args.seed,
            "results": results,
            "paper_auroc": {m: paper.get(m, {}) for m in COMPARED_MODELS},
            "btzsc_sample": args.btzsc_sample,
            "btzsc": btzsc,
        }
        args.out.write_text(json.dumps(record, indent=2) + "\n")
    return 0


def entailment_log_odds(
    model, tokenizer, premises: list[str], hypotheses: list[str], *, device, precision: Precision, batch_size: int
) -> np.ndarray:
    """The paper's NLI score for each (premise, hypothesis); batches of similar length."""
    from zstc.scorers.runtime import inference_context
    from zstc.training.recipe import entailment_score

    variant = "binary" if len(model.id2label) == 1 else "triplet"
    order = np.argsort([len(p) + len(h) for p, h in zip(premises, hypotheses)], kind="stable")
    scores = np.empty(len(premises), dtype=np.float32)
    with inference_context(device, precision):
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            inputs = tokenizer(
                [premises[i] for i in chosen],
                [hypotheses[i] for i in chosen],
                truncation="only_first",
                max_length=min(tokenizer.model_max_length, 512),
                padding=True,
                return_tensors="pt",
            ).to(device)
            scores[chosen] = entailment_score(model(**inputs).logits, variant).cpu().numpy()
    return scores


def zero_shot_btzsc(
    model, tokenizer, args: argparse.Namespace, device, precision: Precision
) -> dict[str, dict[str, float]]:
    """Macro-F1 and accuracy of zero-shot classification on the BTZSC sets, next to the embedding model's row."""
    from zstc.policy import argmax_decisions
    from zstc.benchmark.data import load_btzsc_sample
    from zstc.benchmark.metrics import dataset_metrics

    f1_paper = published("macro_f1").get(EMBEDDING_BASELINE, {})
    rows: dict[str, dict[str, float]] = {}
    for name in args.btzsc_sets:
        task = load_btzsc_sample(name, args.btzsc, max_samples=args.btzsc_sample, seed=args.seed)[0]
        started = time.monotonic()
        premises = [text for text in task.texts for _ in task.hypotheses]
        hypotheses = [hypothesis for _ in task.texts for hypothesis in task.hypotheses]
        scores = entailment_log_odds(
            model, tokenizer, premises, hypotheses, device=device, precision=precision, batch_size=args.batch_size
        )
        metrics = dataset_metrics(task.gold, argmax_decisions(scores.reshape(len(task.texts), len(task.hypotheses))))
        rows[name] = {"texts": len(task.texts), **metrics, "seconds": round(time.monotonic() - started, 1)}
        print(f"btzsc {name}: {len(task.texts)} texts, macro-F1 {metrics['macro_f1']:.4f}", file=sys.stderr)
    print(
        f"\n| BTZSC set | texts | macro-F1 | accuracy | {EMBEDDING_BASELINE} macro-F1 (paper) |\n|---|---|---|---|---|"
    )
    for name, row in rows.items():
        print(
            f"| {name} | {row['texts']} | {row['macro_f1']:.3f} | {row['accuracy']:.3f} | {f1_paper.get(name, float('nan')):.3f} |"
        )
    return rows


if __name__ == "__main__":
    sys.exit(main())
