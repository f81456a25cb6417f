"""Sums and means over an array's trailing axes, on every thread (numpy's run on one).

A global average pool (``x.mean((2, 3))``) or a whole-array mean of a feature map is a
reduction over the trailing axes of a C-contiguous array: rows of ``width`` values.
Each row is cut into parts of :data:`PART` values, a length fixed by the row alone; the
threads share the parts (``pyx/_elementwise.pyx``'s ``row_sums``: lanes of the dtype by
blocks of 1024, the blocks in double), and each row's parts are then added by numpy in
an order fixed by their number, so a sum never depends on the threads.  Sums are taken
in double and rounded once to the input's dtype: numpy's float32 sums are float32
pairwise sums, within a few ulps of these.
"""

from __future__ import annotations

import math

import numpy as np

from .._C import _elementwise
from ..runtime.threads import kernel_threads

__all__ = ["trailing_mean", "trailing_sum"]

#: values of a row one task sums (the last part of a row may be shorter)
PART = 1 << 16
#: smaller arrays go to numpy's reduction (a parallel region costs more than it saves)
_PARALLEL_MIN_BYTES = 1 << 20


def _trailing_sums(x, axes):
    """The float64 sums of ``x`` over ``axes``, shaped as ``x`` without them, or None
    where numpy should reduce (not the trailing axes of a C-contiguous float32/float64
    array of at least 1 MiB)."""
    k = len(axes)
    if (type(x) is not np.ndarray or k == 0 or x.dtype not in (np.float32, np.float64)
            or x.nbytes < _PARALLEL_MIN_BYTES or not x.flags.c_contiguous
            or tuple(axes) != tuple(range(x.ndim - k, x.ndim))):
        return None
    lead = x.shape[:x.ndim - k]
    width = math.prod(x.shape[x.ndim - k:])
    rows = x.reshape(-1, width)
    parts = np.empty((rows.shape[0], -(-width // PART)))
    _elementwise.row_sums(rows, PART, parts, kernel_threads(x.size))
    return parts.sum(axis=1).reshape(lead)


def _shaped(values, x, axes, keepdims):
    """Float64 ``values`` rounded to ``x``'s dtype, with the reduced axes kept if asked."""
    out = np.asarray(values).astype(x.dtype)
    if keepdims:
        out = out.reshape(tuple(1 if i in axes else n for i, n in enumerate(x.shape)))
    return out


def trailing_sum(x, axes, keepdims=False):
    """``np.sum(x, axis=axes, keepdims=keepdims)``, on every thread where ``axes`` are
    the trailing axes of a large C-contiguous float array (see the module docstring).

    Parameters
    ----------
    x : ndarray
    axes : tuple of int
        Non-negative, increasing.
    keepdims : bool

    Returns
    -------
    ndarray
        The input's dtype (a 0-d array for a sum over every axis).
    """
    sums = _trailing_sums(x, axes)
    if sums is None:
        return np.asarray(np.sum(x, axis=axes, keepdims=keepdims))
    return _shaped(sums, x, axes, keepdims)


def trailing_mean(x, axes, keepdims=False):
    """``np.mean(x, axis=axes, keepdims=keepdims)`` as :func:`trailing_sum` computes sums
    (the sum in double divided by the count, then rounded once).

    Parameters
    ----------
    x : ndarray
    axes : tuple of int
        Non-negative, increasing; at least one value reduced.
    keepdims : bool

    Returns
    -------
    ndarray
    """
    sums = _trailing_sums(x, axes)
    if sums is None:
        return np.asarray(np.mean(x, axis=axes, keepdims=keepdims))
    return _shaped(sums / math.prod(x.shape[a] for a in axes), x, axes, keepdims)
