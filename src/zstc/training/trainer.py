"""The training loop of ``zstc train-nli``: plain PyTorch, resumable, early-stopped on the dev loss.

A run writes ``<out>/checkpoint/`` (``state.pt``: model, optimizer, scheduler, step, early-stopping state;
``best.pt``: the weights with the lowest dev loss so far) every few evaluations and when interrupted. Started
again with the same configuration, it continues from ``state.pt``: each epoch's batches are a function of the
seed and the epoch number, so the run skips exactly the batches it has already trained on. When training ends
(step budget spent or early stop), the best weights are saved as the model folder and the checkpoint removed.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from zstc.errors import DataError, ModelError
from zstc.io import atomic_directory, atomic_write
from zstc.models.nli_head import TRAINING_FILE, VARIANT_LABELS, NliCrossEncoder, build_nli_model, is_zstc_nli_model
from zstc.scorers.runtime import Precision, inference_context, resolve_device, resolve_precision
from zstc.training.nli_pairs import (
    NLI_CLASSES,
    NliPairs,
    balanced_indices,
    length_grouped_batches,
    read_nli_pairs,
    sha256_of,
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
MAX_DEFAULT_LENGTH = 512

assert VARIANT_LABELS["triplet"] == NLI_CLASSES, "triplet outputs are indexed like the gold classes"


@dataclass
class TrainResult:
    out: Path
    steps: int
    total_steps: int
    best_step: int
    best_dev: dict[str, float]
    stopped_early: bool
    seconds: float
    history: list[dict[str, float]] = field(default_factory=list)


@dataclass
class _Encoded:
    """Tokenized pairs, unpadded; batches are padded to their own longest pair."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]] | None
    classes: torch.Tensor

    @property
    def lengths(self) -> list[int]:
        return [len(ids) for ids in self.input_ids]


def _encode(tokenizer: Any, pairs: NliPairs, max_length: int) -> _Encoded:
    # Only the premise is cut: the hypothesis carries the label's meaning (PROTOCOL.md s.2, truncation).
    encoded = tokenizer(pairs.premises, pairs.hypotheses, truncation="only_first", max_length=max_length)
    return _Encoded(encoded["input_ids"], encoded.get("token_type_ids"), torch.as_tensor(pairs.classes))


def _collate(data: _Encoded, indices: list[int], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    width = max(len(data.input_ids[i]) for i in indices)
    ids = torch.full((len(indices), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(indices), width), dtype=torch.long)
    types = torch.zeros((len(indices), width), dtype=torch.long) if data.token_type_ids is not None else None
    for row, i in enumerate(indices):
        n = len(data.input_ids[i])
        ids[row, :n] = torch.as_tensor(data.input_ids[i])
        mask[row, :n] = 1
        if types is not None:
            types[row, :n] = torch.as_tensor(data.token_type_ids[i])  # type: ignore[index]
    batch = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
    if types is not None:
        batch["token_type_ids"] = types.to(device)
    return batch


def predict_logits(model: NliCrossEncoder, data: _Encoded, *, pad_id: int, device: torch.device, precision: Precision,
                   batch_size: int) -> torch.Tensor:
    """Logits for every pair (float32, CPU, in input order); batches of similar length, so padding stays small."""
    was_training = model.training
    model.eval()
    order = sorted(range(len(data.input_ids)), key=lambda i: len(data.input_ids[i]))
    logits = torch.empty((len(order), model.head.out_proj.out_features))
    with inference_context(device, precision):
        for start in range(0, len(order), batch_size):
            indices = order[start : start + batch_size]
            logits[indices] = model(**_collate(data, indices, pad_id, device)).logits.float().cpu()
    model.train(was_training)
    return logits


def nli_metrics(logits: torch.Tensor, classes: torch.Tensor, variant: str) -> dict[str, float]:
    """Loss, accuracy (3-way, or entailment vs not for binary) and AUROC of the entailment score."""
    from sklearn.metrics import roc_auc_score

    loss = float(nli_loss(logits, classes, variant))
    predicted = predicted_classes(logits, variant)
    truth = classes if variant == "triplet" else torch.where(classes == ENTAILMENT, ENTAILMENT, -1)
    is_entailment = (classes == ENTAILMENT).numpy()
    both_present = 0 < is_entailment.sum() < len(classes)
    auroc = float(roc_auc_score(is_entailment, entailment_score(logits, variant).numpy())) if both_present else float("nan")
    return {"loss": loss, "accuracy": float((predicted == truth).float().mean()), "auroc": auroc}


def evaluate(model: NliCrossEncoder, data: _Encoded, variant: str, *, pad_id: int, device: torch.device,
             precision: Precision, batch_size: int) -> dict[str, float]:
    """:func:`nli_metrics` of the model on tokenized pairs."""
    logits = predict_logits(model, data, pad_id=pad_id, device=device, precision=precision, batch_size=batch_size)
    return nli_metrics(logits, data.classes, variant)


def evaluate_pairs(model: NliCrossEncoder, tokenizer: Any, pairs: NliPairs, *, device: torch.device,
                   precision: Precision = "fp32", batch_size: int = 64, max_length: int = MAX_DEFAULT_LENGTH) -> dict[str, float]:
    """Evaluate a trained model (e.g. from :func:`zstc.models.nli_head.load_zstc_nli_model`) on NLI pairs."""
    variant = "binary" if model.head.out_proj.out_features == 1 else "triplet"
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    data = _encode(tokenizer, pairs, min(max_length, tokenizer.model_max_length))
    return evaluate(model, data, variant, pad_id=pad_id, device=device, precision=precision, batch_size=batch_size)


def _parameter_groups(model: NliCrossEncoder, backbone_lr: float, head_lr: float, weight_decay: float) -> list[dict[str, Any]]:
    """Backbone and head at their own rates; no weight decay on biases and normalization weights (HF Trainer)."""
    groups = []
    for module, lr in ((model.backbone, backbone_lr), (model.head, head_lr)):
        decay, no_decay = [], []
        for name, parameter in module.named_parameters():
            if not parameter.requires_grad:
                continue
            (no_decay if parameter.ndim < 2 or "norm" in name.lower() else decay).append(parameter)
        groups.append({"params": decay, "lr": lr, "weight_decay": weight_decay})
        groups.append({"params": no_decay, "lr": lr, "weight_decay": 0.0})
    return groups


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """``kill`` (SIGTERM) stops a run like Ctrl-C does: it saves a checkpoint first."""
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _atomic_save(obj: Any, path: Path) -> None:
    with atomic_write(path, "wb") as handle:
        torch.save(obj, handle)


def _load_backbone(name: str) -> tuple[torch.nn.Module, Any, str]:
    from transformers import AutoModel, AutoTokenizer

    from zstc.models.loading import load_error, model_source
    from zstc.models.registry import get_model_spec

    spec = get_model_spec(name, family="encoder")
    source = model_source(spec)
    try:
        return AutoModel.from_pretrained(source), AutoTokenizer.from_pretrained(source), source
    except (OSError, ValueError) as error:
        raise load_error(spec, error) from error


def _data_record(path: str, pairs: NliPairs) -> dict[str, Any]:
    counts = {name: int((pairs.classes == index).sum()) for index, name in enumerate(NLI_CLASSES)}
    return {"path": str(Path(path).resolve()), "sha256": sha256_of(path), "pairs": len(pairs), "classes": counts}


def _read_data(config: TrainConfig) -> tuple[NliPairs, NliPairs, dict[str, Any]]:
    """(train pairs, balanced dev pairs, checksum records of the files read)."""
    pairs = read_nli_pairs(config.data)
    records = {"train": _data_record(config.data, pairs)}
    if config.dev is None:
        train, dev = split_dev(pairs, config.dev_size, config.seed)
        return train, dev, records
    dev_all = read_nli_pairs(config.dev)
    records["dev"] = _data_record(config.dev, dev_all)
    return pairs, dev_all.subset(balanced_indices(dev_all.classes, min(config.dev_size, len(dev_all)), config.seed)), records


@dataclass
class _Progress:
    """Where a run stands: what a checkpoint restores besides the weights, optimizer and schedule."""

    step: int = 0
    best_loss: float = math.inf
    best_step: int = 0
    stale: int = 0
    """Evaluations since the dev loss last improved."""
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    """Training time before this process started (resumed runs)."""


class _Checkpoint:
    """``<out>/checkpoint/``: ``state.pt`` (everything to continue) and ``best.pt`` (the best weights so far).

    The best weights are kept in memory and written only when a checkpoint is saved, so evaluations that
    improve the dev loss cost no disk writes.
    """

    def __init__(self, folder: Path, resume_key: dict[str, Any]) -> None:
        self.folder = folder
        self.resume_key = resume_key
        self.state_file, self.best_file = folder / "state.pt", folder / "best.pt"
        self.best_weights: dict[str, torch.Tensor] | None = None
        self._best_written = True

    def restore(self, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any) -> _Progress | None:
        if not self.state_file.exists():
            return None
        state = torch.load(self.state_file, map_location="cpu", weights_only=False)
        if state["resume_key"] != self.resume_key:
            raise ModelError(f"{self.folder}: was written by a run with another configuration; "
                             "use the same options to continue it, or another --out")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"])
        if self.best_file.exists():
            self.best_weights = torch.load(self.best_file, map_location="cpu")
        return _Progress(**state["progress"])

    def remember_best(self, model: nn.Module) -> None:
        self.best_weights = {name: tensor.detach().cpu().clone() for name, tensor in model.state_dict().items()}
        self._best_written = False

    def save(self, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, progress: _Progress) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.best_weights is not None and not self._best_written:
            _atomic_save(self.best_weights, self.best_file)
            self._best_written = True
        _atomic_save({
            "resume_key": self.resume_key, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state(), "progress": asdict(progress),
        }, self.state_file)

    def remove(self) -> None:
        for file in (self.state_file, self.best_file):
            file.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.folder.rmdir()


def train_nli(config: TrainConfig, *, progress: bool = True, log: Callable[[str], None] = print) -> TrainResult:
    """Train an NLI cross-encoder with the recipe of PROTOCOL.md s.5 and save it to ``config.out``."""
    from tqdm.auto import tqdm
    from transformers import get_cosine_schedule_with_warmup

    out = Path(config.out).expanduser()
    if is_zstc_nli_model(out):
        raise ModelError(f"{out}: already holds a trained model; choose another --out or remove it")
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
    model = build_nli_model(backbone, config.variant, config.head_dropout).to(device)
    train_data = _encode(tokenizer, train_pairs, config.max_length)
    dev_data = _encode(tokenizer, dev_pairs, config.max_length)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    steps_per_epoch = math.ceil(len(train_pairs) / config.batch_size)
    total_steps = math.ceil(config.epochs * steps_per_epoch)
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    if total_steps < 1:
        raise DataError("nothing to train: the step budget is zero")
    eval_every = max(1, round(total_steps * config.eval_fraction))
    warmup_steps = round(config.warmup_fraction * total_steps)

    optimizer = torch.optim.AdamW(
        _parameter_groups(model, config.backbone_lr, config.head_lr, config.weight_decay),  # type: ignore[arg-type]
        betas=config.adam_betas, eps=config.adam_eps,
    )
    scheduler = get_cosine_schedule_with_warmup(optimizer, warmup_steps, total_steps)
    checkpoint = _Checkpoint(out / CHECKPOINT_DIR, config.resume_key())
    run = checkpoint.restore(model, optimizer, scheduler)
    if run is None:
        run = _Progress()
    else:
        log(f"resuming from step {run.step} of {total_steps} ({checkpoint.folder})")
    log(
        f"training {config.variant} NLI head on {source} ({backbone_params / 1e6:.1f}M parameters): "
        f"{len(train_pairs)} train / {len(dev_pairs)} dev pairs, {total_steps} steps "
        f"({steps_per_epoch}/epoch), lr {config.backbone_lr:g}/{config.head_lr:g}, device {device}, precision {precision}"
    )

    started, seconds_before = time.monotonic(), run.seconds

    def elapsed() -> float:
        return seconds_before + time.monotonic() - started

    model.train()
    running_loss, running_count = 0.0, 0
    epoch_batches: tuple[int, list[list[int]]] | None = None
    bar = tqdm(total=total_steps, initial=run.step, disable=not progress, desc="train-nli", dynamic_ncols=True,
               mininterval=1.0 if os.isatty(2) else 30.0)
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()
    stopped_early = False
    try:
        with _sigterm_as_interrupt():
            while run.step < total_steps and not stopped_early:
                # Each epoch's batches depend only on the seed and the epoch: a resumed run sees the same ones.
                epoch, position = divmod(run.step, steps_per_epoch)
                if epoch_batches is None or epoch_batches[0] != epoch:
                    epoch_batches = (epoch, length_grouped_batches(train_data.lengths, config.batch_size, config.seed + epoch))
                indices = epoch_batches[1][position]
                with autocast:
                    logits = model(**_collate(train_data, indices, pad_id, device)).logits
                loss = nli_loss(logits, train_data.classes[indices].to(device), config.variant)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                optimizer.step()
                scheduler.step()
                run.step += 1
                running_loss += float(loss.detach())
                running_count += 1
                bar.update(1)
                bar.set_postfix(loss=f"{running_loss / running_count:.4f}", refresh=False)
                if run.step % eval_every and run.step != total_steps:
                    continue

                dev = evaluate(model, dev_data, config.variant, pad_id=pad_id, device=device, precision=precision,
                               batch_size=config.eval_batch_size)
                run.history.append({"step": run.step, "train_loss": running_loss / running_count,
                                    **{f"dev_{k}": v for k, v in dev.items()}, "seconds": elapsed()})
                running_loss, running_count = 0.0, 0
                if dev["loss"] < run.best_loss:
                    run.best_loss, run.best_step, run.stale = dev["loss"], run.step, 0
                    checkpoint.remember_best(model)
                else:
                    run.stale += 1
                log(
                    f"step {run.step}/{total_steps} epoch {run.step / steps_per_epoch:.2f} "
                    f"train_loss {run.history[-1]['train_loss']:.4f} dev_loss {dev['loss']:.4f} "
                    f"dev_acc {dev['accuracy']:.3f} dev_auroc {dev['auroc']:.3f} best_step {run.best_step} "
                    f"elapsed {elapsed() / 60:.1f}m"
                )
                if run.stale >= config.patience:
                    stopped_early = True
                    log(f"early stop: dev loss has not improved for {run.stale} evaluations (best at step {run.best_step})")
                elif config.max_minutes is not None and elapsed() > 60 * config.max_minutes:
                    stopped_early = True
                    log(f"time budget of {config.max_minutes:g} minutes spent at step {run.step}; stopping (best at step {run.best_step})")
                elif len(run.history) % config.checkpoint_every_evals == 0 and run.step < total_steps:
                    checkpoint.save(model, optimizer, scheduler, replace(run, seconds=elapsed()))
    except KeyboardInterrupt:
        bar.close()
        checkpoint.save(model, optimizer, scheduler, replace(run, seconds=elapsed()))
        log(f"interrupted at step {run.step}; checkpoint saved in {checkpoint.folder}; run the same command to continue")
        raise
    bar.close()

    if checkpoint.best_weights is not None:
        model.load_state_dict(checkpoint.best_weights)
    seconds = elapsed()
    best_dev = next((entry for entry in run.history if entry["step"] == run.best_step), {})
    record = {
        "format": "zstc-nli/1",
        "family": "nli",
        "config": config.to_record(),
        "backbone_source": source,
        "backbone_parameters": backbone_params,
        "data": data_records,
        "dev_held_out_from_train": config.dev is None,
        "train_pairs": len(train_pairs),
        "dev_pairs": len(dev_pairs),
        "steps": run.step,
        "total_steps": total_steps,
        "steps_per_epoch": steps_per_epoch,
        "eval_every": eval_every,
        "warmup_steps": warmup_steps,
        "best_step": run.best_step,
        "best_dev": best_dev,
        "stopped_early": stopped_early,
        "seconds": round(seconds, 1),
        "precision": precision,
        "device": str(device),
        "versions": _versions(),
        "history": run.history,
    }
    # Written beside --out and moved in when complete: a full disk or a kill leaves no half-saved model.
    with atomic_directory(out, last=[TRAINING_FILE]) as staging:
        model.save(staging, tokenizer, record)
    checkpoint.remove()
    log(f"saved {out} (best dev loss {run.best_loss:.4f} at step {run.best_step}; {seconds / 60:.1f} minutes)")
    return TrainResult(out, run.step, total_steps, run.best_step, best_dev, stopped_early, seconds, run.history)


def _versions() -> dict[str, str]:
    import transformers

    from zstc import __version__ as zstc_version

    return {"zstc": zstc_version, "torch": torch.__version__, "transformers": transformers.__version__, "numpy": np.__version__}
