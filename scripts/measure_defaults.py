"""Measure ``zstc classify``'s defaults on the local BTZSC data: a measurement, not a test.

What a user gets without options is fixed by three numbers per model family, all measured here with the
labels' own names (``negative``, ``Sports``, ``activate_my_card``: what a user types), not BTZSC's
hand-written hypotheses:

1. **Default template.** Each candidate template turns every label name into its description; macro-F1
   (argmax) per dataset. The default is the candidate with the best mean macro-F1 on the sentiment sets
   (the README's example is a sentiment example), reported beside every other dataset so that a template
   that helps sentiment but hurts topics would show.
2. **Temperature** for ``--scores probs`` (softmax over labels of the scores divided by T). Each dataset is
   split into two stratified halves; T is fitted (:class:`zstc.yin.calibration.TemperatureScaling`,
   minimum negative log-likelihood) on the first halves of all datasets pooled, and ECE is reported on the
   second halves before (T = 1) and after.
3. **Multi-label threshold.** A text that belongs to one of the offered labels should not come out
   "none": the default is the cut that leaves :data:`NONE_RATE` of such texts without a label, i.e. that
   quantile of each text's top score over the first halves of all datasets pooled (every label offered).
   For comparison, as ``scripts/none_threshold_sweep.py``: half the labels are offered, texts of the other
   half should be "none", and the cut maximising label-wise weighted F1
   (:func:`zstc.multilabel.fit_thresholds`) is fitted on each dataset's first half; both cuts are scored
   on the second halves (weighted F1 with half the labels, "none" rate with all of them).

    python scripts/measure_defaults.py --family embedding --max-samples 400 --out defaults-embedding.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

CANDIDATES = [
    "{}",
    "This example is {}.",
    "This text is about {}.",
    "This text is {}.",
    "This is {}.",
    "It was {}.",
    "{}!",
    "A {} text.",
    "The opinion is {}.",
    "Overall, it was {}.",
]
"""Generic templates (any label, not only sentiment) and a few sentiment-leaning ones for comparison."""
GENERIC = [
    "{}",
    "This example is {}.",
    "This text is about {}.",
    "This text is {}.",
    "This is {}.",
    "It was {}.",
    "{}!",
    "A {} text.",
]
NONE_RATE = 0.02
"""The default multi-label threshold lets at most this share of texts that belong to an offered label come out "none"."""
DATASETS = ["financialphrasebank", "rottentomatoes", "imdb", "emotiondair", "agnews", "banking77"]
SENTIMENT = ["financialphrasebank", "rottentomatoes", "imdb"]


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # progress lines appear as they happen, also in a log file

    from sklearn.metrics import f1_score

    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import stratified_sample
    from zstc.multilabel import fit_thresholds, multilabel_metrics
    from zstc.scorers import make_scorer
    from zstc.yin.calibration import TemperatureScaling, single_label_report
    from zstc.yin.unseen import label_halves
    from scipy.special import softmax

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--family", default="embedding")
    parser.add_argument("--data", default="../shared/data/btzsc")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--templates", default=None, help="'|'-separated candidates; default: the built-in list")
    parser.add_argument("--max-samples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args()
    candidates = args.templates.split("|") if args.templates else CANDIDATES

    scorer = make_scorer(args.model, args.family)
    tasks, scores = {}, {}
    for name in args.datasets.split(","):
        task = stratified_sample(load_btzsc_task(name, args.data, unlabelled="exclude")[0], args.max_samples, args.seed)
        names = [label.replace("_", " ") for label in task.label_names]
        # Every template's descriptions scored in one pass: the texts are encoded once.
        described = [template.format(label) for template in candidates for label in names]
        matrix = scorer.score(task.texts, described)
        tasks[name] = task
        scores[name] = {t: matrix[:, i * len(names) : (i + 1) * len(names)] for i, t in enumerate(candidates)}
        print(f"scored {name}: {len(task)} texts x {len(names)} labels x {len(candidates)} templates")

    report: dict = {"model": args.model, "family": args.family, "max_samples": args.max_samples, "seed": args.seed}
    print("\nmacro-F1 by template (label names through the template)")
    table = {
        t: {n: float(f1_score(tasks[n].gold, scores[n][t].argmax(1), average="macro", zero_division=0)) for n in tasks}
        for t in candidates
    }
    sentiment = [n for n in SENTIMENT if n in tasks]
    for t in candidates:
        row = table[t]
        print(
            f"{t!r:>26} "
            + " ".join(f"{n[:10]:>10} {v:.3f}" for n, v in row.items())
            + f"   sentiment mean {np.mean([row[n] for n in sentiment]):.3f}   all mean {np.mean(list(row.values())):.3f}"
        )
    generic = [t for t in candidates if t in GENERIC] or candidates
    best = max(generic, key=lambda t: np.mean([table[t][n] for n in sentiment]))
    report["templates"] = table
    report["template"] = best
    print(f"best generic template on sentiment: {best!r}")

    halves = {
        n: np.isin(tasks[n].source_index, stratified_sample(tasks[n], len(tasks[n]) // 2, args.seed).source_index)
        for n in tasks
    }
    pooled_logits = [scores[n][best][halves[n]] for n in tasks]
    # Datasets differ in label count, so rows are fitted one dataset at a time in a joint NLL via padding:
    # a label column of -inf contributes nothing to a softmax.
    width = max(m.shape[1] for m in pooled_logits)
    padded = np.concatenate(
        [np.pad(m, ((0, 0), (0, width - m.shape[1])), constant_values=-np.inf) for m in pooled_logits]
    )
    gold = np.concatenate([tasks[n].gold[halves[n]] for n in tasks])
    temperature = TemperatureScaling().fit(padded, gold).temperature
    report["temperature"] = temperature
    report["calibration"] = {}
    print(f"\ntemperature fitted on the first halves, pooled: {temperature:.4f}")
    for n in tasks:
        test, test_gold = scores[n][best][~halves[n]], tasks[n].gold[~halves[n]]
        own = TemperatureScaling().fit(scores[n][best][halves[n]], tasks[n].gold[halves[n]]).temperature
        before = single_label_report(softmax(test, axis=1), test_gold)
        after = single_label_report(softmax(test / temperature, axis=1), test_gold)
        report["calibration"][n] = {"own_temperature": own, "before": before, "after": after}
        print(
            f"{n:>20}: own T {own:.4f}; ECE on the second half {before['ece']:.3f} -> {after['ece']:.3f}, "
            f"Brier {before['brier']:.3f} -> {after['brier']:.3f}"
        )

    cuts = []
    for n in tasks:
        matrix, task = scores[n][best], tasks[n]
        for split in label_halves(len(task.label_names)):
            offered = np.asarray(split.seen)
            gold_ml = task.gold[:, None] == offered[None, :]
            cut, _ = fit_thresholds(matrix[halves[n]][:, offered], gold_ml[halves[n]], [str(j) for j in offered])
            cuts.append({"dataset": n, "split": split.name, "cut": cut})
    fitted_median = float(np.median([c["cut"] for c in cuts]))
    top = np.concatenate([scores[n][best][halves[n]].max(axis=1) for n in tasks])
    threshold = float(np.quantile(top, NONE_RATE))
    report["threshold_fits"] = cuts
    report["fitted_median"] = fitted_median
    report["threshold"] = threshold
    print(
        "\nfitted multi-label cuts (half the labels offered): "
        + ", ".join(f"{c['dataset']}/{c['split'][:4]} {c['cut']:.3f}" for c in cuts)
    )
    print(f"median of the fitted cuts: {fitted_median:.4f}; {NONE_RATE:.0%} quantile of the top score: {threshold:.4f}")
    report["threshold_check"] = {}
    for cut_name, cut in (("quantile", threshold), ("fitted median", fitted_median)):
        print(f"threshold {cut_name} {cut:.4f} on the second halves:")
        report["threshold_check"][cut_name] = check = {}
        for n in tasks:
            matrix, gold_all = scores[n][best][~halves[n]], tasks[n].gold[~halves[n]]
            none_all = int((~(matrix >= cut).any(axis=1)).sum())
            f1s = []
            for split in label_halves(len(tasks[n].label_names)):
                offered = np.asarray(split.seen)
                gold_ml = gold_all[:, None] == offered[None, :]
                f1s.append(
                    multilabel_metrics(gold_ml, matrix[:, offered] >= cut, [str(j) for j in offered])["weighted_f1"]
                )
            check[n] = {"weighted_f1_half_labels": f1s, "none_with_all_labels": none_all, "texts": len(gold_all)}
            print(
                f"{n:>20}: half-labels weighted F1 {f1s[0]:.3f} / {f1s[1]:.3f}; all labels offered: "
                f"{none_all} of {len(gold_all)} texts 'none'"
            )
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
