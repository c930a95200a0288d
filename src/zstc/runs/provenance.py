"""Facts a bench run records so its numbers can be traced and re-run: code, model, data and machine.

Each function answers one question cheaply and returns ``None`` when the answer is not known (a zstc installed
from a wheel has no git commit; a model loaded from a PyPI package has no hub revision). Unknown is recorded as
unknown, never guessed. The network is asked one thing only: which commit a hub model's ``main`` is (once per
process and model, as loading it would ask).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import resource
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

PACKAGE_DIR = Path(__file__).resolve().parents[1]
"""The ``zstc`` package folder: a local change anywhere in it (not only in ``benchmark/``) makes a run ``+dirty``."""


@cache
def git_commit() -> str | None:
    """The commit of the zstc checkout this code runs from (``+dirty`` when its package has local changes)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "."],
            cwd=PACKAGE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = head.stdout.strip()
    return commit + ("+dirty" if status.stdout.strip() else "")


def model_revision(source: str) -> str | None:
    """The hub commit of the model files at ``source`` (a local folder or a hub id), when it is knowable.

    A folder inside the hub cache is named after its commit (``.../snapshots/<sha>/``); a hub id's is the commit it
    loads at in this process (:func:`zstc.models.loading.hub_revision`: the hub's ``main`` when the hub answers, else
    the cached one). A plain folder or a PyPI-shipped model has no revision: None.
    """
    from zstc.models.loading import hub_revision, snapshot_commit

    folder = Path(source).expanduser().resolve()
    return snapshot_commit(folder) if folder.is_dir() else hub_revision(source)


def model_identity(source: str) -> str | None:
    """What pins the exact weights at ``source``: the hub commit where there is one, else for a local folder
    (a packaged checkpoint, a trained model) ``sha256:<hash of its files>``; None for a hub id whose commit is not
    known (the hub did not answer and it is not cached here).
    """
    revision = model_revision(source)
    if revision is not None:
        return revision
    folder = Path(source).expanduser()
    return f"sha256:{folder_sha256(folder)}" if folder.is_dir() else None


def folder_sha256(folder: str | Path) -> str:
    """sha256 over a folder's files (relative names and contents, hidden entries skipped), each file's hash
    cached in ``$ZSTC_CACHE/file-hashes.json`` by path and :func:`file_stamp`, so a 16 GB checkpoint is read once."""
    folder = Path(folder).resolve()
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    cache = _HashCache.load()
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.relative_to(folder).as_posix()}\0{cache.sha256(path)}\n".encode())
    cache.save()
    return digest.hexdigest()


def file_stamp(path: str | Path) -> list[int]:
    """What tells a file's content apart from an earlier one at ``path`` without reading it: device, inode, size,
    modification and status-change times (ns). Size and mtime alone do not: weights rewritten at the same size
    with the mtime put back (``touch -r``, ``cp -p``, ``rsync -a``, a tar extraction) kept their old hash, and a
    result of the old weights was reused under the new ones. The ctime cannot be set from user space, and any
    write moves it; a file replaced by another (a new inode) differs too. A ``chmod`` also moves the ctime: the
    file is then read again once, which costs time, never a wrong hash. A list, as JSON reads it back."""
    found = Path(path).stat()
    return [found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns]


class _HashCache:
    """File hashes kept between runs; a damaged or unwritable cache only costs re-reading files."""

    def __init__(self, path: Path, entries: dict[str, Any]) -> None:
        self.path, self.entries, self.changed = path, entries, False

    @classmethod
    def load(cls) -> _HashCache:
        from zstc.defaults import cache_root

        path = cache_root() / "file-hashes.json"
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            entries = {}
        return cls(path, entries if isinstance(entries, dict) else {})

    def sha256(self, path: Path) -> str:
        key, stamp = str(path), file_stamp(path)
        entry = self.entries.get(key)
        if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
            return entry["sha256"]
        value = sha256_file(path)
        self.entries[key] = {"stamp": stamp, "sha256": value}
        self.changed = True
        return value

    def save(self) -> None:
        if not self.changed:
            return
        from zstc.runs.files import write_json

        with contextlib.suppress(OSError):
            write_json(self.path, self.entries)


def sha256_file(path: str | Path) -> str:
    """sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def _sha256_cached(path: str, stamp: tuple[int, ...]) -> str:
    # The stamp (file_stamp) is part of the cache key so an edited file is hashed again.
    return sha256_file(path)


def file_sha256(path: str | Path) -> str | None:
    """sha256 of a data file (None for anything that is not a local file, such as ``hub``)."""
    path = Path(path)
    if not path.is_file():
        return None
    return _sha256_cached(str(path.resolve()), tuple(file_stamp(path)))


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (1024 * 1024 if sys.platform == "darwin" else 1024), 1)


def reset_cuda_peak(device: str | None) -> None:
    """Start a fresh CUDA peak-memory window (so each dataset's peak is its own); no-op off CUDA."""
    torch = sys.modules.get("torch")
    if torch is not None and device is not None and str(device).startswith("cuda") and torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats(device)


def peak_cuda_mb(device: str | None) -> float | None:
    """Peak CUDA memory allocated by torch since the last reset, in MiB; None off CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or device is None or not str(device).startswith("cuda") or not torch.cuda.is_available():
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def library_versions() -> dict[str, str | None]:
    """Versions of Python and of the installed libraries that determine the numbers."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str | None] = {"python": sys.version.split()[0]}
    for distribution in ("torch", "transformers", "sentence-transformers", "numpy", "scikit-learn"):
        try:
            versions[distribution] = version(distribution)
        except PackageNotFoundError:
            versions[distribution] = None
    return versions
