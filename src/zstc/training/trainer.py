"""The training loop of ``zstc train-nli``: a :class:`transformers.Trainer` with the recipe's head and losses.

:class:`NliTrainer` keeps what is the recipe's own (PROTOCOL.md s.5): the head and its losses, two learning
rates (backbone and head, as optimizer parameter groups), warm-up then cosine decay, length-grouped batches.
Everything else is the Trainer's: evaluation every 1% of the steps, ``EarlyStoppingCallback`` on the dev loss,
``load_best_model_at_end``, checkpoints in ``<out>/checkpoint/checkpoint-<step>/`` and resuming from the last
one, ``DataCollatorWithPadding``. Started again with the same configuration, a run continues from its last
checkpoint: each epoch's batches are a function of the seed and the epoch number, and the Trainer restores
the random state, so a resumed run trains on exactly the batches a straight run would. When training ends
(step budget spent or early stop), the best weights are saved as the model folder and the checkpoints removed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import (
    DataCollatorWithPadding,
    EarlyStoppingCallback,
    EvalPrediction,
    PrinterCallback,
    ProgressCallback,
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
)
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from zstc.errors import DataError, ModelError, OutputError, Terminated, quoted
from zstc.io import atomic_directory
from zstc.models.registry import ModelSpec, get_model_spec
from zstc.models.nli_head import TRAINING_FILE, VARIANT_LABELS, NliCrossEncoder, build_nli_model, is_zstc_nli_model
from zstc.scorers.runtime import Precision, fp32_as_recorded, resolve_device, resolve_precision
from zstc.runs.provenance import model_identity, sha256_file as sha256_of
from zstc.training.nli_pairs import (
    NLI_CLASSES,
    NliPairs,
    balanced_indices,
    length_grouped_batches,
    read_nli_pairs,
    split_dev,
)
from zstc.training.recipe import (
    ENTAILMENT,
    TrainConfig,
    default_learning_rates,
    entailment_score,
    nli_loss,
    predicted_classes,
)

CHECKPOINT_DIR = "checkpoint"
RESUME_KEY_FILE = "zstc_resume_key.json"
"""The configuration a checkpoint belongs to; another one refuses to continue it."""
MAX_DEFAULT_LENGTH = 512

assert VARIANT_LABELS["triplet"] == NLI_CLASSES, "triplet outputs are indexed like the gold classes"


@dataclass
class TrainResult:
    """What a training run did: where the model is, the steps taken, the best dev evaluation and whether it
    stopped early."""

    out: Path
    steps: int
    total_steps: int
    best_step: int
    best_dev: dict[str, float]
    stopped_early: bool
    seconds: float
    history: list[dict[str, float]] = field(default_factory=list)


class NliPairDataset(torch.utils.data.Dataset[dict[str, Any]]):
    """Tokenized pairs, unpadded (``DataCollatorWithPadding`` pads each batch to its own longest pair)."""

    def __init__(self, tokenizer: Any, pairs: NliPairs, max_length: int, what: str = "the pairs") -> None:
        """``what``: the pairs as a message names them (``the training data``, ``the dev set``)."""
        # Only the premise is cut: the hypothesis carries the label's meaning (PROTOCOL.md s.2, truncation).
        try:
            self.encoded = tokenizer(pairs.premises, pairs.hypotheses, truncation="only_first", max_length=max_length)
        except Exception:  # the tokenizer's "Sequence to truncate too short": say which hypothesis, in one line
            _check_hypotheses_fit(tokenizer, pairs, max_length, what)
            raise
        # A hypothesis that leaves no premise token but did not fail fills max_length exactly (its premise had no
        # token to cut), so only those pairs' hypotheses are tokenized again: all of them once more took ~1.7 s
        # of LingNLI's ~5 s of tokenizing.
        _check_hypotheses_fit(
            tokenizer,
            pairs,
            max_length,
            what,
            among=[i for i, ids in enumerate(self.encoded["input_ids"]) if len(ids) >= max_length],
        )
        self.classes = torch.as_tensor(pairs.classes)

    def __len__(self) -> int:
        return len(self.classes)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {**{key: values[index] for key, values in self.encoded.items()}, "labels": self.classes[index]}

    @property
    def lengths(self) -> list[int]:
        """Each pair's token count, for length-grouped batches."""
        return [len(ids) for ids in self.encoded["input_ids"]]


def _check_hypotheses_fit(
    tokenizer: Any, pairs: NliPairs, max_length: int, what: str, among: Sequence[int] | None = None
) -> None:
    """Refuse pairs whose hypothesis leaves no token of the premise under ``max_length``: only premises are cut,
    and the tokenizer failed on them with a traceback ("Sequence to truncate too short"). ``among``: the only
    pairs that can be refused (in order), when the caller knows (all of them by default)."""
    candidates = range(len(pairs)) if among is None else among
    if not candidates:
        return
    room = max_length - tokenizer.num_special_tokens_to_add(pair=True)
    hypotheses = [pairs.hypotheses[i] for i in candidates]
    lengths = dict(zip(candidates, (len(ids) for ids in tokenizer(hypotheses, add_special_tokens=False)["input_ids"])))
    too_long = [i for i, length in lengths.items() if length >= room]
    if too_long:
        first = too_long[0]
        raise DataError(
            f"{what}: {len(too_long)} of {len(pairs)} pairs have a hypothesis of {room} tokens or more, which "
            f"leaves no room for the premise under max_length {max_length} (only premises are cut; the first: "
            f"{quoted(pairs.hypotheses[first])}, {lengths[first]} tokens): raise max_length or drop those pairs",
            parameters=("max_length",),
        )


class LengthGroupedBatches(torch.utils.data.Sampler[list[int]]):
    """A batch sampler: epoch ``e`` yields :func:`length_grouped_batches` of ``seed + e``, so the batches of an
    epoch do not depend on the random state (the Trainer calls :meth:`set_epoch`; resuming relies on it)."""

    def __init__(self, lengths: list[int], batch_size: int, seed: int) -> None:
        self.lengths, self.batch_size, self.seed, self.epoch = lengths, batch_size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose shuffle the next iteration uses (the Trainer calls it each epoch, and again on resuming)."""
        self.epoch = epoch

    def __iter__(self) -> Iterator[list[int]]:
        return iter(length_grouped_batches(self.lengths, self.batch_size, self.seed + self.epoch))

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)


def nli_metrics(logits: torch.Tensor, classes: torch.Tensor, variant: str) -> dict[str, float]:
    """Loss, accuracy (3-way, or entailment vs not for binary) and AUROC of the entailment score."""
    from sklearn.metrics import roc_auc_score

    loss = float(nli_loss(logits, classes, variant))
    predicted = predicted_classes(logits, variant)
    truth = classes if variant == "triplet" else torch.where(classes == ENTAILMENT, ENTAILMENT, -1)
    is_entailment = (classes == ENTAILMENT).numpy()
    both_present = 0 < is_entailment.sum() < len(classes)
    auroc = (
        float(roc_auc_score(is_entailment, entailment_score(logits, variant).numpy())) if both_present else float("nan")
    )
    return {"loss": loss, "accuracy": float((predicted == truth).float().mean()), "auroc": auroc}


def backbone_spec(name: str) -> ModelSpec:
    """The model ``--backbone`` (or ``unseen``'s ``--base-model``) names, as training loads it: an encoder."""
    return get_model_spec(name, family="encoder", parameter="backbone")


def _load_backbone(name: str) -> tuple[torch.nn.Module, Any, str]:
    from transformers import AutoModel, AutoTokenizer

    from zstc.models.loading import load_error, model_source, pinned

    spec = backbone_spec(name)
    source = model_source(spec)
    try:
        pin = pinned(source)
        return AutoModel.from_pretrained(source, **pin), AutoTokenizer.from_pretrained(source, **pin), source
    except (OSError, ValueError) as error:
        raise load_error(spec, error) from error


def _class_counts(pairs: NliPairs) -> dict[str, int]:
    return {name: int((pairs.classes == index).sum()) for index, name in enumerate(NLI_CLASSES)}


def _data_record(path: str, pairs: NliPairs) -> dict[str, Any]:
    return {
        "path": str(Path(path).resolve()),
        "sha256": sha256_of(path),
        "pairs": len(pairs),
        "classes": _class_counts(pairs),
    }


def _check_both_sides(pairs: NliPairs, before: str, after: str = "") -> None:
    """Refuse pairs without entailment or without not-entailment (neutral, contradiction): the model could not
    learn the entailment score from them, nor a dev set rank by it (its AUROC is undefined, and was NaN). The
    message is ``before``, what the pairs hold, ``after``."""
    counts = {name: count for name, count in _class_counts(pairs).items() if count}
    if "entailment" in counts and len(counts) > 1:
        return
    found = f"only {' and '.join(counts)} pairs ({', '.join(map(str, counts.values()))})" if counts else "no pairs"
    raise DataError(
        f"{before}{found}{after}; train-nli needs entailment pairs and not-entailment (neutral or "
        "contradiction) pairs, in the training data and in the dev set"
    )


def _read_data(config: TrainConfig) -> tuple[NliPairs, NliPairs, dict[str, Any]]:
    """(train pairs, balanced dev pairs, checksum records of the files read); refuses pairs all on one side of
    entailment (:func:`_check_both_sides`)."""
    pairs = read_nli_pairs(config.data)
    _check_both_sides(pairs, f"{config.data}: has ")
    records = {"train": _data_record(config.data, pairs)}
    if config.dev is None:
        train, dev = split_dev(pairs, config.dev_size, config.seed)
        _check_both_sides(
            train, f"{config.data}: holding out a dev set of {len(dev)} pairs (--dev-size) leaves ", " for training"
        )
        return train, dev, records
    dev_all = read_nli_pairs(config.dev)
    _check_both_sides(dev_all, f"{config.dev} (--dev): has ")
    records["dev"] = _data_record(config.dev, dev_all)
    return (
        pairs,
        dev_all.subset(balanced_indices(dev_all.classes, min(config.dev_size, len(dev_all)), config.seed)),
        records,
    )


def _parameter_groups(
    model: NliCrossEncoder, backbone_lr: float, head_lr: float, weight_decay: float
) -> list[dict[str, Any]]:
    """Backbone and head at their own rates; no weight decay on biases and normalization weights (HF Trainer)."""
    groups = []
    for module, lr in ((model.backbone, backbone_lr), (model.head, head_lr)):
        decay: list[torch.nn.Parameter] = []
        no_decay: list[torch.nn.Parameter] = []
        for name, parameter in module.named_parameters():
            if not parameter.requires_grad:
                continue
            (no_decay if parameter.ndim < 2 or "norm" in name.lower() else decay).append(parameter)
        groups.append({"params": decay, "lr": lr, "weight_decay": weight_decay})
        groups.append({"params": no_decay, "lr": lr, "weight_decay": 0.0})
    return groups


class NliTrainer(Trainer):
    """The Trainer with the recipe's own parts: NLI losses, a learning rate each for backbone and head,
    length-grouped batches; and ``seconds`` (training time, resumed runs included) in every log entry."""

    def __init__(
        self, *args: Any, variant: str, backbone_lr: float, head_lr: float, seconds_before: float = 0.0, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.variant, self.backbone_lr, self.head_lr = variant, backbone_lr, head_lr
        self.seconds_before, self.started = seconds_before, time.monotonic()
        self.saving_step = -1
        """The step of the latest checkpoint this trainer began to save."""

    def elapsed(self) -> float:
        """Training seconds so far, those before a resume included."""
        return self.seconds_before + time.monotonic() - self.started

    def _save_checkpoint(self, model: torch.nn.Module, trial: Any) -> None:
        # The Trainer saves a step after evaluating it and ranking the evaluation (_maybe_log_save_evaluate): from
        # here on, a checkpoint of this step holds all of that (see _checkpoint_on_interrupt).
        self.saving_step = self.state.global_step
        super()._save_checkpoint(model, trial)

    def compute_loss(
        self,
        model: torch.nn.Module,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        """The variant's NLI loss (:func:`zstc.training.recipe.nli_loss`) on the batch's gold classes."""
        outputs = model(**{key: value for key, value in inputs.items() if key != "labels"})
        loss = nli_loss(outputs.logits, inputs["labels"], self.variant)
        return (loss, outputs) if return_outputs else loss

    def create_optimizer(self, model: torch.nn.Module | None = None) -> torch.optim.Optimizer:
        """AdamW with the backbone's and the head's own learning rates (two parameter groups)."""
        if self.optimizer is None:
            args = self.args
            assert isinstance(self.model, NliCrossEncoder)
            groups = _parameter_groups(self.model, self.backbone_lr, self.head_lr, args.weight_decay)
            self.optimizer = torch.optim.AdamW(groups, betas=(args.adam_beta1, args.adam_beta2), eps=args.adam_epsilon)
        return self.optimizer

    def get_train_dataloader(self) -> torch.utils.data.DataLoader[Any]:
        """Batches of pairs of similar length (:class:`LengthGroupedBatches`), so little of each batch is padding."""
        dataset = self.train_dataset
        assert isinstance(dataset, NliPairDataset)
        batches = LengthGroupedBatches(dataset.lengths, self.args.per_device_train_batch_size, self.args.seed)
        loader = torch.utils.data.DataLoader(dataset, batch_sampler=batches, collate_fn=self.data_collator)
        return self.accelerator.prepare(loader)

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        """The Trainer's log entry with the training seconds so far added."""
        super().log({**logs, "seconds": round(self.elapsed(), 3)}, start_time)


def history(log_history: list[dict[str, Any]]) -> list[dict[str, float]]:
    """One entry per evaluation: step, mean train loss since the previous one, dev loss/accuracy/AUROC, seconds."""
    train_loss = {entry["step"]: entry["loss"] for entry in log_history if "loss" in entry}
    return [
        {
            "step": entry["step"],
            "train_loss": train_loss.get(entry["step"], math.nan),
            "dev_loss": entry["eval_loss"],
            "dev_accuracy": entry["eval_accuracy"],
            "dev_auroc": entry["eval_auroc"],
            "seconds": entry["seconds"],
        }
        for entry in log_history
        if "eval_loss" in entry
    ]


class _Progress(TrainerCallback):
    """One line per evaluation (written once its checkpoint is saved, so an interrupt while logging loses
    nothing), a progress bar, the last step's train loss, and the wall-clock budget."""

    def __init__(
        self,
        trainer: NliTrainer,
        log: Callable[[str], None],
        steps_per_epoch: int,
        max_minutes: float | None,
        bar: bool,
    ) -> None:
        from tqdm.auto import tqdm

        self.trainer, self.log, self.steps_per_epoch, self.max_minutes = trainer, log, steps_per_epoch, max_minutes
        self.bar = tqdm(
            disable=not bar, desc="train-nli", dynamic_ncols=True, mininterval=1.0 if os.isatty(2) else 30.0
        )
        self.out_of_time = False

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.bar.reset(total=state.max_steps)
        self.bar.update(state.global_step)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        self.bar.update(1)
        if state.global_step >= state.max_steps:
            control.should_log = True  # the last evaluation gets its train loss too
        if (
            self.max_minutes is not None
            and self.trainer.elapsed() > 60 * self.max_minutes
            and not control.should_training_stop
        ):
            self.out_of_time = control.should_training_stop = True
            self.log(f"time budget of {self.max_minutes:g} minutes spent at step {state.global_step}; stopping")

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any) -> None:
        done = history(state.log_history)
        if not done or done[-1]["step"] != state.global_step:
            return
        entry = done[-1]
        self.log(
            f"step {state.global_step}/{state.max_steps} epoch {state.global_step / self.steps_per_epoch:.2f} "
            f"train_loss {entry['train_loss']:.4f} dev_loss {entry['dev_loss']:.4f} dev_acc {entry['dev_accuracy']:.3f} "
            f"dev_auroc {entry['dev_auroc']:.3f} best_step {state.best_global_step} elapsed {entry['seconds'] / 60:.1f}m"
        )

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        self.bar.close()


def _compute_metrics(variant: str) -> Callable[[EvalPrediction], dict[str, float]]:
    def compute(prediction: EvalPrediction) -> dict[str, float]:
        logits = torch.as_tensor(np.asarray(prediction.predictions))
        metrics = nli_metrics(logits, torch.as_tensor(np.asarray(prediction.label_ids)), variant)
        return {"accuracy": metrics["accuracy"], "auroc": metrics["auroc"]}  # the loss is the Trainer's eval_loss

    return compute


def _arguments(
    output_dir: Path,
    config: TrainConfig,
    device: torch.device,
    precision: Precision,
    *,
    total_steps: int = 1,
    eval_every: int = 1,
    warmup_steps: int = 0,
    progress: bool = False,
) -> TrainingArguments:
    return TrainingArguments(
        output_dir=str(output_dir),
        max_steps=total_steps,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.eval_batch_size,
        weight_decay=config.weight_decay,
        adam_beta1=config.adam_betas[0],
        adam_beta2=config.adam_betas[1],
        adam_epsilon=config.adam_eps,
        max_grad_norm=config.max_grad_norm,
        lr_scheduler_type="cosine",
        warmup_steps=warmup_steps,
        eval_strategy="steps",
        eval_steps=eval_every,
        logging_strategy="steps",
        logging_steps=eval_every,
        # A checkpoint per evaluation: load_best_model_at_end needs the best one on disk; two are kept (best, last).
        save_strategy="steps",
        save_steps=eval_every,
        save_total_limit=2,
        load_best_model_at_end=True,
        metric_for_best_model="loss",
        greater_is_better=False,
        restore_callback_states_from_checkpoint=True,  # early stopping's patience count
        label_names=["labels"],
        remove_unused_columns=False,
        seed=config.seed,
        bf16=precision == "bf16",  # autocast, as zstc's scorers run bf16
        use_cpu=device.type == "cpu",
        report_to="none",
        disable_tqdm=not progress,
        dataloader_num_workers=0,
    )


def evaluate_pairs(
    model: NliCrossEncoder,
    tokenizer: Any,
    pairs: NliPairs,
    *,
    device: torch.device,
    precision: Precision = "fp32",
    batch_size: int = 64,
    max_length: int = MAX_DEFAULT_LENGTH,
) -> dict[str, float]:
    """Loss, accuracy and AUROC of a trained model (e.g. from :func:`zstc.models.nli_head.load_zstc_nli_model`)
    on NLI pairs."""
    variant = "binary" if model.head.out_proj.out_features == 1 else "triplet"
    data = NliPairDataset(tokenizer, pairs, min(max_length, tokenizer.model_max_length))
    config = TrainConfig(backbone="", data="", out="", variant=variant, eval_batch_size=batch_size)
    with tempfile.TemporaryDirectory() as scratch:
        # The eval set is given to the Trainer, not to evaluate(): the arguments ask for step-wise evaluation, which
        # the Trainer refuses to set up without one.
        trainer = NliTrainer(
            model=model,
            args=_arguments(Path(scratch), config, device, precision),
            variant=variant,
            backbone_lr=0.0,
            head_lr=0.0,
            data_collator=DataCollatorWithPadding(tokenizer),
            eval_dataset=data,
            compute_metrics=_compute_metrics(variant),
        )
        with fp32_as_recorded(precision):
            metrics = trainer.evaluate()
    return {"loss": metrics["eval_loss"], "accuracy": metrics["eval_accuracy"], "auroc": metrics["eval_auroc"]}


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """``kill`` (SIGTERM) stops a run like Ctrl-C does: it saves a checkpoint first, then
    :class:`zstc.errors.Terminated` (a ``KeyboardInterrupt``) goes on up.

    Only where SIGTERM would otherwise end the process at once (Python's default): a handler the caller
    installed stays. zstc's command line has one, which raises ``Terminated`` and records the signal, so it exits
    143 with ``terminated (SIGTERM)``; replacing it made a kill look like Ctrl-C (130, ``interrupted (SIGINT)``)."""

    def handler(signum: int, frame: Any) -> None:
        raise Terminated

    try:
        previous = (
            signal.signal(signal.SIGTERM, handler) if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else None
        )
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    if previous is None:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _checkpoint_on_interrupt(trainer: NliTrainer, folder: Path, eval_every: int) -> str | None:
    """Save the step an interrupt stopped at, unless that would lose an evaluation; the checkpoint a rerun
    continues from (None: none yet).

    At a step the Trainer evaluates and saves, a checkpoint written before its own save began would hold the
    step without its evaluation (or without the early-stopping count and best step that follow it): the resumed
    run would evaluate next at the following step, and its history, patience and best step could differ from an
    uninterrupted run's. There the last checkpoint stays the one to continue from (at most ``eval_every`` steps
    are trained again); at any other step the current one is saved."""
    step = trainer.state.global_step
    last = get_last_checkpoint(str(folder))
    if step == 0 or (last is not None and last.endswith(f"-{step}")):
        return last
    evaluates_here = step % eval_every == 0 or step >= trainer.state.max_steps
    if evaluates_here and trainer.saving_step != step:
        return last
    assert trainer.model is not None
    trainer._save_checkpoint(trainer.model, trial=None)  # no public "checkpoint now" in Trainer
    return get_last_checkpoint(str(folder))


def get_last_checkpoint(folder: str) -> str | None:
    """The Trainer's newest complete ``checkpoint-<step>`` folder in ``folder`` (None when there is none).

    A checkpoint the Trainer was writing when the run was stopped (Ctrl-C or a kill during its periodic save)
    lacks a readable ``trainer_state.json``, the file it writes last: it is passed over for the one before (resuming
    from it failed with a FileNotFoundError traceback, and an interrupt took it for saved)."""
    checkpoints: dict[int, Path] = {}
    for entry in Path(folder).iterdir() if Path(folder).is_dir() else ():
        prefix, _, number = entry.name.rpartition("-")
        if prefix == PREFIX_CHECKPOINT_DIR and number.isdigit() and entry.is_dir():
            checkpoints[int(number)] = entry
    for step in sorted(checkpoints, reverse=True):
        try:
            TrainerState.load_from_json(str(checkpoints[step] / "trainer_state.json"))
        except (OSError, ValueError):  # missing, or cut short
            continue
        return str(checkpoints[step])
    return None


def _resume_point(folder: Path, resume_key: dict[str, Any]) -> tuple[str | None, int, float]:
    """(last checkpoint or None, its step, training seconds before it); refuses another configuration's checkpoint,
    naming what differs. A key written before the data's content (or the precision) was part of it is compared
    without it."""
    key_file = folder / RESUME_KEY_FILE
    if key_file.exists():
        stored, wanted = json.loads(key_file.read_text(encoding="utf-8")), json.loads(json.dumps(resume_key))
        if not isinstance(stored, dict):
            stored = {}
        for added_later in ("data_sha256", "precision"):
            if added_later not in stored:
                wanted.pop(added_later, None)
        differ = [name for name in {**stored, **wanted} if stored.get(name) != wanted.get(name)]
        if differ:
            named = ", ".join("the content of the training data" if name == "data_sha256" else name for name in differ)
            raise ModelError(
                f"{folder}: was written by a run with another configuration ({named} differ); "
                "use the same options and data to continue it, or another --out"
            )
    folder.mkdir(parents=True, exist_ok=True)
    key_file.write_text(json.dumps(resume_key, indent=2), encoding="utf-8")
    last = get_last_checkpoint(str(folder))
    if last is None:
        return None, 0, 0.0
    state = TrainerState.load_from_json(str(Path(last) / "trainer_state.json"))
    seconds = next((entry["seconds"] for entry in reversed(state.log_history) if "seconds" in entry), 0.0)
    return last, state.global_step, seconds


def train_nli(
    config: TrainConfig,
    *,
    progress: bool = True,
    log: Callable[[str], None] = print,
    progress_log: Callable[[str], None] | None = None,
) -> TrainResult:
    """Train an NLI cross-encoder with the recipe of PROTOCOL.md s.5 and save it to ``config.out``.

    ``log`` gets the lines that outlast the run (the model saved; how to continue an interrupted run);
    ``progress_log`` (default: ``log``) the progress lines: the run's setup, each evaluation, a stop."""
    say = progress_log or log
    out = Path(config.out).expanduser()
    if is_zstc_nli_model(out):
        raise ModelError(f"{out}: already holds a trained model; choose another --out or remove it")
    # Another model's files (a sentence-transformers modules.json, a vocab.txt) would stay beside the new weights, and
    # the folder would load as neither model. Only this run's checkpoint may be there (it resumes from it).
    others = sorted(entry.name for entry in out.iterdir() if entry.name != CHECKPOINT_DIR) if out.is_dir() else []
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise OutputError(
            f"{out}: holds other files ({shown}), which the trained model's would be mixed with; "
            "choose a new or empty folder for --out"
        )
    device = resolve_device(config.device)
    precision = resolve_precision(config.precision, device)
    config = replace(config, precision=precision)  # the record says what was used, not "auto"
    torch.manual_seed(config.seed)

    train_pairs, dev_pairs, data_records = _read_data(config)
    backbone, tokenizer, source = _load_backbone(config.backbone)
    backbone_params = sum(p.numel() for p in backbone.parameters())
    default_backbone_lr, default_head_lr = default_learning_rates(backbone_params)
    config = replace(  # record what was actually used, not "default"
        config,
        backbone_lr=config.backbone_lr if config.backbone_lr is not None else default_backbone_lr,
        head_lr=config.head_lr if config.head_lr is not None else default_head_lr,
        max_length=config.max_length or min(tokenizer.model_max_length, MAX_DEFAULT_LENGTH),
    )
    assert config.backbone_lr is not None and config.head_lr is not None and config.max_length is not None
    model = build_nli_model(backbone, config.variant, config.head_dropout).to(device)
    train_data = NliPairDataset(tokenizer, train_pairs, config.max_length, "the training data")
    dev_data = NliPairDataset(tokenizer, dev_pairs, config.max_length, "the dev set")

    steps_per_epoch = math.ceil(len(train_pairs) / config.batch_size)
    total_steps = math.ceil(config.epochs * steps_per_epoch)
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    if total_steps < 1:
        raise DataError("nothing to train: the step budget is zero")
    eval_every = max(1, round(total_steps * config.eval_fraction))
    warmup_steps = round(config.warmup_fraction * total_steps)

    folder = out / CHECKPOINT_DIR
    # The files' content too: a resumed run on edited or replaced pairs would continue a checkpoint trained on others.
    content = {part: record["sha256"] for part, record in data_records.items()}
    resume_from, resumed_step, seconds_before = _resume_point(folder, {**config.resume_key(), "data_sha256": content})
    if resume_from is not None:
        say(f"resuming from step {resumed_step} of {total_steps} ({folder})")
    say(
        f"training {config.variant} NLI head on {source} ({backbone_params / 1e6:.1f}M parameters): "
        f"{len(train_pairs)} train / {len(dev_pairs)} dev pairs, {total_steps} steps "
        f"({steps_per_epoch}/epoch), lr {config.backbone_lr:g}/{config.head_lr:g}, device {device}, precision {precision}"
    )
    arguments = _arguments(
        folder,
        config,
        device,
        precision,
        total_steps=total_steps,
        eval_every=eval_every,
        warmup_steps=warmup_steps,
        progress=False,
    )
    trainer = NliTrainer(
        model=model,
        args=arguments,
        train_dataset=train_data,
        eval_dataset=dev_data,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=_compute_metrics(config.variant),
        callbacks=[EarlyStoppingCallback(early_stopping_patience=config.patience)],
        variant=config.variant,
        backbone_lr=config.backbone_lr,
        head_lr=config.head_lr,
        seconds_before=seconds_before,
    )
    for noisy in (PrinterCallback, ProgressCallback):  # zstc prints its own line per evaluation
        trainer.remove_callback(noisy)
    watcher = _Progress(trainer, say, steps_per_epoch, config.max_minutes, progress)
    trainer.add_callback(watcher)
    try:
        # fp32 training is IEEE fp32 even where the process let fp32 products run in TF32 or bf16.
        with _sigterm_as_interrupt(), fp32_as_recorded(precision):
            trainer.train(resume_from_checkpoint=resume_from)
    except KeyboardInterrupt as stop:
        watcher.bar.close()
        how = "terminated" if isinstance(stop, Terminated) else "interrupted"
        step, last = trainer.state.global_step, _checkpoint_on_interrupt(trainer, folder, eval_every)
        if last is None:
            log(f"{how} at step {step}, before the first checkpoint; run the same command to start again")
        elif last.endswith(f"-{step}"):
            log(f"{how} at step {step}; checkpoint saved in {folder}; run the same command to continue")
        else:
            log(
                f"{how} at step {step}, before its evaluation was saved; run the same command to continue from "
                f"{Path(last).name} (in {folder}) with that evaluation"
            )
        raise

    state = trainer.state
    early_stop = next(cb for cb in trainer.callback_handler.callbacks if isinstance(cb, EarlyStoppingCallback))
    stopped_early = state.global_step < total_steps
    if early_stop.early_stopping_patience_counter >= config.patience:
        say(
            f"early stop: dev loss has not improved for {early_stop.early_stopping_patience_counter} evaluations "
            f"(best at step {state.best_global_step})"
        )
    seconds = trainer.elapsed()
    runs = history(state.log_history)
    best_step = state.best_global_step or 0
    best_dev = next((entry for entry in runs if entry["step"] == best_step), {})
    record = {
        "format": "zstc-nli/1",
        "family": "nli",
        "config": config.to_record(),
        "backbone_source": source,
        # The backbone's weights by what pins them (the hub commit it loaded at, or its folder's hash): a hub id
        # alone names whatever main was, a folder whatever it held then.
        "backbone_revision": model_identity(source),
        "backbone_parameters": backbone_params,
        "data": data_records,
        "dev_held_out_from_train": config.dev is None,
        "train_pairs": len(train_pairs),
        "dev_pairs": len(dev_pairs),
        "steps": state.global_step,
        "total_steps": total_steps,
        "steps_per_epoch": steps_per_epoch,
        "eval_every": eval_every,
        "warmup_steps": warmup_steps,
        "best_step": best_step,
        "best_dev": best_dev,
        "stopped_early": stopped_early,
        "seconds": round(seconds, 1),
        "precision": precision,
        "device": str(device),
        "versions": _versions(),
        "history": runs,
    }
    model.eval()
    # Written beside --out and moved in when complete: a full disk or a kill leaves no half-saved model.
    with atomic_directory(out, last=[TRAINING_FILE]) as staging:
        model.save(staging, tokenizer, record)
    shutil.rmtree(folder, ignore_errors=True)
    best_loss = best_dev.get("dev_loss", math.nan)
    log(f"saved {out} (best dev loss {best_loss:.4f} at step {best_step}; {seconds / 60:.1f} minutes)")
    return TrainResult(out, state.global_step, total_steps, best_step, best_dev, stopped_early, seconds, runs)


def _versions() -> dict[str, str]:
    import transformers

    from zstc import __version__ as zstc_version

    return {
        "zstc": zstc_version,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
    }
