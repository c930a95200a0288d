"""The paper's figures for one's own runs among its 38 models (matplotlib, no pyplot global state).

* :func:`speed_accuracy`: macro-F1 against throughput, median quadrant lines and the Pareto front (Fig. 3a);
* :func:`scaling`: macro-F1 against parameter count per model family, log scale, 95% bands (Fig. 2b);
* :func:`heatmap`: macro-F1 per model and dataset;
* :func:`confusion`: a run's confusion matrix on one dataset, rows normalised;
* :func:`dataset_similarity`: the weighted Jaccard similarity of every pair of datasets' token distributions.

Each returns a :class:`matplotlib.figure.Figure`; :func:`save` writes it as PNG and SVG.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from zstc.io import atomic_write
from zstc.errors import ZstcError
from zstc.models.families import families, find_family
from zstc.reports.rows import ModelRow
from zstc.benchmark.similarity import DatasetSimilarity

try:
    from matplotlib.figure import Figure
except ImportError:  # pragma: no cover - exercised only without the extra installed
    Figure = None  # type: ignore[assignment,misc]

DPI = 110
AS_TEXT: dict[str, Any] = {"parse_math": False}
"""For text from the user's files (run labels, which hold a result file's name; dataset and class names): drawn as
written. Matplotlib reads text between two '$' as mathtext, which garbled a label or failed the report."""


def _figure(width: float, height: float) -> Figure:
    if Figure is None:
        raise ZstcError("figures need matplotlib: pip install 'zstc[reports]'")
    return Figure(figsize=(width, height), layout="constrained")


@dataclass(frozen=True)
class SavedFigure:
    """A figure written as PNG and SVG, with the title and caption the report shows with it."""

    name: str
    title: str
    caption: str
    png: Path
    svg: Path


def save(figure: Figure, directory: Path, name: str, title: str, caption: str = "") -> SavedFigure:
    """Write ``figure`` into ``directory`` as ``name``.png and ``name``.svg, byte-identical across re-runs."""
    directory.mkdir(parents=True, exist_ok=True)
    png, svg = directory / f"{name}.png", directory / f"{name}.svg"
    write_figure(figure, png)
    write_figure(figure, svg)
    return SavedFigure(name, title, caption, png, svg)


FIGURE_FORMATS: tuple[str, ...] = (".png", ".svg")
"""The file types :func:`write_figure` writes, by suffix."""


def write_figure(figure: Figure, path: Path) -> Path:
    """Write ``figure`` to ``path`` as PNG or SVG (by its suffix), atomically and byte-identical across re-runs."""
    suffix = path.suffix.lower()
    if suffix not in FIGURE_FORMATS:
        raise ZstcError(f"{path}: a figure is written as {' or '.join(FIGURE_FORMATS)}; give a path ending in one")
    # Fixed metadata keeps the files byte-identical across re-runs of the same report; so does a fixed salt
    # for the SVG's clip-path ids, which matplotlib otherwise draws at random on every save.
    from matplotlib import rc_context

    with atomic_write(path, "wb") as handle:
        if suffix == ".png":
            figure.savefig(handle, format="png", dpi=DPI, metadata={"Software": None})
        else:
            with rc_context({"svg.hashsalt": path.stem}):
                figure.savefig(handle, format="svg", metadata={"Date": None, "Creator": None})
    return path


def _colour(row: ModelRow) -> str:
    """Its family's colour, the same in every figure (the ``Family`` record's); a run of an unknown family's is teal."""
    record = find_family(row.family)
    return record.colour if record else "#17becf"


def _legend_for_families(axes: Any, rows: list[ModelRow], *, pareto: bool = False) -> None:
    from matplotlib.lines import Line2D

    present = [f for f in families() if any(r.family == f.name for r in rows)]
    handles = [Line2D([], [], marker="o", linestyle="", color=f.colour, label=f.name) for f in present]
    if any(r.source == "run" for r in rows):
        handles.append(
            Line2D(
                [],
                [],
                marker="*",
                markersize=12,
                linestyle="",
                color="white",
                markeredgecolor="black",
                label="this report's runs",
            )
        )
    if pareto:
        handles.append(
            Line2D(
                [],
                [],
                color="black",
                linewidth=1.2,
                marker="o",
                markersize=9,
                markerfacecolor="none",
                label="Pareto front",
            )
        )
    axes.legend(handles=handles, fontsize=8, loc="best", frameon=True)


def _mark(axes: Any, row: ModelRow, x: float, y: float) -> None:
    if row.source == "run":
        axes.scatter([x], [y], marker="*", s=220, color=_colour(row), edgecolors="black", linewidths=0.8, zorder=4)
        axes.annotate(
            row.label, (x, y), xytext=(6, 6), textcoords="offset points", fontsize=8, weight="bold", **AS_TEXT
        )
    else:
        axes.scatter([x], [y], marker="o", s=28, color=_colour(row), alpha=0.8, zorder=3)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of points no other point beats on both axes (higher is better on both), by ascending x."""
    order = sorted(range(len(points)), key=lambda i: (-points[i][0], -points[i][1]))
    front, best_y = [], -math.inf
    for i in order:
        if points[i][1] > best_y:
            front.append(i)
            best_y = points[i][1]
    return sorted(front, key=lambda i: points[i][0])


def speed_accuracy(rows: list[ModelRow], datasets: list[str]) -> Figure:
    """Macro-F1 against throughput, with the medians of both as quadrant lines and the Pareto front."""
    timed = [r for r in rows if r.throughput]
    figure = _figure(7.5, 5)
    axes = figure.subplots()
    axes.set_xlabel("throughput (texts per second, log scale)")
    axes.set_ylabel(f"mean macro-F1 ({len(datasets)} datasets)")
    axes.set_title("Accuracy against speed")
    if not timed:
        axes.text(0.5, 0.5, "no result file records throughput", ha="center", va="center", transform=axes.transAxes)
        return figure
    points = [(float(r.throughput or 0.0), r.mean("macro_f1", datasets)) for r in timed]  # all set: timed filters
    for row, (x, y) in zip(timed, points):
        _mark(axes, row, x, y)
    front = pareto_front(points)
    # A step line through the front; a front of one point is that point, ringed, so the legend's entry
    # always points at something drawn.
    axes.plot(
        [points[i][0] for i in front],
        [points[i][1] for i in front],
        color="black",
        linewidth=1.2,
        drawstyle="steps-pre",
        marker="o",
        markersize=13,
        markerfacecolor="none",
        markeredgewidth=1.0,
        zorder=2,
    )
    axes.axvline(float(np.median([p[0] for p in points])), color="grey", linestyle="--", linewidth=0.8)
    axes.axhline(float(np.median([p[1] for p in points])), color="grey", linestyle="--", linewidth=0.8)
    xs = [p[0] for p in points]
    axes.set_xlim(min(xs) / 2, max(xs) * 2)
    axes.margins(y=0.15)  # room for the labels above the stars
    _plain_log_axis(axes)
    _legend_for_families(axes, timed, pareto=True)
    return figure


def _plain_log_axis(axes: Any) -> None:
    """Log scale on x with ticks written as plain numbers (20, not 2x10^1)."""
    from matplotlib.ticker import FuncFormatter

    from matplotlib.ticker import LogLocator, NullFormatter

    axes.set_xscale("log")
    # Ticks at 1, 2 and 5 times powers of ten: consecutive ticks are at most 2.5x apart, so any range wider
    # than that (the speed figure's is at least 4x) shows two or more labelled ticks.
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_locator(LogLocator(base=10, subs=tuple(float(i) for i in range(1, 10))))
    axes.xaxis.set_minor_formatter(NullFormatter())


MIN_POINTS_FOR_BAND = 5
"""Fewer models than this in a family give a band too wide to say anything (t with n-2 degrees of freedom)."""


def _fit_band(axes: Any, xs: np.ndarray, ys: np.ndarray, colour: str) -> None:
    """Least-squares line of y on log10(x) with its 95% confidence band for the mean."""
    from scipy.stats import t as student_t

    logs = np.log10(xs)
    n = len(logs)
    if n < MIN_POINTS_FOR_BAND or np.ptp(logs) == 0:
        return
    slope, intercept = np.polyfit(logs, ys, 1)
    grid = np.linspace(logs.min(), logs.max(), 50)
    residual = ys - (slope * logs + intercept)
    s = math.sqrt(float(residual @ residual) / (n - 2))
    spread = float(((logs - logs.mean()) ** 2).sum())
    half = student_t.ppf(0.975, n - 2) * s * np.sqrt(1 / n + (grid - logs.mean()) ** 2 / spread)
    fitted = slope * grid + intercept
    axes.plot(10**grid, fitted, color=colour, linewidth=1)
    axes.fill_between(10**grid, fitted - half, fitted + half, color=colour, alpha=0.12, linewidth=0)


def scaling(rows: list[ModelRow], datasets: list[str]) -> Figure:
    """Macro-F1 against parameter count (log scale), one colour per model family.

    Each family with enough of the paper's models gets a fitted line and 95% band; the runs are placed
    against them, not fitted (a rerun of a paper model would otherwise count twice).
    """
    sized = [r for r in rows if r.params_millions and not math.isnan(r.mean("macro_f1", datasets))]
    figure = _figure(7.5, 5)
    axes = figure.subplots()
    axes.set_xlabel("parameters (millions, log scale)")
    axes.set_ylabel(f"mean macro-F1 ({len(datasets)} datasets)")
    axes.set_title("Scaling: accuracy against model size")
    if not sized:  # said on the figure, as the speed figure does: an empty axis and legend box looked broken
        axes.text(0.5, 0.5, "no model's parameter count is known", ha="center", va="center", transform=axes.transAxes)
        return figure
    for family in families():
        members = [r for r in sized if r.family == family.name and r.source == "paper"]
        if members:
            sizes = np.array([r.params_millions for r in members])
            _fit_band(axes, sizes, np.array([r.mean("macro_f1", datasets) for r in members]), family.colour)
    for row in sized:
        _mark(axes, row, float(row.params_millions or 0.0), row.mean("macro_f1", datasets))  # all set: sized filters
    _plain_log_axis(axes)
    _legend_for_families(axes, sized)
    return figure


def heatmap(rows: list[ModelRow], datasets: list[str]) -> Figure:
    """Macro-F1 per model (rows, best mean first) and dataset (columns); the runs' labels in bold."""
    ordered = sorted(rows, key=lambda r: -np.nan_to_num(r.mean("macro_f1", datasets), nan=-1))
    values = np.array([r.values("macro_f1", datasets) for r in ordered])
    figure = _figure(max(6.0, 1.2 + 0.42 * len(datasets)), max(3.0, 1.6 + 0.2 * len(ordered)))
    axes = figure.subplots()
    image = axes.imshow(np.ma.masked_invalid(values), cmap="viridis", vmin=0, vmax=1, aspect="auto")
    axes.set_xticks(range(len(datasets)), datasets, rotation=60, ha="right", fontsize=7, **AS_TEXT)
    axes.set_yticks(range(len(ordered)), [r.label for r in ordered], fontsize=7, **AS_TEXT)
    for tick, row in zip(axes.get_yticklabels(), ordered):
        if row.source == "run":
            tick.set_fontweight("bold")
    if values.size <= 1200:
        for (i, j), value in np.ndenumerate(values):
            if not np.isnan(value):
                axes.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=5,
                    color="white" if value < 0.55 else "black",
                )
    figure.colorbar(image, ax=axes, label="macro-F1", shrink=0.6)
    axes.set_title("macro-F1 per dataset")
    return figure


def confusion(gold: np.ndarray, predicted: np.ndarray, label_names: list[str], title: str) -> Figure:
    """Confusion matrix with each gold row normalised to 1 (counts printed when the classes are few)."""
    k = len(label_names)
    valid = (gold >= 0) & (gold < k) & (predicted >= 0) & (predicted < k)
    counts = np.bincount(gold[valid] * k + predicted[valid], minlength=k * k).reshape(k, k)
    totals = counts.sum(axis=1, keepdims=True)
    rates = np.divide(counts, totals, out=np.zeros(counts.shape, dtype=np.float64), where=totals > 0)
    # Every class is named, however many: a matrix without names cannot be read. Many classes get a larger
    # figure and smaller type (banking77's 72 fit at 5 pt in 14 inches).
    side = min(14.0, max(3.8, 1.8 + 0.17 * k))
    figure = _figure(side + 1.0, side)
    axes = figure.subplots()
    image = axes.imshow(rates, cmap="Blues", vmin=0, vmax=1)
    size = 7 if k <= 30 else 5
    names = [name if len(name) <= 28 else name[:27] + "…" for name in label_names]
    axes.set_xticks(
        range(k), names, rotation=60 if k <= 30 else 90, ha="right" if k <= 30 else "center", fontsize=size, **AS_TEXT
    )
    axes.set_yticks(range(k), names, fontsize=size, **AS_TEXT)
    if k <= 12:
        for (i, j), count in np.ndenumerate(counts):
            axes.text(
                j, i, str(count), ha="center", va="center", fontsize=7, color="white" if rates[i, j] > 0.5 else "black"
            )
    axes.set_xlabel("predicted")
    axes.set_ylabel("gold")
    axes.set_title(title, fontsize=9, **AS_TEXT)
    figure.colorbar(image, ax=axes, label="share of the gold class", shrink=0.6)
    return figure


def dataset_similarity(similarity: DatasetSimilarity) -> Figure:
    """The weighted Jaccard similarity of every pair of datasets (a symmetric matrix, datasets in the order given),
    each cell printed."""
    names, values = similarity.datasets, similarity.matrix
    side = max(4.0, 1.6 + 0.36 * len(names))
    figure = _figure(side + 1.2, side)
    axes = figure.subplots()
    image = axes.imshow(values, cmap="viridis", vmin=0, vmax=1)
    axes.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7, **AS_TEXT)
    axes.set_yticks(range(len(names)), names, fontsize=7, **AS_TEXT)
    for (i, j), value in np.ndenumerate(values):
        axes.text(
            j,
            i,
            f"{value:.2f}",
            ha="center",
            va="center",
            fontsize=5 if len(names) > 12 else 7,
            color="white" if value < 0.55 else "black",
        )
    figure.colorbar(image, ax=axes, label="weighted Jaccard similarity", shrink=0.6)
    axes.set_title("token distributions: weighted Jaccard similarity", fontsize=9)
    return figure
