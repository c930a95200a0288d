"""Shared fixtures: the real data beside the checkout (../shared/data) and the offline embedding model."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ZSTC_SHARED_DATA", REPO.parent / "shared" / "data"))
if not SHARED_DATA.exists():  # a worktree under /work/wt/<name> sits two levels below /work
    SHARED_DATA = Path("/work/shared/data")
BTZSC_DIR = SHARED_DATA / "btzsc"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The hub is unreachable on the machines this suite runs on; tests that need it are opt-in.
    if os.environ.get("ZSTC_TEST_HUB") == "1":
        return
    skip_hub = pytest.mark.skip(reason="needs the Hugging Face hub (set ZSTC_TEST_HUB=1 where it is reachable)")
    for item in items:
        if "hub" in item.keywords:
            item.add_marker(skip_hub)


@pytest.fixture(scope="session")
def btzsc_dir() -> Path:
    if not (BTZSC_DIR / "financialphrasebank.jsonl").exists():
        pytest.skip(f"BTZSC data not found at {BTZSC_DIR}")
    return BTZSC_DIR


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def minilm_cls():
    """The paper's computation for all-MiniLM-L6-v2: [CLS] pooling, fp32."""
    from zstc.scorers import make_scorer

    return make_scorer(MINILM, pooling="cls", bf16=False)


@pytest.fixture(scope="session")
def minilm_native():
    from zstc.scorers import make_scorer

    return make_scorer(MINILM, pooling="native", bf16=False)


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
