"""``zstc report``: from bench result files to tables, figures, statistics and one ``index.html``.

Output layout of ``--out DIR``::

    DIR/index.html            everything, self-contained
    DIR/report.md             every table in Markdown, figures linked
    DIR/tables/<name>.md|csv  one file per table
    DIR/figures/<name>.png|svg
    DIR/.zstc-report          says the folder is a report's, for a later report to replace
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from zstc import __version__
from zstc.benchmark.baselines import published
from zstc.benchmark.catalog import catalog
from zstc.benchmark.metrics import METRICS
from zstc.benchmark.tasks import HARNESS_DRAWS
from zstc.reports import figures as fig
from zstc.reports.html import Section, render_page
from zstc.reports.rows import ModelRow, Run, compared_datasets, labelled, load_runs, paper_rows, scored_every_text
from zstc.reports.stats import (
    BOOTSTRAP_DRAWS,
    MIN_TEXTS_FOR_INTERVAL,
    Interval,
    McNemar,
    RankAgreement,
    bootstrap_interval,
    combine_mcnemar,
    kendall_tau,
    mcnemar,
    overall_interval,
)
from zstc.reports.tables import (
    Table,
    dataset_table,
    family_table,
    interval_table,
    kendall_table,
    markdown_text,
    mcnemar_table,
    paper_comparison_table,
    run_facts_table,
)
from zstc.benchmark.store import DatasetResult
from zstc.errors import OutputError
from zstc.io import atomic_directory, atomic_write, check_output_dir
from zstc.validation import OPTIONS, check_option

INTERVAL_METRICS = ("macro_f1", "accuracy")
REPORT_FILES = ("index.html", "report.md")
"""Files a report writes at the top of its folder (tables/ and figures/ hold the rest)."""
REPORT_FOLDERS = ("tables", "figures")
"""Folders a report replaces whole (an old report's tables and figures must not outlive it)."""
REPORT_MARKER = ".zstc-report"
"""A file every report writes at the top of its folder, moved in before the rest: what tells a later report that
the folder's index.html, report.md, tables/ and figures/ are a report's to replace (two files that merely bear
those names, or an interrupted move, do not say so)."""
_EARLIER_REPORT_PAGE = re.compile(r'<p class="meta">\d+ result file\(s\): .* Made by zstc [^<]*</p>')
"""The subtitle of the index.html of a report made before :data:`REPORT_MARKER` was written."""


@dataclass
class Report:
    """What :func:`build_report` wrote: the report's folder, its index page, and the tables, figures and notes in it."""

    directory: Path
    index: Path
    tables: list[Table] = field(default_factory=list)
    figures: list[fig.SavedFigure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def build_report(
    result_files: list[str | Path],
    out: str | Path,
    *,
    include_paper: bool = True,
    draws: int = BOOTSTRAP_DRAWS,
    seed: int = 0,
    confusion_matrices: bool = True,
) -> Report:
    """Write the report for ``result_files`` into ``out``; returns what was written.

    The report is built in a folder beside ``out`` and moved in only when complete (``index.html`` last): a
    failure (a full disk) or an interrupt leaves ``out`` as it was, never half a new report over an old one.
    """
    check_option("draws", draws, OPTIONS["bootstrap"])  # report's --bootstrap
    directory = check_output_dir(Path(out), inputs=list(result_files), files=REPORT_FILES)
    _check_not_the_users_folders(directory)
    runs = load_runs(list(result_files))
    with atomic_directory(directory, first=[REPORT_MARKER], last=REPORT_FILES[::-1]) as staging:
        built = _build(
            runs, staging, include_paper=include_paper, draws=draws, seed=seed, confusion_matrices=confusion_matrices
        )

    def moved(path: Path) -> Path:
        return directory / path.relative_to(staging)

    return Report(
        directory,
        moved(built.index),
        built.tables,
        notes=built.notes,
        figures=[replace(f, png=moved(f.png), svg=moved(f.svg)) for f in built.figures],
    )


def _check_not_the_users_folders(directory: Path) -> None:
    """Refuse an ``--out`` whose index.html, report.md, tables/ or figures/ no earlier report wrote: a report
    overwrites those files and replaces those folders whole, which deleted a user's own (``--out .`` in a project
    with a figures/ folder, even when the project had an index.html and a report.md of its own too)."""
    if _holds_a_report(directory):
        # An earlier report: its files, tables and figures are replaced by the new ones, but not a file the user put
        # in its tables/ or figures/ since (the marker lists the report's own; a report made before it, none).
        written = _marker_files(directory)
        if written is not None:
            for name in REPORT_FOLDERS:
                added = [
                    p.relative_to(directory).as_posix() for p in sorted((directory / name).rglob("*")) if not p.is_dir()
                ]
                added = [path for path in added if path not in written]
                if added:
                    raise OutputError(
                        f"--out {directory}: {added[0]} is not from the earlier report there, and a report replaces "
                        f"{name}/ whole; move it out or choose another folder"
                    )
        return
    for name in REPORT_FOLDERS:
        folder = directory / name
        if folder.exists() and not (folder.is_dir() and not any(folder.iterdir())):
            raise OutputError(
                f"--out {directory}: its {name}/ folder is not from a zstc report and a report replaces it whole; "
                "choose another folder"
            )
    for name in REPORT_FILES:
        if (directory / name).exists() or (directory / name).is_symlink():
            raise OutputError(
                f"--out {directory}: its {name} is not from a zstc report and a report would overwrite it; "
                "choose another folder"
            )


def _marker_files(directory: Path) -> set[str] | None:
    """The files of tables/ and figures/ that the report whose :data:`REPORT_MARKER` is in ``directory`` wrote
    (``tables/x.csv``), or None where no marker lists them."""
    try:
        lines = (directory / REPORT_MARKER).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    return {line.strip() for line in lines if line.startswith(tuple(f"{name}/" for name in REPORT_FOLDERS))} or None


def _holds_a_report(directory: Path) -> bool:
    """Whether ``directory`` holds an earlier zstc report: its :data:`REPORT_MARKER`, or (a report made before the
    marker was written) an index.html with a report's subtitle."""
    if (directory / REPORT_MARKER).is_file():
        return True
    page = directory / "index.html"
    try:
        with page.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(1 << 16)  # the subtitle comes before the first section
    except OSError:
        return False
    return bool(_EARLIER_REPORT_PAGE.search(head))


def _build(
    runs: list[Run], directory: Path, *, include_paper: bool, draws: int, seed: int, confusion_matrices: bool
) -> Report:
    """Write the report of ``runs`` into ``directory`` (see :func:`build_report`)."""
    datasets = compared_datasets(runs)
    run_rows = [run.row() for run in runs]
    # Without the paper, nothing read from its published numbers is shown: not its rows, not a run against the
    # paper's number for the same model, not a ranking of its models (--no-paper left the last two in).
    published_by_name = {row.label: row for row in paper_rows()} if include_paper else {}
    rows = run_rows + list(published_by_name.values())
    for run in runs:  # read every run's details first, so the overview can say which were not used
        for name in datasets:
            run.details(name)
    off_protocol = {
        run.label: _off_protocol_note(run)
        for run in runs
        if run.paper_name in published_by_name and run.protocol_differences()
    }
    intervals = {run.label: run_intervals(run, datasets, draws=draws, seed=seed) for run in runs}
    too_few = {run.label: note for run in runs if (note := _too_few_texts_note(run, datasets))}
    report = Report(
        directory,
        directory / "index.html",
        notes=_run_notes(runs, datasets, include_paper)
        + list(off_protocol.values())
        + [n for run in runs for n in run.notes]
        + list(too_few.values()),
    )

    overview = Section("overview", "Overview", " ".join(report.notes))
    overview.tables.append(family_table(rows, datasets))
    per_dataset = Section(
        "datasets",
        "Per-dataset results",
        "The user's runs are highlighted.",
        tables=[dataset_table(rows, datasets, metric) for metric in METRICS],
    )

    comparison = Section(
        "paper",
        "Against the paper's published numbers",
        "For runs of one of the paper's 38 models: this run minus the published value, per dataset.",
    )
    for run, row in zip(runs, run_rows):
        if run.paper_name in published_by_name:
            comparison.tables.append(
                paper_comparison_table(
                    row,
                    published_by_name[run.paper_name],
                    datasets,
                    intervals[run.label].get("macro_f1"),
                    note=off_protocol.get(run.label, ""),
                )
            )

    statistics = Section("statistics", "Statistics")
    for run in runs:
        if intervals[run.label]:
            n_texts = {
                name: int(run.by_dataset[name]["n_texts"])
                for name in datasets
                if run.by_dataset[name].get("n_texts") is not None
            }
            statistics.tables.append(
                interval_table(run.label, intervals[run.label], n_texts, draws, note=too_few.get(run.label, ""))
            )
    pairs = {
        (a.label, b.label): tests for a, b in itertools.combinations(runs, 2) if (tests := paired_tests(a, b, datasets))
    }
    if pairs:
        statistics.tables.append(mcnemar_table(pairs))
    agreements = rank_agreements(runs, run_rows, published_by_name, datasets)
    if agreements:
        statistics.tables.append(kendall_table(agreements))

    figure_dir = directory / "figures"
    figure_section = Section("figures", "Figures")
    figure_section.figures = [
        fig.save(
            fig.speed_accuracy(run_rows, datasets),
            figure_dir,
            "speed_accuracy",
            "Accuracy against throughput (Fig. 3a)",
            "dashed lines: medians of both axes (upper right: faster and better than the median); black staircase: "
            "Pareto front. Throughput is measured on each run's own "
            "device (see the runs table): compare runs made on the same hardware. The paper's speeds are not published per model.",
        ),
        fig.save(
            fig.scaling(rows, datasets),
            figure_dir,
            "scaling",
            "macro-F1 against parameter count (Fig. 2b)",
            (
                "circles: the paper's models; stars: this report's runs; lines and bands: least-squares fit of the paper's models "
                f"on log parameters per model family (at least {fig.MIN_POINTS_FOR_BAND}) with its 95% confidence band. "
                if published_by_name
                else "stars: this report's runs. "
            )
            + _unsized_note(rows),
        ),
        fig.save(fig.heatmap(rows, datasets), figure_dir, "heatmap", "macro-F1 per model and dataset"),
    ]
    confusion_section = Section(
        "confusion",
        "Confusion matrices",
        "Rows: gold class, normalised to 1; columns: predicted class.",
        collapsed=True,
    )
    if confusion_matrices:
        confusion_section.figures = confusion_figures(runs, datasets, figure_dir)

    sections = [
        overview,
        figure_section,
        per_dataset,
        comparison,
        statistics,
        confusion_section,
        Section("runs", "Runs", tables=[run_facts_table(runs)]),
    ]
    sections = [s for s in sections if s.tables or s.figures or s.anchor == "overview"]
    report.tables = _unique_names([t for s in sections for t in s.tables])
    report.figures = [f for s in sections for f in s.figures]
    _write(report, sections, runs, datasets)
    return report


# -- statistics over runs -----------------------------------------------------------------------------


def run_intervals(run: Run, datasets: list[str], *, draws: int, seed: int) -> dict[str, dict[str, Interval | None]]:
    """``{metric: {dataset: Interval, "overall": Interval}}`` from the run's per-text details ({} without them).

    A dataset of fewer than :data:`MIN_TEXTS_FOR_INTERVAL` scored texts (``bench --max-samples 1``) has None, a
    blank in the tables (:func:`_too_few_texts_note` says why), and so has the overall interval then.
    """
    details = {name: run.details(name) for name in datasets}
    available = {name: d for name, d in details.items() if d is not None}
    if not available:
        return {}
    resampled = {name: d for name, d in available.items() if _has_interval(d)}
    out: dict[str, dict[str, Interval | None]] = {}
    for metric in INTERVAL_METRICS:
        out[metric] = {
            name: bootstrap_interval(*labelled(d), metric, draws=draws, seed=seed) if name in resampled else None
            for name, d in available.items()
        }
        if len(resampled) == len(datasets):  # an overall interval over fewer datasets than the mean would mislead
            out[metric]["overall"] = overall_interval(
                [labelled(d) for d in resampled.values()], metric, draws=draws, seed=seed
            )
    return out


def _has_interval(details: DatasetResult) -> bool:
    return len(labelled(details)[0]) >= MIN_TEXTS_FOR_INTERVAL


def _too_few_texts_note(run: Run, datasets: list[str]) -> str:
    """Why a run's interval on a dataset (and its overall one) is blank: too few texts scored to resample."""
    few = [
        f"{name} ({len(labelled(d)[0])})"
        for name in datasets
        if (d := run.details(name)) is not None and not _has_interval(d)
    ]
    return (
        (
            f"{run.label} scored fewer than {MIN_TEXTS_FOR_INTERVAL} texts on {', '.join(few)}: a bootstrap interval needs at least "
            f"{MIN_TEXTS_FOR_INTERVAL}, so its interval there, and the overall one, are left blank."
        )
        if few
        else ""
    )


def aligned_predictions(a: DatasetResult, b: DatasetResult) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Gold labels and both runs' predictions on the texts both scored, matched by source row.

    None when the runs did not score the same data (other file checksum, other classes, other gold labels).
    """
    sha_a, sha_b = a.data_sha256, b.data_sha256
    if (sha_a and sha_b and sha_a != sha_b) or a.label_names != b.label_names:
        return None
    if a.source_index is None or b.source_index is None:
        return None
    (gold_a, predicted_a), (gold_b, predicted_b) = labelled(a), labelled(b)
    _, in_a, in_b = np.intersect1d(a.source_index, b.source_index, assume_unique=True, return_indices=True)
    if len(in_a) == 0 or not np.array_equal(gold_a[in_a], gold_b[in_b]):
        return None
    return gold_a[in_a], predicted_a[in_a], predicted_b[in_b]


def paired_tests(a: Run, b: Run, datasets: list[str]) -> dict[str, McNemar]:
    """McNemar per dataset both runs scored on the same texts, plus all of them pooled."""
    tests: dict[str, McNemar] = {}
    for name in datasets:
        da, db = a.details(name), b.details(name)
        aligned = aligned_predictions(da, db) if da is not None and db is not None else None
        if aligned is not None:
            tests[name] = mcnemar(*aligned)
    if len(tests) > 1:
        tests["all datasets"] = combine_mcnemar(list(tests.values()))
    return tests


MTEB_SETS_AMONG_BTZSC: tuple[str, ...] = ("imdb", "banking77", "massive")
"""The paper's 8 MTEB classification sets (PROTOCOL.md s.6) include IMDB, Banking77 and MASSIVE intent, which are
BTZSC datasets too: the baseline files hold their scores once, in these BTZSC columns. Over all 8 sets the published
rows give the paper's Kendall tau (0.687, "0.69"); over the other 5 alone, 0.747."""


def mteb_columns() -> list[str]:
    """The paper's MTEB classification sets in its baseline files: every column that is not a BTZSC dataset, and the
    BTZSC columns that are MTEB sets too (:data:`MTEB_SETS_AMONG_BTZSC`)."""
    first = next(iter(published("macro_f1").values()), {})
    return [name for name in first if name not in catalog() or name in MTEB_SETS_AMONG_BTZSC]


def rank_agreements(
    runs: list[Run], run_rows: list[ModelRow], published_by_name: dict[str, ModelRow], datasets: list[str]
) -> list[tuple[str, RankAgreement | None]]:
    """Kendall tau: BTZSC vs MTEB over the paper's models; this report's runs vs the paper's numbers (none of
    them when ``published_by_name`` is empty: a report without the paper)."""
    all_btzsc = list(catalog())
    mteb = mteb_columns()
    f1 = published("macro_f1") if published_by_name else {}
    agreements = (
        [
            (
                f"BTZSC vs MTEB: the paper's {len(f1)} models by mean macro-F1 on the 22 BTZSC datasets vs on the {len(mteb)} MTEB sets "
                f"in its baseline files ({', '.join(mteb)})",
                kendall_tau(
                    {m: published_by_name[m].mean("macro_f1", all_btzsc) for m in f1},
                    {m: float(np.mean([f1[m][c] for c in mteb])) for m in f1},
                ),
            )
        ]
        if f1
        else []
    )
    known = [(run.paper_name, row) for run, row in zip(runs, run_rows) if run.paper_name in published_by_name]
    if len(known) >= 2:
        agreements.append(
            (
                f"this report's runs vs the paper: {len(known)} models by mean macro-F1 on {len(datasets)} datasets",
                kendall_tau(
                    {row.label: row.mean("macro_f1", datasets) for _, row in known},
                    {row.label: published_by_name[paper_name].mean("macro_f1", datasets) for paper_name, row in known},
                ),
            )
        )
    for paper_name, row in known:
        agreements.append(
            (
                f"{row.label} vs the paper's {paper_name}: datasets by macro-F1",
                kendall_tau(
                    row.scores["macro_f1"],
                    {d: v for d, v in published_by_name[paper_name].scores["macro_f1"].items() if d in datasets},
                ),
            )
        )
    return agreements


# -- figures and notes --------------------------------------------------------------------------------


def confusion_figures(runs: list[Run], datasets: list[str], directory: Path) -> list[fig.SavedFigure]:
    """One confusion-matrix figure per run and dataset whose details are stored, saved into ``directory``."""
    saved = []
    for run_number, run in enumerate(runs, start=1):
        for name in datasets:
            details = run.details(name)
            if details is None:
                continue
            title = f"{run.label}: {name} ({details.n_texts} texts)"
            saved.append(
                fig.save(
                    fig.confusion(*labelled(details), details.label_names, title),
                    directory,
                    f"confusion_{run_number}_{name}",
                    title,
                )
            )
    return saved


def _unique_names(tables: list[Table]) -> list[Table]:
    """Tables named apart: runs whose labels differ only in punctuation ("run-1", "run_1"; templates ending in
    "." or "!") gave one file name, so one run's tables overwrote the other's. Returns ``tables``."""
    seen: set[str] = set()
    for table in tables:
        name, number = table.name, 1
        while table.name in seen:
            number += 1
            table.name = f"{name}_{number}"
        seen.add(table.name)
    return tables


def _unsized_note(rows: list[ModelRow]) -> str:
    unsized = [r.label for r in rows if not r.params_millions]
    return f"Not shown (parameter count not in the model registry): {', '.join(unsized)}." if unsized else ""


def _run_notes(runs: list[Run], datasets: list[str], include_paper: bool = True) -> list[str]:
    """What a reader must know before trusting a comparison: partial and sampled runs."""
    notes = (
        [
            f"Compared on {len(datasets)} of {len(catalog())} BTZSC datasets (those every result file has)"
            + ("; the paper's averages are recomputed on the same datasets." if include_paper else ".")
        ]
        if len(datasets) < len(catalog())
        else []
    )
    if include_paper and not published("macro_f1"):
        notes.append(
            "The paper's published scores were not found (set ZSTC_BASELINES to a folder of the BTZSC result "
            "files, f1_scores.csv and the rest): the report shows only these runs."
        )
    notes += _different_texts_notes(runs, datasets)
    for run in runs:
        evaluation = run.summary.get("evaluation", {})
        if evaluation.get("sampled"):
            notes.append(
                f"{run.label} is a sampled run (at most {evaluation.get('max_samples')} texts per dataset): "
                "see the confidence intervals before reading small differences."
            )
    return notes


def _off_protocol_note(run: Run) -> str:
    """Why a run's deltas against the paper's published numbers are not only the model's doing: comparing is
    legitimate, but the reader must know what was done otherwise than in the paper."""
    return (
        f"{run.label} is compared with the paper's {run.paper_name} but was not run by the paper's protocol: "
        f"{'; '.join(run.protocol_differences())}. Its differences from the published numbers include the effect of these."
    )


def _scored_texts(run: Run, dataset: str) -> dict[str, Any]:
    """What decides which texts and gold labels a run scored on ``dataset``: the data file's content, the
    unlabelled policy and the sample (the seed only matters to a stratified sample)."""
    evaluation = run.summary.get("evaluation", {})
    sampling = evaluation.get("sampling") or "stratified"
    max_samples = evaluation.get("max_samples")
    row = run.by_dataset.get(dataset, {})
    n_texts, source_texts = row.get("n_texts"), row.get("source_texts")
    whole = max_samples is None or (
        n_texts is not None and scored_every_text(dataset, n_texts, source_texts, max_samples)
    )
    # The paper's and the harness's draws differ only where the paper's keeps every text: as samples, they are one draw.
    sample = (
        "all texts"
        if whole
        else (
            f"the harness's draw of {max_samples}"
            if sampling in HARNESS_DRAWS
            else f"{sampling} {max_samples} seed {evaluation.get('seed')}"
        )
    )
    sha = (evaluation.get("data_sha256") or {}).get(dataset)
    # The policy changes nothing on a dataset without unlabelled texts (but yahootopics' harness quirk goes with 'paper').
    policy = (
        evaluation.get("unlabelled_policy") if row.get("unlabelled_texts") != 0 or dataset == "yahootopics" else None
    )
    return {"data sha256": sha[:12] if sha else None, "unlabelled policy": policy, "sample": sample}


def _different_texts_notes(runs: list[Run], datasets: list[str]) -> list[str]:
    """A note per dataset the runs scored on different data (another file content, unlabelled policy or sample):
    their numbers sit side by side in the tables but do not measure the same thing."""
    notes = []
    for name in datasets:
        scored = [_scored_texts(run, name) for run in runs]
        # An unknown checksum (a summary from before they were recorded) is not taken as a difference.
        differing = [
            key
            for key in scored[0]
            if len({repr(s[key]) for s in scored}) > 1 and (key != "data sha256" or all(s[key] for s in scored))
        ]
        if differing:
            described = "; ".join(
                f"{run.label}: " + ", ".join(f"{key} {s[key]}" for key in differing) for run, s in zip(runs, scored)
            )
            notes.append(
                f"{name}: the runs did not score the same texts ({described}): their numbers are not directly comparable."
            )
    return notes


def _write(report: Report, sections: list[Section], runs: list[Run], datasets: list[str]) -> None:
    table_dir = report.directory / "tables"
    table_dir.mkdir(parents=True, exist_ok=True)
    for table in report.tables:
        _write_text(table_dir / f"{table.name}.md", table.to_markdown())
        _write_text(table_dir / f"{table.name}.csv", table.to_csv())
    title = "BTZSC report: " + ", ".join(run.label for run in runs) if runs else "BTZSC report"
    subtitle = (
        f"{len(runs)} result file(s): {', '.join(str(run.path) for run in runs)}. "
        f"Compared on {len(datasets)} datasets. Made by zstc {__version__}."
    )
    markdown = [
        f"# {markdown_text(title)}",
        "",
        markdown_text(subtitle),
        "",
        *(f"> {markdown_text(note)}\n" for note in report.notes),
    ]
    for section in sections:
        markdown += [f"## {markdown_text(section.title)}", ""]
        markdown += [table.to_markdown() for table in section.tables]
        markdown += [f"![{markdown_text(f.title)}](figures/{f.png.name})\n" for f in section.figures]
    _write_text(report.directory / "report.md", "\n".join(markdown))
    written = sorted(
        p.relative_to(report.directory).as_posix()
        for name in REPORT_FOLDERS
        for p in (report.directory / name).rglob("*")
        if p.is_file()
    )
    _write_text(
        report.directory / REPORT_MARKER,
        f"This folder is a report made by zstc {__version__}: a later `zstc report "
        "--out` here replaces its index.html, report.md, tables/ and figures/, "
        "unless they hold files other than these, which it wrote:\n" + "".join(f"{name}\n" for name in written),
    )
    _write_text(report.index, render_page(title, subtitle, sections))  # last: its presence marks a complete report


def _write_text(path: Path, text: str) -> None:
    with atomic_write(path) as handle:
        handle.write(text)
