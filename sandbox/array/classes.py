"""Gathers along the class axis (N, C, ...) with one index per element, on every thread.

What cross-entropy with class-index targets needs and numpy has no fast form for
(``np.take_along_axis`` and ``np.put_along_axis`` on the class axis cost 5-10x a pass
over the array): each element's target class, and the gradient that differs there.
The kernels (``pyx/_loss.pyx``) compute the same operations as the numpy expressions
in their docstrings, so the bits are numpy's.
"""

from __future__ import annotations

import math

import numpy as np

from .._C import _loss
from ..runtime.threads import kernel_threads

__all__ = ["softmax_cross_entropy_grad", "take_classes"]


def _rows(t: np.ndarray) -> np.ndarray:
    """``t`` as a C-contiguous (N, P) array of intp."""
    return np.ascontiguousarray(t, dtype=np.intp).reshape(t.shape[0], math.prod(t.shape[1:]))


def take_classes(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``np.take_along_axis(x, t[:, None], axis=1)[:, 0]``.

    Parameters
    ----------
    x : ndarray, float32 or float64, shape (N, C, ...)
    t : ndarray of int, shape (N, ...), every entry in ``[0, C)`` (not checked: the
        caller validated the targets)

    Returns
    -------
    ndarray, shape (N, ...)
    """
    x = np.ascontiguousarray(x)
    n, c, points = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    out = np.empty(t.shape, x.dtype)
    _loss.take_classes(x.reshape(n, c, points), _rows(t), out.reshape(n, points),
                       kernel_threads(x.size))
    return out


def softmax_cross_entropy_grad(prob: np.ndarray, t: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The input gradient of cross-entropy from the softmax: ``-(prob * s[:, None])``,
    with ``s - prob * s`` at each element's class ``t``.

    Parameters
    ----------
    prob : ndarray, float32 or float64, shape (N, C, ...)
        ``softmax(x)`` over axis 1.
    t : ndarray of int, shape (N, ...), every entry in ``[0, C)``
    s : ndarray, shape (N, ...) (or broadcasting to it), prob's dtype
        ``-g * w[t]``: the upstream gradient times the target's class weight, negated.

    Returns
    -------
    ndarray, shape of ``prob``
    """
    prob = np.ascontiguousarray(prob)
    n, c, points = prob.shape[0], prob.shape[1], math.prod(prob.shape[2:])
    s = np.ascontiguousarray(np.broadcast_to(np.asarray(s, prob.dtype), t.shape))
    out = np.empty(prob.shape, prob.dtype)
    _loss.class_grad(prob.reshape(n, c, points), _rows(t), s.reshape(n, points),
                     out.reshape(n, c, points), kernel_threads(prob.size))
    return out
