"""On a CUDA GPU the numbers are the CPU's: fp32 scores agree to rounding and give the same decisions, bf16 keeps
fp32's decisions through the recheck, and a benchmark run records the device it ran on.

These run only where ``torch.cuda.is_available()`` (CI has no GPU: they are skipped there, and run on a lent GPU
machine; see docs/performance.md, "On a GPU", for the figures measured that way).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from shared_data import sample_task

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)"),
]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
FP32_TOLERANCE = 1e-4
"""The most a score may move between CPU and CUDA in fp32: different kernels sum in different orders (measured:
a few 1e-7 on cosines, a few 1e-6 on log-odds), far below any decision that is not a tie."""


def _agreement(cpu: np.ndarray, gpu: np.ndarray, record_property) -> None:
    """The scores agree to rounding, and every decision does, except a tie closer than the rounding (none expected)."""
    assert cpu.shape == gpu.shape
    diff = float(np.abs(cpu - gpu).max())
    record_property("cpu_vs_cuda_fp32_max_abs_diff", diff)
    print(f"fp32 on CPU vs CUDA, {cpu.shape[0]} texts x {cpu.shape[1]} labels: max |diff| {diff:.3e}")
    assert diff < FP32_TOLERANCE
    top2 = np.sort(cpu, axis=1)[:, -2:]
    decided = (top2[:, 1] - top2[:, 0]) > 2 * FP32_TOLERANCE
    assert decided.mean() > 0.9, "almost every text must have a clear best label, or this checks nothing"
    assert (cpu.argmax(1) == gpu.argmax(1))[decided].all()


def test_embedding_fp32_on_cuda_is_the_cpus(btzsc_dir: Path, record_property) -> None:
    from zstc.scorers import make_scorer

    task = sample_task(btzsc_dir, "banking77", 154)
    cpu = make_scorer(MINILM, precision="fp32", device="cpu").score(task.texts, task.hypotheses)
    cuda = make_scorer(MINILM, precision="fp32", device="cuda")
    assert cuda.describe()["device"].startswith("cuda")
    _agreement(cpu, cuda.score(task.texts, task.hypotheses), record_property)


def test_nli_fp32_on_cuda_is_the_cpus(briefly_trained_nli: Path, btzsc_dir: Path, record_property) -> None:
    from zstc.scorers import make_scorer

    task = sample_task(btzsc_dir, "banking77", 72)
    model = str(briefly_trained_nli)
    cpu = make_scorer(model, "nli", precision="fp32", device="cpu").score(task.texts, task.hypotheses)
    gpu = make_scorer(model, "nli", precision="fp32", device="cuda")
    assert gpu.describe()["device"].startswith("cuda")  # else the CPU agrees with itself
    _agreement(cpu, gpu.score(task.texts, task.hypotheses), record_property)


def test_bf16_on_cuda_keeps_the_cpus_fp32_decisions(briefly_trained_nli: Path, btzsc_dir: Path) -> None:
    """The rule that makes bf16 safe on a CPU with fast bf16 (rescore in fp32 the pairs near a decision) holds on a
    GPU too: single-label answers and multi-label sets under a cut where the scores are densest."""
    from zstc.api import Classifier

    task = sample_task(btzsc_dir, "banking77", 40)
    hypotheses = list(task.hypotheses)
    labels = [f"intent {j}" for j in range(len(hypotheses))]
    model = str(briefly_trained_nli)
    cpu = Classifier(model, family="nli", precision="fp32", device="cpu")
    alone = Classifier(model, family="nli", precision="bf16", device="cuda", recheck_margin=0)
    checked = Classifier(model, family="nli", precision="bf16", device="cuda")
    assert all(c.scorer.describe()["device"].startswith("cuda") for c in (alone, checked))
    cut = float(np.median(cpu.scores(task.texts, labels, hypotheses)))

    def label_sets(classifier: Classifier) -> list[set[str]]:
        return [set(p.labels) for p in classifier.predict_multi_label(task.texts, labels, hypotheses, threshold=cut)]

    expected = label_sets(cpu)
    assert label_sets(alone) != expected, "bf16 alone changes some label sets here: the test can fail"
    assert label_sets(checked) == expected
    assert [p.label for p in checked.predict(task.texts, labels, hypotheses)] == [
        p.label for p in cpu.predict(task.texts, labels, hypotheses)
    ]


def test_a_benchmark_on_cuda_records_its_device(zstc_cli, btzsc_dir: Path, tmp_path: Path) -> None:
    """The device is part of a result's identity (CUDA's fp32 is not bitwise the CPU's), and its memory is measured."""
    results = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / f"{device}.json"
        code, _, err = zstc_cli(
            "bench",
            "--model",
            MINILM,
            "--data",
            str(btzsc_dir),
            "--tasks",
            "financialphrasebank",
            "--max-samples",
            "60",
            "--out",
            str(out),
            "--device",
            device,
            "--precision",
            "fp32",
        )
        assert code == 0, err
        results[device] = json.loads(out.read_text())
    cpu, cuda = results["cpu"], results["cuda"]
    assert cuda["run"]["device"].startswith("cuda") and cuda["run"]["peak_cuda_mb"] > 0
    assert cpu["run"]["peak_cuda_mb"] is None
    f1 = [r["results"]["by_dataset"]["financialphrasebank"]["macro_f1"] for r in (cpu, cuda)]
    assert f1[0] == pytest.approx(f1[1], abs=1e-9)
    assert (
        cpu["evaluation"]["run_identity"]["device_type"] == "cpu"
        and cuda["evaluation"]["run_identity"]["device_type"] == "cuda"
    )
    assert cpu["evaluation"]["run_fingerprint"] != cuda["evaluation"]["run_fingerprint"]


def test_tf32_set_by_the_process_does_not_reach_fp32_scores(
    briefly_trained_nli: Path, btzsc_dir: Path, process_wide_matmul_precision: None
) -> None:
    """``torch.backends.cuda.matmul.allow_tf32 = True`` (a training script's setting) makes fp32 products TF32 on an
    Ampere-or-later GPU; zstc's fp32 scores stay IEEE fp32, and the process's setting is left as it was."""
    from zstc.scorers import make_scorer

    task = sample_task(btzsc_dir, "banking77", 72)
    scorer = make_scorer(str(briefly_trained_nli), "nli", precision="fp32", device="cuda")
    assert scorer.describe()["device"].startswith("cuda")  # on a CPU, TF32 could not reach the scores anyway
    expected = scorer.score(task.texts, task.hypotheses)
    a = torch.randn(256, 384, device="cuda", generator=torch.Generator("cuda").manual_seed(0))
    exact = a @ a.T
    torch.backends.cuda.matmul.allow_tf32 = True
    if torch.equal(a @ a.T, exact):
        pytest.skip("this GPU has no TF32 (older than Ampere)")
    assert np.array_equal(scorer.score(task.texts, task.hypotheses), expected)
    assert torch.backends.cuda.matmul.allow_tf32
