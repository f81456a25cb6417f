"""Copies on every thread: numpy's ``concatenate`` and ``ascontiguousarray`` copy on one.

In a UNet's decoder every level concatenates the skip connection with the upsampled
map (batch 8 of 64² maps: 2-4 MB per ``cat``), and the backward of that ``cat`` hands
each branch a slice of the gradient, which the next kernel needs contiguous: serial
copies in the middle of a step that otherwise runs on every core.  Both are split by
rows (``pyx/_elementwise.pyx``: ``copy_rows``); the bytes are the same as numpy's.
Anything the row copy does not take, and small arrays, go to numpy.
"""

from __future__ import annotations

import math

import numpy as np

from .._C import _elementwise
from ..runtime.threads import kernel_threads

__all__ = ["concatenate", "contiguous", "copy", "row_view"]

#: below this many bytes one thread copies as fast
_PARALLEL_MIN_BYTES = 1 << 20

#: a contiguous copy is cut into blocks of this many bytes, shared among the threads
_BLOCK_BYTES = 1 << 16

#: rows shorter than this many bytes take numpy's copy (a memcpy per row would cost more)
_MIN_ROW_BYTES = 256


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


def row_view(a: np.ndarray, min_row_bytes: int = _MIN_ROW_BYTES):
    """``a`` as a 2-D view (rows, row length) whose rows are contiguous runs of memory,
    or None where it has no such view or its rows are shorter than ``min_row_bytes``.

    The trailing axes laid out contiguously make a row; the leading axes must fold into
    one strided axis of rows (a slice along a leading axis does: one input's part of a
    concatenation's gradient).  A C-contiguous array is one row.
    """
    k, inner = a.ndim, a.itemsize
    while k > 0 and (a.shape[k - 1] == 1 or a.strides[k - 1] == inner):
        inner *= a.shape[k - 1]
        k -= 1
    if inner < min_row_bytes:
        return None
    for i in range(k - 1):  # the leading axes must fold: stride = next stride * next length
        if a.shape[i] != 1 and a.strides[i] != a.strides[i + 1] * a.shape[i + 1]:
            return None
    return a.reshape(math.prod(a.shape[:k]), -1)  # a view: the leading axes fold (k = 0: 1)


def contiguous(a: np.ndarray) -> np.ndarray:
    """``np.ascontiguousarray(a)`` for an ndarray, the copy (if any) on every thread.

    Parameters
    ----------
    a : ndarray
        Any layout; returned as it is when already C-contiguous.

    Returns
    -------
    ndarray
        C-contiguous, same values and dtype.  Strided arrays whose rows are contiguous
        runs (a slice along a leading axis, such as one input's part of a
        concatenation's gradient) are copied by rows on every thread, broadcasts whose
        trailing axes repeat one value (a mean's gradient) filled by rows on every
        thread; others copied by numpy.
    """
    if a.flags.c_contiguous:
        return a
    if a.nbytes < _PARALLEL_MIN_BYTES:
        return np.ascontiguousarray(a)
    src = row_view(a)
    if src is None:
        return _fill_constant_rows(a)
    out = np.empty(a.shape, dtype=a.dtype)
    _elementwise.copy_rows(src.view(np.uint8), out.reshape(src.shape).view(np.uint8), 0,
                           kernel_threads(a.size))
    return out


def _fill_constant_rows(a: np.ndarray) -> np.ndarray:
    """``np.ascontiguousarray(a)`` of a broadcast ``a`` whose trailing axes repeat one
    value (stride 0: the gradient of a mean or a sum over them, expanded), filled on every
    thread; numpy's copy for any other layout."""
    k = a.ndim
    while k > 0 and (a.strides[k - 1] == 0 or a.shape[k - 1] == 1):
        k -= 1
    repeats = math.prod(a.shape[k:])  # values a row repeats (1: nothing is broadcast)
    if repeats == 1 or a.dtype not in (np.float32, np.float64):
        return np.ascontiguousarray(a)
    values = np.ascontiguousarray(a[(Ellipsis, *([0] * (a.ndim - k)))]).reshape(-1)
    out = np.empty(a.shape, dtype=a.dtype)
    _elementwise.fill_rows(values, out.reshape(values.size, -1), kernel_threads(a.size))
    return out


def copy(a: np.ndarray) -> np.ndarray:
    """``np.array(a, order="C")``: a new C-contiguous array with ``a``'s values and dtype,
    copied on every thread where it is large.

    Parameters
    ----------
    a : ndarray
        Any layout.

    Returns
    -------
    ndarray
        Always a new array (never ``a``).  A C-contiguous ``a`` of at least 1 MiB is
        copied in 64 KiB blocks on every thread; a strided one as :func:`contiguous`.
    """
    if not a.flags.c_contiguous:
        return contiguous(a)  # a new array: a strided array is never returned as is
    if a.nbytes < _PARALLEL_MIN_BYTES:
        return np.array(a, order="C")
    out = np.empty(a.shape, dtype=a.dtype)
    src, dst = a.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8)
    whole = a.nbytes - a.nbytes % _BLOCK_BYTES
    _elementwise.copy_rows(src[:whole].reshape(-1, _BLOCK_BYTES),
                           dst[:whole].reshape(-1, _BLOCK_BYTES), 0, kernel_threads(a.size))
    dst[whole:] = src[whole:]
    return out
