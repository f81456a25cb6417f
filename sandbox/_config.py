"""One knob for threads: the Cython ``prange`` kernels and numpy's BLAS.

The default is the number of cores this process may run on, or the value of the
``SANDBOX_NUM_THREADS`` environment variable when it is set.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np

ENV_VAR = "SANDBOX_NUM_THREADS"

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


def _apply_blas_limit(n: int) -> None:
    global _blas_limiter
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return
    if _blas_limiter is not None:
        _blas_limiter.restore_original_limits()
    _blas_limiter = threadpool_limits(limits=n, user_api="blas")


def get_num_threads() -> int:
    """Number of threads the kernels (and BLAS) use."""
    global _num_threads
    if _num_threads is None:
        _num_threads = _default_threads()
        _apply_blas_limit(_num_threads)
    return _num_threads


def set_num_threads(n: int) -> None:
    """Set the number of threads for the Cython kernels and for numpy's BLAS.

    Parameters
    ----------
    n : int
        A positive thread count.  Results of every kernel are bitwise identical
        for any ``n``.
    """
    global _num_threads
    n = _validate(n)
    _num_threads = n
    _apply_blas_limit(n)


@contextmanager
def num_threads(n: int):
    """Context manager that sets the thread count and restores it afterwards."""
    previous = get_num_threads()
    set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(previous)
