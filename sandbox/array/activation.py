"""Elementwise kernels on every thread: ReLU (the forward and its gradient through the
output), the leaky ReLU and the error function.

numpy's ``np.maximum(x, 0)`` and ``g * (y > 0)`` run on one thread; in a UNet
written with ``nn.ReLU`` modules they were the largest serial part of a training
step after the Python overhead; numpy's ``np.where`` of the leaky ReLU took 5 ns an
element (a branch on the sign of each: 2.6 ms for a (8, 16, 64, 64) map on the AMD EPYC
family 25 model 1 VM, 7 times ``np.maximum``).  The kernels (``pyx/_elementwise.pyx``) compute the
same operations, so the results are bitwise numpy's for any thread count; other
dtypes and non-contiguous arrays take numpy's path.
"""

from __future__ import annotations

import numpy as np

from .._C import _elementwise
from ..runtime.threads import kernel_threads

__all__ = ["erf", "leaky_relu", "leaky_relu_backward", "relu", "relu_backward"]

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _flat(a: np.ndarray) -> np.ndarray | None:
    """``a`` as a flat view for the kernels, or None when they cannot take it."""
    if a.dtype not in _KERNEL_DTYPES or not a.flags.c_contiguous or a.ndim == 0:
        return None
    return a.reshape(-1)


def relu(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``max(x, 0)`` elementwise, as ``np.maximum(x, 0)`` (NaN propagates).

    Parameters
    ----------
    x : ndarray
    out : ndarray, optional
        Where to write (may be ``x`` for an in-place ReLU); same shape and dtype.

    Returns
    -------
    ndarray
    """
    flat = _flat(x)
    if out is None:
        out = np.empty_like(x)
    flat_out = _flat(out) if flat is not None and out.dtype == x.dtype else None
    if flat_out is None:
        return np.maximum(x, 0, out=out)
    _elementwise.relu(flat, flat_out, kernel_threads(flat.size))
    return out


def relu_backward(grad: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The gradient of ReLU through its output: ``grad * (y > 0)`` (0 where ``y == 0``).

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    y : ndarray
        The output of the forward (same shape).

    Returns
    -------
    ndarray
    """
    g, yf = _flat(grad), _flat(y)
    if g is None or yf is None or grad.dtype != y.dtype or grad.shape != y.shape:
        return grad * (y > 0)
    out = np.empty_like(grad)
    _elementwise.relu_grad(g, yf, out.reshape(-1), kernel_threads(g.size))
    return out


def leaky_relu(x: np.ndarray, slope: float, out: np.ndarray | None = None) -> np.ndarray:
    """``x`` where ``x > 0``, else ``x * slope``: ``np.where(x > 0, x, x * slope)``
    elementwise (``slope`` a Python float, rounded to ``x``'s dtype; NaN propagates).

    Parameters
    ----------
    x : ndarray
    slope : float
    out : ndarray, optional
        Where to write (may be ``x`` for an in-place call); same shape and dtype.

    Returns
    -------
    ndarray
    """
    flat = _flat(x)
    flat_out = None
    if flat is not None:
        if out is None:
            out = np.empty_like(x)
        flat_out = _flat(out) if out.dtype == x.dtype else None
    if flat_out is None:
        y = np.where(x > 0, x, x * slope)
        if out is None:
            return y
        out[...] = y
        return out
    _elementwise.leaky_relu(flat, flat_out, slope, kernel_threads(flat.size))
    return out


def leaky_relu_backward(grad: np.ndarray, mask_of: np.ndarray, slope: float) -> np.ndarray:
    """The gradient of the leaky ReLU: ``grad * np.where(mask_of > 0, 1, slope)`` (``slope``
    in ``grad``'s dtype).

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    mask_of : ndarray
        The forward's input, or its output where ``slope >= 0`` (positive exactly where
        the input is); same shape.
    slope : float

    Returns
    -------
    ndarray
    """
    g, m = _flat(grad), _flat(mask_of)
    if g is None or m is None or grad.dtype != mask_of.dtype or grad.shape != mask_of.shape:
        return grad * np.where(mask_of > 0, 1.0, slope).astype(grad.dtype)
    out = np.empty_like(grad)
    _elementwise.leaky_relu_grad(g, m, out.reshape(-1), slope, kernel_threads(g.size))
    return out


def erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise, by the C library's ``erf`` in double precision
    (numpy has none); float32 inputs give float32, rounded once.

    Parameters
    ----------
    x : ndarray, float32 or float64

    Returns
    -------
    ndarray
    """
    flat = _flat(x)
    out = np.empty_like(x)
    if flat is None:  # not contiguous (or 0-d): through a contiguous copy
        out[...] = erf(np.ascontiguousarray(x).reshape(-1) if x.ndim else x.reshape(1)
                       ).reshape(x.shape)
        return out
    _elementwise.erf(flat, out.reshape(-1), kernel_threads(flat.size))
    return out
