"""Beyond one process: model sweeps (``zstc sweep``) and Ray batch classification (``classify --engine ray``).

Nothing here imports Ray at module level: it is an optional extra (``pip install 'zstc[ray]'``), loaded only
by the Ray engine (:func:`require_ray`).
"""

from __future__ import annotations

import socket
from typing import Any

from zstc.errors import ZstcError

CONNECT_TIMEOUT_S = 5.0
"""How long a cluster's address gets to accept a connection before ``--address`` is said to be wrong: Ray itself
retries for minutes, silently, on an address where nothing listens."""


def require_ray() -> Any:
    """The ``ray`` module, or a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ZstcError("the Ray engine needs Ray: pip install 'zstc[ray]'") from None
    return ray


def connect_ray(address: str | None, **init_options: Any) -> bool:
    """Join the cluster at ``address`` (or start a local Ray) unless this process is connected already;
    returns whether this call connected, i.e. whether the caller should shut Ray down afterwards."""
    ray = require_ray()
    if ray.is_initialized():
        return False
    if address:
        check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False)
        except ConnectionError as error:  # "auto" with no cluster running, a cluster that went away
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ZstcError(f"--address {address}: no Ray cluster answers there ({reason})") from None
    else:
        ray.init(include_dashboard=False, log_to_driver=False, **init_options)
    return True


def check_reachable(address: str) -> None:
    """Refuse, in a few seconds, a ``host:port`` cluster address (``ray://`` too) that accepts no connection;
    ``auto`` and other forms are left to Ray."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as error:
        raise ZstcError(
            f"--address {address}: nothing accepts a connection there ({error.strerror or type(error).__name__}); "
            "is the Ray cluster running, and is this its head node?"
        ) from None
