"""zstc's NLI or embedding scorer in bf16 against itself in fp32: speed, decision agreement, and what the fp32 recheck costs.

NLI (``--family nli``, the default): three runs of the same scorer on the same banking77 texts and 72 hypotheses (or
``--dataset``'s; ``score_type="logit"``): fp32, bf16 alone (``recheck_margin=0``) and bf16 as zstc runs it by default, with near
ties rescored in fp32 (``--recheck-margin``, default zstc's; see zstc.scorers.pairs). They alternate chunk by chunk,
as in ``nli_vs_pipeline.py``, so background load on a shared machine falls on all three alike. A random head's near
ties exaggerate disagreement (and make every pair a near tie), so pass a trained model.

    python benchmarks/bf16_agreement.py --data ../shared/data/btzsc --model FOLDER --texts 60

The last line is ``bf16_speedup=<fp32 s / bf16-alone s> argmax_agreement=<bf16 alone vs fp32>
recheck_cost=<rechecked s / bf16-alone s> rechecked_agreement=<rechecked bf16 vs fp32>``; the lines before it
give each run's fraction of the machine's matmul peak (``hardware.py``: fp32 against the fp32 peak, both bf16
runs against the bf16 one).

Embedding (``--family embedding``): the same three precisions through ``zstc.Classifier`` as a user runs it
(``--model``, default classify's all-MiniLM-L6-v2) on ``--dataset``'s texts, its hypotheses as the label
descriptions, each for single-label decisions (``predict``: the best label) and for the embedding family's default
multi-label rule (``predict_multi_label``: the labels at the family's cut and within its margin of the text's best;
label sets compared, not their order): six runs alternating, in chunks of 100 texts unless ``--chunk``. A rechecked
text is embedded again in fp32, whole (zstc.scorers.embedding), and each call also rechecks a few close calls
(``RECHECK_PROBES``), so smaller chunks recheck more. ``--margins 0.005,0.01`` adds a rechecked pair of runs per
margin to the rotation.

    python benchmarks/bf16_agreement.py --family embedding --data ../shared/data/btzsc --dataset emotiondair --texts 400

Before its last line it prints bf16's largest cosine error (``max |bf16 alone - fp32|``; the recheck margin must
exceed twice it) and a line per margin; its last line is the NLI one with the share of texts rechecked added, then
the same four numbers and share for the multi-label rule: ``bf16_speedup=... argmax_agreement=... recheck_cost=...
rechecked_agreement=... rechecked_texts=... multi_bf16_speedup=... label_set_agreement=... multi_recheck_cost=...
rechecked_label_set_agreement=... multi_rechecked_texts=...``.
"""

from __future__ import annotations

import argparse
import functools
import re
from typing import Any

import numpy as np
from hardware import embedding_flops, encoder_flops, peak_line, peaks_around
from nli_vs_pipeline import Predictor, pair_lengths, pipeline_model, timed_rounds, zstc_predictor
from options import Parser, non_negative_float, positive_float_list, positive_int

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
"""The embedding mode's default model: classify's and the Classifier's."""
CHUNKS = {"nli": 10, "embedding": 100}
"""Texts per round by default: an NLI text is 72 pairs, an embedding text one pass."""


def main() -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument(
        "--family", choices=("nli", "embedding"), default="nli", help="the scorer compared (default: nli)"
    )
    parser.add_argument(
        "--model", help="NLI model (hub id or folder; required for nli), or embedding model (default: all-MiniLM-L6-v2)"
    )
    parser.add_argument(
        "--dataset",
        default="banking77",
        help="the BTZSC dataset whose texts and hypotheses are scored (default: banking77)",
    )
    parser.add_argument("--texts", type=positive_int, default=60, help="texts (a stratified sample)")
    parser.add_argument(
        "--chunk",
        type=positive_int,
        help="texts per round; the runs alternate round by round (default: 10 nli, 100 embedding)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--recheck-margin", type=non_negative_float, help="the rechecked run's margin (default: zstc's)"
    )
    parser.add_argument(
        "--margins", type=positive_float_list, help="embedding: one more rechecked run per margin, e.g. 0.005,0.01"
    )
    args = parser.parse_args()
    if args.family == "nli" and args.model is None:
        parser.error(
            "--family nli needs --model: a trained NLI model (a random head's near ties exaggerate disagreement)"
        )
    if args.family == "nli" and args.margins:
        parser.error("--margins is for --family embedding")
    from zstc.benchmark.catalog import catalog

    if args.dataset not in catalog():
        parser.error(f"argument --dataset: unknown dataset {args.dataset!r}; known: {', '.join(catalog())}")
    args.chunk = args.chunk or CHUNKS[args.family]
    (nli if args.family == "nli" else embedding)(args)


def nli(args: argparse.Namespace) -> None:
    """The NLI mode: fp32, bf16 alone and bf16 rechecked, single-label, on pairs of texts and hypotheses."""
    from zstc.benchmark.data import load_btzsc_sample
    from zstc.scorers.base import merge_batch_notes

    task = load_btzsc_sample(args.dataset, args.data, max_samples=args.texts, seed=args.seed)[0]
    texts, hypotheses = list(task.texts), list(task.hypotheses)
    rechecked = {
        "precision": "bf16",
        **({"recheck_margin": args.recheck_margin} if args.recheck_margin is not None else {}),
    }
    notes: list[list[str]] = []
    predictors = {
        "fp32": zstc_predictor(args.model, hypotheses, {"precision": "fp32"}),
        "bf16": zstc_predictor(args.model, hypotheses, {"precision": "bf16", "recheck_margin": 0.0}),
        "bf16+recheck": zstc_predictor(args.model, hypotheses, rechecked, notes=notes),
    }
    results, peaks = peaks_around(lambda: timed_rounds(predictors, texts, args.chunk))
    (fp32, fp32_s), (bf16, bf16_s), (checked, checked_s) = results["fp32"], results["bf16"], results["bf16+recheck"]
    print(
        f"{len(texts)} texts x {len(hypotheses)} hypotheses: fp32 {fp32_s:.2f} s, bf16 alone {bf16_s:.2f} s, "
        f"bf16 rechecked {checked_s:.2f} s"
    )
    for note in merge_batch_notes(notes[1:]):  # the first call is the warm-up
        print(f"bf16 rechecked: {note}")
    # All three run every (text, hypothesis) pair once; the pairs the recheck rescores in fp32 count as its time,
    # not as FLOPs, so its fraction shows what the recheck costs against the peak.
    flops = encoder_flops(
        pipeline_model(args.model)[0], pair_lengths(args.model, [(t, h) for t in texts for h in hypotheses])
    )
    print(peak_line("fp32 peak fraction", flops, fp32_s, peaks, "fp32"))
    print(peak_line("bf16 alone peak fraction", flops, bf16_s, peaks, "bf16"))
    print(peak_line("bf16 rechecked peak fraction", flops, checked_s, peaks, "bf16"))
    print(
        f"bf16_speedup={fp32_s / bf16_s:.2f} argmax_agreement={float(np.mean(fp32 == bf16)):.4f} "
        f"recheck_cost={checked_s / bf16_s:.3f} rechecked_agreement={float(np.mean(fp32 == checked)):.4f}"
    )


RESCORED = re.compile(r"^(\d+) of (\d+) texts rescored in fp32")


class EmbeddingRun:
    """One classifier's two predictors (:meth:`single`, :meth:`multi`), with what each call said and scored."""

    def __init__(self, classifier: Any, labels: list[str], descriptions: list[str]) -> None:
        self.classifier, self.labels, self.descriptions = classifier, labels, descriptions
        self.notes: dict[str, list[list[str]]] = {"single": [], "multi": []}
        self.scores: list[np.ndarray] = []
        """The raw (texts, labels) cosines of each single-label call, the warm-up's first."""

    def single(self, texts: list[str]) -> np.ndarray:
        """Each text's best label (its index), as ``Classifier.predict`` decides it."""
        said: list[str] = []
        predictions = self.classifier.predict(texts, self.labels, self.descriptions, notes=said, scores="raw")
        self.notes["single"].append(said)
        self.scores.append(np.array([[p.raw_scores[label] for label in self.labels] for p in predictions]))
        return np.array([self.labels.index(p.label) for p in predictions])

    def multi(self, texts: list[str]) -> np.ndarray:
        """Each text's label set under the default multi-label rule, as a (texts, labels) mask: sets, not orders."""
        said: list[str] = []
        predictions = self.classifier.predict_multi_label(texts, self.labels, self.descriptions, notes=said)
        self.notes["multi"].append(said)
        return np.array([[label in p.labels for label in self.labels] for p in predictions])

    def rescored(self, kind: str) -> tuple[list[str], float]:
        """``kind``'s merged notes past the warm-up, and the share of texts they say were embedded again in fp32."""
        from zstc.scorers.base import merge_batch_notes

        notes = merge_batch_notes(self.notes[kind][1:])
        counts = [RESCORED.match(note) for note in notes]
        done, total = next(((int(m[1]), int(m[2])) for m in counts if m), (0, 1))
        return notes, done / total


def agreement(reference: np.ndarray, decisions: np.ndarray) -> float:
    """The share of texts decided as in ``reference``: the same best label, or (masks) the same label set, in whatever
    order it was listed."""
    same = decisions == reference
    return float(np.mean(same if same.ndim == 1 else same.all(axis=1)))


def embedding(args: argparse.Namespace) -> None:
    """The embedding mode: fp32, bf16 alone and bf16 rechecked (and one rechecked run per ``--margins``), each
    single-label and under the default multi-label rule, through the Classifier."""
    from zstc.api import Classifier
    from zstc.benchmark.data import load_btzsc_sample

    task = load_btzsc_sample(args.dataset, args.data, max_samples=args.texts, seed=args.seed)[0]
    texts, hypotheses = list(task.texts), list(task.hypotheses)
    labels = [f"label {j}" for j in range(len(hypotheses))]  # names only: the hypotheses are what is embedded
    model = args.model or MINILM
    given = {} if args.recheck_margin is None else {"recheck_margin": args.recheck_margin}
    options: dict[str, dict[str, Any]] = {
        "fp32": {"precision": "fp32"},
        "bf16": {"precision": "bf16", "recheck_margin": 0.0},
        "bf16+recheck": {"precision": "bf16", **given},
        **{f"bf16+recheck@{m:g}": {"precision": "bf16", "recheck_margin": m} for m in args.margins or []},
    }
    runs = {
        name: EmbeddingRun(Classifier(model, device="cpu", **chosen), labels, hypotheses)
        for name, chosen in options.items()
    }
    predictors: dict[str, Predictor] = {}
    for name, run in runs.items():
        predictors[name] = run.single
        predictors[f"{name} multi"] = run.multi
    fp32_run = runs["fp32"].classifier
    cut, margin = fp32_run.default_threshold(), fp32_run.default_margin()
    near = (
        "" if margin is None else f", within {margin:.4g} of the text's best"
    )  # the embedding family's; an encoder has none
    print(
        f"{model}: {len(texts)} {args.dataset} texts x {len(labels)} labels; multi-label default rule: cut {cut:g}{near}; "
        f"alternating in chunks of {args.chunk} texts",
        flush=True,
    )
    results, peaks = peaks_around(lambda: timed_rounds(predictors, texts, args.chunk))

    exact, alone = (np.concatenate(runs[name].scores[1:]) for name in ("fp32", "bf16"))  # past the warm-up
    print(
        f"bf16's largest cosine error: {float(np.abs(alone - exact).max()):.4f} (max |bf16 alone - fp32| over "
        f"{exact.size:,} cosines; a recheck margin must exceed twice it)"
    )
    line: dict[str, str] = {}
    for kind, prefix, agreed in (("single", "", "argmax_agreement"), ("multi", "multi_", "label_set_agreement")):
        suffix = "" if kind == "single" else " multi"
        (fp32, fp32_s), (bf16, bf16_s) = results[f"fp32{suffix}"], results[f"bf16{suffix}"]
        agrees = functools.partial(agreement, fp32)
        what = "single-label" if kind == "single" else "multi-label"
        print(f"{what}: fp32 {fp32_s:.2f} s, bf16 alone {bf16_s:.2f} s ({agrees(bf16):.4f} of decisions fp32's)")
        for name in [n for n in runs if n.startswith("bf16+recheck")]:
            checked, checked_s = results[name + suffix]
            notes, share = runs[name].rescored(kind)
            margin_used = runs[name].classifier.scorer.recheck_margin
            print(
                f"  {name} (margin {margin_used:g}): {checked_s:.2f} s = {checked_s / bf16_s:.3f} x bf16 alone, "
                f"{share:.3f} of texts rescored, {agrees(checked):.4f} of decisions fp32's"
            )
            for note in notes:
                print(f"    {note}")
        checked, checked_s = results["bf16+recheck" + suffix]
        line.update(
            {
                f"{prefix}bf16_speedup": f"{fp32_s / bf16_s:.2f}",
                agreed: f"{agrees(bf16):.4f}",
                f"{prefix}recheck_cost": f"{checked_s / bf16_s:.3f}",
                # the NLI mode's name for the single-label one, so both modes' last lines read alike
                "rechecked_agreement" if kind == "single" else f"rechecked_{agreed}": f"{agrees(checked):.4f}",
                f"{prefix}rechecked_texts": f"{runs['bf16+recheck'].rescored(kind)[1]:.3f}",
            }
        )
    # Each run embeds every text once (the labels are cached per label set); the texts the recheck embeds again in
    # fp32 count as its time, not as FLOPs, so its fraction shows what the recheck costs against the peak.
    flops = embedding_flops(model, texts)
    for name in ("fp32", "bf16", "bf16+recheck"):
        for suffix in ("", " multi"):
            print(
                peak_line(
                    f"{name}{suffix} peak fraction", flops, results[name + suffix][1], peaks, options[name]["precision"]
                )
            )
    print(" ".join(f"{key}={value}" for key, value in line.items()))


if __name__ == "__main__":
    main()
