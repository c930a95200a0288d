"""Shared fixtures: the real data beside the checkout (../shared/data) and the offline embedding model."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from shared_data import shared_path

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The hub is unreachable on the machines this suite runs on; tests that need it are opt-in.
    if os.environ.get("ZSTC_TEST_HUB") == "1":
        return
    skip_hub = pytest.mark.skip(reason="needs the Hugging Face hub (set ZSTC_TEST_HUB=1 where it is reachable)")
    for item in items:
        if "hub" in item.keywords:
            item.add_marker(skip_hub)


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own result cache: nothing leaks between tests or into the user's ~/.cache."""
    monkeypatch.setenv("ZSTC_RESULTS_CACHE", str(tmp_path_factory.mktemp("results-cache")))


@pytest.fixture(scope="session")
def btzsc_dir() -> Path:
    return shared_path("btzsc/financialphrasebank.jsonl").parent


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared_path(".")


@pytest.fixture(scope="session")
def minilm_cls():
    """The paper's computation for all-MiniLM-L6-v2: [CLS] pooling, fp32."""
    from zstc.scorers import make_scorer

    return make_scorer(MINILM, pooling="cls", precision="fp32")


@pytest.fixture(scope="session")
def minilm_native():
    from zstc.scorers import make_scorer

    return make_scorer(MINILM, pooling="native", precision="fp32")


CliResult = tuple[int, str, str]


@pytest.fixture
def zstc_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> Callable[..., CliResult]:
    """Runs the ``zstc`` command line in this process (no interpreter start-up): (exit status, stdout, stderr)."""
    from zstc.cli import main

    def run(*args: str) -> CliResult:
        monkeypatch.setattr(sys, "argv", ["zstc", *args])
        try:
            main()
            status = 0
        except SystemExit as exit_:
            status = int(exit_.code or 0)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


@pytest.fixture(scope="session")
def chromium() -> str:
    """A headless-capable Chromium, installed with the project's script when missing (skip if impossible)."""
    import shutil
    import subprocess

    names = ("chromium", "chromium-browser", "google-chrome")
    found = next((shutil.which(n) for n in names if shutil.which(n)), None)
    if found is None:
        script = REPO / "scripts" / "install-chromium.sh"
        result = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
        found = next((shutil.which(n) for n in names if shutil.which(n)), None)
        if found is None:
            pytest.skip(f"Chromium is not installed and {script.name} could not install it: {result.stderr.strip() or result.returncode}")
    return found
