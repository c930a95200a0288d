"""How well does a fixed threshold find "none"? A measurement on real data, not a test.

Yin et al.'s multi-label setting predicts a label when its score passes a threshold and "none" when no
label does. Single-label BTZSC sets have no "none" texts, so this script makes them: the labels are split
into two halves (even and odd class indices, as ``zstc unseen`` does); only one half is offered as
candidates, so every text whose gold label is in the other half should come out as "none". It scores the
texts once, then for a grid of thresholds prints label-wise weighted F1 (with "none" as a label), the F1 of
"none" itself, and how many texts got "none"; finally it fits a threshold on one stratified half of the
texts (:func:`zstc.multilabel.fit_thresholds`) and reports it on the other half, next to the default for
the model's score type.

    python scripts/none_threshold_sweep.py --model sentence-transformers/all-MiniLM-L6-v2 \
        --data ../shared/data/btzsc --task banking77 [--max-samples 1000] [--family nli]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main() -> None:
    from zstc.benchmark.data import load_btzsc_sample
    from zstc.multilabel import fit_thresholds, multilabel_metrics
    from zstc.policy import default_threshold, score_type_of
    from zstc.runs.files import write_json
    from zstc.scorers import make_scorer
    from zstc.benchmark.tasks import stratified_sample
    from zstc.yin.unseen import label_halves

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument("--task", default="banking77")
    parser.add_argument("--family", help="model family, when the registry cannot tell")
    parser.add_argument("--max-samples", type=int, help="a stratified sample of the texts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the numbers as JSON here")
    args = parser.parse_args()

    task = load_btzsc_sample(
        args.task, args.data, max_samples=args.max_samples or None, seed=args.seed, unlabelled="exclude"
    )[0]
    scorer = make_scorer(args.model, args.family)
    score_type = score_type_of(scorer)
    scores = scorer.score(task.texts, list(task.hypotheses), show_progress=True)
    default = default_threshold(score_type)
    dev_positions = np.isin(task.source_index, stratified_sample(task, len(task) // 2, args.seed).source_index)

    report: dict[str, object] = {
        "model": args.model,
        "task": args.task,
        "texts": len(task),
        "score_type": score_type,
        "default_threshold": default,
        "splits": [],
    }
    for split in label_halves(len(task.label_names)):
        candidates = np.asarray(split.seen)
        labels = [task.label_names[j] for j in candidates]
        # Gold as an indicator over the offered labels: texts of the other half have none of them.
        gold = task.gold[:, None] == candidates[None, :]
        offered = scores[:, candidates]
        low, high = np.quantile(offered, [0.05, 0.999])
        grid = sorted({*np.round(np.linspace(low, high, 12), 3).tolist(), default})
        print(
            f"\n{args.task}, {split.name}: {len(labels)} labels offered, "
            f"{int((~gold.any(axis=1)).sum())} of {len(task)} texts should be 'none' ({score_type} scores)"
        )
        print(f"{'threshold':>10} {'weighted F1':>12} {'none F1':>8} {'none predicted':>15}")
        rows = []
        for cut in grid:
            metrics = multilabel_metrics(gold, offered >= cut, labels)
            row = {
                "threshold": cut,
                "weighted_f1": metrics["weighted_f1"],
                "none_f1": metrics["per_label"]["none"]["f1"],
                "none_predicted": metrics["none_predicted"],
            }
            rows.append(row)
            marker = "  <- default" if cut == default else ""
            print(
                f"{cut:>10.3f} {row['weighted_f1']:>12.4f} {row['none_f1']:>8.4f} {row['none_predicted']:>15}{marker}"
            )
        fitted, _ = fit_thresholds(offered[dev_positions], gold[dev_positions], labels)
        held_out = {
            name: multilabel_metrics(gold[~dev_positions], offered[~dev_positions] >= cut, labels)["weighted_f1"]
            for name, cut in (("default", default), ("fitted", fitted))
        }
        print(
            f"fitted on half the texts: {fitted:.3f}; on the other half weighted F1 {held_out['fitted']:.4f} "
            f"(default {default:g}: {held_out['default']:.4f})"
        )
        report["splits"].append(
            {
                "split": split.name,
                "grid": rows,
                "fitted_threshold": fitted,  # type: ignore[union-attr]
                "held_out_weighted_f1": held_out,
            }
        )
    if args.out:
        write_json(Path(args.out), report)


if __name__ == "__main__":
    main()
