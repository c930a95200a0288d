"""``zstc bench``: score BTZSC tasks with one model and write the result store and summary.

The pipeline per dataset is the project's one-way flow: load task -> unlabelled policy -> sample ->
scorer -> score matrix -> argmax -> metrics -> store. Finished datasets are saved before the next starts.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from zstc import __version__
from zstc.baselines import paper_rows
from zstc.catalog import catalog
from zstc.decisions import argmax_decisions
from zstc.hypotheses import make_hypothesis_provider, score_hypotheses
from zstc.loaders import load_btzsc_task
from zstc.metrics import METRICS, aggregate, aggregate_by_family, dataset_metrics
from zstc.models.registry import get_model_spec
from zstc.results import SCHEMA_VERSION, DatasetResult, ResultStore, fingerprint, write_json
from zstc.scorers import make_scorer
from zstc.scorers.base import Scorer
from zstc.tasks import Task, stratified_sample

HypothesisProvider = Callable[[Task], Sequence[str]]
"""Turns a task into the label descriptions it is scored with (default: ``config.hypotheses``, see
:mod:`zstc.hypotheses`; a ``HypothesisSet`` of several variants is scored once per variant, averaged)."""


@dataclass
class BenchConfig:
    model: str
    tasks: Sequence[str]
    data: str
    family: str | None = None
    scorer_options: dict[str, Any] = field(default_factory=dict)
    unlabelled: str = "paper"
    max_samples: int | None = None
    seed: int = 0
    hypotheses: str = "dataset"
    template: str | None = None
    """Template of the name/definition/both/ensemble hypotheses; None: the task family's aspect template."""
    out: str | Path = "results.json"
    fresh: bool = False
    multi_label: bool = False
    """Also judge threshold decisions (label-wise weighted F1, per-label P/R/F1); computed from the stored
    scores, so it never changes a dataset's fingerprint."""
    threshold: float | None = None
    """Multi-label threshold; None: the scorer's score-type default."""

    def settings_for(self, dataset: str) -> dict[str, Any]:
        """Everything that determines one dataset's numbers (and nothing that does not, like the out path)."""
        return {
            "model": self.model,
            "family": self.family,
            "scorer_options": {k: v for k, v in sorted(self.scorer_options.items()) if v is not None},
            "data": str(self.data),
            "dataset": dataset,
            "unlabelled": self.unlabelled,
            "max_samples": self.max_samples,
            "seed": self.seed,
            "hypotheses": self.hypotheses,
            **({"template": self.template} if self.template is not None else {}),  # keeps older fingerprints valid
        }


def dataset_hypotheses(task: Task) -> list[str]:
    return list(task.hypotheses)


def evaluate_task(scorer: Scorer, task: Task, descriptions: Sequence[str], *, show_progress: bool = False) -> tuple[DatasetResult, float]:
    """Score one task and compute its metrics; returns the result (fingerprint unset) and the wall time."""
    started = time.perf_counter()
    scores = score_hypotheses(scorer, task.texts, descriptions, show_progress=show_progress)
    wall = time.perf_counter() - started
    predicted = argmax_decisions(scores)
    result = DatasetResult(
        dataset=task.name,
        family=task.family,
        metrics=dataset_metrics(task.gold, predicted),
        n_texts=len(task),
        label_names=list(task.label_names),
        hypotheses=list(descriptions),
        unlabelled_policy="",
        unlabelled_texts=0,
        wall_time_s=wall,
        fingerprint="",
        notes=[*task.notes, *getattr(descriptions, "notes", []), *getattr(scorer, "notes", [])],
        scores=scores,
        gold=task.gold,
        predicted=predicted,
        source_index=task.source_index,
    )
    return result, wall


class Bench:
    """Runs a :class:`BenchConfig`; ``on_event`` receives progress messages for the terminal."""

    def __init__(self, config: BenchConfig, *, hypothesis_provider: HypothesisProvider | None = None,
                 on_event: Callable[[str, Any], None] | None = None, show_progress: bool = True) -> None:
        self.config = config
        self.hypothesis_provider = hypothesis_provider or make_hypothesis_provider(config.hypotheses, config.template)
        self.on_event = on_event or (lambda kind, payload: None)
        self.show_progress = show_progress
        self.store = ResultStore(config.out)
        self._scorer: Scorer | None = None

    @property
    def scorer(self) -> Scorer:
        # Built on first use: a run whose datasets are all finished never loads the model.
        if self._scorer is None:
            self._scorer = make_scorer(self.config.model, self.config.family, **self.config.scorer_options)
        return self._scorer

    def run(self) -> dict[str, Any]:
        config = self.config
        # Validate everything cheap before any model loads: names, options, data files.
        spec = get_model_spec(config.model, config.family)
        make_scorer(config.model, config.family, **config.scorer_options)  # option check only; loads nothing
        results: dict[str, DatasetResult] = {}
        for name in config.tasks:
            expected = fingerprint(config.settings_for(name))
            cached = None if config.fresh else self.store.finished(name, expected)
            if cached is not None:
                results[name] = cached
                self.on_event("reused", cached)
                continue
            task, affected = load_btzsc_task(name, config.data, unlabelled=config.unlabelled)
            source_texts = len(task)
            task = stratified_sample(task, config.max_samples, config.seed)
            self.on_event("start", task)
            result, _ = evaluate_task(self.scorer, task, self.hypothesis_provider(task), show_progress=self.show_progress)
            result.unlabelled_policy = config.unlabelled
            result.unlabelled_texts = affected
            result.fingerprint = expected
            result.extra["source_texts"] = source_texts
            self.store.save(result)
            results[name] = result
            self.on_event("done", result)
        summary = build_summary(config, spec, results, self._scorer)
        if config.multi_label:
            summary["multi_label"] = multi_label_summary(results, self.scorer, config.threshold)
        write_json(Path(config.out), summary)
        return summary


def multi_label_summary(results: dict[str, DatasetResult], scorer: Scorer, threshold: float | None) -> dict[str, Any]:
    """Yin et al.'s multi-label view of each dataset's scores: threshold decisions with "none"."""
    from zstc.multilabel import decide, default_threshold, multilabel_metrics, score_type_of

    cut = default_threshold(score_type_of(scorer)) if threshold is None else threshold
    return {
        "threshold": cut,
        "by_dataset": {
            name: multilabel_metrics(r.gold, decide(r.scores, r.label_names, cut), r.label_names) for name, r in results.items()
        },
    }


def build_summary(config: BenchConfig, spec: Any, results: dict[str, DatasetResult], scorer: Scorer | None) -> dict[str, Any]:
    by_dataset = {name: result.summary() for name, result in results.items()}
    family_of = {name: result.family or "custom" for name, result in results.items()}
    metrics_only = {name: {m: result.metrics[m] for m in METRICS} for name, result in results.items()}
    sampled = any(r.n_texts < r.extra.get("source_texts", r.n_texts) for r in results.values())
    model_facts: dict[str, Any] = {
        "name": spec.model_id,
        "family": spec.family,
        "paper_name": spec.paper_name,
        "parameters_millions": spec.params_millions,
        **({k: v for k, v in scorer.describe().items() if k not in ("name", "family")} if scorer is not None else {}),
        "options": {k: v for k, v in config.scorer_options.items() if v is not None},
    }
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "model": model_facts,
        "evaluation": {
            "benchmark": "BTZSC",
            "datasets": list(results),
            "data": str(config.data),
            "unlabelled_policy": config.unlabelled,
            "hypotheses": config.hypotheses,
            "template": config.template,
            "max_samples": config.max_samples,
            "seed": config.seed,
            "partial": len(results) < len(catalog()),
            "sampled": sampled,
            "zstc_version": __version__,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "details": str(ResultStore(config.out).directory.name),
        },
        "results": {
            "overall": aggregate(metrics_only),
            "by_task": aggregate_by_family(metrics_only, family_of),
            "by_dataset": by_dataset,
        },
        "notes": {name: result.notes for name, result in results.items() if result.notes},
    }
    published = paper_rows(spec)
    if published is not None:
        summary["paper"] = {
            "model": spec.paper_name,
            "macro_f1": {name: published[name] for name in results if name in published},
        }
    return summary
