"""bench end to end: summary schema, the details kept with the run, and resuming after an interrupt."""

import json

import pytest

import zstc.benchmark.runner as bench_module
from zstc.benchmark.runner import Bench, BenchConfig
from zstc.benchmark.store import ResultStore
from zstc.errors import OutputError

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def config(tmp_path, btzsc_dir, **overrides):
    settings = dict(model=MINILM, tasks=["financialphrasebank", "banking77"], data=str(btzsc_dir),
                    scorer_options={"pooling": "cls", "bf16": False}, max_samples=40, seed=1, out=tmp_path / "r.json")
    settings.update(overrides)
    return BenchConfig(**settings)


def test_summary_follows_schema_1_0_and_keeps_details(tmp_path, btzsc_dir):
    summary = Bench(config(tmp_path, btzsc_dir), show_progress=False).run()
    on_disk = json.loads((tmp_path / "r.json").read_text())
    assert on_disk["schema_version"] == "1.0" and on_disk == json.loads(json.dumps(summary))
    results = on_disk["results"]
    for block in (results["overall"], results["by_task"]["sentiment"], results["by_dataset"]["banking77"]):
        assert {"macro_f1", "accuracy", "macro_precision", "macro_recall"} <= set(block)
    assert results["by_dataset"]["banking77"]["n_texts"] == 40
    assert on_disk["evaluation"]["partial"] and on_disk["evaluation"]["sampled"]
    assert on_disk["paper"]["macro_f1"]["financialphrasebank"] == pytest.approx(0.3120, abs=1e-3)
    detail = ResultStore(tmp_path / "r.json").load("banking77")
    assert detail.scores.shape == (40, 72) and detail.predicted.shape == (40,)
    assert detail.unlabelled_policy == "paper" and len(detail.hypotheses) == 72


def test_an_interrupted_run_keeps_finished_datasets_and_resumes(tmp_path, btzsc_dir, monkeypatch):
    real_evaluate = bench_module.evaluate_task
    calls = []

    def interrupt_on_second(scorer, task, descriptions, **kwargs):
        calls.append(task.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_evaluate(scorer, task, descriptions, **kwargs)

    monkeypatch.setattr(bench_module, "evaluate_task", interrupt_on_second)
    with pytest.raises(KeyboardInterrupt):
        Bench(config(tmp_path, btzsc_dir), show_progress=False).run()
    assert ResultStore(tmp_path / "r.json").load("financialphrasebank") is not None

    calls.clear()
    monkeypatch.setattr(bench_module, "evaluate_task", lambda *a, **k: (calls.append(a[1].name), real_evaluate(*a, **k))[1])
    Bench(config(tmp_path, btzsc_dir), show_progress=False).run()
    assert calls == ["banking77"]  # financialphrasebank was reused

    calls.clear()
    with pytest.raises(OutputError, match="other settings"):  # it would replace the first run's summary
        Bench(config(tmp_path, btzsc_dir, seed=2), show_progress=False).run()
    assert calls == []
    (tmp_path / "r.json").unlink()  # the summary gone, the details folder stays
    Bench(config(tmp_path, btzsc_dir, seed=2), show_progress=False).run()
    assert calls == ["financialphrasebank", "banking77"]  # another sample: nothing stale is reused
