"""The shared result cache, ``zstc sweep`` (local and Ray) and ``zstc classify --engine ray``.

Ray tests run in a subprocess (``scale_helpers.py``): ``ray.init`` installs its own signal handlers and
starts daemons that must not outlive the test; each child starts a local Ray with two CPUs, is time-bounded
and shuts Ray down before it exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zstc.benchmark.runner as runner_module
from zstc.benchmark.cache import ResultCache
from zstc.benchmark.runner import Bench, BenchConfig

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
REPO = Path(__file__).resolve().parents[1]
TASKS = ["financialphrasebank", "banking77"]


def config(tmp_path: Path, btzsc_dir: Path, out: str = "r.json", **overrides) -> BenchConfig:
    settings = dict(model=MINILM, tasks=TASKS, data=str(btzsc_dir), scorer_options={"pooling": "cls", "bf16": False},
                    max_samples=12, seed=1, out=tmp_path / out)
    settings.update(overrides)
    return BenchConfig(**settings)


def counting_evaluations(monkeypatch) -> list[str]:
    calls: list[str] = []
    real = runner_module.evaluate_task

    def counted(scorer, task, descriptions, **kwargs):
        calls.append(task.name)
        return real(scorer, task, descriptions, **kwargs)

    monkeypatch.setattr(runner_module, "evaluate_task", counted)
    return calls


# -- the result cache ----------------------------------------------------------------------------------------


def test_bench_reuses_the_cache_across_runs_and_recomputes_a_corrupt_entry(tmp_path, btzsc_dir, monkeypatch):
    calls = counting_evaluations(monkeypatch)
    first = Bench(config(tmp_path, btzsc_dir, "a.json"), show_progress=False).run()
    assert calls == TASKS
    cache = ResultCache()
    entries = cache.entries()
    assert sorted(e["dataset"] for e in entries) == sorted(TASKS)
    assert all("/sentence-transformers__all-MiniLM-L6-v2/" in e["path"] for e in entries)
    index = json.loads((cache.root / "index.json").read_text())["entries"]
    assert len(index) == 2

    calls.clear()  # another output file, same settings: everything comes from the cache
    second = Bench(config(tmp_path, btzsc_dir, "b.json"), show_progress=False).run()
    assert calls == []
    assert second["results"] == first["results"]
    assert (tmp_path / "b.details" / "banking77.npz").exists()  # copied into the run's details for reports

    npz = next(Path(e["path"]).with_suffix(".npz") for e in entries if e["dataset"] == "banking77")
    damaged = bytearray(npz.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    npz.write_bytes(bytes(damaged))
    notes: list[str] = []
    calls.clear()
    third = Bench(config(tmp_path, btzsc_dir, "c.json"), show_progress=False,
                  on_event=lambda kind, payload: notes.append(payload) if kind == "note" else None).run()
    assert calls == ["banking77"] and any("corrupt" in note for note in notes)
    assert third["results"]["by_dataset"]["banking77"]["macro_f1"] == first["results"]["by_dataset"]["banking77"]["macro_f1"]
    assert ResultCache().get(MINILM, None, "banking77", third["evaluation"]["fingerprints"]["banking77"]) is not None

    calls.clear()  # another setting, another fingerprint: nothing stale is reused
    Bench(config(tmp_path, btzsc_dir, "d.json", seed=2), show_progress=False).run()
    assert calls == TASKS


def test_cache_commands(tmp_path, btzsc_dir, zstc_cli):
    Bench(config(tmp_path, btzsc_dir, tasks=["financialphrasebank"]), show_progress=False).run()
    status, out, err = zstc_cli("cache", "list")
    assert status == 0 and "financialphrasebank" in out and "1 cached results" in out
    fingerprint = ResultCache().entries()[0]["fingerprint"]
    status, out, err = zstc_cli("cache", "show", fingerprint)
    assert status == 0, err
    shown = json.loads(out)
    assert shown["dataset"] == "financialphrasebank" and shown["record"]["scores_shape"] == [12, 3]
    status, _, err = zstc_cli("cache", "show", "nothing-like-this")
    assert status == 2 and err.startswith("error: ")
    status, _, err = zstc_cli("cache", "clear", "--yes")
    assert status == 0 and "removed 1 cached results" in err and ResultCache().entries() == []


def test_report_finds_details_in_the_cache(tmp_path, btzsc_dir):
    import shutil

    from zstc.reports.rows import Run

    summary = Bench(config(tmp_path, btzsc_dir, tasks=["financialphrasebank"]), show_progress=False).run()
    shutil.rmtree(tmp_path / "r.details")
    details = Run(tmp_path / "r.json", summary).details("financialphrasebank")
    assert details is not None and details.scores.shape == (12, 3)
