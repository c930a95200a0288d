"""Beyond one process: model sweeps (``zstc sweep``) and Ray batch classification (``classify --engine ray``).

Nothing here imports Ray at module level: it is an optional extra (``pip install 'zstc[ray]'``), loaded only
by the Ray engine (:func:`require_ray`).
"""

from __future__ import annotations

from typing import Any

from zstc.errors import ZstcError


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
        ray.init(address=address, log_to_driver=False)
    else:
        ray.init(include_dashboard=False, log_to_driver=False, **init_options)
    return True
