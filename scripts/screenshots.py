"""Take the documentation's screenshots with headless Chromium: the playground page of ``zstc serve`` and a page of
the HTML report ``zstc report`` writes, both with the offline default model, into docs/images/.

Real pages, not mock-ups: the playground is a ``zstc serve`` process answering the page's own request, and the report
is built from a ``zstc bench`` run on the packaged sample. Rerun it after changing either page (about a minute; needs
Chromium: ``sh scripts/setup-system-packages.sh`` installs Debian's). tests/test_docs.py takes a screenshot with the
same function and checks the committed ones.

    python scripts/screenshots.py                 # both
    python scripts/screenshots.py --only report   # one of them
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SIZES = {"playground.png": (1000, 1000), "report.png": (1280, 1400)}
"""Each screenshot's window size, width x height."""
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]
"""Headless Chromium on a machine without a display or a network, as tests/test_reports.py runs it."""


def chromium() -> str:
    found = next(
        (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None
    )
    if found is None:
        sys.exit("error: Chromium not found (sh scripts/setup-system-packages.sh installs Debian's)")
    return found


def screenshot(browser: str, url: str, out: Path, size: tuple[int, int]) -> None:
    """A PNG of ``url`` at ``size`` (width, height), after the page's scripts ran (virtual time)."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [
                browser,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={size[0]},{size[1]}",
                "--virtual-time-budget=30000",
                f"--screenshot={out}",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    if done.returncode != 0 or not out.is_file():
        sys.exit(f"error: Chromium could not take {out.name}: {done.stderr.strip()[-500:]}")


def _zstc(*args: str, **kwargs: object) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen([sys.executable, "-m", "zstc", *args], env=env, **kwargs)  # type: ignore[call-overload]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def playground(browser: str, out: Path) -> None:
    """``zstc serve`` with the default model, and its playground page showing three texts' scores."""
    port = _free_port()
    server = _zstc("--quiet", "serve", "--model", MODEL, "--port", str(port), stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/ready", timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit("error: zstc serve did not become ready")
                time.sleep(0.5)
        texts = [
            "The striker scored twice in the derby.",
            "The central bank raised rates again.",
            "Parliament passed the bill.",
        ]
        query = urlencode([*(("text", text) for text in texts), ("labels", "sports,economy,politics"), ("run", "1")])
        screenshot(browser, f"http://127.0.0.1:{port}/?{query}", out, SIZES[out.name])
    finally:
        server.terminate()
        server.wait(timeout=60)


def report(browser: str, out: Path) -> None:
    """``zstc bench`` on the packaged sample, then ``zstc report``'s index.html (run inside a scratch folder, so the
    page names the result file as ``minilm.json``, not a temporary path)."""
    with tempfile.TemporaryDirectory() as work:
        bench = ["--quiet", "bench", "--model", MODEL, "--data", "sample", "--max-samples", "100", "--no-cache"]
        if _zstc(*bench, "--out", "minilm.json", cwd=work, stdout=subprocess.DEVNULL).wait() != 0:
            sys.exit("error: zstc bench failed")
        if _zstc("--quiet", "report", "minilm.json", "--out", "report", "--no-confusion", cwd=work).wait() != 0:
            sys.exit("error: zstc report failed")
        screenshot(browser, (Path(work) / "report" / "index.html").as_uri(), out, SIZES[out.name])


SHOTS = {"playground": playground, "report": report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(SHOTS), help="take one screenshot only")
    args = parser.parse_args()
    browser = chromium()
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name, take in SHOTS.items():
        if args.only in (None, name):
            take(browser, IMAGES / f"{name}.png")
            print(f"wrote {IMAGES / f'{name}.png'}")


if __name__ == "__main__":
    main()
