"""Exercise 6: the backward of mul, div, exp, matmul, sum/mean and max.

What it teaches: each backward is a vector-Jacobian product written without ever
forming the Jacobian, and each needs something from the forward (an input, or
the output for exp) or only shapes (sum, mean).  Broadcast operands end with
``unbroadcast``; ``max`` routes the gradient to the winners, shared among ties.

Compare with: ``sandbox.ops._arith.Mul``, ``Div``, ``Exp``,
``sandbox.ops._linalg.MatMul``, ``sandbox.ops._reduce.Sum``, ``Mean`` and ``Amax``.

Run: ``python -m pytest exercises/test_ex06_op_backwards.py --student``

All functions take and return numpy arrays; ``grad`` has the shape of the
forward's output.
"""

from __future__ import annotations

import numpy as np  # noqa: F401 - you will need it

from .._track import todo
from .ex05_unbroadcast import unbroadcast  # noqa: F401 - your exercise 5


def mul_backward(grad, a, b):
    """Gradients ``(ga, gb)`` of ``a * b`` (a and b may broadcast against each other)."""
    todo("mul_backward")


def div_backward(grad, a, b):
    """Gradients ``(ga, gb)`` of ``a / b`` (broadcasting): d/da = 1/b, d/db = -a/b²."""
    todo("div_backward")


def exp_backward(grad, out):
    """Gradient of ``out = exp(x)``, written with the saved *output* (no exp again)."""
    todo("exp_backward")


def matmul_backward(grad, a, b):
    """Gradients ``(ga, gb)`` of ``a @ b`` for arrays with at least 2 dims.

    Batch dims (all but the last two) broadcast as in numpy, so finish each with
    ``unbroadcast``.  Hint: ``np.swapaxes(b, -1, -2)`` is a batched transpose.
    """
    todo("matmul_backward")


def sum_backward(grad, shape, axis=None, keepdims=False):
    """Gradient of ``x.sum(axis, keepdims)`` for ``x`` of ``shape``.

    ``axis`` is None (all), an int or a tuple (may be negative).  Without keepdims
    the summed axes are gone from ``grad``: reshape to the kept shape first, then
    broadcast back to ``shape``.
    """
    todo("sum_backward")


def mean_backward(grad, shape, axis=None, keepdims=False):
    """Gradient of ``x.mean(axis, keepdims)``: as sum, divided by the count averaged."""
    todo("mean_backward")


def max_backward(grad, x, axis=None, keepdims=False):
    """Gradient of ``x.max(axis, keepdims)``: to the maxima, shared equally among ties.

    (The library and ``torch.amax`` share among ties; ``torch.max(dim)`` picks one.)
    """
    todo("max_backward")
