"""Exercise 6: the backward of mul, div, exp, matmul, sum/mean and max.

What it teaches: each backward is a vector-Jacobian product written without ever
forming the Jacobian, and each needs something from the forward (an input, or
the output for exp) or only shapes (sum, mean).  Broadcast operands end with
``unbroadcast``; ``max`` routes the gradient to the winners, shared among ties.

Compare with: ``sandbox.ops._arith.Mul``, ``Div``, ``Exp``,
``sandbox.ops._linalg.MatMul``, ``sandbox.ops._reduce.Sum``, ``Mean`` and ``Amax``.
"""

from __future__ import annotations

import numpy as np

from .ex05_unbroadcast import unbroadcast


def mul_backward(grad, a, b):
    """Gradients of ``a * b`` (broadcasting) for ``a`` and ``b``."""
    return unbroadcast(grad * b, np.shape(a)), unbroadcast(grad * a, np.shape(b))


def div_backward(grad, a, b):
    """Gradients of ``a / b`` (broadcasting): ``g / b`` and ``-g a / b²``."""
    return unbroadcast(grad / b, np.shape(a)), unbroadcast(-grad * a / (b * b), np.shape(b))


def exp_backward(grad, out):
    """Gradient of ``out = exp(x)``, written with the saved *output* (no exp again)."""
    return grad * out


def matmul_backward(grad, a, b):
    """Gradients of ``a @ b`` for arrays with at least 2 dims (batch dims broadcast).

    ``dA = G Bᵀ`` and ``dB = Aᵀ G``, summed over batch dims that were broadcast.
    """
    ga = grad @ np.swapaxes(b, -1, -2)
    gb = np.swapaxes(a, -1, -2) @ grad
    return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


def _kept(shape, axis):
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis) % max(len(shape), 1)
    axes = set(int(a) for a in axes)
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def sum_backward(grad, shape, axis=None, keepdims=False):
    """Gradient of ``x.sum(axis, keepdims)`` for ``x`` of ``shape``: copy it back out."""
    return np.broadcast_to(np.reshape(grad, _kept(shape, axis)), shape).copy()


def mean_backward(grad, shape, axis=None, keepdims=False):
    """Gradient of ``x.mean(axis, keepdims)``: as sum, divided by the count averaged."""
    kept = _kept(shape, axis)
    count = int(np.prod(shape)) // int(np.prod(kept))
    return sum_backward(grad, shape, axis, keepdims) / count


def max_backward(grad, x, axis=None, keepdims=False):
    """Gradient of ``x.max(axis, keepdims)``: to the maxima, shared equally among ties."""
    kept = _kept(x.shape, axis)
    m = np.max(x, axis=axis, keepdims=True)
    winners = x == m
    count = np.sum(winners, axis=axis, keepdims=True)
    return np.reshape(grad, kept) * winners / count
