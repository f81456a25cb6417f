"""Sums on every thread: numpy's ``a + b`` runs on one.

The backward of a network sums gradients wherever a tensor feeds two ops: a UNet's
skip connections each get one gradient from the decoder's concatenation (a slice of
its gradient) and one from the encoder's pooling, 0.25-2 MB apiece at batch 8 of 64²
maps.  :func:`add` splits such sums by rows (``pyx/_elementwise.pyx``: ``add_rows``);
each element is the one IEEE sum numpy forms, so the bits are numpy's.
"""

from __future__ import annotations

import numpy as np

from .._C import _elementwise
from ..runtime.threads import kernel_threads
from .copy import row_view

__all__ = ["add"]

#: below this many bytes a term one thread adds as fast
_PARALLEL_MIN_BYTES = 1 << 19

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def add(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``np.add(a, b, out=out)`` for two ndarrays of one shape, on every thread.

    Parameters
    ----------
    a, b : ndarray
        Any layout.  Float32 or float64 arrays of one shape and dtype whose rows are
        contiguous runs (C-contiguous, or slices along a leading axis) take the
        threaded sum; anything else numpy's.
    out : ndarray, optional
        Where to write (may be ``a`` or ``b``); a new C-contiguous array if None.

    Returns
    -------
    ndarray
        ``out``, or the new array.
    """
    if (a.shape != b.shape or a.dtype != b.dtype or a.dtype not in _KERNEL_DTYPES
            or a.nbytes < _PARALLEL_MIN_BYTES
            or (out is not None and (out.shape != a.shape or out.dtype != a.dtype))):
        return np.add(a, b, out=out)
    if out is None:
        out = np.empty(a.shape, dtype=a.dtype)
    views = _rows_alike((a, b, out))
    if views is None:
        return np.add(a, b, out=out)
    _elementwise.add_rows(*views, kernel_threads(a.size))
    return out


def _rows_alike(arrays):
    """2-D views of same-shape ``arrays`` with one row layout (:func:`row_view`), or None.

    The strided ones fix the rows (they must agree); C-contiguous ones take any."""
    shape = None
    for x in arrays:
        if not x.flags.c_contiguous:
            v = row_view(x)
            if v is None or (shape is not None and v.shape != shape):
                return None
            shape = v.shape
    if shape is None:  # all C-contiguous: one row, cut into blocks by the kernel
        shape = (1, arrays[0].size)
    # a view for each: the strided ones have this row layout, the contiguous any
    return [x.reshape(shape) for x in arrays]
