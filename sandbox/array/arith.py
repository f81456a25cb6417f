"""Sums, differences, products and quotients on every thread: numpy's ``a + b`` runs on
one.

The backward of a network sums gradients wherever a tensor feeds two ops: a UNet's
skip connections each get one gradient from the decoder's concatenation (a slice of
its gradient) and one from the encoder's pooling, 0.25-2 MB apiece at batch 8 of 64²
maps; a residual block adds, a gate multiplies, and a product's backward multiplies
twice.  :func:`binary` splits such operations by rows (``pyx/_elementwise.pyx``:
``arith_rows``) where both operands have one shape and dtype (broadcasting ones take
numpy's); each element is the one IEEE operation numpy forms, so the bits are numpy's.
"""

from __future__ import annotations

import numpy as np

from .._C import _elementwise
from ..runtime.threads import kernel_threads
from .copy import row_view

__all__ = ["add", "binary"]

#: below this many bytes a term one thread adds as fast
_PARALLEL_MIN_BYTES = 1 << 19

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


_CODES = {np.add: _elementwise.ADD, np.subtract: _elementwise.SUB,
          np.multiply: _elementwise.MUL, np.true_divide: _elementwise.DIV}


def binary(ufunc, a, b, out: np.ndarray | None = None):
    """``ufunc(a, b, out=out)`` for ``np.add``, ``np.subtract``, ``np.multiply`` or
    ``np.true_divide``, on every thread where the operands allow.

    Parameters
    ----------
    ufunc : numpy ufunc
        One of the four above; another runs as numpy's call.
    a, b : ndarray or scalar
        Float32 or float64 ndarrays of one shape and dtype, at least 512 KiB, whose
        rows are contiguous runs (C-contiguous, or slices along a leading axis) take
        the threaded kernel; anything else (broadcasting, scalars, other dtypes)
        numpy's call.
    out : ndarray, optional
        Where to write (may be ``a`` or ``b``); a new C-contiguous array if None.

    Returns
    -------
    ndarray
        ``out``, or the new array.
    """
    code = _CODES.get(ufunc)
    if (code is None or type(a) is not np.ndarray or type(b) is not np.ndarray
            or a.shape != b.shape or a.dtype != b.dtype or a.dtype not in _KERNEL_DTYPES
            or a.nbytes < _PARALLEL_MIN_BYTES
            or (out is not None and (out.shape != a.shape or out.dtype != a.dtype))):
        return ufunc(a, b, out=out)
    if out is None:
        out = np.empty(a.shape, dtype=a.dtype)
    views = _rows_alike((a, b, out))
    if views is None:
        return ufunc(a, b, out=out)
    _elementwise.arith_rows(code, *views, kernel_threads(a.size))
    return out


def add(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``np.add(a, b, out=out)`` on every thread where the operands allow (:func:`binary`).

    Parameters
    ----------
    a, b : ndarray
    out : ndarray, optional
        Where to write (may be ``a`` or ``b``).

    Returns
    -------
    ndarray
    """
    return binary(np.add, a, b, out)


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
