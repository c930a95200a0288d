"""The benchmark scripts refuse a bad option at once, in one line, before they load or train any model.

Each runs in a subprocess as a user runs it (``python benchmarks/SCRIPT ...``), since the scripts import their
sibling helpers (``hardware``, ``options``) from benchmarks/.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from zstc.scorers.runtime import bf16_fast

REPO = Path(__file__).resolve().parents[1]


def run_script(*arguments: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/SCRIPT ...`` as a user runs it, offline; ``timeout`` seconds at most (a real run takes
    longer on a loaded machine than a refused option)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # No model is reachable: a script that got as far as loading one would fail differently (or train one).
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / arguments[0]), *arguments[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("precision_speed.py", "--repeats", "0"), "error: argument --repeats: must be at least 1, got 0"),
        (
            ("nli_vs_pipeline.py", "--data", "nowhere", "--texts", "2", "--chunk", "0"),
            "error: argument --chunk: must be at least 1, got 0",
        ),
        (
            ("cascade.py", "--data", "nowhere", "--model", "nowhere", "--timed-k", "1,abc"),
            "error: argument --timed-k: 'abc' in '1,abc': 'abc' is not a whole number",
        ),
        (
            ("cascade.py", "--data", "nowhere", "--model", "nowhere", "--repeats", "0"),
            "error: argument --repeats: must be at least 1, got 0",
        ),
        (("classify_memory.py", "--sizes", "abc"), "error: argument --sizes: 'abc' is not a whole number"),
        (("sweep_overhead.py", "--max-samples", "0"), "error: argument --max-samples: must be at least 1, got 0"),
        (
            ("embedding_speed.py", "--data", "nowhere", "--texts", "0"),
            "error: argument --texts: must be at least 1, got 0",
        ),
        (
            ("bf16_agreement.py", "--data", "nowhere"),
            "error: --family nli needs --model: a trained NLI model (a random head's near ties exaggerate disagreement)",
        ),
        (
            ("bf16_agreement.py", "--family", "embedding", "--data", "nowhere", "--margins", "0.005,0"),
            "error: argument --margins: '0' in '0.005,0': must be above 0, got 0",
        ),
    ],
)
def test_a_bad_benchmark_option_is_one_error_line_before_any_work(arguments: tuple[str, ...], message: str) -> None:
    done = run_script(*arguments)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # nothing started: no model line, no progress
    assert done.stderr.splitlines() == [f"{message} (see {arguments[0]} --help)"]


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is not None, reason="onnxruntime is installed")
def test_onnx_benchmark_without_onnxruntime_says_how_to_install_it() -> None:
    done = run_script("onnx_backend.py", "--data", "nowhere", "--texts", "1")
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: onnxruntime is not installed; install it with pip install -e '.[onnx]' (from the repository root)"
    ]


def test_prefix_cache_benchmark_measures_bf16_alone(smollm2_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prefix_cache.py's bf16 runs were zstc's default bf16: fp32 weights autocast, and the near ties rescored in fp32,
    so its bf16 times held fp32 passes and its max_abs_diff compared pairs fp32 in one run with bf16 in the other.
    Both of its runs now score in bf16 alone, with bf16 weights, and no pair is rescored."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("prefix_cache_benchmark", REPO / "benchmarks" / "prefix_cache.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    scorer = script.bench_scorer(str(smollm2_folder), "bf16", 8, "cpu")
    assert scorer.recheck_margin == 0 and scorer.describe()["weights"] == "bf16"
    if bf16_fast(scorer.device):  # elsewhere bf16 is emulated, far too slow to score with here
        for cache in (False, True):
            scorer.prefix_cache = cache
            assert scorer.score_with_notes(["my card was declined"], ["card issue", "lost card", "top up"]).notes == []


@pytest.mark.skipif(
    not bf16_fast(torch.device("cpu")),
    reason="bf16 is not fast on this CPU (neither amx_bf16 nor avx512_bf16): emulated, far too slow to run here",
)
def test_bf16_agreement_measures_an_embedding_model_single_and_multi_label(btzsc_dir: Path) -> None:
    """The embedding mode runs classify's default model in fp32, bf16 alone and bf16 rechecked through the Classifier,
    single-label and under the default multi-label rule, and its last line reports both; rechecked, bf16 makes
    fp32's decisions."""
    done = run_script(
        "bf16_agreement.py",
        "--family",
        "embedding",
        "--data",
        str(btzsc_dir),
        "--dataset",
        "emotiondair",
        "--texts",
        "12",
        "--chunk",
        "6",
        "--margins",
        "0.006",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("bf16's largest cosine error: ") for line in lines), done.stdout
    assert any("bf16+recheck@0.006 (margin 0.006)" in line for line in lines), done.stdout
    values = dict(part.split("=") for part in lines[-1].split())
    assert list(values) == [
        "bf16_speedup",
        "argmax_agreement",
        "recheck_cost",
        "rechecked_agreement",
        "rechecked_texts",
        "multi_bf16_speedup",
        "label_set_agreement",
        "multi_recheck_cost",
        "rechecked_label_set_agreement",
        "multi_rechecked_texts",
    ], lines[-1]
    assert all(float(value) >= 0 for value in values.values())
    assert values["rechecked_agreement"] == values["rechecked_label_set_agreement"] == "1.0000"
    assert 0 < float(values["rechecked_texts"]) <= 1 and 0 < float(values["multi_rechecked_texts"]) <= 1


def test_embedding_speed_compares_zstc_with_sentence_transformers_encode(btzsc_dir: Path) -> None:
    """The embedding speed benchmark runs zstc's classify path (auto: fp32 for this family on a CPU) against
    sentence-transformers' own encode on a few texts of two datasets, and its last line reports the speedup, the
    argmax agreement with sentence-transformers (1: both are fp32 on the same texts) and the worst dataset's speedup."""
    done = run_script(
        "embedding_speed.py",
        "--data",
        str(btzsc_dir),
        "--datasets",
        "agnews,banking77",
        "--texts",
        "6",
        "--chunk",
        "3",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("zstc peak fraction: ") and "of the fp32 matmul peak" in line for line in lines), (
        done.stdout
    )
    assert any(line.startswith("banking77: reference ") and "agreement 1.0000" in line for line in lines), done.stdout
    values = dict(part.split("=") for part in lines[-1].split())
    assert list(values) == ["speedup", "agreement", "worst_dataset_speedup"], lines[-1]
    assert values["agreement"] == "1.0000"
    assert 0 < float(values["worst_dataset_speedup"]) <= float(values["speedup"]) * 10
