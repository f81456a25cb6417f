"""One knob for threads: the Cython ``prange`` kernels and our worker pool.

The default is the number of cores this process may run on, or the value of the
``SANDBOX_NUM_THREADS`` environment variable when it is set.

BLAS is pinned to one thread
----------------------------
:func:`set_num_threads` (and the first :func:`get_num_threads`) limits numpy's
BLAS to ``BLAS_THREADS`` (1) threads through ``threadpoolctl``, whatever ``n``
is.  Parallelism for GEMM-heavy ops comes from our side instead: fixed chunks
(e.g. one per sample) run on the worker pool of :mod:`sandbox.array._parallel`, each
calling a single-threaded GEMM.  Why: OpenBLAS's own pthread pool collapses when
the cores are shared.  Measured on the 2-core machine with other processes
running, every small multi-threaded GEMM waited for a descheduled BLAS worker:
a 16-channel 64x64 conv (batch 8) took 192 ms with 2 BLAS threads and 2 ms with
BLAS at 1 thread; a 64-channel 16x16 conv 36 ms vs 1.7 ms.  A second reason is
to have one thread pool only: OpenMP teams and BLAS workers spinning next to
each other fought for the same 2 cores.  Set ``SANDBOX_BLAS_THREADS`` before
import to override (e.g. for large single GEMMs on an idle machine).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

from . import overlap

ENV_VAR = "SANDBOX_NUM_THREADS"
BLAS_ENV_VAR = "SANDBOX_BLAS_THREADS"

_num_threads: int | None = None
_blas_limiter = None


def available_cores() -> int:
    """Number of CPU cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(os.cpu_count() or 1, 1)


def _validate(n, name="n") -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise TypeError(f"{name} must be a positive integer, got {n!r}")
    n = int(n)
    if n < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {n}")
    return n


def _default_threads() -> int:
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return available_cores()
    try:
        n = int(value)
    except ValueError:
        raise ValueError(
            f"environment variable {ENV_VAR} must be a positive integer, got {value!r}"
        ) from None
    if n < 1:
        raise ValueError(f"environment variable {ENV_VAR} must be >= 1, got {n}")
    return n


def blas_threads() -> int:
    """Threads numpy's BLAS may use: ``SANDBOX_BLAS_THREADS`` or 1 (see module doc)."""
    value = os.environ.get(BLAS_ENV_VAR, "").strip()
    if not value:
        return 1
    try:
        return _validate(int(value), BLAS_ENV_VAR)
    except ValueError:
        raise ValueError(
            f"environment variable {BLAS_ENV_VAR} must be a positive integer, got {value!r}"
        ) from None


def _apply_blas_limit() -> None:
    global _blas_limiter
    if _blas_limiter is not None:
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return
    _blas_limiter = threadpool_limits(limits=blas_threads(), user_api="blas")


#: elements below which a prange kernel runs on one thread: waking an OpenMP team
#: costs more than the work saves (results are identical for any thread count)
PARALLEL_MIN = 1 << 15


def kernel_threads(size: int) -> int:
    """Threads for a ``prange`` kernel over ``size`` elements (1 for small work)."""
    return threads_now() if size >= PARALLEL_MIN else 1


def get_num_threads() -> int:
    """Number of threads the kernels and the worker pool use (BLAS itself uses 1)."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_threads()
        _apply_blas_limit()
    return _num_threads


def threads_now() -> int:
    """Threads a kernel called now, on this thread, may use: :func:`get_num_threads`,
    but while work runs beside the calling thread (:mod:`.overlap`) one fewer on the
    calling thread and one on the side worker."""
    n = get_num_threads()
    # _pending read here as well as in threads_here: while nothing runs beside (nearly
    # always), a kernel's thread count costs no further call
    return overlap.threads_here(n) if overlap._pending else n


def set_num_threads(n: int) -> None:
    """Set the number of threads for the Cython kernels and the worker pool.

    numpy's BLAS stays pinned to :func:`blas_threads` (1) threads: GEMM-heavy
    ops parallelise over fixed chunks on :mod:`sandbox.array._parallel` instead (the
    module docstring gives the measurement behind this).

    Parameters
    ----------
    n : int
        A positive thread count.  Results of every kernel are bitwise identical
        for any ``n``.
    """
    global _num_threads
    n = _validate(n)
    _num_threads = n
    _apply_blas_limit()


@contextmanager
def num_threads(n: int):
    """Context manager that sets the thread count and restores it afterwards."""
    previous = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(previous)
