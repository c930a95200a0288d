"""Device and precision choices, decided once and shared by every scorer."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


def resolve_device(device: str | None = None) -> torch.device:
    """``None``/``"auto"``: CUDA when present, else CPU; anything else is passed to :class:`torch.device`.

    A device this machine does not have is the user's error, said as such (not later as a model that
    cannot be loaded): an unknown name, CUDA without CUDA, or a CUDA index past the last GPU.
    """
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    from zstc.errors import UnknownNameError

    try:
        resolved = torch.device(device)
    except (RuntimeError, ValueError):
        raise UnknownNameError(f"unknown device {device!r}; expected cpu, cuda, cuda:N, mps or auto") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise UnknownNameError(f"--device {device}: CUDA is not available on this machine "
                                   f"(torch {torch.__version__}{' is a CPU-only build' if torch.version.cuda is None else ' finds no GPU'}); use --device cpu")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise UnknownNameError(f"--device {device}: this machine has {torch.cuda.device_count()} CUDA device(s), numbered from 0")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise UnknownNameError(f"--device {device}: Apple's MPS is not available on this machine; use --device cpu")
    return resolved


def bf16_supported(device: torch.device) -> bool:
    """Whether bf16 autocast is fast on this device (CUDA with bf16, or a CPU with AVX512-BF16/AMX)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        try:
            return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
        except (AttributeError, RuntimeError):
            return False
    return False


def resolve_bf16(requested: bool | None, device: torch.device) -> bool:
    """fp32 unless bf16 is asked for: numbers must not depend on the CPU a run lands on (issue 11)."""
    return bool(requested)


@contextlib.contextmanager
def inference_context(device: torch.device, bf16: bool) -> Iterator[None]:
    """No-grad inference, under bf16 autocast when asked for."""
    with torch.inference_mode():
        if bf16:
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                yield
        else:
            yield
