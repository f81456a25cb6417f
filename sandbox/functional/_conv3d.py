"""Differentiable 3-D convolution and transposed convolution (arrays: ``sandbox.array.conv_3d``).

The 3-D twin of :mod:`sandbox.functional._conv`, with the same structure.
Gradients of any order.  ``conv3d`` is bilinear in (input, weight), so each of its
gradients is again a convolution:

* input gradient of ``conv3d``: ``conv_transpose3d`` of the output gradient with
  the same weight (and the reverse for ``conv_transpose3d``);
* weight gradient: :class:`Conv3dWeightGrad` / :class:`ConvTranspose3dWeightGrad`,
  whose own backward is a ``conv3d`` and a ``conv_transpose3d`` again.

A plain backward (``create_graph=False``) calls the array kernels directly; only
under ``create_graph=True`` are the gradients built from these Functions.
"""

from __future__ import annotations

from ..array import conv_3d as _conv
from ..array._validate import triple
from ..autograd import Function, Tensor, is_grad_enabled

__all__ = ["conv3d", "conv_transpose3d"]


class Conv3d(Function):
    """``y = conv3d(x, w, b)``; backward through the vol2col/col2vol kernels."""

    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, dilation, groups):
        ctx.save_for_backward(x, weight)
        ctx.params = (stride, padding, dilation, groups)
        ctx.has_bias = bias is not None
        return _conv.conv3d(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        needs = (needs[0], needs[1], ctx.has_bias and needs[2])
        if not is_grad_enabled():  # plain backward: the kernels, on arrays
            x, weight = ctx.saved_arrays
            gx, gw, gb = _conv.conv3d_backward(grad.data, x, weight, *ctx.params, needs=needs)
            return gx, gw, gb, None, None, None, None
        # create_graph: every gradient is a differentiable op again
        x, weight = ctx.saved_tensors
        gx = _conv3d_input_grad(grad, weight, x.shape, *ctx.params) if needs[0] else None
        gw = Conv3dWeightGrad.apply(x, grad, weight.data, *ctx.params) if needs[1] else None
        gb = grad.sum(axis=(0, 2, 3, 4)) if needs[2] else None
        return gx, gw, gb, None, None, None, None


class ConvTranspose3d(Function):
    """``y = conv_transpose3d(x, w, b)``, the adjoint of :class:`Conv3d` in ``x``."""

    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, output_padding, groups, dilation):
        ctx.save_for_backward(x, weight)
        ctx.params = (stride, padding, output_padding, groups, dilation)
        ctx.has_bias = bias is not None
        return _conv.conv_transpose3d(x, weight, bias, stride, padding, output_padding, groups,
                                      dilation)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        needs = (needs[0], needs[1], ctx.has_bias and needs[2])
        if not is_grad_enabled():  # plain backward: the kernels, on arrays
            x, weight = ctx.saved_arrays
            gx, gw, gb = _conv.conv_transpose3d_backward(grad.data, x, weight, *ctx.params,
                                                         needs=needs)
            return gx, gw, gb, None, None, None, None, None
        x, weight = ctx.saved_tensors
        stride, padding, _, groups, dilation = ctx.params
        gx = None
        if needs[0]:
            gx = _conv_transpose3d_input_grad(grad, weight, x.shape, stride, padding, dilation,
                                              groups)
        gw = None
        if needs[1]:
            gw = ConvTranspose3dWeightGrad.apply(x, grad, weight.data, *ctx.params)
        gb = grad.sum(axis=(0, 2, 3, 4)) if needs[2] else None
        return gx, gw, gb, None, None, None, None, None


class Conv3dWeightGrad(Function):
    """``gw = d/dw <conv3d(x, w), g>``, bilinear in ``(x, g)``.

    ``weight`` (an array) only gives the kernels the weight's shape.  Backward, for
    an incoming ``gg`` shaped like the weight: ``dx = conv_transpose3d(g, gg)`` and
    ``dg = conv3d(x, gg)``.
    """

    @staticmethod
    def forward(ctx, x, grad, weight, stride, padding, dilation, groups):
        ctx.save_for_backward(x, grad)
        ctx.params = (stride, padding, dilation, groups)
        return _conv.conv3d_backward(grad, x, weight, stride, padding, dilation, groups,
                                     needs=(False, True, False))[1]

    @staticmethod
    def backward(ctx, gg):
        x, grad = ctx.saved_tensors
        needs = ctx.needs_input_grad
        gx = _conv3d_input_grad(grad, gg, x.shape, *ctx.params) if needs[0] else None
        g_grad = Conv3d.apply(x, gg, None, *ctx.params) if needs[1] else None
        return gx, g_grad, None, None, None, None, None


class ConvTranspose3dWeightGrad(Function):
    """``gw = d/dw <conv_transpose3d(x, w), g>``, bilinear in ``(x, g)``.

    Backward, for an incoming ``gg`` shaped like the weight:
    ``dx = conv3d(g, gg)`` (cropped to ``x``) and ``dg = conv_transpose3d(x, gg)``.
    """

    @staticmethod
    def forward(ctx, x, grad, weight, stride, padding, output_padding, groups, dilation):
        ctx.save_for_backward(x, grad)
        ctx.params = (stride, padding, output_padding, groups, dilation)
        return _conv.conv_transpose3d_backward(grad, x, weight, *ctx.params,
                                               needs=(False, True, False))[1]

    @staticmethod
    def backward(ctx, gg):
        x, grad = ctx.saved_tensors
        stride, padding, _, groups, dilation = ctx.params
        needs = ctx.needs_input_grad
        gx = None
        if needs[0]:
            gx = _conv_transpose3d_input_grad(grad, gg, x.shape, stride, padding, dilation,
                                              groups)
        g_grad = ConvTranspose3d.apply(x, gg, None, *ctx.params) if needs[1] else None
        return gx, g_grad, None, None, None, None, None, None


def _conv3d_input_grad(grad, weight, input_shape, stride, padding, dilation, groups):
    """``d/dx <conv3d(x, w), g>`` as a differentiable ``conv_transpose3d`` of ``g``."""
    s, p = triple(stride, "stride", 1), triple(padding, "padding", 0)
    d = triple(dilation, "dilation", 1)
    k, out, size = weight.shape[2:], grad.shape[2:], input_shape[2:]
    # conv3d drops the last (size + 2p - d(k-1) - 1) % s input planes from its windows;
    # output_padding (always < stride) restores them in the transposed convolution.
    op = tuple(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1 - (out[i] - 1) * s[i]
               for i in range(3))
    return ConvTranspose3d.apply(grad, weight, None, stride, padding, op, groups, dilation)


def _conv_transpose3d_input_grad(grad, weight, input_shape, stride, padding, dilation, groups):
    """``d/dx <conv_transpose3d(x, w), g>`` as a differentiable ``conv3d`` of ``g``."""
    gx = Conv3d.apply(grad, weight, None, stride, padding, dilation, groups)
    d, h, w = input_shape[2:]
    if gx.shape[2:] != (d, h, w):  # output_padding >= stride: planes no input reaches
        gx = gx[:, :, :d, :h, :w]
    return gx


def _tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a sandbox.Tensor, got {type(x).__name__}")
    return x


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of Tensors, as ``torch.nn.functional.conv3d``.

    ``input`` (N, C_in, D, H, W), ``weight`` (C_out, C_in/groups, kd, kh, kw), ``bias``
    (C_out,) or None.  See :func:`sandbox.array.conv_3d.conv3d` for the options.
    """
    _tensor(input, "input")
    _tensor(weight, "weight")
    return Conv3d.apply(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution of Tensors, as ``torch.nn.functional.conv_transpose3d``.

    ``input`` (N, C_in, D, H, W), ``weight`` (C_in, C_out/groups, kd, kh, kw), ``bias``
    (C_out,) or None.  See :func:`sandbox.array.conv_3d.conv_transpose3d` for the options.
    """
    _tensor(input, "input")
    _tensor(weight, "weight")
    return ConvTranspose3d.apply(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)
