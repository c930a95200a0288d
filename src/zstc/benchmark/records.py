"""What a bench run writes, as pydantic models: one dataset's result and the run summary.

The models are the files' schema: :class:`DatasetResult` is ``<out>.details/<dataset>.json`` (its per-text
arrays live in the ``.npz`` beside it), :class:`RunSummary` is ``<out>.json``. Both are validated when
written and when read; ``zstc schema`` prints their JSON schemas (also in ``docs/schemas/``). The public
leaderboard entry is :class:`zstc.benchmark.leaderboard.LeaderboardEntry`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.json_schema import SkipJsonSchema

SCHEMA_VERSION: Literal["1.0"] = "1.0"

_CONFIG = ConfigDict(
    use_attribute_docstrings=True,
    extra="forbid",
    validate_assignment=True,
    ser_json_inf_nan="constants",  # an average over no dataset is NaN, written as NaN as json.dumps does
)


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (linear interpolation), rounded for the result file; None when empty."""
    return round(float(np.percentile(values, q)), 5) if values else None


def first_problem(error: ValidationError) -> str:
    """One line naming the first invalid field (``results.by_dataset.imdb.macro_f1: ...``) and how many more."""
    problems = error.errors()
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def integral(value: Any) -> Any:
    """A float with no fractional part (``100.0``) as the integer it is; any other value as it is."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Integer = Annotated[int, BeforeValidator(integral)]
"""A count in a file zstc writes and reads. A JSON 100.0 is the integer 100 to the published schemas ("type":
"integer" in JSON Schema 2020-12 is any number with no fractional part), so it is one here too, also where a
summary is read strictly (:func:`zstc.benchmark.store.load_summary` refused it): 100.5, "100" and true fail both."""


# -- one dataset ----------------------------------------------------------------------------------------


class Timing(BaseModel):
    """How one dataset was timed: a warm-up call, then one call per batch of texts."""

    model_config = _CONFIG
    warmup_s: float
    """The first call (one text): model loading and label-side caches, kept out of the throughput."""
    batch_texts: Integer
    batch_latencies_s: list[float]


Metric = Annotated[float, Field(ge=0.0, le=1.0, strict=True, allow_inf_nan=False)]
"""A metric in [0, 1]: a JSON number (not a boolean, not a string, not NaN). A hand-edited result file with
macro-F1 7.5 or NaN is refused when read, not averaged into a report or a leaderboard."""


class FourMetrics(BaseModel):
    """The benchmark's four metrics (:data:`zstc.benchmark.metrics.METRICS`)."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", ser_json_inf_nan="constants")
    macro_f1: Metric
    accuracy: Metric
    macro_precision: Metric
    macro_recall: Metric


class DatasetRow(FourMetrics):
    """One dataset in the summary's ``results.by_dataset``: the four metrics, size and speed."""

    model_config = ConfigDict(extra="allow")
    n_texts: Integer | None = None
    source_texts: Integer | None = None
    """Texts of the dataset before sampling (None: not recorded); ``n_texts`` below it: a sample."""
    n_labels: Integer | None = None
    unlabelled_texts: Integer | None = None
    wall_time_s: float | None = None
    texts_per_second: float | None = None
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None


class Software(BaseModel):
    """The code a result was computed with: zstc's version and git commit, the libraries' versions. They are not
    part of a result's fingerprint (a library update would make every stored result stale), so a result reused
    from the details folder or the result cache may have been computed by other code than the run reusing it:
    its own record says by which, and the summary notes each dataset computed by other code than its run record's."""

    model_config = ConfigDict(
        use_attribute_docstrings=True, extra="allow"
    )  # more libraries from newer zstc versions stay readable
    zstc_version: str | None = None
    git_commit: str | None = None
    """The zstc checkout's commit (``+dirty`` with local changes); None where not known (installed from a wheel)."""
    libraries: dict[str, str | None] = Field(default_factory=dict)
    """Python and the libraries that determine the numbers (torch, transformers, sentence-transformers, ...)."""


class DatasetResult(BaseModel):
    """One dataset of a bench run: ``<out>.details/<dataset>.json`` plus the arrays of the ``.npz``."""

    model_config = ConfigDict(**_CONFIG, arbitrary_types_allowed=True)

    dataset: str
    family: str | None
    metrics: dict[str, Metric]
    n_texts: Integer
    label_names: list[str]
    hypotheses: list[str]
    unlabelled_policy: str
    unlabelled_texts: Integer
    wall_time_s: float
    fingerprint: str
    notes: list[str] = Field(default_factory=list)
    timing: Timing | None = None
    """None for results stored before timing was recorded."""
    peak_rss_mb: float | None = None
    peak_cuda_mb: float | None = None
    data_sha256: str | None = None
    scorer: dict[str, Any] = Field(default_factory=dict)
    """What the scorer said about itself (``Scorer.describe()``)."""
    source_texts: Integer | None = None
    """Texts of the dataset before sampling (None: not recorded)."""
    run_fingerprint: str | None = None
    """The run's settings (all datasets): results of other settings in one details folder are refused."""
    identity: dict[str, Any] = Field(default_factory=dict)
    """What the fingerprint covers, readable: model, data, precision, sampling, options (``identity.run``: the run's part)."""
    software: Software | None = None
    """The code that computed it (None: stored by a zstc that did not record it: unknown)."""

    # Per-text arrays, kept in the .npz beside the JSON (not part of the JSON or its schema).
    scores: SkipJsonSchema[np.ndarray | None] = Field(default=None, exclude=True, repr=False)
    gold: SkipJsonSchema[np.ndarray | None] = Field(default=None, exclude=True, repr=False)
    predicted: SkipJsonSchema[np.ndarray | None] = Field(default=None, exclude=True, repr=False)
    source_index: SkipJsonSchema[np.ndarray | None] = Field(default=None, exclude=True, repr=False)

    ARRAYS: ClassVar[tuple[str, ...]] = ("scores", "gold", "predicted", "source_index")

    def summary(self) -> DatasetRow:
        """This dataset's row in the run summary."""
        return DatasetRow(
            **self.metrics,
            n_texts=self.n_texts,
            source_texts=self.source_texts,
            n_labels=len(self.label_names),
            unlabelled_texts=self.unlabelled_texts,
            wall_time_s=round(self.wall_time_s, 3),
            texts_per_second=round(self.n_texts / self.wall_time_s, 2) if self.wall_time_s > 0 else None,
            latency_p50_s=percentile(self.batch_latencies, 50),
            latency_p95_s=percentile(self.batch_latencies, 95),
        )

    @property
    def batch_latencies(self) -> list[float]:
        """Seconds per timed scorer call (empty for results stored before timing was recorded)."""
        return list(self.timing.batch_latencies_s) if self.timing is not None else []

    def arrays(self) -> dict[str, np.ndarray]:
        """The per-text arrays that are set, by name."""
        return {name: value for name in self.ARRAYS if (value := getattr(self, name)) is not None}

    def record(self) -> dict[str, Any]:
        """The JSON content of the details file."""
        return self.model_dump(mode="json")


# -- the run summary -----------------------------------------------------------------------------------


class ModelFacts(BaseModel):
    """The summary's ``model``: registry facts, what the scorer said about itself, the options given."""

    model_config = ConfigDict(
        use_attribute_docstrings=True, extra="allow"
    )  # plus every key of Scorer.describe() (device, dtype, batch_size, ...)
    name: str
    family: str | None = None
    paper_name: str | None = None
    parameters_millions: float | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    revision: str | None = None


class Evaluation(BaseModel):
    """The summary's ``evaluation``: what was scored and how."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="allow", validate_assignment=True)
    benchmark: str = "BTZSC"
    datasets: list[str] = Field(default_factory=list)
    data: str | None = None
    unlabelled_policy: str | None = None
    hypotheses: str | None = None
    template: str | None = None
    sampling: str | None = None
    max_samples: Integer | None = None
    seed: Integer | None = None
    precision: str | None = None
    device: str | None = None
    partial: bool = False
    sampled: bool = False
    zstc_version: str | None = None
    created: str | None = None
    """ISO 8601 time the summary was written (UTC)."""
    details: str | None = None
    """The folder of per-dataset results, beside the summary."""
    data_sha256: dict[str, str | None] = Field(default_factory=dict)
    hypotheses_used: dict[str, list[str]] = Field(default_factory=dict)
    fingerprints: dict[str, str] = Field(default_factory=dict)
    """Each dataset's result fingerprint (what the shared result cache files it under)."""
    software: dict[str, Software | None] = Field(default_factory=dict)
    """Each dataset's code as its result records it (a reused result keeps its own; null: not recorded, unknown)."""
    run_identity: dict[str, Any] | None = None
    """What determines every dataset's numbers in the run: model, revision, precision, scorer options,
    hypotheses, sampling (None in files written before it was kept)."""
    run_fingerprint: str | None = None
    """The hash of ``run_identity``: a later bench to the same ``--out`` with another one is refused."""


class RunRecord(BaseModel):
    """The summary's ``run``: speed, memory, machine and code, pooled over the datasets."""

    model_config = ConfigDict(
        use_attribute_docstrings=True, extra="allow"
    )  # fields added by newer zstc versions stay readable
    wall_time_s: float | None = None
    texts_per_second: float | None = None
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    peak_rss_mb: float | None = None
    peak_cuda_mb: float | None = None
    device: str | None = None
    precision: str | None = None
    dtype: str | None = None
    batch_size: Integer | None = None
    zstc_version: str | None = None
    """With ``git_commit`` and ``libraries``: the code that computed every dataset, where they all record the same;
    otherwise this run's, and ``notes`` names each dataset computed by other (or unrecorded) code."""
    git_commit: str | None = None
    libraries: dict[str, str | None] = Field(default_factory=dict)


class Aggregate(FourMetrics):
    """Unweighted means over datasets with standard deviations across them (``results.overall``, ``by_task``)."""

    macro_f1_std: float | None = None
    accuracy_std: float | None = None
    macro_precision_std: float | None = None
    macro_recall_std: float | None = None
    n_datasets: Integer | None = None


class Results(BaseModel):
    """A run's metrics: overall (the mean over datasets), per task family and per dataset."""

    model_config = _CONFIG
    overall: Aggregate
    by_task: dict[str, Aggregate]
    by_dataset: dict[str, DatasetRow] = Field(min_length=1)


class PaperComparison(BaseModel):
    """The paper's published macro-F1 of the same model, for the datasets of the run."""

    model_config = _CONFIG
    model: str | None
    macro_f1: dict[str, float]


class MultiLabelSummary(BaseModel):
    """``bench --multi-label``: threshold decisions per dataset (label-wise weighted F1, per-label P/R/F1)."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", ser_json_inf_nan="constants")
    threshold: float
    margin: float | None = None
    """The default rule's margin (the embedding family's): a label also scores within it of the text's best."""
    by_dataset: dict[str, dict[str, Any]]


class RunSummary(BaseModel):
    """``zstc bench --out r.json``: the public leaderboard schema 1.0 layout plus zstc's own sections."""

    model_config = _CONFIG
    schema_version: Literal["1.0"] = "1.0"
    model: ModelFacts
    evaluation: Evaluation = Field(default_factory=Evaluation)
    run: RunRecord | None = None
    """None in files written before run records."""
    results: Results
    notes: dict[str, list[str]] = Field(default_factory=dict)
    paper: PaperComparison | None = None
    """Only when the model is one of the paper's 38 and its numbers are available."""
    multi_label: MultiLabelSummary | None = None

    OPTIONAL_SECTIONS: ClassVar[tuple[str, ...]] = ("run", "paper", "multi_label")
    """Sections a summary may leave out (or hold as null)."""

    def content(self) -> dict[str, Any]:
        """The JSON content of the summary file (optional sections left out when absent)."""
        content = self.model_dump(mode="json")
        for optional in self.OPTIONAL_SECTIONS:
            if content[optional] is None:
                del content[optional]
        return content


SCHEMAS: dict[str, type[BaseModel]] = {"result": DatasetResult, "summary": RunSummary}
"""Published schemas by name (``zstc schema NAME``); the leaderboard adds ``leaderboard``."""
