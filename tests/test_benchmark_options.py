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
