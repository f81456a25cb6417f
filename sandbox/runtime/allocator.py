"""Allocator tuning for long-running numeric work (applied when ``sandbox`` is imported).

glibc's malloc hands large freed blocks back to the kernel and takes fresh ones
for the next array, so every big temporary pays its page faults again.  On the
2-core VMs this project is measured on, that made a 1 ms resize of a 33 MB
array take 3-40 ms, erratically.  :func:`keep_freed_memory` asks glibc to keep
freed memory for reuse (larger trim threshold and top pad, a fixed mmap
threshold): the same resize then takes about 1 ms every time, and a UNet
training step gets about 4 % faster.  The cost is that the process's resident
memory stays near its peak.

It changes process-wide allocator settings.  It used to be applied only by
``sandbox train``/``bench``/``predict``, so a user's own training script took the
slow path: measured on a classic UNet step written with ``nn.Conv2d``/``nn.BatchNorm2d``/
``nn.ReLU`` modules (batch 8, 64², 1 thread, AMD EPYC family 26), 75.9 ms untuned
against 64.5 ms tuned (``SANDBOX_TUNE_MALLOC=0`` / ``=1 sandbox bench --filter
unet-user/bilinear/64 --threads 1 --no-torch``), the difference spent in page faults.  So
``import sandbox`` applies it, as PyTorch's caching allocator keeps its memory too;
``SANDBOX_TUNE_MALLOC=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# mallopt parameter numbers from glibc's <malloc.h>
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

_applied = False


def keep_freed_memory(enable: bool | None = None) -> bool:
    """Keep freed memory mapped for reuse (glibc only); return True if applied.

    Parameters
    ----------
    enable : bool, optional
        Default: on unless the environment variable ``SANDBOX_TUNE_MALLOC`` is ``0``.
    """
    global _applied
    if enable is None:
        enable = os.environ.get("SANDBOX_TUNE_MALLOC", "1") not in ("0", "")
    if not enable or _applied or not sys.platform.startswith("linux"):
        return _applied
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl): nothing to tune
        return False
    ok = (
        mallopt(_M_MMAP_THRESHOLD, 32 << 20) == 1
        and mallopt(_M_TRIM_THRESHOLD, 1 << 30) == 1
        and mallopt(_M_TOP_PAD, 64 << 20) == 1
    )
    _applied = bool(ok)
    return _applied


def is_tuned() -> bool:
    """Whether :func:`keep_freed_memory` has been applied in this process."""
    return _applied
