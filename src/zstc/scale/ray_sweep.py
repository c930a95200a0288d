"""The Ray engine of ``zstc sweep``: an actor per model, its units as actor calls, retried when it dies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zstc.benchmark.runner import Bench, BenchConfig
from zstc.benchmark.store import DatasetResult
from zstc.scale import connect_ray, require_ray


class ModelWorker:
    """Holds one model for the whole sweep: built once per actor (and again only if the actor restarts)."""

    def __init__(self, config: BenchConfig, before_unit: Callable[[str, str], None] | None = None) -> None:
        # The actor neither reads nor writes any store: results travel back to the driver, which saves them.
        self.bench = Bench(config, show_progress=False)
        self.bench.cache = None
        self.before_unit = before_unit

    def compute(self, dataset: str, expected: str) -> DatasetResult:
        if self.before_unit is not None:
            self.before_unit(self.bench.config.model, dataset)
        prepared = self.bench.prepare(dataset)
        if prepared.fingerprint != expected:  # another data file or code on this node: never mix results
            raise RuntimeError(f"{dataset}: this worker sees fingerprint {prepared.fingerprint}, the driver {expected}")
        return self.bench.compute(prepared)


def run_units(plan: Any, arrived: Callable[[Any, DatasetResult], None], *, address: str | None, gpus_per_model: float,
              cpus_per_model: float, max_retries: int, before_unit: Callable[[str, str], None] | None) -> None:
    """Run ``plan.pending`` on one actor per model; ``arrived(unit, result)`` as each unit finishes."""
    ray = require_ray()
    started_here = connect_ray(address)
    try:
        actor_class = ray.remote(ModelWorker)
        workers = {}
        for config in plan.configs:
            if any(unit.model == config.model for unit in plan.pending):
                workers[config.model] = actor_class.options(
                    num_cpus=cpus_per_model, num_gpus=gpus_per_model,
                    max_restarts=max_retries, max_task_retries=max_retries,  # a dead worker is restarted, its calls re-run
                ).remote(config, before_unit)
        # Units travel as (dataset, fingerprint): each worker loads its own data.
        waiting = {workers[unit.model].compute.remote(unit.dataset, unit.fingerprint): unit for unit in plan.pending}
        while waiting:
            done, _ = ray.wait(list(waiting), num_returns=1)
            for ref in done:
                arrived(waiting.pop(ref), ray.get(ref))
        for worker in workers.values():
            ray.kill(worker)
    finally:
        if started_here:
            ray.shutdown()
