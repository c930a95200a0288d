"""Where the tests find the shared data (``../shared/data`` beside the checkout, or ``$ZSTC_SHARED_DATA``),
and skips that say what is missing when a part of it is absent. No test names an absolute path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ZSTC_SHARED_DATA") or REPO.parent / "shared" / "data")
BTZSC_DIR = SHARED_DATA / "btzsc"


def shared_path(relative: str) -> Path:
    """``SHARED_DATA / relative``, or a skip naming it when it is not there."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(
            f"needs {relative} of the shared data, not found at {path} (put it beside the checkout or set ZSTC_SHARED_DATA)"
        )
    return path


def baselines_found() -> bool:
    from zstc.benchmark.baselines import baselines_dir

    return baselines_dir() is not None


requires_baselines = pytest.mark.skipif(
    not baselines_found(),
    reason="needs the paper's published scores: shared/data/baselines not found (set ZSTC_BASELINES or ZSTC_SHARED_DATA)",
)


def sample_task(btzsc_dir: Path, name: str, n: int):  # -> zstc.benchmark.tasks.Task
    """A BTZSC test set's stratified sample of ``n`` texts (seed 0), with the dataset's own hypotheses."""
    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import stratified_sample

    task, _ = load_btzsc_task(name, btzsc_dir)
    return stratified_sample(task, n, 0)
