"""Gathers along the class axis (N, C, ...) with one index per element, on every thread.

What cross-entropy with class-index targets needs and numpy has no fast form for
(``np.take_along_axis`` and ``np.put_along_axis`` on the class axis cost 5-10x a pass
over the array): each element's target class, and the gradient that differs there.
The kernels (``pyx/_loss.pyx``) compute the same operations as the numpy expressions
in their docstrings, so the bits are numpy's; the functions check their arguments
(classes out of range would make the kernels read outside ``x``) unless told the
caller has.
"""

from __future__ import annotations

import math

import numpy as np

from .._C import _loss
from ..runtime.threads import kernel_threads
from ._validate import FLOAT_DTYPES

__all__ = ["softmax_cross_entropy_grad", "take_classes"]


def _rows(t: np.ndarray) -> np.ndarray:
    """``t`` as a C-contiguous (N, P) array of intp."""
    return np.ascontiguousarray(t, dtype=np.intp).reshape(t.shape[0], math.prod(t.shape[1:]))


def _check(x: np.ndarray, t: np.ndarray, name: str) -> None:
    """TypeError / ValueError unless ``x`` is a float32/float64 (N, C, ...) array and ``t``
    an integer (N, ...) array of classes in ``[0, C)`` (the kernels read ``x`` there)."""
    if not isinstance(x, np.ndarray) or x.dtype not in FLOAT_DTYPES or x.ndim < 2:
        raise TypeError(f"{name} must be a float32 or float64 ndarray of shape (N, C, ...)")
    if not isinstance(t, np.ndarray) or t.dtype.kind not in "iu":
        raise TypeError("t must be an integer ndarray of classes")
    if t.shape != x.shape[:1] + x.shape[2:]:
        raise ValueError(f"t must have shape {x.shape[:1] + x.shape[2:]} for {name} of "
                         f"shape {x.shape}, got {t.shape}")
    if t.size and (int(t.min()) < 0 or int(t.max()) >= x.shape[1]):
        raise ValueError(f"t must hold classes in [0, {x.shape[1]}), got values from "
                         f"{int(t.min())} to {int(t.max())}")


def take_classes(x: np.ndarray, t: np.ndarray, check: bool = True) -> np.ndarray:
    """``np.take_along_axis(x, t[:, None], axis=1)[:, 0]``.

    Parameters
    ----------
    x : ndarray, float32 or float64, shape (N, C, ...)
    t : ndarray of int, shape (N, ...), every entry in ``[0, C)``
    check : bool
        Validate ``x`` and ``t`` (False for a caller that has: cross-entropy).

    Returns
    -------
    ndarray, shape (N, ...)
    """
    if check:
        _check(x, t, "x")
    x = np.ascontiguousarray(x)
    n, c, points = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    out = np.empty(t.shape, x.dtype)
    _loss.take_classes(x.reshape(n, c, points), _rows(t), out.reshape(n, points),
                       kernel_threads(x.size))
    return out


def softmax_cross_entropy_grad(prob: np.ndarray, t: np.ndarray, s,
                               check: bool = True, *, log: bool = False) -> np.ndarray:
    """The input gradient of cross-entropy from the softmax: ``-(prob * s[:, None])``,
    with ``s - prob * s`` at each element's class ``t``.

    Parameters
    ----------
    prob : ndarray, float32 or float64, shape (N, C, ...)
        ``softmax(x)`` over axis 1; with ``log``, ``log_softmax(x)``, whose exp the
        kernel takes on the way (the bits of ``activation.exp`` first, without its array).
    t : ndarray of int, shape (N, ...), every entry in ``[0, C)``
    s : ndarray, shape (N, ...) (or broadcasting to it), prob's dtype
        ``-g * w[t]``: the upstream gradient times the target's class weight, negated.
    check : bool
        Validate ``prob`` and ``t`` (False for a caller that has: cross-entropy).

    Returns
    -------
    ndarray, shape of ``prob``
    """
    if check:
        _check(prob, t, "prob")
    prob = np.ascontiguousarray(prob)
    n, c, points = prob.shape[0], prob.shape[1], math.prod(prob.shape[2:])
    s = np.asarray(s, prob.dtype)
    # one value for every element (an unweighted mean's): a fill, not numpy's broadcast
    s = (np.full(t.shape, s, prob.dtype) if s.ndim == 0
         else np.ascontiguousarray(np.broadcast_to(s, t.shape)))
    out = np.empty(prob.shape, prob.dtype)
    _loss.class_grad(prob.reshape(n, c, points), _rows(t), s.reshape(n, points),
                     out.reshape(n, c, points), kernel_threads(prob.size), log)
    return out
