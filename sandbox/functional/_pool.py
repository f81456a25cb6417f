"""Differentiable max and average pooling, 2-D and 3-D (array ops in ``sandbox.array.pool``).

Gradients of any order.  Both ops are linear in the values they move: the max-pool
backward scatters the gradient to the saved argmax indices (:class:`MaxPoolScatter`),
whose backward gathers from those indices (:class:`MaxPoolGather`), and back; the
average-pool backward is the adjoint spread (:class:`AvgPoolAdjoint`), whose backward
is average pooling again.  A plain backward (``create_graph=False``) calls the array
kernels directly.

Each op is one Function class written for every rank (the last ``apply`` argument,
``nd``, is the spatial rank the array ops are called with); the per-rank subclasses
(``MaxPool2d``, ``AvgPool3dAdjoint`` ...) only give the graph nodes their names.
"""

from __future__ import annotations

from typing import NamedTuple

from ..array import pool as _pool
from ..autograd import Function, is_grad_enabled

__all__ = ["avg_pool2d", "avg_pool3d", "max_pool2d", "max_pool3d"]


class MaxPool(Function):
    """Max pooling; the backward scatters to the saved argmax indices."""

    fresh_grads = True  # the scatter allocates the input gradient
    plain_backward_arrays = True  # outside create_graph, grad is an ndarray

    @staticmethod
    def forward(ctx, x, kernel_size, stride, padding, dilation, ceil_mode, nd):
        out, idx = _pool.max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, nd=nd)
        ctx.indices = idx
        ctx.input_shape = x.shape
        ctx.nd = nd
        return out, idx

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        if is_grad_enabled():  # create_graph: a differentiable scatter
            gx = _RANKS[ctx.nd].max_pool_scatter.apply(grad, ctx.indices, ctx.input_shape,
                                                       ctx.nd)
        else:
            gx = _pool.max_pool_backward(grad, ctx.indices, ctx.input_shape, nd=ctx.nd)
        return gx, None, None, None, None, None, None


class MaxPoolScatter(Function):
    """``gx = scatter-add of g to indices`` (the max-pool input gradient); backward:
    gather."""

    @staticmethod
    def forward(ctx, grad, indices, input_shape, nd):
        ctx.indices = indices
        ctx.nd = nd
        return _pool.max_pool_backward(grad, indices, input_shape, nd=nd)

    @staticmethod
    def backward(ctx, gg):
        return _RANKS[ctx.nd].max_pool_gather.apply(gg, ctx.indices, ctx.nd), None, None, None


class MaxPoolGather(Function):
    """``y = x at indices`` per plane (the adjoint of the scatter)."""

    @staticmethod
    def forward(ctx, x, indices, nd):
        ctx.indices = indices
        ctx.input_shape = x.shape
        ctx.nd = nd
        return _pool.max_pool_gather(x, indices, nd=nd)

    @staticmethod
    def backward(ctx, grad):
        scatter = _RANKS[ctx.nd].max_pool_scatter
        return scatter.apply(grad, ctx.indices, ctx.input_shape, ctx.nd), None, None


class AvgPool(Function):
    """Average pooling; the backward spreads each gradient over its window."""

    fresh_grads = True  # the spread allocates the input gradient
    plain_backward_arrays = True  # outside create_graph, grad is an ndarray

    @staticmethod
    def forward(ctx, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                divisor_override, nd):
        ctx.params = (kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override)
        ctx.input_shape = x.shape
        ctx.nd = nd
        # validated once: the plain backward runs on the forward's plan
        ctx.plan = _pool.plan_avg_pool(x, kernel_size, stride, padding, ceil_mode,
                                       divisor_override, nd=nd)
        return _pool.avg_pool(x, *ctx.params, nd=nd, plan=ctx.plan)

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():  # create_graph: the differentiable adjoint
            gx = _RANKS[ctx.nd].avg_pool_adjoint.apply(grad, ctx.input_shape, *ctx.params,
                                                       ctx.nd)
        else:
            gx = _pool.avg_pool_backward(grad, ctx.input_shape, *ctx.params, nd=ctx.nd,
                                         plan=ctx.plan)
        return gx, None, None, None, None, None, None, None


class AvgPoolAdjoint(Function):
    """``gx = avg_pool_backward(g)``, linear in ``g``; backward: average pooling again."""

    @staticmethod
    def forward(ctx, grad, input_shape, kernel_size, stride, padding, ceil_mode,
                count_include_pad, divisor_override, nd):
        ctx.params = (kernel_size, stride, padding, ceil_mode, count_include_pad,
                      divisor_override)
        ctx.nd = nd
        return _pool.avg_pool_backward(grad, input_shape, *ctx.params, nd=nd)

    @staticmethod
    def backward(ctx, gg):
        return (_RANKS[ctx.nd].avg_pool.apply(gg, *ctx.params, ctx.nd),) + (None,) * 8


# The graph names of each rank (MaxPool2dBackward, AvgPool3dAdjointBackward ...).
class MaxPool2d(MaxPool):
    """2-D :class:`MaxPool`."""


class MaxPool3d(MaxPool):
    """3-D :class:`MaxPool`."""


class MaxPool2dScatter(MaxPoolScatter):
    """2-D :class:`MaxPoolScatter`."""


class MaxPool3dScatter(MaxPoolScatter):
    """3-D :class:`MaxPoolScatter`."""


class MaxPool2dGather(MaxPoolGather):
    """2-D :class:`MaxPoolGather`."""


class MaxPool3dGather(MaxPoolGather):
    """3-D :class:`MaxPoolGather`."""


class AvgPool2d(AvgPool):
    """2-D :class:`AvgPool`."""


class AvgPool3d(AvgPool):
    """3-D :class:`AvgPool`."""


class AvgPool2dAdjoint(AvgPoolAdjoint):
    """2-D :class:`AvgPoolAdjoint`."""


class AvgPool3dAdjoint(AvgPoolAdjoint):
    """3-D :class:`AvgPoolAdjoint`."""


class _Rank(NamedTuple):
    max_pool: type
    max_pool_scatter: type
    max_pool_gather: type
    avg_pool: type
    avg_pool_adjoint: type


_RANKS = {
    2: _Rank(MaxPool2d, MaxPool2dScatter, MaxPool2dGather, AvgPool2d, AvgPool2dAdjoint),
    3: _Rank(MaxPool3d, MaxPool3dScatter, MaxPool3dGather, AvgPool3d, AvgPool3dAdjoint),
}


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd):
    out, idx = _RANKS[nd].max_pool.apply(input, kernel_size, stride, padding, dilation,
                                         ceil_mode, nd)
    return (out, idx) if return_indices else out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling of a Tensor, as ``torch.nn.functional.max_pool2d``.

    With ``return_indices=True`` also returns the int64 flat argmax indices
    (a Tensor without gradient).
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     2)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling of a Tensor, as ``torch.nn.functional.max_pool3d``.

    With ``return_indices=True`` also returns the int64 flat argmax indices
    (a Tensor without gradient).
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
                     3)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling of a Tensor, as ``torch.nn.functional.avg_pool2d``."""
    return AvgPool2d.apply(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override, 2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling of a Tensor, as ``torch.nn.functional.avg_pool3d``."""
    return AvgPool3d.apply(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override, 3)
