"""Shared test fixtures."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

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
