"""Label-partially-unseen evaluation (Yin et al. 2019, PROTOCOL.md s.7).

The labels are split into two disjoint halves (even and odd class indices, each half "seen" in turn, as
Yin et al. evaluate both halves). For one split:

1. Entailment pairs from the training texts of the seen labels only: each text with its gold hypothesis
   (``entailment``) and with the hypotheses of other seen labels (``neutral``: not entailed; the binary
   training variant collapses it with contradiction anyway). Unseen labels never appear in training.
2. An NLI scorer fine-tuned on those pairs (:func:`finetune_on_seen`, with ``zstc.training``).
3. Every test text scored against all labels, decided by the harsh rule (:func:`harsh_decisions`): a seen
   label wins over an unseen one only when its probability is higher by a margin ``alpha`` (0.05), which
   counters the fine-tuned model's bias toward the labels it was trained on.
4. F1 over the seen labels and over the unseen labels separately (:func:`group_f1`).

Label-fully-unseen is the same evaluation with no fine-tuning and plain argmax (no label was seen), on the
same splits, so the two settings compare label group by label group.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import f1_score

from zstc.policy import argmax_decisions
from zstc.errors import DataError, OptionError, ZstcError
from zstc.io import atomic_write
from zstc.validation import OPTIONS, check_option, check_options
from zstc.benchmark.metrics import dataset_metrics
from zstc.benchmark.tasks import NO_HYPOTHESIS, Task

DEFAULT_ALPHA = 0.05
DEFAULT_NEGATIVES = 4

SHARED_TEXTS_LIMIT = 0.05
"""The most of the test texts, or of the training texts, that the two sets may share (whitespace and case
ignored). Natural duplicates stay far below it: banking77's training and test splits share 7 of 3080 test texts."""


def _normalized(text: str) -> str:
    return " ".join(text.casefold().split())


def check_training_data(test: Task, train: Task) -> int:
    """Refuse training data that is the test data: the same content (sha256 of the file or the hub's rows), or a
    substantial share of the same texts (more than :data:`SHARED_TEXTS_LIMIT` of either set, whitespace and case
    ignored). Fine-tuning on test texts scores the model on what it was trained on. Returns how many test texts the
    training data holds (a few natural duplicates are allowed: the caller reports them). The error names the
    parameter ``train_data``."""
    from zstc.runs.identity import data_sha256

    test_sha, train_sha = data_sha256(test), data_sha256(train)
    if test_sha is not None and test_sha == train_sha:
        raise OptionError(
            f"train_data {train.source} holds the same data as the test set {test.source} (sha256 {test_sha[:12]}): "
            "fine-tuning on it would score the model on the texts it was trained on; give the dataset's "
            "training split",
            "train_data",
        )
    training = {_normalized(text) for text in train.texts}
    shared = sum(_normalized(text) in training for text in test.texts)
    if shared > SHARED_TEXTS_LIMIT * min(len(test), len(train)):
        raise OptionError(
            f"train_data {train.source}: {shared} of the {len(test)} test texts of {test.name} are among its "
            f"{len(train)} training texts (whitespace and case ignored), more than {SHARED_TEXTS_LIMIT:.0%} of "
            "either set: fine-tuning on them would score the model on texts it was trained on; give a training "
            "split that does not hold the test texts",
            "train_data",
        )
    return shared


@dataclass(frozen=True)
class LabelSplit:
    """Which labels (class indices) a model is trained on; the rest are unseen."""

    name: str
    seen: tuple[int, ...]
    unseen: tuple[int, ...]

    def seen_mask(self, n_labels: int) -> np.ndarray:
        """A boolean mask over the ``n_labels`` labels, true for the seen half."""
        mask = np.zeros(n_labels, dtype=bool)
        mask[list(self.seen)] = True
        return mask

    @property
    def pairs_file(self) -> str:
        """The name of its training pairs' file in the work folder (``pairs-even.jsonl``)."""
        return f"pairs-{self.name.split()[0]}.jsonl"


def label_halves(n_labels: int) -> list[LabelSplit]:
    """The two disjoint halves, each seen once: even class indices, then odd ones."""
    if n_labels < 2:
        raise DataError(f"splitting labels into seen and unseen halves needs at least two labels, got {n_labels}")
    even, odd = tuple(range(0, n_labels, 2)), tuple(range(1, n_labels, 2))
    return [LabelSplit("even labels seen", even, odd), LabelSplit("odd labels seen", odd, even)]


def seen_label_pairs(
    texts: Sequence[str],
    gold: np.ndarray,
    hypotheses: Sequence[str],
    split: LabelSplit,
    *,
    negatives_per_text: int | None = DEFAULT_NEGATIVES,
    seed: int = 0,
) -> list[dict[str, str]]:
    """Training pairs (``premise``, ``hypothesis``, ``label``) from the texts whose gold label is seen.

    Each such text gives one ``entailment`` pair (its gold hypothesis) and ``neutral`` pairs with other
    seen labels: ``negatives_per_text`` of them drawn with ``seed``, or all of them when None. No text with a
    seen label gives no pairs (:func:`run_unseen` refuses that only when it fine-tunes).
    """
    rng = np.random.default_rng(seed)
    seen = np.asarray(split.seen)
    pairs: list[dict[str, str]] = []
    for text, label in zip(texts, gold):
        if label not in split.seen:
            continue  # unseen-label texts (and texts with no candidate) stay out of training
        others = seen[seen != label]
        if negatives_per_text is not None and negatives_per_text < len(others):
            others = rng.choice(others, size=negatives_per_text, replace=False)
        pairs.append({"premise": text, "hypothesis": hypotheses[label], "label": "entailment"})
        pairs.extend({"premise": text, "hypothesis": hypotheses[other], "label": "neutral"} for other in others)
    return pairs


def write_pairs(pairs: Sequence[dict[str, str]], path: str | Path) -> Path:
    """Write NLI training pairs to ``path`` as JSON lines, atomically; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        for pair in pairs:
            handle.write(json.dumps(pair, ensure_ascii=False) + "\n")
    return path


def harsh_decisions(probabilities: np.ndarray, seen_mask: np.ndarray, alpha: float = DEFAULT_ALPHA) -> np.ndarray:
    """Per text, the best seen label only if its probability beats the best unseen one by more than ``alpha``."""
    if seen_mask.all() or not seen_mask.any():
        return argmax_decisions(probabilities)
    seen_idx, unseen_idx = np.flatnonzero(seen_mask), np.flatnonzero(~seen_mask)
    best_seen = seen_idx[probabilities[:, seen_idx].argmax(axis=1)]
    best_unseen = unseen_idx[probabilities[:, unseen_idx].argmax(axis=1)]
    rows = np.arange(len(probabilities))
    prefer_seen = probabilities[rows, best_seen] > probabilities[rows, best_unseen] + alpha
    return np.where(prefer_seen, best_seen, best_unseen)


def group_f1(gold: np.ndarray, predicted: np.ndarray, split: LabelSplit) -> dict[str, float]:
    """F1 of the seen and of the unseen labels, each averaged over its labels (weighted by support: Yin et
    al.'s label-wise weighted F1; and macro), computed over all test texts."""
    overall = dataset_metrics(gold, predicted)  # the benchmark's own macro-F1 and accuracy
    report: dict[str, float] = {"macro_f1": overall["macro_f1"], "accuracy": overall["accuracy"]}
    for group, labels in (("seen", split.seen), ("unseen", split.unseen)):
        for average in ("weighted", "macro"):
            value = f1_score(gold, predicted, labels=list(labels), average=average, zero_division=0)
            report[f"{group}_{average}_f1"] = float(value)
        report[f"{group}_texts"] = int(np.isin(gold, labels).sum())
    return report


def evaluate_split(scores: np.ndarray, gold: np.ndarray, split: LabelSplit, *, alpha: float | None) -> dict[str, Any]:
    """Decisions and group F1 for one split: the harsh rule with ``alpha``, or plain argmax when None."""
    if alpha is None:
        predicted = argmax_decisions(scores)
    else:
        predicted = harsh_decisions(scores, split.seen_mask(scores.shape[1]), alpha)
    seen_share = float(np.isin(predicted, split.seen).mean())
    return {"split": split.name, "alpha": alpha, **group_f1(gold, predicted, split), "predicted_seen_share": seen_share}


def finetune_on_seen(
    pairs_path: Path,
    base_model: str,
    out: Path,
    *,
    progress: bool = True,
    log: Callable[[str], None] = print,
    **train_options: Any,
) -> str:
    """Fine-tune an NLI cross-encoder on the seen-label pairs with ``zstc.training`` (``zstc train-nli``'s
    recipe) and return the saved model's folder, which the NLI scorer loads. ``train_options`` go to
    ``TrainConfig`` (``variant`` defaults to ``binary``: entailment vs not, the pairs' two kinds); ``progress``
    (the training's bar) and ``log`` (its lines) to :func:`zstc.training.train_nli`."""
    try:
        from zstc.training import TrainConfig, train_nli
    except ImportError:
        raise DataError(
            "fine-tuning needs zstc.training (the train-nli command); run with --no-finetune without it"
        ) from None
    options = {"variant": "binary", **train_options}
    if (out / "zstc_training.json").exists():
        # Finished earlier (the trainer refuses to overwrite a trained model): reused only when it was trained
        # as asked now, else the numbers would silently be another model's.
        _check_finished_model(out, pairs_path, {"backbone": base_model, **options})
        return str(out)
    train_nli(
        TrainConfig(backbone=base_model, data=str(pairs_path), out=str(out), **options), progress=progress, log=log
    )
    return str(out)


_RUNTIME_ONLY = ("device", "precision")
"""Training options not compared as given: the device (where it trained), and the precision, compared as resolved
(:func:`finetune_precision`) since ``auto`` means bf16 on one machine and fp32 on another."""


def finetune_precision(train_options: dict[str, Any]) -> str:
    """The precision ``fp32`` or ``bf16`` that fine-tuning with ``train_options`` runs at on this machine, as the
    trainer resolves it and records it (``auto`` by the device, none given: ``TrainConfig``'s default)."""
    from zstc.scorers.runtime import resolve_device, resolve_precision
    from zstc.training import TrainConfig

    requested = train_options.get("precision", TrainConfig.precision)
    return resolve_precision(requested, resolve_device(train_options.get("device")))


def _check_finished_model(folder: Path, pairs_path: Path, wanted: dict[str, Any]) -> None:
    """:class:`DataError` unless the model in ``folder`` was trained on ``pairs_path``'s pairs (same content) with
    the ``wanted`` training options, at the precision they resolve to here, from the same backbone weights."""
    from zstc.runs.provenance import sha256_file
    from zstc.models.nli_head import read_training_record

    record = read_training_record(folder)
    config = record.get("config", {})
    differ = [
        f"{name} {config.get(name)!r} (now {value!r})"
        for name, value in wanted.items()
        if name not in _RUNTIME_ONLY and config.get(name) != value
    ]
    # The precision as trained (the record holds the resolved one): bf16-trained weights are other weights.
    precision = finetune_precision(wanted)
    if config.get("precision") != precision:
        differ.append(f"precision {config.get('precision')!r} (now {precision!r})")
    # The backbone by its weights, not its name: a local --base-model folder retrained in place keeps its path.
    trained_from = record.get("backbone_revision")
    backbone = _backbone_identity(str(wanted["backbone"])) if trained_from is not None else None
    if backbone is not None and trained_from != backbone:  # None: not knowable here (a hub id the hub did not answer)
        differ.append(f"the backbone's weights {trained_from} (now {backbone})")
    if record.get("data", {}).get("train", {}).get("sha256") != sha256_file(pairs_path):
        differ.append("its training pairs (other data, sample, hypotheses, negatives or seed)")
    if differ:
        raise DataError(
            f"{folder}: a model fine-tuned earlier with other settings: {'; '.join(differ)}; "
            "use another --work-dir or remove that folder"
        )


def _backbone_identity(name: str) -> str | None:
    """The weights the trainer would load as backbone ``name``, as it records them (``backbone_revision``: the hub
    commit or a local folder's content hash); None where not knowable (an unknown name: the trainer says so)."""
    from zstc.runs.identity import model_weights_identity
    from zstc.training.trainer import backbone_spec

    try:
        return model_weights_identity(backbone_spec(name))
    except ZstcError:
        return None


ScorerFactory = Callable[[LabelSplit, Path], Any]
"""(split, path of its training pairs) -> the fine-tuned scorer to evaluate that split with."""


@dataclass
class UnseenConfig:
    """Settings of the label-unseen evaluations: the harsh rule's margin ``alpha``, the negative pairs per
    training text, the seed, and where training pairs and fine-tuned models go."""

    alpha: float = DEFAULT_ALPHA
    negatives_per_text: int | None = DEFAULT_NEGATIVES
    """None: every other seen label."""
    seed: int = 0
    work_dir: Path = Path("unseen-work")

    def __post_init__(self) -> None:
        # unseen's --alpha, --seed and --negatives (this field's flag: zstc.cli.options.FLAGS), one rule each
        check_options({"alpha": self.alpha, "seed": self.seed})
        check_option("negatives_per_text", self.negatives_per_text, OPTIONS["negatives"])


def run_unseen(
    test: Task,
    train: Task,
    hypotheses: Sequence[str],
    base_scorer: Any,
    config: UnseenConfig,
    finetuned_scorer: ScorerFactory | None = None,
    *,
    log: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Label-fully-unseen (``base_scorer``, argmax) and, when ``finetuned_scorer`` is given,
    label-partially-unseen (its scorer per split, harsh rule), on both label halves.

    Texts whose gold class has no hypothesis must already be excluded from ``test`` and ``train``, and ``train``
    must not be the test data: :func:`check_training_data` it on the whole sets, before any sampling (as ``zstc
    unseen`` does; on samples, a few texts the two splits share by nature would count for more than they are). The
    training pairs of every split are built (and counted) either way, but written to ``config.work_dir``
    only when there is fine-tuning to feed: a run without it leaves no files behind.
    """
    if (test.gold == NO_HYPOTHESIS).any() or list(test.label_names) != list(train.label_names):
        raise DataError("test and training tasks must share their labels and hold only texts with a candidate label")
    splits = label_halves(len(test.label_names))
    # Before any scoring: fine-tuning with no pairs is refused before the model works, not after it scored everything.
    pairs_of = [
        seen_label_pairs(
            train.texts, train.gold, hypotheses, split, negatives_per_text=config.negatives_per_text, seed=config.seed
        )
        for split in splits
    ]
    for split, pairs in zip(splits, pairs_of):
        if not pairs and finetuned_scorer is not None:
            raise DataError(
                f"no training text has a seen label ({split.name}), so there is nothing to fine-tune on; "
                "raise --max-train-samples or run with --no-finetune"
            )
        if not pairs:
            log(
                f"note: {split.name}: no training text has a seen label (training_pairs 0; only fine-tuning needs them)"
            )
    log(f"label-fully-unseen: scoring {len(test)} texts x {len(hypotheses)} labels")
    base_scores = base_scorer.score(test.texts, list(hypotheses))
    report: dict[str, Any] = {
        "dataset": test.name,
        "n_test": len(test),
        "n_train": len(train),
        "alpha": config.alpha,
        "negatives_per_text": config.negatives_per_text,
        "fully_unseen": {
            "macro_f1": dataset_metrics(test.gold, argmax_decisions(base_scores))["macro_f1"],
            "splits": [],
        },
        "partially_unseen": {"splits": []} if finetuned_scorer else None,
    }
    for split, pairs in zip(splits, pairs_of):
        report["fully_unseen"]["splits"].append(
            {**evaluate_split(base_scores, test.gold, split, alpha=None), "training_pairs": len(pairs)}
        )
        if finetuned_scorer is not None:
            pairs_path = write_pairs(pairs, config.work_dir / split.pairs_file)
            log(f"{split.name}: {len(pairs)} training pairs -> {pairs_path}")
            scorer = finetuned_scorer(split, pairs_path)
            scores = scorer.score(test.texts, list(hypotheses))
            report["partially_unseen"]["splits"].append(evaluate_split(scores, test.gold, split, alpha=config.alpha))
    for setting in ("fully_unseen", "partially_unseen"):
        if report[setting]:
            report[setting]["mean"] = _mean_over_splits(report[setting]["splits"])
    return report


def _mean_over_splits(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    keys = [k for k, v in rows[0].items() if k.endswith("_f1") or k == "accuracy"]
    return {k: float(np.mean([row[k] for row in rows])) for k in keys}
