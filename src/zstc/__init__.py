"""zstc: zero-shot text classification with every model family, and the BTZSC benchmark.

The public API is imported lazily so ``import zstc`` stays fast (no torch until a model is used).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "classify": "zstc.api",
    "Classifier": "zstc.api",
    "Prediction": "zstc.api",
    "MultiLabelPrediction": "zstc.api",
    "prediction_record": "zstc.api",
    "make_scorer": "zstc.scorers",
    "Family": "zstc.scorers.families",
    "register_family": "zstc.scorers.families",
    "Scorer": "zstc.scorers.base",
    "PairScorer": "zstc.scorers.base",
    "ScoreResult": "zstc.scorers.base",
    "Task": "zstc.benchmark.tasks",
    "load_btzsc_task": "zstc.benchmark.data",
    **{name: "zstc.errors" for name in (
        "ZstcError", "DataError", "LabelError", "ModelError", "UnknownNameError", "OptionError", "UnknownOptionError",
    )},
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'zstc' has no attribute {name!r}")
