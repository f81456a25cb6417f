"""Concatenation on every thread: ``np.concatenate`` copies on one.

In a UNet's decoder every level concatenates the skip connection with the upsampled
map (batch 8 of 64² maps: 2-4 MB per ``cat``), a serial copy in the middle of a step
that otherwise runs on every core.  For C-contiguous inputs of one dtype the copy is
split by rows of the output (``pyx/_elementwise.pyx``: ``copy_rows``); the bytes are
the same as numpy's.  Anything else, and small outputs, take ``np.concatenate``.
"""

from __future__ import annotations

import math

import numpy as np

from .._C import _elementwise
from ..runtime.threads import kernel_threads

__all__ = ["concatenate"]

#: below this many output bytes one thread copies as fast
_PARALLEL_MIN_BYTES = 1 << 20


def _takes(arrays, axis: int) -> bool:
    """Whether the row copy takes ``arrays``: C-contiguous ndarrays of one dtype and rank
    that match except along ``axis`` (a non-negative axis of theirs).  Plain loops: this
    runs at every ``cat``."""
    if not arrays or axis < 0:
        return False
    first = arrays[0]
    if first.ndim <= axis:
        return False
    dtype, ndim, lead, tail = first.dtype, first.ndim, first.shape[:axis], first.shape[axis + 1:]
    for a in arrays:
        if (a.dtype != dtype or a.ndim != ndim or not a.flags.c_contiguous
                or a.shape[:axis] != lead or a.shape[axis + 1:] != tail):
            return False
    return True


def concatenate(arrays, axis: int) -> np.ndarray:
    """``np.concatenate(arrays, axis)`` (same result, same errors) on every thread.

    Parameters
    ----------
    arrays : sequence of ndarray
    axis : int
        A non-negative axis.

    Returns
    -------
    ndarray
    """
    if not _takes(arrays, axis):
        return np.concatenate(arrays, axis=axis)
    first = arrays[0]
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = np.empty(shape, dtype=first.dtype)
    if out.nbytes < _PARALLEL_MIN_BYTES:
        return np.concatenate(arrays, axis=axis, out=out)
    rows = math.prod(shape[:axis])
    dst = out.reshape(rows, -1).view(np.uint8)
    threads = kernel_threads(out.size)
    offset = 0
    for a in arrays:
        src = a.reshape(rows, -1).view(np.uint8)
        _elementwise.copy_rows(src, dst, offset, threads)
        offset += src.shape[1]
    return out
