"""Measure how ``zstc classify`` describes labels by default, and its multi-label rule: a measurement, not a test.

Held-out data only: the public harness's sample of each local BTZSC set (texts 0 and 1, then
``random.Random(0)``, 1000 texts; financialphrasebank whole), labelled by the label names as a user types
them, texts with no gold class left out. The review files of the tests are scored last, as a check.

1. **Label descriptions** (macro-F1, argmax): the default template ``This is {}.``; an ensemble of the
   generic templates (Yin et al.'s hypothesis ensembling: one score per template, averaged); the same with
   each label's cosine taken relative to a neutral reference set (minus the label's mean cosine over
   :data:`NEUTRAL`, and as a z-score), the "contextual calibration" of Zhao et al. (2021) for embeddings;
   and, on the sentiment sets, the polarity phrases of :mod:`zstc.hypotheses.polarity` and alternatives to
   them (:data:`PHRASE_CANDIDATES`). The phrases are chosen by the mean macro-F1 of the three sentiment sets.
2. **Multi-label rule**: single texts (one gold label) plus 150 pairs of texts of two different classes
   joined into one text (gold: both labels), every label offered; label-wise weighted F1 with "none"
   (:func:`zstc.multilabel.multilabel_metrics`) of the absolute cut alone (the family's threshold) and of
   the cut plus a margin below the best label, for a range of margins, with the share of single texts that
   get exactly their label and of pairs that get both.

    nice -n 10 python scripts/measure_label_defaults.py --out label-defaults.json
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

GENERIC = [
    "{}",
    "This is {}.",
    "This example is {}.",
    "This text is {}.",
    "It was {}.",
    "This text is about {}.",
    "A {} text.",
]
"""The generic templates of ``scripts/measure_defaults.py`` (any label, not only sentiment)."""
NEUTRAL = [
    "The meeting is scheduled for Tuesday at ten.",
    "Please send the report by the end of the week.",
    "The train leaves from platform four.",
    "The package contains two cables and a manual.",
    "She moved to a new apartment last spring.",
    "The museum opens at nine in the morning.",
    "Water boils at one hundred degrees Celsius.",
    "The committee will review the proposal next month.",
    "He ordered a coffee and sat by the window.",
    "The store is located on the corner of Main Street.",
    "The software update is available for download.",
    "The river runs through the center of the town.",
    "The recipe calls for two cups of flour.",
    "The report covers the first quarter of the year.",
    "The book has twelve chapters.",
    "The company was founded in 1998.",
    "The conference takes place in Berlin.",
    "The film runs for about two hours.",
    "The study included four hundred participants.",
    "The letter arrived this morning.",
]
"""Neutral reference texts of no particular topic or opinion, for the relative (calibrated) scores."""
PHRASE_CANDIDATES: dict[str, dict[str, list[str]]] = {
    "adjectives (This is good/great/excellent/wonderful.)": {
        "positive": ["This is good.", "This is great.", "This is excellent.", "This is wonderful."],
        "negative": ["This is bad.", "This is terrible.", "This is awful.", "This is poor."],
        "neutral": ["This is okay.", "This is average.", "This is ordinary.", "This is neither good nor bad."],
    },
    "three opinions": {
        "positive": ["It was great.", "I love it.", "Excellent."],
        "negative": ["It was terrible.", "I hate it.", "Awful."],
        "neutral": ["It was okay.", "Nothing special.", "Average."],
    },
    "one opinion (It was great./terrible./okay.)": {
        "positive": ["It was great."],
        "negative": ["It was terrible."],
        "neutral": ["It was okay."],
    },
    "one opinion (I love/hate it.)": {
        "positive": ["I love it."],
        "negative": ["I hate it."],
        "neutral": ["It is okay."],
    },
}
"""Alternatives to the shipped phrases (:data:`zstc.hypotheses.polarity.POLARITY_PHRASES`), measured beside them."""
DATASETS = ["financialphrasebank", "rottentomatoes", "imdb", "agnews", "emotiondair", "banking77"]
SENTIMENT = ["financialphrasebank", "rottentomatoes", "imdb"]
PAIRS = 150
MARGINS = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1]


def two_class_texts(task: Any, pairs: int = PAIRS) -> tuple[list[str], np.ndarray]:
    """The multi-label rule's texts: ``task``'s texts (one gold label each), then ``pairs`` texts of two different
    classes joined (seeded), and the gold (texts, labels) indicator matrix. benchmarks/adapt.py measures on them too."""
    texts = list(task.texts)
    rng = random.Random(0)
    joined: list[tuple[int, int]] = []
    while len(joined) < pairs:
        a, b = rng.sample(range(len(texts)), 2)
        if task.gold[a] != task.gold[b]:
            joined.append((a, b))
    gold = np.zeros((len(texts) + pairs, len(task.label_names)), dtype=bool)
    gold[np.arange(len(texts)), task.gold] = True
    for i, (a, b) in enumerate(joined):
        gold[len(texts) + i, [task.gold[a], task.gold[b]]] = True
    return texts + [f"{texts[a]} {texts[b]}" for a, b in joined], gold


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)

    from sklearn.metrics import f1_score

    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import paper_sample
    from zstc.hypotheses.polarity import POLARITY_PHRASES
    from zstc.hypotheses.variants import readable_label
    from zstc.multilabel import multilabel_metrics
    from zstc.policy import default_margin, family_thresholds
    from zstc.scorers import make_scorer
    from zstc.models.families import get_family

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--data", default="../shared/data/btzsc")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--max-samples", type=int, default=1000)
    parser.add_argument("--reviews", default="tests/data/reviews.csv,tests/data/reviews_heldout.csv")
    parser.add_argument("--out")
    args = parser.parse_args()
    scorer = make_scorer(args.model, "embedding", precision="fp32")
    phrase_sets = {
        "zstc default (five opinions)": {k: list(v) for k, v in POLARITY_PHRASES.items()},
        **PHRASE_CANDIDATES,
    }

    def macro_f1(gold: np.ndarray, scores: np.ndarray) -> float:
        return float(f1_score(gold, scores.argmax(axis=1), average="macro", zero_division=0))

    def described(labels: list[str], texts: list[str]) -> dict[str, np.ndarray]:
        """Every way of describing ``labels`` -> its (texts, labels) score matrix; the texts are encoded once."""
        names = [readable_label(label) for label in labels]
        ways: dict[str, list[list[str]]] = {f"template {t!r}": [[t.format(n) for n in names]] for t in GENERIC}
        ways["ensemble of the generic templates"] = [[t.format(n) for n in names] for t in GENERIC]
        if all(label.lower() in POLARITY_PHRASES for label in labels):
            for way, phrases in phrase_sets.items():
                ways[f"phrases: {way}"] = [
                    list(variant) for variant in zip(*(phrases[label.lower()] for label in labels))
                ]
        flat = [d for variants in ways.values() for variant in variants for d in variant]
        matrix = scorer.score(texts + NEUTRAL, flat)
        result, column = {}, 0
        for way, variants in ways.items():
            width = len(variants) * len(labels)
            block = (
                matrix[:, column : column + width]
                .reshape(len(texts) + len(NEUTRAL), len(variants), len(labels))
                .mean(axis=1)
            )
            column += width
            scores, reference = block[: len(texts)], block[len(texts) :]
            result[way] = scores
            if way == "ensemble of the generic templates":
                result["ensemble, minus the neutral texts' mean"] = scores - reference.mean(axis=0)
                result["ensemble, z-scored on the neutral texts"] = (scores - reference.mean(axis=0)) / reference.std(
                    axis=0
                )
        return result

    report: dict = {
        "model": args.model,
        "max_samples": args.max_samples,
        "sampling": "paper",
        "f1": {},
        "multi_label": {},
        "reviews": {},
    }
    floor = family_thresholds()["embedding"]
    chosen_margin = default_margin("embedding", get_family("embedding").temperature)
    multi: dict[str, tuple[np.ndarray, np.ndarray, list[str]]] = {}
    for name in args.datasets.split(","):
        task = paper_sample(load_btzsc_task(name, args.data, unlabelled="exclude")[0], args.max_samples)
        labels, texts = list(task.label_names), list(task.texts)
        all_texts, gold = two_class_texts(task)
        scores = described(labels, all_texts)
        single = {way: m[: len(texts)] for way, m in scores.items()}
        report["f1"][name] = {way: macro_f1(task.gold, m) for way, m in single.items()}
        print(f"\n{name} ({len(texts)} texts): macro-F1")
        for way, value in report["f1"][name].items():
            print(f"  {value:.3f}  {way}")
        default_way = next((w for w in scores if w.startswith("phrases: zstc default")), "template 'This is {}.'")
        multi[name] = (scores[default_way], gold, labels)

    print(
        f"\nmulti-label with the default descriptions: single texts + {PAIRS} two-text pairs; cut {floor} plus a margin "
        f"below the best label (default: T ln 2 = {chosen_margin:.4f})"
    )
    for margin in [None, *MARGINS, chosen_margin]:
        row = {}
        for name, (matrix, gold, labels) in multi.items():
            decisions = matrix >= floor
            if margin is not None:
                decisions &= matrix >= matrix.max(axis=1, keepdims=True) - margin
            k = len(gold) - PAIRS
            row[name] = {
                "weighted_f1": multilabel_metrics(gold, decisions, labels)["weighted_f1"],
                "single_exact": float((decisions[:k] == gold[:k]).all(axis=1).mean()),
                "pairs_both": float((decisions[k:] >= gold[k:]).all(axis=1).mean()),
                "none": int((~decisions.any(axis=1)).sum()),
            }
        key = "cut only" if margin is None else f"margin {margin:.4f}"
        report["multi_label"][key] = row
        print(
            f"  {key:>14}: mean weighted F1 {np.mean([r['weighted_f1'] for r in row.values()]):.3f}   "
            + "  ".join(
                f"{n[:8]} {r['weighted_f1']:.3f} ({r['single_exact']:.2f} exact, {r['pairs_both']:.2f} both)"
                for n, r in row.items()
            )
        )

    from zstc.api import Classifier

    classifier = Classifier(scorer)  # the default template, as classify's
    for path in filter(None, args.reviews.split(",")):
        with Path(path).open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        texts, expected = [r["text"] for r in rows], [r["expected"] for r in rows]
        single = classifier.predict(texts, ["positive", "negative"])
        plain = scorer.score(texts, ["This is positive.", "This is negative."])
        multi_label = classifier.predict_multi_label(texts, ["positive", "negative"])
        counts = {
            "texts": len(rows),
            "single_correct": sum(p.label == e for p, e in zip(single, expected)),
            "single_correct_this_is_template": int(
                sum(["positive", "negative"][int(i)] == e for i, e in zip(plain.argmax(axis=1), expected))
            ),
            "multi_none": sum(p.none for p in multi_label),
            "multi_gold_included": sum(e in p.labels for p, e in zip(multi_label, expected)),
            "multi_exactly_gold": sum(p.labels == [e] for p, e in zip(multi_label, expected)),
        }
        report["reviews"][path] = counts
        print(f"\n{path}: {counts}")
    [loved] = classifier.predict(["I loved it"], ["positive", "negative"])
    report["i_loved_it"] = {"label": loved.label, "scores": loved.scores, "raw_scores": loved.raw_scores}
    print(f"'I loved it': {loved.label} {loved.scores}")
    assert math.isclose(classifier.default_margin() or 0, chosen_margin)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
