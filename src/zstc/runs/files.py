"""A run's JSON records, written so that an interrupted run never leaves half of one (see :func:`write_json`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zstc.io import atomic_write


def write_json(path: Path, content: Any) -> None:
    """``content`` as indented UTF-8 JSON, written atomically (see :func:`zstc.io.atomic_write`); missing folders
    are created (a user's --out was checked up front by :func:`zstc.io.check_output_path`)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(Path(path)) as handle:
        handle.write(json.dumps(content, indent=2, ensure_ascii=False) + "\n")
