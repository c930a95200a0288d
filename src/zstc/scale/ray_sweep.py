"""The Ray engine of ``zstc sweep``: an actor per model, its units as actor calls, retried when it dies."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from zstc.benchmark.runner import Bench, BenchConfig
from zstc.benchmark.store import DatasetResult
from zstc.errors import ZstcError
from zstc.scale import connect_ray, require_ray


class ModelWorker:
    """Holds one model for the whole sweep: built once per actor (and again only if the actor restarts)."""

    def __init__(self, config: BenchConfig, before_unit: Callable[[str, str], None] | None = None) -> None:
        # The actor neither reads nor writes any store: results travel back to the driver, which saves them.
        self.bench = Bench(config, show_progress=False)
        self.bench.cache = None
        self.before_unit = before_unit

    def compute(self, dataset: str, expected: str) -> DatasetResult:
        """Score one dataset with this worker's loaded model, refusing it when the worker's fingerprint of the unit is
        not the driver's ``expected`` one (other data or code on this node)."""
        if self.before_unit is not None:
            self.before_unit(self.bench.config.model, dataset)
        prepared = self.bench.prepare(dataset)
        if prepared.fingerprint != expected:  # another data file or code on this node: never mix results
            raise RuntimeError(f"{dataset}: this worker sees fingerprint {prepared.fingerprint}, the driver {expected}")
        return self.bench.compute(prepared)


def run_units(
    plan: Any,
    arrived: Callable[[Any, DatasetResult], None],
    *,
    address: str | None,
    gpus_per_model: float,
    cpus_per_model: float,
    max_retries: int,
    before_unit: Callable[[str, str], None] | None,
) -> None:
    """Run ``plan.pending`` on one actor per model; ``arrived(unit, result)`` as each unit finishes."""
    ray = require_ray()
    from ray.exceptions import RayActorError

    started_here = connect_ray(address)
    workers: dict[str, Any] = {}
    try:
        actor_class = ray.remote(ModelWorker)
        for config in plan.configs:
            if any(unit.model == config.model for unit in plan.pending):
                workers[config.model] = actor_class.options(
                    num_cpus=cpus_per_model,
                    num_gpus=gpus_per_model,
                    max_restarts=max_retries,
                    max_task_retries=max_retries,  # a dead worker is restarted, its calls re-run
                ).remote(config, before_unit)
        # Units travel as (dataset, fingerprint): each worker loads its own data.
        waiting = {workers[unit.model].compute.remote(unit.dataset, unit.fingerprint): unit for unit in plan.pending}
        while waiting:
            done, _ = ray.wait(list(waiting), num_returns=1)
            for ref in done:
                unit = waiting.pop(ref)
                try:
                    result = ray.get(ref)
                except (
                    RayActorError
                ) as error:  # restarted max_retries times, and it died again: the finished units are saved
                    raise ZstcError(
                        f"the Ray worker of {unit.model} died computing {unit.dataset} after {max_retries} "
                        f"restarts ({type(error).__name__}); run again to resume"
                    ) from None
                arrived(unit, result)
    finally:
        for worker in workers.values():  # on a cluster that outlives this run too
            ray.kill(worker)
        if started_here:
            ray.shutdown()
