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

REPO = Path(__file__).resolve().parents[1]


def run_script(*arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    # No model is reachable: a script that got as far as loading one would fail differently (or train one).
    env["HF_HUB_OFFLINE"] = "1"
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / arguments[0]), *arguments[1:]], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("arguments", "message"), [
    (("precision_speed.py", "--repeats", "0"), "error: argument --repeats: must be at least 1, got 0"),
    (("nli_vs_pipeline.py", "--data", "nowhere", "--texts", "2", "--chunk", "0"), "error: argument --chunk: must be at least 1, got 0"),
    (("cascade.py", "--data", "nowhere", "--model", "nowhere", "--timed-k", "1,abc"),
     "error: argument --timed-k: 'abc' in '1,abc': 'abc' is not a whole number"),
    (("cascade.py", "--data", "nowhere", "--model", "nowhere", "--repeats", "0"), "error: argument --repeats: must be at least 1, got 0"),
    (("classify_memory.py", "--sizes", "abc"), "error: argument --sizes: 'abc' is not a whole number"),
    (("sweep_overhead.py", "--max-samples", "0"), "error: argument --max-samples: must be at least 1, got 0"),
])
def test_a_bad_benchmark_option_is_one_error_line_before_any_work(arguments: tuple[str, ...], message: str) -> None:
    done = run_script(*arguments)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # nothing started: no model line, no progress
    assert done.stderr.splitlines() == [f"{message} (see {arguments[0]} --help)"]


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is not None, reason="onnxruntime is installed")
def test_onnx_benchmark_without_onnxruntime_says_how_to_install_it() -> None:
    done = run_script("onnx_backend.py", "--data", "nowhere", "--texts", "1")
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.splitlines() == ["error: onnxruntime is not installed; install it with pip install -e '.[onnx]' "
                                        "(from the repository root)"]


def test_prefix_cache_benchmark_measures_bf16_alone(smollm2_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prefix_cache.py's bf16 runs were zstc's default bf16: fp32 weights autocast, and the near ties rescored in fp32,
    so its bf16 times held fp32 passes and its max_abs_diff compared pairs fp32 in one run with bf16 in the other.
    Both of its runs now score in bf16 alone, with bf16 weights, and no pair is rescored."""
    from zstc.scorers.runtime import bf16_fast

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
