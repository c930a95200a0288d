"""Template robustness (Yin et al. 2019): how much macro-F1 moves when only the hypothesis template changes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zstc.benchmark.metrics import dataset_metrics
from zstc.policy import argmax_decisions
from zstc.errors import UnknownNameError
from zstc.hypotheses.variants import ASPECT_TEMPLATES, ENSEMBLE_MEMBERS, build_hypotheses, score_hypotheses
from zstc.scorers.base import add_note
from zstc.validation import check_distinct

DEFAULT_ROBUSTNESS_TEMPLATES: tuple[str, ...] = (
    *ASPECT_TEMPLATES.values(),
    "This example is {}.",
    "The topic of this text is {}.",
    "{}",
)
"""Templates of :func:`template_robustness` when the user gives none: Yin's three (PROTOCOL.md s.7's strings) and three common ones."""


def template_robustness(scorer: Any, task: Any, templates: Sequence[str], *, variant: str = "name") -> dict[str, Any]:
    """Macro-F1 of ``scorer`` on ``task`` with each template (labels filled in by ``variant``), and the
    best, worst, mean, spread (best - worst) and population standard deviation over templates."""
    if variant not in ENSEMBLE_MEMBERS:
        raise UnknownNameError(
            f"template robustness fills templates with 'name', 'definition' or 'both', got {variant!r}"
        )
    # Each template once: a repeated one would weigh twice in the mean and the standard deviation.
    templates = check_distinct(list(templates), "templates")  # as given: a template is not stripped like a label
    rows = []
    notes: list[str] = []  # how the hypotheses were built (labels WordNet lacks, labels tied), each note once
    for template in templates:
        hypotheses = build_hypotheses(task.label_names, variant, template)
        for note in hypotheses.notes:
            add_note(notes, note)
        scores = score_hypotheses(scorer, task.texts, hypotheses)
        f1 = dataset_metrics(task.gold, argmax_decisions(scores))["macro_f1"]
        rows.append({"template": template, "macro_f1": f1, "example": hypotheses.variants[variant][0]})
    values = np.asarray([row["macro_f1"] for row in rows])
    return {
        "dataset": task.name,
        "n_texts": len(task),
        "variant": variant,
        "templates": rows,
        "best": float(values.max()),
        "best_template": rows[int(values.argmax())]["template"],
        "worst": float(values.min()),
        "worst_template": rows[int(values.argmin())]["template"],
        "mean": float(values.mean()),
        "spread": float(values.max() - values.min()),
        "std": float(values.std()),
        "notes": notes,
    }
