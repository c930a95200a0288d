"""Run in a child process by tests/test_scale.py: everything that starts a local Ray.

    python tests/scale_helpers.py sweep DATA OUT MODEL[,MODEL...] [KILL_MARKER]
    python tests/scale_helpers.py classify ARGS...     # `zstc classify ARGS --engine ray`

A local Ray with two CPUs, shut down before the process exits, so no Ray daemon, signal handler or
environment outlives the test.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
from pathlib import Path

SAMPLES = 12
TASKS = ["financialphrasebank", "emotiondair", "banking77"]


def kill_on_first_banking77(marker: str, model: str, dataset: str) -> None:
    """Fault injection: the worker computing banking77 SIGKILLs itself the first time (mid-unit: the call is running)."""
    if dataset == "banking77" and not os.path.exists(marker):
        Path(marker).write_text(f"{model} {os.getpid()}")
        os.kill(os.getpid(), signal.SIGKILL)


def sweep(data: str, out: str, models: str, marker: str | None = None) -> None:
    from zstc.benchmark.runner import BenchConfig
    from zstc.scale.planner import plan_sweep, run_sweep

    template = BenchConfig(
        model="", tasks=TASKS, data=data, max_samples=SAMPLES, seed=1, scorer_options={"precision": "fp32"}
    )
    plan = plan_sweep(template, models.split(","), out)
    hook = functools.partial(kill_on_first_banking77, marker) if marker else None
    summaries = run_sweep(plan, engine="ray", before_unit=hook)
    print(json.dumps({model: summary["results"]["overall"]["macro_f1"] for model, summary in summaries.items()}))


def main() -> None:
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        if sys.argv[1] == "sweep":
            sweep(*sys.argv[2:])
        else:
            from zstc.cli import main as zstc_main

            sys.argv = ["zstc", "classify", *sys.argv[2:], "--engine", "ray"]
            zstc_main()
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
