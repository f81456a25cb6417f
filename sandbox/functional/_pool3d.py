"""Differentiable 3-D max and average pooling (array ops in ``sandbox.array.pool3d``).

The 3-D twin of :mod:`sandbox.functional._pool`, with the same structure.

Gradients of any order.  Both ops are linear in the values they move: the max-pool
backward scatters the gradient to the saved argmax indices (:class:`MaxPool3dScatter`),
whose backward gathers from those indices (:class:`MaxPool3dGather`), and back; the
average-pool backward is the adjoint spread (:class:`AvgPool3dAdjoint`), whose backward
is average pooling again.  A plain backward (``create_graph=False``) calls the array
kernels directly.
"""

from __future__ import annotations

from ..array import pool3d as _pool
from ..autograd import Function, is_grad_enabled

__all__ = ["avg_pool3d", "max_pool3d"]


class MaxPool3d(Function):
    """Max pooling; the backward scatters to the saved argmax indices."""

    @staticmethod
    def forward(ctx, x, kernel_size, stride, padding, dilation, ceil_mode):
        out, idx = _pool.max_pool3d(x, kernel_size, stride, padding, dilation, ceil_mode)
        ctx.indices = idx
        ctx.input_shape = x.shape
        return out, idx

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        if is_grad_enabled():  # create_graph: a differentiable scatter
            gx = MaxPool3dScatter.apply(grad, ctx.indices, ctx.input_shape)
        else:
            gx = _pool.max_pool3d_backward(grad.data, ctx.indices, ctx.input_shape)
        return gx, None, None, None, None, None


class MaxPool3dScatter(Function):
    """``gx = scatter-add of g to indices`` (the max-pool input gradient); backward: gather."""

    @staticmethod
    def forward(ctx, grad, indices, input_shape):
        ctx.indices = indices
        return _pool.max_pool3d_backward(grad, indices, input_shape)

    @staticmethod
    def backward(ctx, gg):
        return MaxPool3dGather.apply(gg, ctx.indices), None, None


class MaxPool3dGather(Function):
    """``y = x at indices`` per plane (the adjoint of :class:`MaxPool3dScatter`)."""

    @staticmethod
    def forward(ctx, x, indices):
        ctx.indices = indices
        ctx.input_shape = x.shape
        return _pool.max_pool3d_gather(x, indices)

    @staticmethod
    def backward(ctx, grad):
        return MaxPool3dScatter.apply(grad, ctx.indices, ctx.input_shape), None


class AvgPool3d(Function):
    """Average pooling; the backward spreads each gradient over its window."""

    @staticmethod
    def forward(ctx, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
        ctx.params = (kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override)
        ctx.input_shape = x.shape
        return _pool.avg_pool3d(x, *ctx.params)

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():  # create_graph: the differentiable adjoint
            gx = AvgPool3dAdjoint.apply(grad, ctx.input_shape, *ctx.params)
        else:
            gx = _pool.avg_pool3d_backward(grad.data, ctx.input_shape, *ctx.params)
        return gx, None, None, None, None, None, None


class AvgPool3dAdjoint(Function):
    """``gx = avg_pool3d_backward(g)``, linear in ``g``; backward: average pooling again."""

    @staticmethod
    def forward(ctx, grad, input_shape, kernel_size, stride, padding, ceil_mode,
                count_include_pad, divisor_override):
        ctx.params = (kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override)
        return _pool.avg_pool3d_backward(grad, input_shape, *ctx.params)

    @staticmethod
    def backward(ctx, gg):
        return (AvgPool3d.apply(gg, *ctx.params),) + (None,) * 7


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling of a Tensor, as ``torch.nn.functional.max_pool3d``.

    With ``return_indices=True`` also returns the int64 flat argmax indices
    (a Tensor without gradient).
    """
    out, idx = MaxPool3d.apply(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling of a Tensor, as ``torch.nn.functional.avg_pool3d``."""
    return AvgPool3d.apply(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override)
