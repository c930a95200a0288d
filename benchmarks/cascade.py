"""Cascade scoring on BTZSC: macro-F1, pairs scored and time for every shortlist size K = 1..L.

For each task (a stratified sample of texts whose gold class has a hypothesis) and each main model (an NLI
cross-encoder and the yes/no SmolLM2 path), the script

1. scores all texts against all L hypotheses with the main model (the full run, timed) and ranks every
   text's labels with the shortlister (all-MiniLM-L6-v2 by default, timed);
2. derives the cascade's prediction for every K from those two matrices: the best label by the main model
   among the text's top K by the shortlister. That is exactly what ``CascadeScorer`` computes, because a
   shortlisted label keeps its main-model score (tested in tests/test_cascade.py); the script checks it by
   running the real cascade at a few K (``--timed-k``, plus the best K), timing those runs and comparing
   their predictions;
3. prints, per K: the gold label's recall in the shortlist, the agreement (share of texts whose cascade
   label is the main model's own full-run label), macro-F1, pairs scored by the main model (texts x K; the
   real run's own count where it ran) and the measured time where the cascade was run (``-`` elsewhere).

When the shortlister alone beats the main model, any shortlist "improves" the main model and ``best_k`` is
small for that reason; the script says so, and the agreement column (smallest K keeping the main model's
own label on 99% of texts) is then the measure of what the cascade preserves.

Per (model, task) it prints ``best_k`` (the smallest K within 0.01 macro-F1 of the full run), the pair
reduction and the F1 change at that K; the last line is that summary for the NLI model on the first task:
``best_k=<K> pair_reduction=<full pairs / pairs at best_k> f1_delta=<F1 at best_k - full F1>``. The lines before it
give, per case, the fraction of the machine's matmul peak (``hardware.py``, in the main model's precision)
that its full run and its cascade at ``best_k`` reached (the cascade's time includes the shortlist pass, its
FLOPs only the main model's pairs; the yes/no prompts' shared prefix counts once per text, as it runs).

    python benchmarks/cascade.py --data ../shared/data/btzsc --tasks banking77,agnews --max-samples 144
    python benchmarks/cascade.py --data ../shared/data/btzsc --tasks banking77 --sampling paper --max-samples 1000 --no-yesno

Without ``--model`` the NLI model is all-MiniLM-L6-v2 trained by ``zstc train-nli`` on LingNLI for
``--train-steps`` steps, kept in ``$ZSTC_CACHE/models`` (trained on first use, reused afterwards), so the
script runs by itself on a fresh machine. The yes/no path runs SmolLM2-135M-Instruct (weak as a classifier:
it proves the path and measures its cost; ``--no-yesno`` skips it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch

DEFAULT_TIMED_K = (1, 2, 4, 8, 16)
TOLERANCE = 0.01
"""A K is good enough when its macro-F1 is at most this far below the full run's."""


def trained_nli_model(data_dir: Path, steps: int) -> str:
    """The benchmark's own NLI model: MiniLM-L6 trained on LingNLI for ``steps`` steps, trained once and cached."""
    from zstc.models.nli_head import is_zstc_nli_model
    from zstc.models.offline import model_cache_dir
    from zstc.scorers.runtime import resolve_device, resolve_precision

    folder = model_cache_dir() / f"cascade-nli-minilm-l6-lingnli-{steps}"
    if is_zstc_nli_model(folder):  # written last by train-nli: a folder with it is complete
        return str(folder)
    train = data_dir.parent / "nli" / "lingnli_train.jsonl"
    if not train.exists():
        sys.exit(f"no --model given and no LingNLI training data at {train} to train one")
    # bf16 only where the CPU runs it fast: elsewhere it is hundreds of times slower (PREAMBLE: AVX2 machines).
    precision = resolve_precision("auto", resolve_device(None))
    folder.parent.mkdir(parents=True, exist_ok=True)  # train-nli writes into an existing folder only
    command = [
        sys.executable,
        "-m",
        "zstc",
        "train-nli",
        "--backbone",
        "sentence-transformers/all-MiniLM-L6-v2",
        "--data",
        str(train),
        "--out",
        str(folder),
        "--max-steps",
        str(steps),
        "--eval-fraction",
        "0.05",
        "--dev-size",
        "200",
        "--max-length",
        "128",
        "--precision",
        precision,
        "--no-progress",
    ]
    print("training the NLI model once:", " ".join(command), flush=True)
    subprocess.run(command, check=True)
    return str(folder)


def sampled_task(name: str, data: Path, samples: int | None, sampling: str, seed: int) -> Any:
    """``name``'s texts whose gold class has a hypothesis: a seeded stratified sample, or the paper's own texts.

    ``paper`` draws the public harness's sample from the whole file, as the paper did (texts 0 and 1, then
    ``random.Random(0)``; the harness counts texts without a hypothesis as class 0), then drops the texts
    without a hypothesis, so every text has a gold label to find in its shortlist.
    """
    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import paper_sample, stratified_sample

    if sampling == "paper":
        task, _ = load_btzsc_task(name, data, unlabelled="paper")
        task = paper_sample(task, samples)
        if task.counted_as_class0 is not None:
            dropped = int(task.counted_as_class0.sum())
            task = task.subset(np.flatnonzero(~task.counted_as_class0), f"{dropped} texts without a hypothesis dropped")
        return task
    task, _ = load_btzsc_task(name, data, unlabelled="exclude")
    return stratified_sample(task, samples, seed)


def cascade_predictions(full: np.ndarray, ranks: np.ndarray, k: int) -> np.ndarray:
    """The cascade's argmax for shortlist size ``k``: the best main-model score among each text's top ``k``."""
    top = ranks[:, :k]
    best = np.take_along_axis(full, top, axis=1).argmax(axis=1)
    return top[np.arange(len(top)), best]


def best_k(f1: dict[int, float], full_f1: float) -> int:
    return min(k for k, value in f1.items() if value >= full_f1 - TOLERANCE)


def yesno_flops(scorer: Any, pairs: list[tuple[str, str]]) -> float:
    """A yes/no scorer's FLOPs for these pairs as it runs them: each text's prompts share their prefix, run once."""
    from prefix_cache import run_flops  # here, not at the top: tests load this file without benchmarks/ on sys.path

    labels_of: dict[str, list[str]] = {}
    for text, label in pairs:
        labels_of.setdefault(text, []).append(label)
    return sum(
        run_flops(scorer, [text], labels, prefix_cache=scorer.prefix_cache) for text, labels in labels_of.items()
    )


def run_case(
    name: str,
    main: Any,
    shortlister: Any,
    task: Any,
    timed_k: list[int],
    repeats: int,
    count_flops: Callable[[list[tuple[str, str]]], float],
) -> dict[str, Any]:
    """One (main model, task): the table, the best K, and (``count_flops``: the main model's FLOPs of given
    (text, hypothesis) pairs) the FLOPs of the full run and of the cascade at the best K, for the peak fraction."""
    from zstc.benchmark.metrics import dataset_metrics
    from zstc.scorers.cascade import CascadeScorer, shortlist_ranks

    texts, hypotheses = list(task.texts), list(task.hypotheses)
    n, n_labels = len(texts), len(hypotheses)
    main.score(texts[:1], hypotheses)  # loads the model; warm-up
    shortlister.score(texts[:1], hypotheses)  # loads the bi-encoder and caches the label embeddings
    started = time.perf_counter()
    full = main.score(texts, hypotheses)
    full_s = time.perf_counter() - started
    started = time.perf_counter()
    ranks = shortlist_ranks(shortlister.score(texts, hypotheses))
    shortlist_s = time.perf_counter() - started
    recall = {k: float(np.mean([g in row[:k] for g, row in zip(task.gold, ranks)])) for k in range(1, n_labels + 1)}
    predicted = {k: cascade_predictions(full, ranks, k) for k in range(1, n_labels + 1)}
    f1 = {k: dataset_metrics(task.gold, labels)["macro_f1"] for k, labels in predicted.items()}
    full_f1 = f1[n_labels]
    # The share of texts whose cascade label is the main model's own full-run label: what the cascade preserves
    # of the main model, whichever of the two models is the stronger classifier.
    agreement = {k: float(np.mean(labels == predicted[n_labels])) for k, labels in predicted.items()}
    shortlister_f1 = dataset_metrics(task.gold, ranks[:, 0])["macro_f1"]
    k_star = best_k(f1, full_f1)
    seconds: dict[int, float] = {n_labels: full_s}
    pairs: dict[int, int] = {k: n * k for k in range(1, n_labels + 1)}
    mismatches = 0
    # best_k is always run for real, so the summary's speedup is measured, not inferred from pair counts.
    for k in sorted({k for k in [*timed_k, k_star] if k < n_labels}):
        cascade = CascadeScorer(main, shortlister, k)
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            result = cascade.score_with_notes(texts, hypotheses)
            best = min(best, time.perf_counter() - started)
        seconds[k] = best
        pairs[k] = result.pairs_scored  # what the real run scored (the derived rows assume n * k)
        mismatches += int((result.scores.argmax(axis=1) != predicted[k]).sum())
    print(
        f"\n{name} on {task.name}: {n} texts x {n_labels} labels; full run {full_s:.2f} s, "
        f"shortlist (all texts) {shortlist_s:.2f} s"
    )
    print(f"{'K':>3} {'recall@K':>8} {'agree@K':>8} {'macro-F1':>8} {'pairs':>7} {'time_s':>7}")
    for k in range(1, n_labels + 1):
        time_cell = f"{seconds[k]:7.2f}" if k in seconds else f"{'-':>7}"
        print(f"{k:>3} {recall[k]:8.3f} {agreement[k]:8.3f} {f1[k]:8.4f} {pairs[k]:>7} {time_cell}")
    k_agree = min(k for k, value in agreement.items() if value >= 0.99)
    summary = {
        "best_k": k_star,
        "pair_reduction": n_labels / k_star,
        "f1_delta": f1[k_star] - full_f1,
        "k_agree_99": k_agree,
        "shortlister_f1": shortlister_f1,
        "speedup_at_best_k": (full_s / seconds[k_star]) if k_star in seconds else None,
    }
    speedup = f" speedup={summary['speedup_at_best_k']:.2f}x" if summary["speedup_at_best_k"] else ""
    print(
        f"{name} {task.name}: best_k={k_star} pair_reduction={summary['pair_reduction']:.2f} f1_delta={summary['f1_delta']:+.4f}"
        f"{speedup} (full F1 {full_f1:.4f}); cascade runs disagreeing with the derived predictions: {mismatches}"
    )
    print(
        f"{name} {task.name}: the shortlister alone (its top label) scores macro-F1 {shortlister_f1:.4f}"
        f"{' (above the main model: the cascade adds its knowledge, so best_k says little of the main model)' if shortlister_f1 > full_f1 else ''}; "
        f"the cascade keeps the main model's own label on >= 99% of texts from K={k_agree}"
        f" (pair_reduction {n_labels / k_agree:.2f})"
    )
    # The cascade's time includes its shortlist pass, its FLOPs only the main model's pairs (as in nli_vs_pipeline.py).
    summary["full_flops"] = count_flops([(text, label) for text in texts for label in hypotheses])
    summary["best_k_flops"] = count_flops([(texts[i], hypotheses[j]) for i in range(n) for j in ranks[i, :k_star]])
    return {
        "model": name,
        "task": task.name,
        "texts": n,
        "labels": n_labels,
        "full_s": full_s,
        "shortlist_s": shortlist_s,
        "recall": recall,
        "agreement": agreement,
        "macro_f1": f1,
        "seconds": seconds,
        "mismatches": mismatches,
        **summary,
    }


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Macro-F1 against pairs scored (as a share of the full run), one line per (model, task)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6, 3.6), dpi=90)
    for result in results:
        ks = sorted(result["macro_f1"])
        axis.plot(
            [k / result["labels"] for k in ks],
            [result["macro_f1"][k] for k in ks],
            marker=".",
            markersize=3,
            label=f"{result['model']}, {result['task']} (L={result['labels']})",
        )
        k = result["best_k"]
        axis.scatter([k / result["labels"]], [result["macro_f1"][k]], color="black", zorder=3, s=12)
    axis.set_xscale("log")
    axis.set_xlabel("pairs scored by the main model / full run (K / L)")
    axis.set_ylabel("macro-F1")
    axis.set_title("Cascade: shortlist K of L labels with all-MiniLM-L6-v2", fontsize=9)
    axis.legend(fontsize=7)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main() -> None:
    # Imported here, not at the top: tests load this file as a module without benchmarks/ on sys.path.
    from hardware import encoder_flops, machine_peaks, peak_line
    from nli_vs_pipeline import pair_lengths, pipeline_model
    from options import Parser, positive_int, positive_int_list

    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument("--tasks", default="banking77,agnews")
    parser.add_argument("--model", help="NLI model (hub id or folder); default: MiniLM trained here on LingNLI")
    # 900 steps (about one LingNLI epoch, 8 minutes on 2 idle Zen 4 cores in bf16) give banking77 macro-F1 0.33,
    # the paper's best NLI model's level; 150 steps stayed at chance (0.016).
    parser.add_argument(
        "--train-steps", type=positive_int, default=900, help="steps of the default NLI model's training"
    )
    parser.add_argument("--shortlister", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--max-samples", type=positive_int, default=144, help="texts per task for the NLI model")
    parser.add_argument(
        "--sampling",
        choices=("stratified", "paper"),
        default="stratified",
        help="how texts are drawn: seeded per class, or the paper's draw (--max-samples 1000: its own texts)",
    )
    parser.add_argument("--yesno-max-samples", type=positive_int, default=36, help="texts per task for the yes/no path")
    parser.add_argument("--yesno-tasks", help="tasks for the yes/no path (default: --tasks)")
    parser.add_argument("--no-yesno", action="store_true", help="skip the yes/no SmolLM2 path")
    parser.add_argument(
        "--timed-k",
        type=positive_int_list,
        default=",".join(map(str, DEFAULT_TIMED_K)),
        help="K values at which the real cascade is run and timed",
    )
    parser.add_argument("--repeats", type=positive_int, default=1, help="timed cascade runs per K (best kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--precision", choices=("fp32", "bf16", "auto"), default="fp32", help="the main models' precision"
    )
    parser.add_argument("--json", type=Path, help="write every number here")
    parser.add_argument("--plot", type=Path, help="write the F1-vs-pairs curve here (PNG)")
    args = parser.parse_args()
    from zstc.errors import ZstcError
    from zstc.benchmark.tasks import check_sampling

    for samples in (args.max_samples, args.yesno_max_samples):
        try:  # before the default NLI model's minutes of training
            check_sampling(args.sampling, samples)
        except ZstcError as error:
            parser.error(str(error))

    from zstc.scorers import make_scorer

    data = Path(args.data)
    model = args.model or trained_nli_model(data, args.train_steps)
    timed_k: list[int] = args.timed_k
    from zstc.scorers.runtime import resolve_device, resolve_precision

    precision = resolve_precision(args.precision, resolve_device(None))
    shortlister = make_scorer(args.shortlister, precision="fp32")
    network, tokenizer = pipeline_model(model)

    def nli_flops(pairs: list[tuple[str, str]]) -> float:
        return encoder_flops(network, pair_lengths(tokenizer, pairs))

    cases: list[tuple[str, Any, int, str, Callable[[list[tuple[str, str]]], float]]] = [
        ("nli", make_scorer(model, "nli", precision=precision), args.max_samples, args.tasks, nli_flops)
    ]
    if not args.no_yesno:
        yesno = make_scorer("HuggingFaceTB/SmolLM2-135M-Instruct", "yesno", precision=precision)
        cases.append(
            (
                "yesno-smollm2",
                yesno,
                args.yesno_max_samples,
                args.yesno_tasks or args.tasks,
                partial(yesno_flops, yesno),
            )
        )
    print(f"NLI model: {model}; shortlister: {args.shortlister}; torch threads {torch.get_num_threads()}", flush=True)
    results = []
    peaks_before = machine_peaks()
    for name, scorer, samples, tasks, count_flops in cases:
        for task_name in tasks.split(","):
            task = sampled_task(task_name, data, samples, args.sampling, args.seed)
            results.append(run_case(name, scorer, shortlister, task, timed_k, args.repeats, count_flops))
            # Written after every case, so a long run stopped part-way keeps what it measured.
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
            if args.plot:
                plot(results, args.plot)
    peaks_after = machine_peaks()
    peaks = {kind: max(peaks_before[kind], peaks_after[kind]) for kind in peaks_before}  # as hardware.peaks_around
    for result in results:
        where = f"{result['model']} {result['task']}"
        print(peak_line(f"{where} full run peak fraction", result["full_flops"], result["full_s"], peaks, precision))
        print(
            peak_line(
                f"{where} cascade at best_k={result['best_k']} peak fraction",
                result["best_k_flops"],
                result["seconds"][result["best_k"]],
                peaks,
                precision,
            )
        )
    first = results[0]
    print(f"best_k={first['best_k']} pair_reduction={first['pair_reduction']:.2f} f1_delta={first['f1_delta']:+.4f}")


if __name__ == "__main__":
    main()
