"""Differentiable 2-D max and average pooling (array ops in ``sandbox.array.pool``)."""

from __future__ import annotations

from ..array import pool as _pool
from ..autograd import Function, once_differentiable

__all__ = ["avg_pool2d", "max_pool2d"]


class MaxPool2d(Function):
    """Max pooling; the backward scatters to the saved argmax indices."""

    @staticmethod
    def forward(ctx, x, kernel_size, stride, padding, dilation, ceil_mode):
        out, idx = _pool.max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode)
        ctx.indices = idx
        ctx.input_shape = x.shape
        return out, idx

    @staticmethod
    @once_differentiable
    def backward(ctx, grad, _grad_indices):
        gx = _pool.max_pool2d_backward(grad, ctx.indices, ctx.input_shape)
        return gx, None, None, None, None, None


class AvgPool2d(Function):
    """Average pooling; the backward spreads each gradient over its window."""

    @staticmethod
    def forward(ctx, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override):
        ctx.params = (kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override)
        ctx.input_shape = x.shape
        return _pool.avg_pool2d(x, *ctx.params)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        return (_pool.avg_pool2d_backward(grad, ctx.input_shape, *ctx.params),
                None, None, None, None, None, None)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling of a Tensor, as ``torch.nn.functional.max_pool2d``.

    With ``return_indices=True`` also returns the int64 flat argmax indices
    (a Tensor without gradient).
    """
    out, idx = MaxPool2d.apply(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling of a Tensor, as ``torch.nn.functional.avg_pool2d``."""
    return AvgPool2d.apply(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override)
