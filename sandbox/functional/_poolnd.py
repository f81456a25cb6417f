"""Differentiable max and average pooling of any spatial rank, built once for 2-D and 3-D.

Gradients of any order.  Both ops are linear in the values they move: the max-pool
backward scatters the gradient to the saved argmax indices (``MaxPool{nd}dScatter``),
whose backward gathers from those indices (``MaxPool{nd}dGather``), and back; the
average-pool backward is the adjoint spread (``AvgPool{nd}dAdjoint``), whose backward
is average pooling again.  A plain backward (``create_graph=False``) calls the array
kernels directly.

:func:`pool_family` makes the five Functions for one rank from that rank's array ops
(``sandbox.array.pool`` for 2-D, ``sandbox.array.pool3d`` for 3-D).
"""

from __future__ import annotations

from types import SimpleNamespace

from ..autograd import Function, is_grad_enabled

__all__ = ["pool_family"]


def pool_family(nd, ops):
    """The Functions of max and average pooling of spatial rank ``nd``.

    Parameters
    ----------
    nd : int
        Spatial rank (2 or 3); names the Functions.
    ops : module
        The array ops of that rank: ``max_pool{nd}d``, ``max_pool{nd}d_backward``,
        ``max_pool{nd}d_gather``, ``avg_pool{nd}d`` and ``avg_pool{nd}d_backward``
        (looked up at each call, so a test may wrap them).

    Returns
    -------
    SimpleNamespace
        ``max_pool``, ``max_pool_scatter``, ``max_pool_gather``, ``avg_pool``,
        ``avg_pool_adjoint``.
    """

    def op(name):
        return lambda *args: getattr(ops, name.format(nd))(*args)

    max_pool, max_backward = op("max_pool{}d"), op("max_pool{}d_backward")
    max_gather = op("max_pool{}d_gather")
    avg_pool, avg_backward = op("avg_pool{}d"), op("avg_pool{}d_backward")

    class MaxPool(Function):
        """Max pooling; the backward scatters to the saved argmax indices."""

        @staticmethod
        def forward(ctx, x, kernel_size, stride, padding, dilation, ceil_mode):
            out, idx = max_pool(x, kernel_size, stride, padding, dilation, ceil_mode)
            ctx.indices = idx
            ctx.input_shape = x.shape
            return out, idx

        @staticmethod
        def backward(ctx, grad, _grad_indices):
            if is_grad_enabled():  # create_graph: a differentiable scatter
                gx = MaxPoolScatter.apply(grad, ctx.indices, ctx.input_shape)
            else:
                gx = max_backward(grad.numpy(), ctx.indices, ctx.input_shape)
            return gx, None, None, None, None, None

    class MaxPoolScatter(Function):
        """``gx = scatter-add of g to indices`` (the max-pool input gradient); backward:
        gather."""

        @staticmethod
        def forward(ctx, grad, indices, input_shape):
            ctx.indices = indices
            return max_backward(grad, indices, input_shape)

        @staticmethod
        def backward(ctx, gg):
            return MaxPoolGather.apply(gg, ctx.indices), None, None

    class MaxPoolGather(Function):
        """``y = x at indices`` per plane (the adjoint of the scatter)."""

        @staticmethod
        def forward(ctx, x, indices):
            ctx.indices = indices
            ctx.input_shape = x.shape
            return max_gather(x, indices)

        @staticmethod
        def backward(ctx, grad):
            return MaxPoolScatter.apply(grad, ctx.indices, ctx.input_shape), None

    class AvgPool(Function):
        """Average pooling; the backward spreads each gradient over its window."""

        @staticmethod
        def forward(ctx, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override):
            ctx.params = (kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override)
            ctx.input_shape = x.shape
            return avg_pool(x, *ctx.params)

        @staticmethod
        def backward(ctx, grad):
            if is_grad_enabled():  # create_graph: the differentiable adjoint
                gx = AvgPoolAdjoint.apply(grad, ctx.input_shape, *ctx.params)
            else:
                gx = avg_backward(grad.numpy(), ctx.input_shape, *ctx.params)
            return gx, None, None, None, None, None, None

    class AvgPoolAdjoint(Function):
        """``gx = avg_pool_backward(g)``, linear in ``g``; backward: average pooling again."""

        @staticmethod
        def forward(ctx, grad, input_shape, kernel_size, stride, padding, ceil_mode,
                    count_include_pad, divisor_override):
            ctx.params = (kernel_size, stride, padding, ceil_mode, count_include_pad,
                          divisor_override)
            return avg_backward(grad, input_shape, *ctx.params)

        @staticmethod
        def backward(ctx, gg):
            return (AvgPool.apply(gg, *ctx.params),) + (None,) * 7

    family = SimpleNamespace(max_pool=MaxPool, max_pool_scatter=MaxPoolScatter,
                             max_pool_gather=MaxPoolGather, avg_pool=AvgPool,
                             avg_pool_adjoint=AvgPoolAdjoint)
    for cls, name in ((MaxPool, "MaxPool{}d"), (MaxPoolScatter, "MaxPool{}dScatter"),
                      (MaxPoolGather, "MaxPool{}dGather"), (AvgPool, "AvgPool{}d"),
                      (AvgPoolAdjoint, "AvgPool{}dAdjoint")):
        cls.__name__ = cls.__qualname__ = name.format(nd)  # names in graphs and errors
    return family
