"""Numeric precision of the learned rankers on the CPU: fp32, bf16 autocast, or int8.

`auto` takes bf16 where the processor computes it natively (AVX-512 BF16 or AMX: BERT
inference about twice as fast as fp32) and fp32 elsewhere; bf16 emulated in software would be
slower than fp32. int8 (dynamic quantization of the linear layers) is never chosen
automatically: it changes scores more than bf16 does, so it is opt-in (`models.precision`).

torch is imported by the callers and handed in; this module imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import logging
import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from smartsearch_mcp.config import PRECISIONS

log = logging.getLogger(__name__)

# CPU flags (as Linux lists them in /proc/cpuinfo) of native bf16 matrix arithmetic.
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The processor's feature flags (Linux); empty where they cannot be read."""
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def is_x86() -> bool:
    """Whether this is an x86 processor (whose /proc/cpuinfo flags the checks here read)."""
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def native_bf16(flags: frozenset[str] | None = None) -> bool:
    """Whether this CPU computes bf16 matrix products natively (x86 AVX-512 BF16 or AMX)."""
    if not is_x86():
        return False
    return bool((cpu_flags() if flags is None else flags) & BF16_FLAGS)


def resolve_precision(
    requested: str, device: str = "cpu", flags: frozenset[str] | None = None
) -> str:
    """The precision a ranker runs at: `requested` unless it is "auto" (bf16 on a CPU with
    native bf16, fp32 otherwise). GPUs keep fp32 here (they are not this module's concern)."""
    if requested not in PRECISIONS:
        raise ValueError(f"unknown precision {requested!r}; known: {', '.join(PRECISIONS)}")
    if requested != "auto":
        return requested
    return "bf16" if device == "cpu" and native_bf16(flags) else "fp32"


def quantize_int8(torch: Any, module: Any) -> Any:
    """`module` with its linear layers dynamically quantized to int8 (weights int8, activations
    quantized per batch); everything else unchanged."""
    import warnings

    with warnings.catch_warnings():  # torch deprecates the quantization API (for torchao)
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.ao.quantization.quantize_dynamic(module, {torch.nn.Linear}, dtype=torch.qint8)


@contextlib.contextmanager
def inference(torch: Any, precision: str) -> Iterator[None]:
    """No autograd, and bf16 autocast when `precision` is bf16."""
    with torch.inference_mode():
        if precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                yield
        else:
            yield
