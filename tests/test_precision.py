"""Precision is one explicit choice, resolved once per run and recorded (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from zstc.errors import UnknownNameError
from zstc.scorers.runtime import bf16_fast_on_cpu, cpu_flags, check_precision, resolve_precision

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("flags", "fast"),
    [
        ({"avx2", "fma"}, False),  # AMD Zen 2/3: bf16 emulated, ~600x slower
        ({"avx2", "avx512f", "avx512_bf16"}, True),  # AMD Zen 4 (measured: README, "Precision")
        ({"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}, True),  # Intel Sapphire Rapids
        ({"avx2", "avx512f"}, False),  # Intel Skylake/Ice Lake
        (set(), False),  # no /proc/cpuinfo
    ],
)
def test_auto_picks_bf16_by_the_cpu_flags(flags: set[str], fast: bool) -> None:
    assert bf16_fast_on_cpu(frozenset(flags)) is fast


def test_cpuinfo_is_read_from_the_flags_line(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 amx_bf16\n\nprocessor\t: 1\nflags\t: fpu\n")
    assert cpu_flags(str(info)) == frozenset({"fpu", "avx2", "amx_bf16"})
    assert cpu_flags(str(tmp_path / "missing")) == frozenset()


def test_resolve_precision(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_precision(None, CPU) == "fp32"  # a library caller who says nothing gets fp32 everywhere
    assert resolve_precision("fp32", CPU) == "fp32" and resolve_precision("bf16", CPU) == "bf16"
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    assert resolve_precision("auto", CPU) == "bf16"
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: False)
    assert resolve_precision("auto", CPU) == "fp32"
    with pytest.raises(UnknownNameError, match="fp32, bf16, auto"):
        resolve_precision("fp16", CPU)


def test_scorers_take_only_a_resolved_precision() -> None:
    from zstc.scorers import make_scorer

    with pytest.raises(UnknownNameError, match="resolve_precision"):
        check_precision("auto")
    with pytest.raises(UnknownNameError, match="resolve_precision"):
        make_scorer("sentence-transformers/all-MiniLM-L6-v2", precision="auto")
    scorer = make_scorer("sentence-transformers/all-MiniLM-L6-v2", precision="bf16", device="cpu")
    assert scorer.describe()["precision"] == "bf16" and scorer.describe()["device"] == "cpu"
    assert make_scorer("sentence-transformers/all-MiniLM-L6-v2").describe()["precision"] == "fp32"


def test_classifier_defaults_to_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    from zstc.api import Classifier

    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    assert Classifier().scorer.describe()["precision"] == "bf16"
    assert Classifier(precision="fp32").scorer.describe()["precision"] == "fp32"
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: False)
    assert Classifier().scorer.describe()["precision"] == "fp32"


def test_cli_precision_and_its_aliases() -> None:
    from zstc.cli.options import requested_precision, scorer_options

    assert requested_precision(None, None, "fp32") == "fp32"
    assert requested_precision(None, None, "auto") == "auto"
    assert requested_precision(None, True, "fp32") == "bf16" and requested_precision(None, False, "auto") == "fp32"
    assert requested_precision("bf16", True, "fp32") == "bf16"
    with pytest.raises(UnknownNameError, match="contradicts"):
        requested_precision("fp32", True, "fp32")
    assert scorer_options(precision="bf16", device="cpu", pooling=None) == {"precision": "bf16", "device": "cpu"}


def test_bench_defaults_to_fp32_and_records_it(zstc_cli, btzsc_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Even where bf16 would be fast, a benchmark computes in fp32 unless asked: its numbers are the paper's.
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    out = tmp_path / "r.json"
    code, printed, err = zstc_cli("bench", "--model", "sentence-transformers/all-MiniLM-L6-v2", "--data", str(btzsc_dir),
                            "--tasks", "financialphrasebank", "--max-samples", "8", "--out", str(out), "--device", "cpu")
    assert code == 0, err
    summary = json.loads(out.read_text())
    assert summary["model"]["precision"] == "fp32" and summary["run"]["precision"] == "fp32"
    assert summary["run"]["device"] == "cpu"
    assert "on BTZSC (fp32, cpu)" in printed  # the table's title
