"""The differentiable convolutions of any spatial rank, built once for 2-D and 3-D.

Gradients of any order.  A convolution is bilinear in (input, weight), so each of
its gradients is again a convolution:

* input gradient of ``conv``: ``conv_transpose`` of the output gradient with the
  same weight (and the reverse for ``conv_transpose``);
* weight gradient: the ``*WeightGrad`` Functions, whose own backward is a ``conv``
  and a ``conv_transpose`` again.

A plain backward (``create_graph=False``) calls the array kernels directly; only
under ``create_graph=True`` are the gradients built from these Functions.

:func:`conv_family` makes the four Functions for one rank from that rank's array
ops (``sandbox.array.conv`` for 2-D, ``sandbox.array.conv_3d`` for 3-D).
"""

from __future__ import annotations

from types import SimpleNamespace

from ..autograd import Function, Tensor, is_grad_enabled

__all__ = ["check_tensor", "conv_family"]


def check_tensor(x, name):
    """``x`` itself; TypeError unless it is a sandbox Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a sandbox.Tensor, got {type(x).__name__}")
    return x


def conv_family(nd, ops, ntuple):
    """The Functions ``Conv{nd}d``, ``ConvTranspose{nd}d`` and their weight gradients.

    Parameters
    ----------
    nd : int
        Spatial rank (2 or 3); names the Functions and the bias-gradient axes.
    ops : module
        The array ops of that rank: ``conv{nd}d``, ``conv{nd}d_backward``,
        ``conv_transpose{nd}d`` and ``conv_transpose{nd}d_backward`` (looked up at each
        call, so a test may wrap them).
    ntuple : callable
        ``ntuple(value, name, minimum)``: an int or sequence as ``nd`` ints (validated).

    Returns
    -------
    SimpleNamespace
        ``conv``, ``conv_transpose``, ``conv_weight_grad``, ``conv_transpose_weight_grad``.
    """
    bias_axes = (0, *range(2, nd + 2))

    def conv(*args, **kwargs):
        return getattr(ops, f"conv{nd}d")(*args, **kwargs)

    def conv_backward(*args, **kwargs):
        return getattr(ops, f"conv{nd}d_backward")(*args, **kwargs)

    def conv_transpose(*args, **kwargs):
        return getattr(ops, f"conv_transpose{nd}d")(*args, **kwargs)

    def conv_transpose_backward(*args, **kwargs):
        return getattr(ops, f"conv_transpose{nd}d_backward")(*args, **kwargs)

    class Conv(Function):
        """``y = conv(x, w, b)``; backward through the column kernels."""

        @staticmethod
        def forward(ctx, x, weight, bias, stride, padding, dilation, groups):
            ctx.save_for_backward(x, weight)
            ctx.params = (stride, padding, dilation, groups)
            ctx.has_bias = bias is not None
            return conv(x, weight, bias, stride, padding, dilation, groups)

        @staticmethod
        def backward(ctx, grad):
            needs = ctx.needs_input_grad
            needs = (needs[0], needs[1], ctx.has_bias and needs[2])
            if not is_grad_enabled():  # plain backward: the kernels, on arrays
                x, weight = ctx.saved_arrays
                gx, gw, gb = conv_backward(grad.numpy(), x, weight, *ctx.params, needs=needs)
                return gx, gw, gb, None, None, None, None
            # create_graph: every gradient is a differentiable op again
            x, weight = ctx.saved_tensors
            gx = conv_input_grad(grad, weight, x.shape, *ctx.params) if needs[0] else None
            gw = ConvWeightGrad.apply(x, grad, weight.numpy(), *ctx.params) if needs[1] else None
            gb = grad.sum(axis=bias_axes) if needs[2] else None
            return gx, gw, gb, None, None, None, None

    class ConvTranspose(Function):
        """``y = conv_transpose(x, w, b)``, the adjoint of the convolution in ``x``."""

        @staticmethod
        def forward(ctx, x, weight, bias, stride, padding, output_padding, groups, dilation):
            ctx.save_for_backward(x, weight)
            ctx.params = (stride, padding, output_padding, groups, dilation)
            ctx.has_bias = bias is not None
            return conv_transpose(x, weight, bias, stride, padding, output_padding, groups,
                                  dilation)

        @staticmethod
        def backward(ctx, grad):
            needs = ctx.needs_input_grad
            needs = (needs[0], needs[1], ctx.has_bias and needs[2])
            if not is_grad_enabled():  # plain backward: the kernels, on arrays
                x, weight = ctx.saved_arrays
                gx, gw, gb = conv_transpose_backward(grad.numpy(), x, weight, *ctx.params,
                                                     needs=needs)
                return gx, gw, gb, None, None, None, None, None
            x, weight = ctx.saved_tensors
            stride, padding, _, groups, dilation = ctx.params
            gx = None
            if needs[0]:
                gx = transpose_input_grad(grad, weight, x.shape, stride, padding, dilation,
                                          groups)
            gw = None
            if needs[1]:
                gw = ConvTransposeWeightGrad.apply(x, grad, weight.numpy(), *ctx.params)
            gb = grad.sum(axis=bias_axes) if needs[2] else None
            return gx, gw, gb, None, None, None, None, None

    class ConvWeightGrad(Function):
        """``gw = d/dw <conv(x, w), g>``, bilinear in ``(x, g)``.

        ``weight`` (an array) only gives the kernels the weight's shape.  Backward, for
        an incoming ``gg`` shaped like the weight: ``dx = conv_transpose(g, gg)`` and
        ``dg = conv(x, gg)``.
        """

        @staticmethod
        def forward(ctx, x, grad, weight, stride, padding, dilation, groups):
            ctx.save_for_backward(x, grad)
            ctx.params = (stride, padding, dilation, groups)
            return conv_backward(grad, x, weight, stride, padding, dilation, groups,
                                 needs=(False, True, False))[1]

        @staticmethod
        def backward(ctx, gg):
            x, grad = ctx.saved_tensors
            needs = ctx.needs_input_grad
            gx = conv_input_grad(grad, gg, x.shape, *ctx.params) if needs[0] else None
            g_grad = Conv.apply(x, gg, None, *ctx.params) if needs[1] else None
            return gx, g_grad, None, None, None, None, None

    class ConvTransposeWeightGrad(Function):
        """``gw = d/dw <conv_transpose(x, w), g>``, bilinear in ``(x, g)``.

        Backward, for an incoming ``gg`` shaped like the weight:
        ``dx = conv(g, gg)`` (cropped to ``x``) and ``dg = conv_transpose(x, gg)``.
        """

        @staticmethod
        def forward(ctx, x, grad, weight, stride, padding, output_padding, groups, dilation):
            ctx.save_for_backward(x, grad)
            ctx.params = (stride, padding, output_padding, groups, dilation)
            return conv_transpose_backward(grad, x, weight, *ctx.params,
                                           needs=(False, True, False))[1]

        @staticmethod
        def backward(ctx, gg):
            x, grad = ctx.saved_tensors
            stride, padding, _, groups, dilation = ctx.params
            needs = ctx.needs_input_grad
            gx = None
            if needs[0]:
                gx = transpose_input_grad(grad, gg, x.shape, stride, padding, dilation, groups)
            g_grad = ConvTranspose.apply(x, gg, None, *ctx.params) if needs[1] else None
            return gx, g_grad, None, None, None, None, None, None

    def conv_input_grad(grad, weight, input_shape, stride, padding, dilation, groups):
        """``d/dx <conv(x, w), g>`` as a differentiable ``conv_transpose`` of ``g``."""
        s, p = ntuple(stride, "stride", 1), ntuple(padding, "padding", 0)
        d = ntuple(dilation, "dilation", 1)
        k, out, size = weight.shape[2:], grad.shape[2:], input_shape[2:]
        # conv drops the last (size + 2p - d(k-1) - 1) % s inputs of each axis from its
        # windows; output_padding (always < stride) restores them in the transpose.
        op = tuple(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1 - (out[i] - 1) * s[i]
                   for i in range(nd))
        return ConvTranspose.apply(grad, weight, None, stride, padding, op, groups, dilation)

    def transpose_input_grad(grad, weight, input_shape, stride, padding, dilation, groups):
        """``d/dx <conv_transpose(x, w), g>`` as a differentiable ``conv`` of ``g``."""
        gx = Conv.apply(grad, weight, None, stride, padding, dilation, groups)
        size = tuple(input_shape[2:])
        if gx.shape[2:] != size:  # output_padding >= stride: inputs no window reaches
            gx = gx[(slice(None), slice(None), *(slice(0, n) for n in size))]
        return gx

    family = SimpleNamespace(conv=Conv, conv_transpose=ConvTranspose,
                             conv_weight_grad=ConvWeightGrad,
                             conv_transpose_weight_grad=ConvTransposeWeightGrad)
    names = {"conv": f"Conv{nd}d", "conv_transpose": f"ConvTranspose{nd}d",
             "conv_weight_grad": f"Conv{nd}dWeightGrad",
             "conv_transpose_weight_grad": f"ConvTranspose{nd}dWeightGrad"}
    for attr, name in names.items():  # graph listings and tracebacks show these names
        cls = getattr(family, attr)
        cls.__name__ = cls.__qualname__ = name
    return family
