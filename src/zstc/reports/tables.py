"""Report tables: built once as data, rendered as Markdown, CSV and HTML.

A cell is a string, a number, ``None`` (blank), a :class:`MeanStd` (the paper's "0.512 (0.130)") or a
:class:`~zstc.reports.stats.Interval` ("0.512 [0.47, 0.55]"). Text formats round for reading; CSV keeps
full precision and splits compound cells into columns (``x``, ``x_std`` / ``x``, ``x_low``, ``x_high``).
"""

from __future__ import annotations

import csv
import html
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zstc.benchmark.catalog import catalog, families
from zstc.reports.rows import ModelRow
from zstc.reports.stats import Interval, McNemar, RankAgreement


@dataclass(frozen=True)
class MeanStd:
    """A mean with its standard deviation across datasets, shown as ``0.1234 (0.056)``."""

    mean: float
    std: float


Cell = str | int | float | MeanStd | Interval | None


@dataclass
class Table:
    """A titled table; ``highlight`` holds the indices of rows to emphasise (the user's own runs)."""

    name: str
    """File stem for its Markdown/CSV files."""
    title: str
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    highlight: set[int] = field(default_factory=set)
    caption: str = ""

    # -- rendering ------------------------------------------------------------------------------------

    def to_markdown(self) -> str:
        """The table as GitHub Markdown: title, caption, right-aligned numeric columns, highlighted rows in bold."""
        lines = [f"### {markdown_text(self.title)}", ""]
        if self.caption:
            lines += [markdown_text(self.caption), ""]
        lines.append("| " + " | ".join(_markdown_cell(column) for column in self.columns) + " |")
        lines.append(
            "|" + "|".join("---" if _is_text_column(self.rows, j) else "---:" for j in range(len(self.columns))) + "|"
        )
        for i, row in enumerate(self.rows):
            cells = [_markdown_cell(format_cell(cell)) for cell in row]
            if i in self.highlight:
                cells = [f"**{cell}**" if cell else cell for cell in cells]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        """The table as CSV: full-precision numbers, a mean and std or an interval split into columns of their own."""
        kinds = [_column_kind(self.rows, j) for j in range(len(self.columns))]
        header: list[str] = []
        for column, kind in zip(self.columns, kinds):
            by_kind: dict[type | None, list[str]] = {
                MeanStd: [column, f"{column}_std"],
                Interval: [column, f"{column}_low", f"{column}_high"],
            }
            header += by_kind.get(kind, [column])
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        for row in self.rows:
            out: list[Any] = []
            for cell, kind in zip(row, kinds):
                # A plain number in a compound column (a run's macro-F1 where no interval was drawn) is its value,
                # with the other columns blank: it is not left out.
                if kind is MeanStd:
                    out += [cell.mean, cell.std] if isinstance(cell, MeanStd) else [_csv_value(cell), ""]
                elif kind is Interval:
                    out += (
                        [cell.value, cell.low, cell.high] if isinstance(cell, Interval) else [_csv_value(cell), "", ""]
                    )
                else:
                    out.append(_csv_value(cell))
            writer.writerow(out)
        return buffer.getvalue()

    def to_html(self) -> str:
        """The table as an HTML section: title, caption and a scrolling ``<table>``, all escaped; highlighted rows marked."""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = []
        for i, row in enumerate(self.rows):
            cells = "".join(
                f'<td class="{"text" if isinstance(c, str) else "num"}">{html.escape(format_cell(c))}</td>' for c in row
            )
            body.append(f"<tr{' class=mine' if i in self.highlight else ''}>{cells}</tr>")
        caption = f'<p class="caption">{html.escape(self.caption)}</p>' if self.caption else ""
        # "table-", as figures have "fig-": a table named as a section ("runs") gave the page one id twice.
        return (
            f'<section id="table-{html.escape(self.name)}"><h3>{html.escape(self.title)}</h3>{caption}<div class="scroll"><table>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div></section>"
        )


def markdown_text(text: str) -> str:
    """``text`` for Markdown, where HTML passes through raw: a run label (a model name, a file name) with ``<b>`` or
    ``&`` shows as written, as index.html shows it, not as markup."""
    return html.escape(text, quote=False)


def _markdown_cell(text: str) -> str:
    """``text`` inside a Markdown table row, where a bare ``|`` (in a cell or a header: a run label from ``x|y.json``)
    would end the cell and shift the rest."""
    return markdown_text(text).replace("|", "\\|")


def _csv_value(cell: Cell) -> Any:
    """A simple cell as CSV writes it: blank for a missing value or NaN."""
    return "" if cell is None or (isinstance(cell, float) and math.isnan(cell)) else cell


def _is_text_column(rows: Sequence[Sequence[Cell]], j: int) -> bool:
    return all(isinstance(row[j], str) or row[j] is None for row in rows)


def _column_kind(rows: Sequence[Sequence[Cell]], j: int) -> type | None:
    for row in rows:
        if isinstance(row[j], (MeanStd, Interval)):
            return type(row[j])
    return None


def format_cell(cell: Cell) -> str:
    """A table cell as text: scores to 4 decimals, larger quantities to 5 significant digits, intervals
    as ``value [low, high]`` and means as ``mean (std)``; nothing for a missing value."""
    if cell is None:
        return ""
    if isinstance(cell, MeanStd):
        return "" if math.isnan(cell.mean) else f"{cell.mean:.4f} ({cell.std:.3f})"
    if isinstance(cell, Interval):
        return f"{cell.value:.4f} [{cell.low:.3f}, {cell.high:.3f}]"
    if isinstance(cell, float):
        # Scores (0..1) to 4 decimals; larger quantities (seconds, MiB) to 5 significant digits.
        return "" if math.isnan(cell) else f"{cell:.4f}" if abs(cell) < 10 else f"{cell:.5g}"
    return str(cell)


def _params(row: ModelRow) -> str:
    return f"{row.params_millions:g}" if row.params_millions else ""


def _ranked(rows: list[ModelRow], datasets: list[str]) -> list[ModelRow]:
    """Best overall macro-F1 first; the paper's models and the user's runs interleave by score."""
    return sorted(
        rows, key=lambda r: -r.mean("macro_f1", datasets) if not math.isnan(r.mean("macro_f1", datasets)) else math.inf
    )


def _scope(datasets: list[str]) -> str:
    n = len(datasets)
    return (
        "all 22 BTZSC datasets" if n == len(catalog()) else f"{n} of {len(catalog())} datasets ({', '.join(datasets)})"
    )


# -- the paper's tables -------------------------------------------------------------------------------


def family_table(rows: list[ModelRow], datasets: list[str]) -> Table:
    """The paper's Table 2: macro-F1 per task family (std across its datasets), overall macro-F1 and accuracy."""
    groups = {family: [d for d in members if d in datasets] for family, members in families().items()}
    groups = {family: members for family, members in groups.items() if members}
    table = Table(
        "table2_families",
        "Table 2: macro-F1 by task family, overall macro-F1 and accuracy",
        ["model", "source", "model family", "params (M)", *groups, "avg F1", "avg accuracy"],
        # How many datasets each family has here, counted from the table: the families weigh that much in the averages.
        caption=f"Means over {_scope(datasets)}; in parentheses the standard deviation across datasets. "
        f"Averages are unweighted over the {len(datasets)} datasets "
        f"({', '.join(f'{family} {len(members)}' for family, members in groups.items())}), as in the paper.",
    )
    for i, row in enumerate(_ranked(rows, datasets)):
        table.rows.append(
            [
                row.label,
                row.source,
                row.family or "",
                _params(row),
                *[MeanStd(row.mean("macro_f1", members), row.std("macro_f1", members)) for members in groups.values()],
                MeanStd(row.mean("macro_f1", datasets), row.std("macro_f1", datasets)),
                row.mean("accuracy", datasets),
            ]
        )
        if row.source == "run":
            table.highlight.add(i)
    return table


METRIC_TITLES = {
    "macro_f1": "macro-F1",
    "accuracy": "accuracy",
    "macro_precision": "macro-precision",
    "macro_recall": "macro-recall",
}


def dataset_table(rows: list[ModelRow], datasets: list[str], metric: str) -> Table:
    """One metric per model and dataset, with the mean over the datasets."""
    table = Table(
        f"datasets_{metric}",
        f"{METRIC_TITLES[metric]} per dataset",
        ["model", "source", *datasets, "mean"],
        caption=f"Models ordered by mean macro-F1 over {_scope(datasets)}.",
    )
    for i, row in enumerate(_ranked(rows, datasets)):
        table.rows.append(
            [row.label, row.source, *[float(v) for v in row.values(metric, datasets)], row.mean(metric, datasets)]
        )
        if row.source == "run":
            table.highlight.add(i)
    return table


def paper_comparison_table(
    run: ModelRow,
    paper: ModelRow,
    datasets: list[str],
    intervals: Mapping[str, Interval | None] | None = None,
    note: str = "",
) -> Table:
    """A run against the paper's published row for the same model: delta per dataset.

    With bootstrap intervals, "in CI" says whether the published macro-F1 lies inside this run's 95%
    interval, which is what "reproduced" can honestly mean for a sampled run. ``note`` (how the run is off the
    paper's protocol) goes into the caption, beside the numbers it qualifies.
    """
    intervals = intervals or {}
    table = Table(
        f"paper_delta_{_slug(run.label)}",
        f"{run.label} against the paper's {paper.label}",
        [
            "dataset",
            "family",
            "macro-F1",
            "paper F1",
            "delta F1",
            "paper F1 in 95% CI",
            "accuracy",
            "paper accuracy",
            "delta accuracy",
        ],
        caption="delta = this run minus the published value." + (f" {note}" if note else ""),
    )
    family_of = {name: spec.family for name, spec in catalog().items()}
    for name in datasets:
        ours_f1, theirs_f1 = run.scores["macro_f1"].get(name), paper.scores["macro_f1"].get(name)
        ours_acc, theirs_acc = run.scores["accuracy"].get(name), paper.scores["accuracy"].get(name)
        if theirs_f1 is None:
            continue
        interval = intervals.get(name)
        table.rows.append(
            [
                name,
                family_of.get(name, ""),
                interval if interval is not None else ours_f1,
                theirs_f1,
                _delta(ours_f1, theirs_f1),
                ("yes" if interval.contains(theirs_f1) else "no") if interval is not None else "",
                ours_acc,
                theirs_acc,
                _delta(ours_acc, theirs_acc),
            ]
        )
    overall = intervals.get("overall")
    table.rows.append(
        [
            "overall",
            "",
            overall if overall is not None else run.mean("macro_f1", datasets),
            paper.mean("macro_f1", datasets),
            run.mean("macro_f1", datasets) - paper.mean("macro_f1", datasets),
            ("yes" if overall.contains(paper.mean("macro_f1", datasets)) else "no") if overall is not None else "",
            run.mean("accuracy", datasets),
            paper.mean("accuracy", datasets),
            run.mean("accuracy", datasets) - paper.mean("accuracy", datasets),
        ]
    )
    table.highlight.add(len(table.rows) - 1)
    return table


def _delta(ours: float | None, theirs: float | None) -> float | None:
    return None if ours is None or theirs is None else ours - theirs


def _slug(text: str) -> str:
    return "_".join("".join(c if c.isalnum() else " " for c in text).split()).lower()


# -- statistics and run records -----------------------------------------------------------------------


def interval_table(
    label: str,
    intervals: Mapping[str, Mapping[str, Interval | None]],
    n_texts: dict[str, int],
    draws: int,
    note: str = "",
) -> Table:
    """Bootstrap intervals of one run: ``intervals[metric][dataset or "overall"]`` (None: blank, ``note`` says why)."""
    metrics = list(intervals)
    table = Table(
        f"ci_{_slug(label)}",
        f"{label}: bootstrap 95% confidence intervals",
        ["dataset", "texts", *(METRIC_TITLES[m] for m in metrics)],
        caption=f"Percentile bootstrap over texts, {draws} seeded draws; the overall interval resamples each dataset independently."
        + (f" {note}" if note else ""),
    )
    names = [n for n in intervals[metrics[0]] if n != "overall"]
    total = sum(n_texts.values()) if all(n in n_texts for n in names) else None  # not a sum that leaves a dataset out
    for name in names + ["overall"]:
        table.rows.append(
            [name, n_texts.get(name, total if name == "overall" else None), *(intervals[m].get(name) for m in metrics)]
        )
    table.highlight.add(len(table.rows) - 1)
    return table


def mcnemar_table(pairs: dict[tuple[str, str], dict[str, McNemar]]) -> Table:
    """McNemar results: ``pairs[(label_a, label_b)][dataset or "all datasets"]``."""
    table = Table(
        "mcnemar",
        "Paired comparison on the same texts (McNemar's exact test)",
        ["model A", "model B", "dataset", "shared texts", "only A correct", "only B correct", "p-value"],
        caption="Only texts both runs scored (same data file, same rows) are paired; "
        "'all datasets' pools the discordant pairs. A small p-value means the two models' errors differ more than chance explains.",
    )
    for (a, b), tests in pairs.items():
        for name, test in tests.items():
            table.rows.append([a, b, name, test.n_texts, test.only_a, test.only_b, f"{test.p_value:.3g}"])
            if name == "all datasets":
                table.highlight.add(len(table.rows) - 1)
    return table


def kendall_table(agreements: list[tuple[str, RankAgreement | None]]) -> Table:
    """The rank-agreement table: one row per pair of rankings compared."""
    table = Table("kendall", "Rank agreement (Kendall's tau-b)", ["rankings compared", "items", "tau", "p-value"])
    for what, agreement in agreements:
        if agreement is None:
            table.rows.append([what, None, "fewer than 3 items in common", None])
        else:
            table.rows.append([what, agreement.n, round(agreement.tau, 4), f"{agreement.p_value:.3g}"])
    return table


RUN_FACTS: tuple[tuple[str, str, str], ...] = (
    # (label, section of the result file, key)
    ("model", "model", "name"),
    ("model family", "model", "family"),
    ("params (M)", "model", "parameters_millions"),
    ("revision", "model", "revision"),
    ("device", "run", "device"),
    ("precision", "run", "precision"),
    ("batch size", "run", "batch_size"),
    ("datasets", "evaluation", "datasets"),
    ("max samples", "evaluation", "max_samples"),
    ("wall time (s)", "run", "wall_time_s"),
    ("texts/s", "run", "texts_per_second"),
    ("latency p50 (s/batch)", "run", "latency_p50_s"),
    ("latency p95 (s/batch)", "run", "latency_p95_s"),
    ("peak RSS (MiB)", "run", "peak_rss_mb"),
    ("peak CUDA (MiB)", "run", "peak_cuda_mb"),
    ("zstc", "run", "zstc_version"),
    ("git commit", "run", "git_commit"),
    ("created", "evaluation", "created"),
)


def _fact_cell(value: Any) -> Cell:
    if isinstance(value, list):  # the dataset list: its length
        return len(value)
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    return str(value)


def run_facts_table(runs: Sequence[Any]) -> Table:
    """How each run was made: one column per run, one row per recorded fact (blank when not recorded)."""
    table = Table(
        "runs",
        "Runs: settings, speed and provenance",
        ["", *(run.label for run in runs)],
        caption="Throughput and latency exclude model loading; a batch is one scorer call on 'batch size' texts.",
    )
    for label, section, key in RUN_FACTS:
        values = [_fact_cell(run.summary.get(section, {}).get(key)) for run in runs]
        if any(v is not None for v in values):
            table.rows.append([label, *values])
    return table
