"""What a report compares: bench runs read from result files, and the paper's published rows.

Both become :class:`ModelRow` (a model's per-dataset numbers and its facts), so every table and figure
treats "my run" and "the paper's model" alike and only marks which is which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from zstc.benchmark.baselines import published
from zstc.benchmark.catalog import catalog
from zstc.errors import DataError
from zstc.benchmark.metrics import METRICS
from zstc.models.registry import PAPER_MODELS_WITHOUT_HUB_ID, PAPER_MODELS_WITHOUT_HUB_ID_SIZES, registered_models
from zstc.benchmark.store import DatasetResult, ResultStore, load_summary
from zstc.benchmark.tasks import HARNESS_DRAWS, PAPER_SAMPLE_SIZE, PAPER_WHOLE_DATASETS

Source = Literal["run", "paper"]


@dataclass(frozen=True)
class ModelRow:
    """One model's numbers: ``scores[metric][dataset]``, plus what the figures need to place it."""

    label: str
    family: str | None
    params_millions: float | None
    scores: dict[str, dict[str, float]]
    source: Source
    throughput: float | None = None
    """Texts per second over the whole run (runs only; the paper's speeds are not published per model)."""

    def values(self, metric: str, datasets: list[str]) -> np.ndarray:
        """The row's ``metric`` on each of ``datasets``, in that order (NaN where it has none)."""
        by_dataset = self.scores.get(metric, {})
        return np.asarray([by_dataset.get(name, np.nan) for name in datasets], dtype=np.float64)

    def mean(self, metric: str, datasets: list[str]) -> float:
        """Unweighted mean over ``datasets`` (the paper's aggregation); NaN when one is missing."""
        return float(self.values(metric, datasets).mean()) if datasets else float("nan")

    def std(self, metric: str, datasets: list[str]) -> float:
        """Standard deviation across ``datasets`` (the paper's ``(std)`` beside a family mean); NaN when one is missing."""
        return float(self.values(metric, datasets).std()) if datasets else float("nan")

    def covers(self, datasets: list[str]) -> bool:
        """Whether the row has a macro-F1 for every one of ``datasets``."""
        return all(name in self.scores.get("macro_f1", {}) for name in datasets)


@dataclass
class Run:
    """A bench result file with its details folder (``<stem>.details/``: per-text arrays)."""

    path: Path
    summary: dict[str, Any]
    label: str = ""
    store: ResultStore = field(init=False, repr=False)
    notes: list[str] = field(init=False, repr=False, default_factory=list)
    """What the report must say about this run's details (those of another run, left unused)."""
    _details: dict[str, DatasetResult | None] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.store = ResultStore(self.path)
        if not self.label:
            self.label = f"{self.short_name} ({self.path.stem})"

    @property
    def model(self) -> dict[str, Any]:
        """The summary's model record (name, family, revision, options); empty when absent."""
        return self.summary.get("model", {})

    @property
    def short_name(self) -> str:
        """The model's name as tables show it: the paper's name, else the last part of its id or path."""
        name = self.model.get("paper_name") or self.model.get("name") or self.path.stem
        return str(name).rstrip("/").rsplit("/", 1)[-1]

    @property
    def paper_name(self) -> str | None:
        """The model's name in the paper's tables, when the registry knows one."""
        return self.model.get("paper_name")

    @property
    def by_dataset(self) -> dict[str, dict[str, Any]]:
        """The summary's per-dataset metric rows, by dataset name."""
        return self.summary["results"]["by_dataset"]

    @property
    def datasets(self) -> list[str]:
        """The datasets the run scored, in the summary's order."""
        return list(self.by_dataset)

    @property
    def throughput(self) -> float | None:
        """Texts per second over the run, or None when the summary does not say."""
        run = self.summary.get("run", {})
        if run.get("texts_per_second"):
            return float(run["texts_per_second"])
        # Result files from before run records: texts over summed wall time of the datasets. A dataset whose text
        # count is null (the schema allows it) is left out, its time too: its texts are unknown, not none.
        counted = [row for row in self.by_dataset.values() if row.get("n_texts") is not None]
        wall = sum(row.get("wall_time_s") or 0.0 for row in counted)
        return sum(row["n_texts"] for row in counted) / wall if wall > 0 else None

    def settings(self) -> dict[str, Any]:
        """What was chosen for this run besides the model: scorer options, precision, hypotheses, sampling."""
        model, evaluation = self.model, self.summary.get("evaluation", {})
        chosen = {k: model.get(k) for k in ("pooling", "score_type", "dtype") if model.get(k) is not None}
        chosen.update(model.get("options") or {})
        chosen.update(
            {
                k: evaluation.get(k)
                for k in ("hypotheses", "template", "unlabelled_policy", "max_samples", "seed")
                if k in evaluation
            }
        )
        return chosen

    def protocol_differences(self) -> list[str]:
        """How this run was made otherwise than the paper's published numbers were: see :func:`protocol_differences`."""
        return protocol_differences(self.summary)

    def details(self, dataset: str) -> DatasetResult | None:
        """Per-text gold labels and predictions of one dataset, or None when the details are gone."""
        if dataset not in self._details:
            result = self.store.load(dataset)
            if result is not None and not self._same_run(result):
                # Another run's details beside this summary (a moved or copied file): their intervals, McNemar
                # tests and confusion matrices would sit beside this run's numbers as if they were its own.
                self.notes.append(
                    f"{self.label}: {self.store.directory / dataset}.json is not this run's result for {dataset} "
                    "(another settings fingerprint or other metrics): its per-text details are not used"
                )
                result = None
            if result is None:
                result = self._cached(dataset)
            self._details[dataset] = (
                result if result is not None and result.gold is not None and result.predicted is not None else None
            )
        return self._details[dataset]

    def _same_run(self, result: DatasetResult) -> bool:
        """Whether stored details are this summary's: the fingerprint it recorded (when it did) and its metrics."""
        expected = self.summary.get("evaluation", {}).get("fingerprints", {}).get(result.dataset)
        if expected and result.fingerprint and result.fingerprint != expected:
            return False
        row = self.by_dataset.get(result.dataset, {})
        return all(
            row.get(m) is None or result.metrics.get(m) is None or abs(row[m] - result.metrics[m]) <= 1e-6
            for m in METRICS
        )

    def _cached(self, dataset: str) -> DatasetResult | None:
        """The dataset's entry in the shared result cache, for a run whose details folder is gone."""
        from zstc.benchmark.result_cache import ResultCache

        expected = self.summary.get("evaluation", {}).get("fingerprints", {}).get(dataset)
        if not expected or not self.model.get("name"):
            return None
        return ResultCache().find(self.model["name"], dataset, expected)

    def row(self) -> ModelRow:
        """This run as a row of the paper's tables, beside the published models."""
        return ModelRow(
            label=self.label,
            family=self.model.get("family"),
            params_millions=self.model.get("parameters_millions"),
            scores={
                metric: {name: row[metric] for name, row in self.by_dataset.items() if metric in row}
                for metric in METRICS
            },
            source="run",
            throughput=self.throughput,
        )


def scored_every_text(dataset: str, n_texts: int, source_texts: int | None, max_samples: int | None) -> bool:
    """Whether a run scored every text of ``dataset``: no cap, or a cap at or above its size, or the paper's draw, which
    keeps rottentomatoes whole above the cap. Without the size recorded (summaries before ``source_texts``), exactly the
    cap reads as a sample."""
    if max_samples is None:
        return True
    if source_texts is not None:
        return n_texts == source_texts
    return n_texts < max_samples or (n_texts > max_samples and dataset in PAPER_WHOLE_DATASETS)


def sample_differences(summary: dict[str, Any]) -> dict[str, str]:
    """The datasets of a run summary whose scored texts are not the ones the paper scored, each with how:
    ``"whole"`` (every text of a dataset of which the paper scored the harness's draw of 1000), ``"drawn"`` (a draw of
    1000 texts of a dataset the paper scored whole: rottentomatoes), ``"part"`` (read from a file holding fewer texts
    than the published test set, as the packaged sample does: the catalog's ``texts``) or ``"sampled"`` (any other
    sample). The paper
    scored the harness's draw of 1000 texts, every text of a smaller dataset, and all of rottentomatoes
    (:data:`PAPER_WHOLE_DATASETS`): what ``--sampling paper --max-samples 1000`` scores."""
    evaluation = summary.get("evaluation") or {}
    method, cap = evaluation.get("sampling") or "stratified", evaluation.get("max_samples")
    policy = (evaluation.get("run_identity") or {}).get("unlabelled", evaluation.get("unlabelled_policy"))
    whole_file = policy in (None, "paper")  # under 'exclude' a file's count leaves out texts without a hypothesis
    differences: dict[str, str] = {}
    for name, row in ((summary.get("results") or {}).get("by_dataset") or {}).items():
        scored, source = row.get("n_texts"), row.get("source_texts")
        published_size = catalog()[name].texts if name in catalog() else None
        if whole_file and source is not None and published_size is not None and source < published_size:
            differences[name] = "part"  # a file with only part of the test set: the packaged sample, or a cut file
            continue
        if scored is None:  # a summary that did not record it: its sample, as it said
            if evaluation.get("sampled", cap is not None):
                differences[name] = "sampled"
            continue
        if scored_every_text(name, scored, source, cap):
            if scored > PAPER_SAMPLE_SIZE and name not in PAPER_WHOLE_DATASETS:
                differences[name] = "whole"
        elif method in HARNESS_DRAWS and cap == PAPER_SAMPLE_SIZE:
            if (
                name in PAPER_WHOLE_DATASETS
            ):  # the harness's draw, or the paper's as zstc drew it before it kept it whole
                differences[name] = "drawn"
        else:
            differences[name] = "sampled"
    return differences


def protocol_differences(summary: dict[str, Any]) -> list[str]:
    """How a run was made otherwise than the paper's published numbers were (BTZSC's own hypotheses, texts whose class
    has no hypothesis counted as class 0, the texts the paper scored: :func:`sample_differences`): one phrase each,
    none for a run made as the paper's were. Read from the recorded run identity, else the evaluation fields."""
    evaluation = summary.get("evaluation", {})
    identity = evaluation.get("run_identity") or {}
    hypotheses = identity.get("hypotheses") or {
        "variant": evaluation.get("hypotheses"),
        "template": evaluation.get("template"),
    }
    differences = []
    if hypotheses.get("variant") not in (None, "dataset") or hypotheses.get("template") is not None:
        template = f" with template {hypotheses['template']!r}" if hypotheses.get("template") is not None else ""
        differences.append(f"hypotheses {hypotheses.get('variant')!r}{template} instead of BTZSC's own")
    if identity.get("adapt"):
        differences.append(
            f"decisions adapted to each dataset's scores ({identity['adapt']}) instead of each text alone"
        )
    policy = identity.get("unlabelled", evaluation.get("unlabelled_policy"))
    if policy not in (None, "paper"):
        differences.append(f"unlabelled policy {policy!r} instead of 'paper'")
    samples = sample_differences(summary)
    by_dataset = summary["results"]["by_dataset"]
    method, cap = evaluation.get("sampling") or "stratified", evaluation.get("max_samples")
    paper_draw = f"--sampling paper --max-samples {PAPER_SAMPLE_SIZE}"
    whole = [f"{name} ({by_dataset[name]['n_texts']})" for name, kind in sorted(samples.items()) if kind == "whole"]
    if whole:
        differences.append(
            f"every text of {', '.join(whole)}, where the paper scored the harness's draw of {PAPER_SAMPLE_SIZE} "
            f"({paper_draw} scores those)"
        )
    drawn = [name for name, kind in sorted(samples.items()) if kind == "drawn"]
    if drawn:
        differences.append(
            f"a draw of {cap} texts of {', '.join(drawn)}, which the paper scored whole ({paper_draw} does)"
        )
    part = [
        f"{name} ({by_dataset[name]['source_texts']} of {catalog()[name].texts})"
        for name, kind in sorted(samples.items())
        if kind == "part"
    ]
    if part:
        differences.append(
            f"only part of the published test set of {', '.join(part)} (the packaged sample, or a cut file)"
        )
    if "sampled" in samples.values():
        differences.append(
            f"a {method} sample of at most {cap} texts per dataset, where the paper scored its own sample "
            f"of {PAPER_SAMPLE_SIZE} ({paper_draw})"
        )
    differences.extend(_paper_option_differences(identity))
    return differences


def _paper_option_differences(identity: dict[str, Any]) -> list[str]:
    """The scorer options a run left otherwise than the paper's row was measured (the registry's ``paper_options``:
    known for all-MiniLM-L6-v2's [CLS] pooling only; the protocol fixes none for the other models)."""
    spec = next((s for s in registered_models() if s.model_id == identity.get("model")), None)
    if spec is None or "scorer_options" not in identity:  # a summary from before run identities: not recorded
        return []
    return spec.paper_option_differences(identity["scorer_options"])


def labelled(result: DatasetResult) -> tuple[np.ndarray, np.ndarray]:
    """(gold, predicted) of a result from :meth:`Run.details`, which returns only results that have both."""
    assert result.gold is not None and result.predicted is not None
    return result.gold, result.predicted


def load_runs(paths: list[str | Path]) -> list[Run]:
    """Read bench result files; labels are made unique when two files hold the same model. One file given twice
    (by the same path, another spelling of it or a link) is refused: the report would compare the run with itself."""
    runs: list[Run] = []
    seen: dict[tuple[int, int], int] = {}
    for i, path in enumerate(paths):
        summary = load_summary(path)
        stat = Path(path).stat()
        first_index = seen.setdefault((stat.st_dev, stat.st_ino), i)
        if first_index != i:
            first = paths[first_index]
            also = "" if str(first) == str(path) else f" (also as {first})"
            raise DataError(f"{path}: the same result file given twice{also}; a report compares different runs")
        if not isinstance(summary["results"], dict) or not summary["results"].get("by_dataset"):
            raise DataError(f"{path}: no per-dataset results in 'results.by_dataset'")
        runs.append(Run(Path(path), summary))
    # Runs of one model that differ in a setting (pooling, score type, hypotheses, ...) are named by it, so
    # tables, figures and titles tell them apart; otherwise by file name, then by position.
    for short in {run.short_name for run in runs}:
        same = [run for run in runs if run.short_name == short]
        settings = [run.settings() for run in same]
        differing = [
            k for k in dict.fromkeys(k for s in settings for k in s) if len({repr(s.get(k)) for s in settings}) > 1
        ]
        if len(same) > 1 and differing:
            for run, setting in zip(same, settings):
                run.label = f"{short} (" + ", ".join(f"{k}={setting.get(k)}" for k in differing) + ")"
    labels = [run.label for run in runs]
    for i, run in enumerate(runs):
        if labels.count(run.label) > 1:
            run.label = f"{run.label} #{i + 1}"
    return runs


def paper_model_facts() -> dict[str, tuple[str | None, float | None]]:
    """Paper short name -> (model family, parameters in millions), from the model registry."""
    facts: dict[str, tuple[str | None, float | None]] = {
        name: (family, PAPER_MODELS_WITHOUT_HUB_ID_SIZES.get(name))
        for name, family in PAPER_MODELS_WITHOUT_HUB_ID.items()
    }
    for spec in registered_models():
        if spec.paper_name:
            facts[spec.paper_name] = (spec.family, spec.params_millions)
    return facts


def paper_rows() -> list[ModelRow]:
    """The paper's 38 models with their published per-dataset numbers for every metric."""
    facts = paper_model_facts()
    tables = {metric: published(metric) for metric in METRICS}
    rows = []
    for name in tables["macro_f1"]:
        family, params = facts.get(name, (None, None))
        rows.append(
            ModelRow(
                label=name,
                family=family,
                params_millions=params,
                scores={
                    metric: {k: v for k, v in tables[metric].get(name, {}).items() if k in catalog()}
                    for metric in METRICS
                },
                source="paper",
            )
        )
    return rows


def compared_datasets(runs: list[Run]) -> list[str]:
    """The datasets every run has, in the paper's order (all 22 when there are no runs)."""
    names = [name for name in catalog() if all(name in run.by_dataset for run in runs)]
    if runs and not names:
        raise DataError(
            "the result files have no dataset in common: "
            + "; ".join(f"{r.path}: {', '.join(r.datasets)}" for r in runs)
        )
    return names
