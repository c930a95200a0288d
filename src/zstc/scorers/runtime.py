"""Device and precision choices, decided once per run and handed to every scorer already resolved.

Numbers must not depend on the machine a run lands on (issue 11), so precision is an explicit choice:
``fp32``, ``bf16``, or ``auto`` (bf16 only where the hardware runs it fast). ``auto`` reads the CPU's own
flags (or CUDA's bf16 support), never mkldnn's ``_is_mkldnn_bf16_supported``: that answer depends on the
torch build, and taking it switched bf16 on silently on some machines and not on others.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, Literal, cast

import torch

from zstc.errors import UnknownNameError
from zstc.validation import check_choice

Precision = Literal["fp32", "bf16"]
"""A resolved precision: what the scorers and the trainer take."""

PRECISIONS: tuple[str, ...] = ("fp32", "bf16")
PRECISION_CHOICES: tuple[str, ...] = ("fp32", "bf16", "auto")
"""What a user may ask for; ``auto`` is resolved by :func:`resolve_precision`."""

FAST_BF16_CPU_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
"""CPU flags with native bf16 matrix instructions: AMX tiles (Intel Sapphire Rapids and later) or AVX512-BF16
(Intel Cooper Lake, AMD Zen 4 and later), where bf16 autocast is faster than fp32. Without them (AVX2 only) torch
emulates bf16 and it is hundreds of times slower, so ``auto`` keeps fp32 there (docs/performance.md)."""


MKL_CBWR_STRICT = 0x10000
"""The strict bit of MKL's reproducibility mode (``MKL_CBWR_STRICT`` in mkl_cbwr.h)."""
MKL_CBWR_BRANCH_OFF = 1
"""MKL's mode when ``MKL_CBWR`` was not set as it started: code paths and splits of its own choosing."""


@cache
def blas_thread_invariant() -> bool | None:
    """Whether this process's fp32 matrix products are bit-identical whatever the thread count: MKL's strict mode is in
    force (:data:`zstc.REPRODUCIBLE_BLAS`). False when MKL started before ``import zstc`` could ask for it (torch used
    first, with ``MKL_CBWR`` unset); None where torch has no MKL to ask (another BLAS, another processor)."""
    import ctypes

    try:
        library = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        get_mode = library.mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return None
    torch.ones(2, 2) @ torch.ones(2, 2)  # MKL fixes its mode at its first call: make that call, then read the mode
    from zstc import REPRODUCIBLE_BLAS

    name, value = REPRODUCIBLE_BLAS
    mode = get_mode(-1)  # -1: MKL_CBWR_ALL, the whole mode
    if mode == MKL_CBWR_BRANCH_OFF and "STRICT" in os.environ.get(name, ""):
        # Asked for, never read: MKL had started before. (Only this case is said: on another vendor's processor MKL may
        # answer a strict request with a mode of its own choosing, which is not this process's mistake.)
        logging.getLogger(__name__).warning(
            "fp32 scores in this process may differ in the last bit with the number of threads: MKL started before zstc "
            f"could set {name}={value} (import zstc before using torch, or set {name}={value} in the environment)"
        )
    return bool(mode & MKL_CBWR_STRICT)


def resolve_device(device: str | None = None) -> torch.device:
    """``None``/``"auto"``: CUDA when present, else CPU; anything else is passed to :class:`torch.device`.

    A device this machine does not have is the user's error, said as such (not later as a model that
    cannot be loaded): an unknown name, CUDA without CUDA, or a CUDA index past the last GPU.
    """
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    from zstc.validation import OPTIONS

    # An unknown name or a missing GPU is the user's error, not torch's RuntimeError.
    OPTIONS["device"].check("device", device)
    return torch.device(device)


def device_kind(device: torch.device) -> str:
    """The device as a run's numbers depend on it: its type (``cpu``), and for a GPU its model as well
    (``cuda (NVIDIA H100 80GB HBM3)``: GPUs of two models run other kernels). Not the index: ``cuda:1`` names
    a slot, which ``CUDA_VISIBLE_DEVICES`` renumbers, not the hardware."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type


@cache
def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags listed in ``path`` (the first CPU's); empty where there is no such file."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def bf16_fast_on_cpu(flags: frozenset[str]) -> bool:
    """Whether a CPU with these flags runs bf16 autocast faster than fp32."""
    return bool(flags & FAST_BF16_CPU_FLAGS)


def bf16_fast(device: torch.device) -> bool:
    """Whether bf16 runs faster than fp32 on ``device``: what ``auto`` picks bf16 by."""
    if device.type == "cuda":
        return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return bf16_fast_on_cpu(cpu_flags())
    return False


AUTO_PRECISION_ENV = "ZSTC_AUTO_PRECISION"
"""Set to fp32 or bf16 to fix what ``auto`` resolves to on every machine (the test suite sets fp32)."""


def resolve_precision(requested: str | None, device: torch.device, family: str | None = None) -> Precision:
    """``fp32`` or ``bf16`` for a run: as asked, or for ``auto`` bf16 where :func:`bf16_fast` says so, unless
    ``$ZSTC_AUTO_PRECISION`` pins what ``auto`` resolves to, or the model's ``family`` runs fp32's decisions faster in
    fp32 on a CPU (its :attr:`~zstc.models.families.Family.auto_bf16_on_cpu`: the embedding families, whose recheck
    embeds a text again whole).

    ``None`` is ``fp32``: a library caller who says nothing gets the same numbers on every machine.
    """
    if requested is None:
        return "fp32"
    check_choice("precision", requested, PRECISION_CHOICES)
    if requested == "auto":
        pinned = os.environ.get(AUTO_PRECISION_ENV)
        if pinned:
            # A deployment (or a test suite) that must not depend on the CPU it lands on pins what auto means.
            if pinned not in PRECISIONS:
                raise UnknownNameError(f"{AUTO_PRECISION_ENV} must be one of {', '.join(PRECISIONS)}, got {pinned!r}")
            return cast(Precision, pinned)
        if device.type == "cpu" and family is not None:
            from zstc.models.families import get_family

            if not get_family(family).auto_bf16_on_cpu:
                return "fp32"
        return "bf16" if bf16_fast(device) else "fp32"
    return cast(Precision, requested)


def check_precision(precision: str) -> Precision:
    """A precision a scorer can use as it is: ``fp32`` or ``bf16`` (``auto`` is resolved before, once per run)."""
    if precision not in PRECISIONS:
        raise UnknownNameError(
            f"precision must be resolved to one of {', '.join(PRECISIONS)} before a scorer is built, got {precision!r} "
            "(use zstc.scorers.runtime.resolve_precision)"
        )
    return cast(Precision, precision)


class IeeeMatmul:
    """While held, fp32 matrix products are IEEE fp32, whatever the process asked torch for elsewhere.

    ``torch.set_float32_matmul_precision("high")`` (or ``torch.backends.cuda.matmul.allow_tf32 = True``, or
    ``torch.backends.mkldnn.matmul.fp32_precision = "bf16"``) is process-wide: a training script, a notebook or
    a library may set it for its own work. fp32 products then run in TF32 on an NVIDIA GPU, or in bf16 on a CPU
    with AMX or AVX512-BF16, and a run that records ``fp32`` would not be (scores and decisions move:
    docs/precision.md).
    So zstc's fp32 inference sets every backend's ``fp32_precision`` to ``ieee`` and puts the caller's setting
    back after. Threads share the setting, so it is counted: the first to enter saves, the last to leave restores.
    """

    BACKENDS = ("cuda", "mkldnn")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: dict[str, str] = {}

    @staticmethod
    def _matmul(backend: str) -> Any:
        return getattr(getattr(torch.backends, backend), "matmul", None)

    def _read(self) -> dict[str, str]:
        # fp32_precision exists from torch 2.9; before it, cuda's allow_tf32 is the only such switch.
        found = {name: getattr(self._matmul(name), "fp32_precision", None) for name in self.BACKENDS}
        if all(value is None for value in found.values()):
            return {"allow_tf32": str(torch.backends.cuda.matmul.allow_tf32)}
        return {name: value for name, value in found.items() if value is not None}

    def _write(self, settings: dict[str, str]) -> None:
        for name, value in settings.items():
            if name == "allow_tf32":
                torch.backends.cuda.matmul.allow_tf32 = value == "True"
            else:
                self._matmul(name).fp32_precision = value

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """IEEE fp32 matrix products while the block runs; the process-wide setting is restored when the last holder leaves."""
        with self._lock:
            if self._holders == 0:
                self._saved = self._read()
                self._write({name: "False" if name == "allow_tf32" else "ieee" for name in self._saved})
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._write(self._saved)


IEEE_MATMUL = IeeeMatmul()


def fp32_as_recorded(precision: Precision) -> contextlib.AbstractContextManager[None]:
    """For ``fp32``, IEEE fp32 matrix products while held (:class:`IeeeMatmul`); for ``bf16``, nothing (the caller
    autocasts). Inference and training both use it, so a model trained or scored in ``fp32`` was."""
    return IEEE_MATMUL.held() if precision == "fp32" else contextlib.nullcontext()


@contextlib.contextmanager
def inference_context(device: torch.device, precision: Precision) -> Iterator[None]:
    """No-grad inference: under bf16 autocast for ``bf16``; for ``fp32``, with IEEE fp32 matrix products
    (:class:`IeeeMatmul`), so ``fp32`` is what a result says it is."""
    with torch.inference_mode():
        if precision == "bf16":
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                yield
        else:
            if device.type == "cpu":
                blas_thread_invariant()  # said once per process, where it matters: fp32 on a CPU
            with fp32_as_recorded(precision):
                yield


def auto_backend(device: torch.device, precision: Precision) -> str:
    """What runs an embedding model's transformer when the caller asked for ``auto`` precision and named no backend:
    ONNX Runtime for fp32 on a CPU where the ``onnx`` extra is installed (it makes torch fp32's decisions faster: its
    near decisions are rechecked by torch, :data:`zstc.scorers.embedding.ORT_RECHECK_MARGIN`), else torch. torch too
    where ``$ZSTC_AUTO_PRECISION`` pins auto: a deployment or a test suite that must not depend on the machine gets
    torch's scores, not another kernel library's (ONNX Runtime's differ by float noise from CPU to CPU)."""
    if device.type != "cpu" or precision != "fp32" or os.environ.get(AUTO_PRECISION_ENV):
        return "torch"
    from zstc.scorers.ort_backend import onnxruntime_missing

    return "torch" if onnxruntime_missing() is not None else "onnxruntime"


def resolved_options(precision: str | None, options: dict[str, Any], family: str | None = None) -> dict[str, Any]:
    """Scorer options with ``precision`` resolved for the device they name and the model's ``family`` (once per run,
    by the caller; :func:`resolve_precision`), and for ``auto`` in a family with a ``backend`` option not given, the
    backend too (:func:`auto_backend`): auto is the fastest path to fp32's decisions on this machine.

    The result always carries ``precision`` (``fp32`` or ``bf16``), so what a scorer computes in is never
    left to the scorer's default; and with auto, ``backend`` where the family takes one, so a run's identity says
    which path ran (``torch`` where onnxruntime is not installed).
    """
    device = resolve_device(options.get("device"))
    resolved: dict[str, Any] = {**options, "precision": resolve_precision(precision, device, family)}
    if precision == "auto" and family is not None and options.get("backend") is None:
        from zstc.models.families import get_family

        if "backend" in get_family(family).options:
            resolved["backend"] = auto_backend(device, resolved["precision"])
    return resolved
