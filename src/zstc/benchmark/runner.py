"""``zstc bench``: score BTZSC tasks with one model and write the result store and summary.

The pipeline per dataset is the project's one-way flow: load task -> unlabelled policy -> sample ->
scorer -> score matrix -> argmax -> metrics -> store. Finished datasets are saved before the next starts.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from zstc import __version__
from zstc.benchmark.baselines import paper_rows
from zstc.benchmark.result_cache import ResultCache
from zstc.benchmark.catalog import catalog, data_directory
from zstc.adapt import check_adapt_options, corpus_decisions
from zstc.errors import DataError, OutputError, ZstcError
from zstc.io import check_output_dir, check_output_path, is_special_file
from zstc.validation import check_choice, check_hypotheses_template, check_options
from zstc.hypotheses.variants import make_hypothesis_provider, score_hypotheses, score_hypotheses_with_notes
from zstc.benchmark.data import data_folder_files, find_task_file, load_btzsc_sample
from zstc.benchmark.metrics import METRICS, aggregate, aggregate_by_family, dataset_metrics
from zstc.models.loading import model_source
from zstc.models.registry import ModelSpec, get_model_spec
from zstc.runs.identity import data_sha256, fingerprint, hypotheses_identity, sampling_identity, weights_identity
from zstc.runs.provenance import (
    git_commit,
    library_versions,
    model_revision,
    peak_cuda_mb,
    peak_rss_mb,
    reset_cuda_peak,
)
from zstc.benchmark.records import (
    Aggregate,
    DatasetResult,
    Evaluation,
    ModelFacts,
    MultiLabelSummary,
    PaperComparison,
    Results,
    RunRecord,
    RunSummary,
    Software,
    Timing,
    percentile,
)
from zstc.benchmark.store import DamagedResult, ResultStore, load_summary, save_summary
from zstc.scorers import get_family, make_scorer
from zstc.scorers.base import Scorer, merge_batch_notes
from zstc.scorers.batching import length_batches
from zstc.scorers.runtime import resolve_device, resolved_options
from zstc.benchmark.tasks import HARNESS_DRAWS, Task, check_sampling, paper_scores_whole

HypothesisProvider = Callable[[Task], Sequence[str]]
"""Turns a task into the label descriptions it is scored with (default: ``config.hypotheses``, see
:mod:`zstc.hypotheses.variants`; a ``HypothesisSet`` of several variants is scored once per variant, averaged)."""


BF16_ONLY_OPTIONS: tuple[str, ...] = ("recheck_margin",)
"""Scorer options that change nothing in fp32 (``--recheck-margin``: "Unused in fp32"), so not part of an fp32 run's
identity: the same fp32 run with and without one was refused as a run of other settings, and missed the cache."""


@dataclass
class BenchConfig:
    """What a bench run is asked for: the model, datasets, data source, sampling, hypotheses, and what to do
    with results already stored. Checked by :meth:`Bench.validate` before any model loads."""

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
    sampling: str = "stratified"
    """How ``max_samples`` texts are drawn: ``stratified`` (seeded, per class), ``paper`` (the texts the paper
    scored) or ``harness`` (the public harness's draw); see :data:`zstc.benchmark.tasks.SAMPLING_METHODS`."""
    out: str | Path = "results.json"
    overwrite: str = "only-missing"
    """What to do with results already in the details folder: ``only-missing`` (reuse those with these
    settings, compute the rest, refuse results of other settings), ``always`` (recompute everything,
    replacing whatever is there) or ``never`` (compute nothing: every dataset must be finished already)."""
    multi_label: bool = False
    """Also judge threshold decisions (label-wise weighted F1, per-label P/R/F1); computed from the stored
    scores, so it never changes a dataset's fingerprint."""
    threshold: float | None = None
    """Multi-label threshold; None: the scorer's score-type default."""
    cache: bool = True
    """Reuse and fill the shared result cache (:mod:`zstc.benchmark.result_cache`); never changes a number."""
    adapt: str = "none"
    """Decide each dataset's texts as one corpus (:mod:`zstc.adapt`); ``none``: each text alone, the paper's protocol.
    In the run identity when not ``none`` (results of other decisions are other results)."""

    def run_identity(self, spec: ModelSpec, scorer_options: dict[str, Any]) -> dict[str, Any]:
        """What determines every dataset's numbers in this run (and nothing that does not, like the out path
        or where the data folder is). ``scorer_options`` carry the resolved precision."""
        device = resolve_device(scorer_options.get("device"))
        return {
            "model": spec.model_id,
            "family": spec.family,
            **weights_identity(spec, scorer_options.get("shortlist")),
            "scoring_version": get_family(spec.family).scoring_version,
            "precision": scorer_options["precision"],
            "device_type": device.type,
            "scorer_options": {
                k: v
                for k, v in sorted(scorer_options.items())
                if v is not None
                and k not in ("device", "precision")
                and not (k in BF16_ONLY_OPTIONS and scorer_options["precision"] == "fp32")
            },
            "hypotheses": hypotheses_identity(self.hypotheses, self.template, scorer_options["precision"]),
            "sampling": sampling_identity(self.sampling, self.max_samples, self.seed),
            "unlabelled": self.unlabelled,
            **({"adapt": self.adapt} if self.adapt != "none" else {}),  # absent for "none": older runs' identities hold
        }


OVERWRITE_STRATEGIES: tuple[str, ...] = ("only-missing", "always", "never")


def dataset_identity(task: Task, descriptions: Sequence[str]) -> dict[str, Any]:
    """What determines one dataset's numbers beyond the run's settings: its data's content and hypotheses."""
    variants = getattr(descriptions, "variants", None)  # an ensemble: every variant's hypotheses
    return {
        "dataset": task.name,
        "data_sha256": (data_sha256(task) or task.source) if task.source else None,
        "hypotheses": {k: list(v) for k, v in variants.items()} if variants else list(descriptions),
    }


DEFAULT_BATCH_TEXTS = 32
"""Texts per timed scorer call when the scorer does not say what its batch size is."""


@dataclass
class TimedScores:
    """A score matrix with how long it took: one warm-up call, then one call per batch of texts."""

    scores: np.ndarray
    warmup_s: float
    """The first call (one text): model loading and label-side caches, kept out of the throughput."""
    batch_texts: int
    batch_latencies_s: list[float]
    notes: list[str]

    @property
    def wall_s(self) -> float:
        """Seconds of the timed calls, the warm-up left out (what texts per second divide by)."""
        return float(sum(self.batch_latencies_s))

    def record(self) -> Timing:
        """The timing as a result stores it, rounded."""
        return Timing(
            warmup_s=round(self.warmup_s, 4),
            batch_texts=self.batch_texts,
            batch_latencies_s=[round(t, 5) for t in self.batch_latencies_s],
        )


def score_timed(
    scorer: Scorer,
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    batch_texts: int | None = None,
    show_progress: bool = False,
) -> TimedScores:
    """Score ``texts`` in batches of ``batch_texts`` (default: the scorer's batch size), timing each call.

    Texts are scored longest first, as sentence-transformers orders its own batches, so batching here
    costs no extra padding; scores are returned in the original order. Each text is scored independently,
    so the order changes no score.
    """
    batch_texts = batch_texts or scorer.describe().get("batch_size") or DEFAULT_BATCH_TEXTS
    started = time.perf_counter()
    score_hypotheses(scorer, texts[:1], labels)
    warmup = time.perf_counter() - started
    batches = length_batches([len(text) for text in texts], batch_texts)
    scores = np.empty((len(texts), len(labels)), dtype=np.float32)
    latencies: list[float] = []
    notes: list[list[str]] = []
    for batch in tqdm(batches, desc="batches", unit="batch", disable=not show_progress, leave=False):
        started = time.perf_counter()
        result = score_hypotheses_with_notes(scorer, [texts[i] for i in batch], labels)
        latencies.append(time.perf_counter() - started)
        scores[batch] = result.scores
        notes.append(result.notes)
    return TimedScores(scores, warmup, batch_texts, latencies, merge_batch_notes(notes))


def evaluate_task(
    scorer: Scorer, task: Task, descriptions: Sequence[str], *, show_progress: bool = False, adapt: str = "none"
) -> tuple[DatasetResult, float]:
    """Score one task and compute its metrics; returns the result (fingerprint unset) and the wall time. ``adapt``:
    how the texts are decided (:func:`zstc.adapt.corpus_decisions`; ``none``: argmax, each text alone).

    The wall time covers the batched scoring calls, not model loading (recorded as ``warmup_s``).
    """
    device = scorer.describe().get("device")
    reset_cuda_peak(device)
    timed = score_timed(scorer, task.texts, descriptions, show_progress=show_progress)
    predicted = corpus_decisions(timed.scores, adapt, scorer.describe())
    result = DatasetResult(
        dataset=task.name,
        family=task.family,
        metrics=dataset_metrics(task.gold, predicted),
        n_texts=len(task),
        label_names=list(task.label_names),
        hypotheses=list(descriptions),
        unlabelled_policy="",
        unlabelled_texts=0,
        wall_time_s=timed.wall_s,
        fingerprint="",
        notes=[*task.notes, *getattr(descriptions, "notes", []), *timed.notes],
        timing=timed.record(),
        peak_rss_mb=peak_rss_mb(),
        peak_cuda_mb=peak_cuda_mb(device),
        data_sha256=data_sha256(task),
        scorer=scorer.describe(),
        software=current_software(),
        scores=timed.scores,
        gold=task.gold,
        predicted=predicted,
        source_index=task.source_index,
    )
    return result, timed.wall_s


@dataclass
class PreparedTask:
    """One dataset ready to score: the sampled task, its hypotheses and its identity (see :meth:`Bench.prepare`)."""

    task: Task
    descriptions: Sequence[str]
    affected: int
    source_texts: int
    identity: dict[str, Any]
    fingerprint: str
    run_key: str


class Bench:
    """Runs a :class:`BenchConfig`; ``on_event`` receives progress messages for the terminal."""

    def __init__(
        self,
        config: BenchConfig,
        *,
        hypothesis_provider: HypothesisProvider | None = None,
        on_event: Callable[[str, Any], None] | None = None,
        show_progress: bool = True,
    ) -> None:
        self.config = config
        self.hypothesis_provider = hypothesis_provider or make_hypothesis_provider(config.hypotheses, config.template)
        self.on_event = on_event or (lambda kind, payload: None)
        self.show_progress = show_progress
        self.store = ResultStore(config.out)
        # Precision resolved once for the whole run (None: fp32), so the scorer and the fingerprint agree.
        precision = config.scorer_options.get("precision")
        family = (
            get_model_spec(config.model, config.family).family if precision == "auto" else None
        )  # auto is family-aware
        self.scorer_options = resolved_options(precision, config.scorer_options, family)
        self.cache = ResultCache(on_note=lambda note: self.on_event("note", note)) if config.cache else None
        self._scorer: Scorer | None = None
        self._identity: tuple[dict[str, Any], str] | None = None
        self._uncached_noted = False

    @property
    def scorer(self) -> Scorer:
        """The run's scorer, built on first use: a run whose datasets are all finished never loads the model."""
        if self._scorer is None:
            self._scorer = make_scorer(self.config.model, self.config.family, **self.scorer_options)
        return self._scorer

    def validate(self) -> tuple[dict[str, Any], str]:
        """Check everything cheap before any model loads (names, options); returns the run's identity and its key."""
        config = self.config
        check_choice("overwrite", config.overwrite, OVERWRITE_STRATEGIES)
        check_options({"max_samples": config.max_samples, "seed": config.seed})  # bench's --max-samples and --seed
        check_sampling(config.sampling, config.max_samples)
        check_hypotheses_template(config.hypotheses, config.template)
        check_adapt_options(
            config.adapt, multi_label=config.multi_label, shortlist=self.scorer_options.get("shortlist") is not None
        )
        if self._identity is None:
            spec = get_model_spec(config.model, config.family)
            scorer = make_scorer(config.model, config.family, **self.scorer_options)  # option check only; loads nothing
            if (
                config.multi_label and config.threshold is not None
            ):  # as classify: a cut outside the scores' range is said
                from zstc.policy import DecisionPolicy

                DecisionPolicy.for_scorer(scorer).check_thresholds(config.threshold, {})
            data_files = data_folder_files(str(config.data))
            check_output_path(Path(config.out), inputs=data_files)
            if self.cache is not None:  # results are put there after scoring: a cache that cannot take them is said now
                self.cache.check_writable()
            if is_special_file(Path(config.out)):  # /dev/stdout, /dev/full, a FIFO: no folder can go beside it
                raise OutputError(
                    f"out {config.out}: not a regular file, and bench keeps its details (what a rerun "
                    f"resumes from) in {self.store.directory.name}/ beside out: give a file path",
                    parameters=("out",),
                )
            # The details folder beside it too: a file of that name failed only when the first dataset was saved.
            check_output_dir(self.store.directory, inputs=data_files, option=f"--out {config.out}: its details folder")
            if str(config.data) != "hub":  # every dataset file is found before the first one is scored
                for name in config.tasks:
                    find_task_file(data_directory(config.data), name)
            run_identity = config.run_identity(spec, self.scorer_options)
            self._identity = (run_identity, fingerprint(run_identity))
        return self._identity

    def prepare(self, name: str) -> PreparedTask:
        """Load and sample one dataset and work out its fingerprint (cheap: no model is involved)."""
        config = self.config
        run_identity, run_key = self.validate()
        task, affected, source_texts = load_btzsc_sample(
            name,
            config.data,
            max_samples=config.max_samples,
            seed=config.seed,
            unlabelled=config.unlabelled,
            sampling=config.sampling,
        )
        descriptions = self.hypothesis_provider(task)
        identity = {"run": run_identity, "dataset": dataset_identity(task, descriptions)}
        if config.sampling == "paper" and paper_scores_whole(name, source_texts, config.max_samples):
            # Earlier versions drew 1000 of rottentomatoes' texts here under the same run identity: this key keeps
            # a stored or cached result of that draw from being reused as the whole dataset's.
            identity["dataset"]["sample"] = "every text, as the paper scored it"
        elif config.sampling in HARNESS_DRAWS and config.unlabelled == "exclude" and config.max_samples is not None:
            # Earlier versions drew from the texts left after the policy: another sample under the same run identity.
            identity["dataset"]["sample"] = "the draw's texts with a hypothesis"
        return PreparedTask(task, descriptions, affected, source_texts, identity, fingerprint(identity), run_key)

    def cache_key(self) -> tuple[str, str | None]:
        """The model id and revision (hub commit, or content hash of a local checkpoint) the shared cache files results under."""
        run_identity, _ = self.validate()
        return run_identity["model"], run_identity.get("model_revision")

    def shared_cache(self) -> ResultCache | None:
        """The shared result cache, unless it is off or some weights of the run have no known revision: a hub model
        whose commit could not be found is not cached (another revision would be stored, and found, under one key)."""
        if self.cache is None:
            return None
        run_identity, _ = self.validate()
        unknown = [
            key for key in ("model_revision", "shortlist_revision") if key in run_identity and run_identity[key] is None
        ]
        if unknown and not self._uncached_noted:
            self._uncached_noted = True
            whose = " and ".join(
                {"model_revision": "the model's", "shortlist_revision": "the shortlister's"}[key] for key in unknown
            )
            self.on_event(
                "note",
                f"which revision of {whose} weights this is cannot be found (the hub did not say, and it is "
                "not in the hub cache), so this run's results are not kept in the shared result cache",
            )
        return None if unknown else self.cache

    def reusable(self, name: str, expected: str) -> DatasetResult | None:
        """A finished result for ``name`` with fingerprint ``expected``: this run's own details folder first,
        then the shared cache (copied into the details folder, which reports read)."""
        found = self._reusable(name, expected)
        cache = self.shared_cache()
        if found is None and cache is not None:
            found = cache.get(*self.cache_key(), name, expected)
            if found is not None:
                self.store.save(found)
        return found

    def compute(self, prepared: PreparedTask) -> DatasetResult:
        """Score and judge one prepared dataset (nothing is read from or written to any store)."""
        config, task = self.config, prepared.task
        self.on_event("start", task)
        result, _ = evaluate_task(
            self.scorer, task, prepared.descriptions, show_progress=self.show_progress, adapt=config.adapt
        )
        result.unlabelled_policy = config.unlabelled
        # Policy 'paper' relabels rather than drops: count the relabelled texts that were scored.
        result.unlabelled_texts = task.n_counted_as_class0 if config.unlabelled == "paper" else prepared.affected
        result.fingerprint = prepared.fingerprint
        result.source_texts, result.run_fingerprint, result.identity = (
            prepared.source_texts,
            prepared.run_key,
            prepared.identity,
        )
        return result

    def keep(self, result: DatasetResult) -> None:
        """Save a computed result in this run's details folder and in the shared cache."""
        self.store.save(result)
        cache = self.shared_cache()
        if cache is not None:
            cache.put(result, *self.cache_key())

    def summarize(self, results: dict[str, DatasetResult]) -> dict[str, Any]:
        """The run summary of ``results``, written to ``config.out`` as ``zstc bench`` writes it."""
        spec = get_model_spec(self.config.model, self.config.family)
        summary = build_summary(self.config, spec, results, self._scorer, run=self.validate())
        if self.config.multi_label:
            summary.multi_label = multi_label_summary(results, self.scorer, self.config.threshold)
        return save_summary(self.config.out, summary)

    def run(self) -> dict[str, Any]:
        """Score every dataset not already finished under the same fingerprint (each saved the moment it is done),
        write the run summary and return its content."""
        config = self.config
        run_identity, run_key = self.validate()
        for orphan in self.store.remove_orphans():
            self.on_event("orphan", orphan)
        self.check_out(run_identity, run_key)
        results: dict[str, DatasetResult] = {}
        for name in config.tasks:
            prepared = self.prepare(name)
            cached = None if config.overwrite == "always" else self.reusable(name, prepared.fingerprint)
            if cached is not None:
                results[name] = cached
                self.on_event("reused", cached)
                continue
            if config.overwrite == "never":
                raise DataError(
                    f"{self.store.directory}: no finished result for {name} with these settings, and "
                    "--overwrite never computes nothing; use --overwrite only-missing to compute it"
                )
            result = self.compute(prepared)
            self.keep(result)
            results[name] = result
            self.on_event("done", result)
        return self.summarize(results)

    def check_out(self, run_identity: dict[str, Any], run_key: str) -> None:
        """Refuse, before any model loads, to replace another run's work at ``--out``: its summary
        (:meth:`_check_summary`) or its per-dataset results (:meth:`_check_details_folder`)."""
        self._check_summary(run_identity, run_key)
        self._check_details_folder(run_identity, run_key)

    def _check_summary(self, run_identity: dict[str, Any], run_key: str) -> None:
        """An existing summary at ``--out`` of a run with other settings is kept, unless ``--overwrite always``:
        with its details folder gone, nothing else would stop this run from silently replacing it."""
        path = Path(self.config.out)
        if self.config.overwrite == "always" or not path.is_file():
            return
        try:
            stored = load_summary(path)
        except DataError as error:
            raise DataError(
                f"{error}; it would be replaced by this run's summary: write to another --out, "
                "or replace it with --overwrite always"
            ) from None
        evaluation = stored.get("evaluation", {})
        if evaluation.get("run_fingerprint") == run_key:
            return
        run_identity = json.loads(json.dumps(run_identity, default=str))  # compared as the summary stores it
        recorded = evaluation.get("run_identity")
        if isinstance(recorded, dict):
            keys = [*run_identity, *(key for key in recorded if key not in run_identity)]
            changed = [
                f"{key} {recorded.get(key)!r} -> {run_identity.get(key)!r}"
                for key in keys
                if recorded.get(key) != run_identity.get(key)
            ]
        else:  # written by an older zstc or another tool: nothing says it is this run's, so it is not replaced
            changed = ["its settings are not recorded"]
        raise DataError(
            f"--out {path}: holds the summary of a run with other settings ({'; '.join(changed) or 'settings differ'}); "
            "write to another --out, or replace it with --overwrite always"
        )

    def _check_details_folder(self, run_identity: dict[str, Any], run_key: str) -> None:
        """Refuse to mix runs: results of other settings in the details folder stop the run (``only-missing``,
        ``never``) or are removed (``always``)."""
        others = [r for r in self.store.stored() if r.run_fingerprint != run_key]
        if not others:
            return
        if self.config.overwrite == "always":
            for result in others:
                self.store.remove(result.dataset)
            return
        stored = others[0].identity.get("run", {})
        changed = [
            f"{key} {stored.get(key)!r} -> {value!r}" for key, value in run_identity.items() if stored.get(key) != value
        ]
        raise DataError(
            f"{self.store.directory}: holds results computed with other settings ({', '.join(r.dataset for r in others)}; "
            f"{'; '.join(changed) if stored else 'recorded before settings were kept'}); write to another --out, "
            "or replace them with --overwrite always"
        )

    def _reusable(self, dataset: str, expected: str) -> DatasetResult | None:
        """The stored result of ``dataset`` with fingerprint ``expected``; a damaged one is reported and recomputed."""
        try:
            return self.store.finished(dataset, expected)
        except DamagedResult as damaged:
            self.on_event("damaged", damaged)
            return None


def multi_label_summary(
    results: dict[str, DatasetResult], scorer: Scorer, threshold: float | None
) -> MultiLabelSummary:
    """Yin et al.'s multi-label view of each dataset's scores: threshold decisions with "none", as ``classify
    --multi-label`` decides (:meth:`zstc.policy.DecisionPolicy.multi_label`): without a threshold, the family's
    default rule, its cut and, for the embedding family, the margin that keeps only labels near a text's best."""
    from zstc.multilabel import multilabel_metrics
    from zstc.policy import DecisionPolicy
    from zstc.scorers.cascade import scored_by

    policy = DecisionPolicy.for_scorer(scorer)
    by_dataset = {}
    for name, result in results.items():
        # Finished results carry their arrays (ResultStore.finished checks).
        assert result.scores is not None and result.gold is not None
        rule = policy.multi_label(result.label_names, threshold)
        decisions = rule.decide(
            result.scores, scored_by(scorer, result.scores)
        )  # a label outside a shortlist never passes
        by_dataset[name] = multilabel_metrics(result.gold, decisions, result.label_names)
    cut = threshold if threshold is not None else policy.default_threshold()
    margin = None if threshold is not None else policy.default_margin()
    return MultiLabelSummary(threshold=cut, margin=margin, by_dataset=by_dataset)


def build_summary(
    config: BenchConfig,
    spec: ModelSpec,
    results: dict[str, DatasetResult],
    scorer: Scorer | None,
    run: tuple[dict[str, Any], str] | None = None,
) -> RunSummary:
    """The run summary of finished datasets (validated as it is built); ``run`` is the run's identity and its
    key (:meth:`Bench.validate`), kept so that a later run to the same ``--out`` can tell whether it is the same."""
    family_of = {name: result.family or "custom" for name, result in results.items()}
    metrics_only = {name: {m: result.metrics[m] for m in METRICS} for name, result in results.items()}
    sampled = any(r.source_texts is not None and r.n_texts < r.source_texts for r in results.values())
    # What the scorer said about itself; from the stored results when every dataset was reused.
    described = scorer.describe() if scorer is not None else next((r.scorer for r in results.values() if r.scorer), {})
    model_facts = ModelFacts(
        name=spec.model_id,
        family=spec.family,
        paper_name=spec.paper_name,
        parameters_millions=spec.params_millions,
        options={k: v for k, v in config.scorer_options.items() if v is not None},
        revision=_model_revision(spec),
        **{k: v for k, v in described.items() if k not in ModelFacts.model_fields},
    )
    if described.get("parameters"):  # counted from the loaded weights beats the registry's rounded figure
        model_facts.parameters_millions = round(described["parameters"] / 1e6, 2)
    published = paper_rows(spec)
    software, other_code = run_software(results)
    drawn = sampling_identity(config.sampling, config.max_samples, config.seed)  # as the run identity records it
    return RunSummary(
        model=model_facts,
        evaluation=Evaluation(
            datasets=list(results),
            data=str(config.data),
            unlabelled_policy=config.unlabelled,
            hypotheses=config.hypotheses,
            template=config.template,
            sampling=drawn["method"],
            max_samples=config.max_samples,
            seed=drawn["seed"],
            precision=described.get("precision"),
            device=described.get("device"),
            partial=len(results) < len(catalog()),
            sampled=sampled,
            zstc_version=software.zstc_version,
            created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            details=str(ResultStore(config.out).directory.name),
            data_sha256={name: result.data_sha256 for name, result in results.items()},
            hypotheses_used={name: result.hypotheses for name, result in results.items()},
            fingerprints={name: result.fingerprint for name, result in results.items()},
            software={name: result.software for name, result in results.items()},
            run_identity=run[0] if run else None,
            run_fingerprint=run[1] if run else None,
        ),
        run=run_record(results, described, software),
        results=Results(
            overall=Aggregate.model_validate(aggregate(metrics_only)),
            by_task={
                family: Aggregate.model_validate(row)
                for family, row in aggregate_by_family(metrics_only, family_of).items()
            },
            by_dataset={name: result.summary() for name, result in results.items()},
        ),
        notes={
            name: notes
            for name, result in results.items()
            if (notes := [*result.notes, *([other_code[name]] if name in other_code else [])])
        },
        paper=None
        if published is None
        else PaperComparison(
            model=spec.paper_name, macro_f1={name: published[name] for name in results if name in published}
        ),
    )


def current_software() -> Software:
    """The code computing now: zstc's version, its git commit and the libraries' versions."""
    return Software(zstc_version=__version__, git_commit=git_commit(), libraries=library_versions())


def run_software(results: dict[str, DatasetResult]) -> tuple[Software, dict[str, str]]:
    """The code a summary of ``results`` names (its run record), and a note for each dataset computed by other code.

    The datasets' own code where they all record the same (every one reused from one earlier run included); else
    this process's, and each dataset whose result records other code (or none) is noted: a result reused from the
    details folder or the result cache was computed by the code of its own run, which its fingerprint does not pin."""
    recorded = [result.software for result in results.values()]
    first = recorded[0] if recorded else None
    if first is not None and all(software == first for software in recorded):
        return first, {}
    current = current_software()
    notes = {name: note for name, result in results.items() if (note := software_difference(result.software, current))}
    return current, notes


def software_difference(software: Software | None, run: Software) -> str | None:
    """A note saying how the code that computed a result (``software``; None: not recorded) differs from ``run``'s;
    None where it is the same."""
    if software is None:
        return (
            "computed by a zstc that did not record its version, git commit or libraries (a result stored before "
            "they were kept): whether by this run's code is unknown"
        )
    differ = [
        f"{what} {computed_by} (run record: {recorded})"
        for what, computed_by, recorded in (
            ("zstc", software.zstc_version, run.zstc_version),
            ("git commit", software.git_commit, run.git_commit),
            *(
                (name, software.libraries.get(name), run.libraries.get(name))
                for name in sorted({*software.libraries, *run.libraries})
            ),
        )
        if computed_by != recorded
    ]
    return f"reused result computed by other code: {', '.join(differ)}" if differ else None


def run_record(results: dict[str, DatasetResult], described: dict[str, Any], software: Software) -> RunRecord:
    """Speed, memory, machine and code facts of a run, pooled over its datasets; its code is ``software``
    (:func:`run_software`)."""
    latencies = [t for result in results.values() for t in result.batch_latencies]
    rss_peaks = [r.peak_rss_mb for r in results.values() if r.peak_rss_mb is not None]
    cuda_peaks = [r.peak_cuda_mb for r in results.values() if r.peak_cuda_mb is not None]
    wall = sum(result.wall_time_s for result in results.values())
    return RunRecord(
        wall_time_s=round(wall, 3),
        texts_per_second=round(sum(r.n_texts for r in results.values()) / wall, 2) if wall > 0 else None,
        latency_p50_s=percentile(latencies, 50),
        latency_p95_s=percentile(latencies, 95),
        peak_rss_mb=max(rss_peaks) if rss_peaks else None,
        peak_cuda_mb=max(cuda_peaks) if cuda_peaks else None,
        device=described.get("device"),
        precision=described.get("precision"),
        batch_size=described.get("batch_size"),
        zstc_version=software.zstc_version,
        git_commit=software.git_commit,
        libraries=software.libraries,
    )


def _model_revision(spec: ModelSpec) -> str | None:
    try:
        return model_revision(model_source(spec))
    except ZstcError:
        return None
