"""Matrix multiplication with numpy's ``matmul`` semantics (batched, 1-D cases)."""

from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ._util import operand


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        if np.ndim(a) == 0 or np.ndim(b) == 0:
            raise ValueError(
                f"matmul: both operands need at least 1 dim, got shapes "
                f"{np.shape(a)} and {np.shape(b)}"
            )
        ctx.shapes = (a.shape, b.shape)
        na, nb = ctx.needs_input_grad
        ctx.save_for_backward(a if nb else None, b if na else None)
        try:
            return np.matmul(a, b)
        except ValueError as exc:
            raise ValueError(
                f"matmul: shapes {a.shape} and {b.shape} do not match (last dim of the first "
                "must equal the second-to-last dim of the second; batch dims must broadcast)"
            ) from exc

    @staticmethod
    def backward(ctx, grad):
        # Treat 1-D operands as matrices: a (n,) -> (1, n), b (n,) -> (n, 1); then
        # dA = G @ B^T and dB = A^T @ G, summed over broadcast batch dims.
        a, b = ctx.saved_tensors
        sa, sb = ctx.shapes
        na, nb = ctx.needs_input_grad
        sa2 = (1,) + sa if len(sa) == 1 else sa
        sb2 = sb + (1,) if len(sb) == 1 else sb
        g = grad
        if len(sa) == 1:
            g = g.unsqueeze(-2 if len(sb) > 1 else 0)
        if len(sb) == 1:
            g = g.unsqueeze(-1)
        ga = gb = None
        if na:
            b2 = b.reshape(sb2)
            ga = unbroadcast(g @ b2.transpose(-1, -2), sa2).reshape(sa)
        if nb:
            a2 = a.reshape(sa2)
            gb = unbroadcast(a2.transpose(-1, -2) @ g, sb2).reshape(sb)
        return ga, gb


def matmul(a, b):
    """Matrix product ``a @ b`` with numpy semantics (batch dims broadcast)."""
    return MatMul.apply(operand(a, "matmul"), operand(b, "matmul"))
