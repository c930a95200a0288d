"""Peak memory of ``zstc classify --out`` against the number of texts: it must not grow with N.

Each run is a fresh ``zstc classify`` process (the real CLI, chunked reading and writing), and its peak RSS
is read from the kernel (``ru_maxrss`` of the finished child). ``--scorer stub`` swaps the model for a
stand-in that scores by character counts, so 100,000 texts take seconds and what is measured is the
pipeline's own memory; ``--scorer real`` runs all-MiniLM-L6-v2 on a smaller N.

    python benchmarks/classify_memory.py --scorer stub --sizes 10000,100000
    python benchmarks/classify_memory.py --scorer real --sizes 500,2000

The last line is ``rss_growth=<peak RSS at the largest N / peak RSS at the smallest N>`` (1.0: flat).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from options import Parser, positive_int, positive_int_list

REPO = Path(__file__).resolve().parents[1]
SENTENCES = [
    "The striker scored twice in the final.",
    "Inflation rose again last quarter.",
    "Stir the sauce until it thickens.",
    "The central bank kept rates unchanged.",
    "She won the marathon in record time.",
    "Bake the bread for forty minutes.",
]

# Run inside the child: the CLI with zstc.api's scorer factory replaced by a cheap deterministic scorer.
STUB_DRIVER = """
import sys
import numpy as np
import zstc.api

class StubScorer:
    notes = []
    def score(self, texts, labels, show_progress=False):
        lengths = np.array([len(t) for t in texts], dtype=np.float32)[:, None]
        return np.cos(lengths * (np.arange(len(labels), dtype=np.float32)[None, :] + 1)).astype(np.float32)
    def describe(self):
        return {"name": "stub", "family": "embedding", "score_type": "cosine"}

zstc.api.make_scorer = lambda *args, **kwargs: StubScorer()
from zstc.cli import main
sys.argv = ["zstc", *sys.argv[1:]]
main()
"""


def write_input(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            handle.write(json.dumps({"id": i, "text": f"{SENTENCES[i % len(SENTENCES)]} Item {i}."}) + "\n")


def run_once(source: Path, out: Path, scorer: str, chunk_size: int) -> tuple[float, float]:
    """(peak RSS in MiB, wall seconds) of one classify run in a fresh process."""
    args = [
        str(source),
        "--labels",
        "sports,economy,cooking",
        "--template",
        "This text is about {}.",
        "--out",
        str(out),
        "--chunk-size",
        str(chunk_size),
    ]
    command = (
        [sys.executable, "-c", STUB_DRIVER, "classify", *args]
        if scorer == "stub"
        else [sys.executable, "-m", "zstc", "classify", *args]
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.perf_counter()
    # wait4 gives this child's own rusage (RUSAGE_CHILDREN would be the maximum over every child so far).
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"classify failed: {process.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024, wall  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--scorer", choices=["stub", "real"], default="stub")
    parser.add_argument(
        "--sizes", type=positive_int_list, default="10000,100000", help="Comma-separated numbers of texts."
    )
    parser.add_argument("--chunk-size", type=positive_int, default=1000)
    args = parser.parse_args()
    sizes: list[int] = args.sizes
    peaks = {}
    with tempfile.TemporaryDirectory() as scratch:
        for n in sizes:
            source, out = Path(scratch) / f"in-{n}.jsonl", Path(scratch) / f"out-{n}.jsonl"
            write_input(source, n)
            peak, wall = run_once(source, out, args.scorer, args.chunk_size)
            rows = sum(1 for _ in out.open())
            assert rows == n, f"{rows} rows written for {n} texts"
            peaks[n] = peak
            print(
                f"scorer={args.scorer} texts={n} chunk={args.chunk_size} peak_rss_mib={peak:.1f} wall_s={wall:.1f} "
                f"texts_per_s={n / wall:.0f} input_mib={source.stat().st_size / 2**20:.1f} output_mib={out.stat().st_size / 2**20:.1f}"
            )
    print(f"rss_growth={peaks[sizes[-1]] / peaks[sizes[0]]:.3f}")


if __name__ == "__main__":
    main()
