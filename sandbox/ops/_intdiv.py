"""Floor division, remainder and rounding: ``//``, ``%``, ``round``.

As PyTorch (and Python): ``a // b`` rounds the quotient toward minus infinity
(``-7 // 2 == -4``) and ``a % b`` takes the sign of ``b`` (``-7 % 3 == 2``), so
``a == (a // b) * b + a % b``.  Dtypes follow :func:`~sandbox.ops._promote.result_type`
(integers stay integers).  ``remainder`` is differentiable (``d/da = 1``,
``d/db = -floor(a / b)``); ``floor_divide`` is not (its backward raises, as in
PyTorch); ``round`` has gradient zero, as in PyTorch.
"""

from __future__ import annotations

import numpy as np

from ..autograd import Function, Tensor, unbroadcast
from ._arith import _binary, _binary_operands
from ._util import shape_of

__all__ = ["floor_divide", "remainder", "round"]


def _int_zero_check(b, op):
    """Integer division by zero raises, as in PyTorch (numpy would give 0 and warn)."""
    arr = b._data if isinstance(b, Tensor) else np.asarray(b)
    if arr.dtype.kind in "iub" and np.any(arr == 0):
        raise ZeroDivisionError(f"{op}: integer division by zero")


class FloorDivide(Function):
    @staticmethod
    def forward(ctx, a, b):
        return _binary(np.floor_divide, "floor_divide", a, b)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("derivative for floor_divide is not implemented (as in PyTorch)")


class Remainder(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = (shape_of(a), shape_of(b))
        if ctx.needs_input_grad[1]:
            ctx.quotient = np.floor_divide(a, b)
        return _binary(np.remainder, "remainder", a, b)

    @staticmethod
    def backward(ctx, grad):
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        ga = unbroadcast(grad, sa) if na else None
        gb = unbroadcast(-grad * ctx.quotient, sb) if nb else None
        return ga, gb


class Round(Function):
    @staticmethod
    def forward(ctx, x, decimals):
        ctx.shape = x.shape
        return np.round(x, decimals)  # half to even, as torch.round

    @staticmethod
    def backward(ctx, grad):
        return grad * 0.0, None


def floor_divide(a, b):
    """``a // b``: the quotient rounded toward minus infinity (torch.floor_divide)."""
    a, b = _binary_operands(a, b, "floor_divide")
    _int_zero_check(b, "floor_divide")
    return FloorDivide.apply(a, b)


def remainder(a, b):
    """``a % b`` with the sign of ``b`` (torch.remainder, Python's ``%``)."""
    a, b = _binary_operands(a, b, "remainder")
    _int_zero_check(b, "remainder")
    return Remainder.apply(a, b)


def round(x, *, decimals=0):  # noqa: A001 - mirrors torch.round
    """Round to ``decimals`` places, halves to even (gradient zero), as torch.round."""
    if not isinstance(decimals, int):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    if x.dtype.kind != "f":
        return x if decimals >= 0 else Tensor._make(np.round(x._data, decimals))
    return Round.apply(x, decimals)
