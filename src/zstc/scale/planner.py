"""``zstc sweep``: many models x many datasets, each (model, dataset) unit computed once.

The plan is the same for both engines: one :class:`~zstc.benchmark.runner.Bench` per model (its summary
file is ``<out>/<model>.json``, written exactly as ``zstc bench`` writes it), units whose result is
already in the run's details folder or in the shared result cache are skipped, and every computed unit is
saved by this process into both as it arrives.

* ``local``: models one after the other in this process, each loaded once.
* ``ray``: one actor per model (``num_gpus``/``num_cpus`` per actor), so each model is loaded once per
  worker and the models run side by side. An actor that dies (a killed process, a lost node) is restarted
  and its unfinished units are re-run (``max_restarts`` / ``max_task_retries``); since a unit is a pure
  function of its settings, a retried unit gives the same numbers.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from zstc.benchmark.result_cache import model_folder
from zstc.benchmark.runner import Bench, BenchConfig, PreparedTask
from zstc.benchmark.store import DatasetResult
from zstc.errors import LabelError, ModelError, quoted
from zstc.io import check_output_dir
from zstc.models.registry import UnknownModelError, get_model_spec
from zstc.validation import check_choice, check_options

ENGINES = ("local", "ray")

UnitHook = Callable[[str, str], None]
"""Called as ``hook(model, dataset)`` by whatever process is about to compute a unit (fault injection in tests)."""


@dataclass(frozen=True)
class Unit:
    """One (model, dataset) result a sweep still has to compute, known by its fingerprint."""

    model: str
    dataset: str
    fingerprint: str
    prepared: PreparedTask | None = None
    """The loaded task (local engine); a Ray worker prepares its own and checks it has this fingerprint."""


@dataclass
class SweepPlan:
    """One bench configuration per model and the units still to compute."""

    configs: list[BenchConfig]
    benches: list[Bench]
    pending: list[Unit]
    reused: dict[str, dict[str, DatasetResult]]

    @property
    def units(self) -> int:
        """(model, dataset) units in the plan, finished ones included."""
        return len(self.configs) * len(self.configs[0].tasks) if self.configs else 0


def plan_sweep(
    template: BenchConfig,
    models: Sequence[str],
    out_dir: str | Path,
    *,
    on_event: Callable[[str, Any], None] | None = None,
) -> SweepPlan:
    """The sweep of ``models`` over ``template``'s datasets and settings; summaries go to ``out_dir``."""
    # The rule of every --out folder: new or existing, in a folder that exists; never an existing file.
    out_dir = check_output_dir(Path(out_dir))
    check_distinct_models(models, template.family)  # before the folder exists: a refused sweep leaves nothing behind
    try:
        out_dir.mkdir()
    except FileExistsError:
        return _plan(template, models, out_dir, on_event)
    # Each bench checks its model, data and hypotheses against a summary path inside the folder, so the folder
    # comes first; a plan refused there (or interrupted) takes the folder it created with it, as it found nothing.
    try:
        return _plan(template, models, out_dir, on_event)
    except BaseException:
        shutil.rmtree(out_dir, ignore_errors=True)
        raise


def check_distinct_models(models: Sequence[str], family: str | None = None) -> None:
    """Refuse two names of one model (a paper short name and its hub id, a local folder with and without a
    trailing slash, a registered model and its local copy): the sweep would compute it twice, into two
    summaries. Unknown names are refused here too, before anything is created."""
    seen: dict[str, str] = {}
    for model in models:
        try:
            spec = get_model_spec(model, family, parameter="models")
        except UnknownModelError as unknown:
            # The registry's advice is a family for the model; a sweep has one family for all its models, so none.
            raise ModelError(
                f"{unknown.named} in --models: it is not in zstc's registry (see `zstc models`) and not a "
                "local folder whose family zstc can read; a sweep takes no --family (its models may be of "
                "several), so score it with `zstc bench --family ...`"
            ) from None
        folder = Path(model).expanduser()
        if not folder.is_dir() and spec.offline_source is not None:  # the installed copy of a registered model
            folder = spec.offline_source(locate_only=True) or folder
        names = [spec.model_id, *([str(folder.resolve())] if folder.is_dir() else [])]
        for name in names:
            if name in seen:
                raise LabelError(
                    f"models {quoted(seen[name])} and {quoted(model)} are the same model ({name}); give it once",
                    parameters=("models",),
                )
        seen.update(dict.fromkeys(names, model))
    check_distinct_files(models, model_folder, what="models", written="summary and details")


def check_distinct_files(names: Sequence[str], file_name: Callable[[str], str], *, what: str, written: str) -> None:
    """Refuse two ``names`` that ``file_name`` maps to one file name (``mm/a b`` and ``mm/a+b`` are both ``mm__a__b``),
    compared without case as a case-insensitive file system compares them: one's ``written`` files would replace
    the other's. Said before any work, naming both."""
    files: dict[str, str] = {}
    for name in names:
        file = file_name(name)
        if file.casefold() in files:
            raise LabelError(
                f"{what} {files[file.casefold()]!r} and {name!r} would be written to one file "
                f"name ({file}), one's {written} over the other's: rename or move one of them",
                parameters=(what,),
            )
        files[file.casefold()] = name


def _plan(
    template: BenchConfig, models: Sequence[str], out_dir: Path, on_event: Callable[[str, Any], None] | None
) -> SweepPlan:
    configs: list[Any] = []
    benches: list[Any] = []
    pending: list[Any] = []
    reused: dict[str, dict[str, DatasetResult]] = {}
    for model in models:
        config = replace(template, model=model, out=out_dir / f"{model_folder(model)}.json")
        bench = Bench(config, on_event=on_event, show_progress=False)
        bench.check_out(*bench.validate())  # the same refusal to replace other settings' work as bench
        configs.append(config)
        benches.append(bench)
        reused[model] = {}
        for name in config.tasks:
            prepared = bench.prepare(name)
            found = None if config.overwrite == "always" else bench.reusable(name, prepared.fingerprint)
            if found is not None:
                reused[model][name] = found
                (on_event or (lambda *a: None))("reused", found)
            else:
                pending.append(Unit(model, name, prepared.fingerprint, prepared))
    return SweepPlan(configs, benches, pending, reused)


def run_sweep(
    plan: SweepPlan,
    *,
    engine: str = "local",
    address: str | None = None,
    gpus_per_model: float = 0,
    cpus_per_model: float = 1,
    max_retries: int = 3,
    before_unit: UnitHook | None = None,
    on_event: Callable[[str, Any], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Compute ``plan``'s pending units with ``engine``; returns each model's summary (also written to disk)."""
    check_choice("engine", engine, ENGINES)
    check_options({"gpus_per_model": gpus_per_model, "cpus_per_model": cpus_per_model, "max_retries": max_retries})
    notify = on_event or (lambda kind, payload: None)
    results = {model: dict(found) for model, found in plan.reused.items()}
    bench_of = {bench.config.model: bench for bench in plan.benches}

    def arrived(unit: Unit, result: DatasetResult) -> None:
        bench_of[unit.model].keep(result)  # this process is the only writer of stores and cache
        results[unit.model][unit.dataset] = result
        notify("done", result)

    if engine == "local":
        for unit in plan.pending:
            if before_unit is not None:
                before_unit(unit.model, unit.dataset)
            arrived(unit, bench_of[unit.model].compute(unit.prepared))  # type: ignore[arg-type]  # pending units are prepared
    elif plan.pending:
        from zstc.scale.ray_sweep import run_units

        run_units(
            plan,
            arrived,
            address=address,
            gpus_per_model=gpus_per_model,
            cpus_per_model=cpus_per_model,
            max_retries=max_retries,
            before_unit=before_unit,
        )
    return {
        bench.config.model: bench.summarize({name: results[bench.config.model][name] for name in bench.config.tasks})
        for bench in plan.benches
    }
