"""zstc: zero-shot text classification with every model family, and the BTZSC benchmark.

The public API is imported lazily so ``import zstc`` stays fast (no torch until a model is used).
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import Any

__version__ = "0.1.0"

REPRODUCIBLE_BLAS = ("MKL_CBWR", "AUTO,STRICT")
"""fp32 numbers must not depend on how many threads computed them. On Intel CPUs, MKL (torch's BLAS on x86) splits
some small matrix products by thread count, so the same texts scored with 1 and 2 threads differed in the last bit
(a 12x384 by 384x72 product, the shape of all-MiniLM-L6-v2's cosines of 12 texts with 72 labels; a Ray sweep, one
thread per worker, moved the last bits of ``bench``'s emotiondair scores, one thread per core). MKL's strict reproducibility mode makes every product bit-identical whatever the thread count, at
no measured cost. MKL reads the variable at its first call, so it is set here, before zstc imports torch; a value the
user set is kept. :func:`zstc.scorers.runtime.blas_thread_invariant` says whether it took effect in this process."""
os.environ.setdefault(*REPRODUCIBLE_BLAS)

_LAZY = {
    "classify": "zstc.api",
    "Classifier": "zstc.api",
    "Prediction": "zstc.api",
    "MultiLabelPrediction": "zstc.api",
    "prediction_record": "zstc.api",
    "make_scorer": "zstc.scorers",
    "Family": "zstc.models.families",
    "register_family": "zstc.models.families",
    "Scorer": "zstc.scorers.base",
    "PairScorer": "zstc.scorers.base",
    "ScoreResult": "zstc.scorers.base",
    "Task": "zstc.benchmark.tasks",
    "load_btzsc_task": "zstc.benchmark.data",
    **{
        name: "zstc.errors"
        for name in (
            "ZstcError",
            "DataError",
            "LabelError",
            "ModelError",
            "UnknownNameError",
            "OptionError",
            "UnknownOptionError",
        )
    },
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'zstc' has no attribute {name!r}")
