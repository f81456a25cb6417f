"""Differentiable 2-D convolution and transposed convolution (arrays: ``sandbox.array.conv``).

Gradients of any order.  ``conv2d`` is bilinear in (input, weight), so each of its
gradients is again a convolution:

* input gradient of ``conv2d``: ``conv_transpose2d`` of the output gradient with
  the same weight (and the reverse for ``conv_transpose2d``);
* weight gradient: :class:`Conv2dWeightGrad` / :class:`ConvTranspose2dWeightGrad`,
  whose own backward is a ``conv2d`` and a ``conv_transpose2d`` again.

A plain backward (``create_graph=False``) calls the array kernels directly; only
under ``create_graph=True`` are the gradients built from these Functions.
"""

from __future__ import annotations

from ..array import conv as _conv
from ..array._validate import pair
from ..autograd import Function, Tensor, is_grad_enabled

__all__ = ["conv2d", "conv_transpose2d"]


class Conv2d(Function):
    """``y = conv2d(x, w, b)``; backward through the im2col/col2im kernels."""

    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, dilation, groups):
        ctx.save_for_backward(x, weight)
        ctx.params = (stride, padding, dilation, groups)
        ctx.has_bias = bias is not None
        return _conv.conv2d(x, weight, bias, stride, padding, dilation, groups)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        needs = (needs[0], needs[1], ctx.has_bias and needs[2])
        if not is_grad_enabled():  # plain backward: the kernels, on arrays
            x, weight = ctx.saved_arrays
            gx, gw, gb = _conv.conv2d_backward(grad.data, x, weight, *ctx.params, needs=needs)
            return gx, gw, gb, None, None, None, None
        # create_graph: every gradient is a differentiable op again
        x, weight = ctx.saved_tensors
        gx = _conv2d_input_grad(grad, weight, x.shape, *ctx.params) if needs[0] else None
        gw = Conv2dWeightGrad.apply(x, grad, weight.data, *ctx.params) if needs[1] else None
        gb = grad.sum(axis=(0, 2, 3)) if needs[2] else None
        return gx, gw, gb, None, None, None, None


class ConvTranspose2d(Function):
    """``y = conv_transpose2d(x, w, b)``, the adjoint of :class:`Conv2d` in ``x``."""

    @staticmethod
    def forward(ctx, x, weight, bias, stride, padding, output_padding, groups, dilation):
        ctx.save_for_backward(x, weight)
        ctx.params = (stride, padding, output_padding, groups, dilation)
        ctx.has_bias = bias is not None
        return _conv.conv_transpose2d(x, weight, bias, stride, padding, output_padding, groups,
                                      dilation)

    @staticmethod
    def backward(ctx, grad):
        needs = ctx.needs_input_grad
        needs = (needs[0], needs[1], ctx.has_bias and needs[2])
        if not is_grad_enabled():  # plain backward: the kernels, on arrays
            x, weight = ctx.saved_arrays
            gx, gw, gb = _conv.conv_transpose2d_backward(grad.data, x, weight, *ctx.params,
                                                         needs=needs)
            return gx, gw, gb, None, None, None, None, None
        x, weight = ctx.saved_tensors
        stride, padding, _, groups, dilation = ctx.params
        gx = None
        if needs[0]:
            gx = _conv_transpose2d_input_grad(grad, weight, x.shape, stride, padding, dilation,
                                              groups)
        gw = None
        if needs[1]:
            gw = ConvTranspose2dWeightGrad.apply(x, grad, weight.data, *ctx.params)
        gb = grad.sum(axis=(0, 2, 3)) if needs[2] else None
        return gx, gw, gb, None, None, None, None, None


class Conv2dWeightGrad(Function):
    """``gw = d/dw <conv2d(x, w), g>``, bilinear in ``(x, g)``.

    ``weight`` (an array) only gives the kernels the weight's shape.  Backward, for
    an incoming ``gg`` shaped like the weight: ``dx = conv_transpose2d(g, gg)`` and
    ``dg = conv2d(x, gg)``.
    """

    @staticmethod
    def forward(ctx, x, grad, weight, stride, padding, dilation, groups):
        ctx.save_for_backward(x, grad)
        ctx.params = (stride, padding, dilation, groups)
        return _conv.conv2d_backward(grad, x, weight, stride, padding, dilation, groups,
                                     needs=(False, True, False))[1]

    @staticmethod
    def backward(ctx, gg):
        x, grad = ctx.saved_tensors
        needs = ctx.needs_input_grad
        gx = _conv2d_input_grad(grad, gg, x.shape, *ctx.params) if needs[0] else None
        g_grad = Conv2d.apply(x, gg, None, *ctx.params) if needs[1] else None
        return gx, g_grad, None, None, None, None, None


class ConvTranspose2dWeightGrad(Function):
    """``gw = d/dw <conv_transpose2d(x, w), g>``, bilinear in ``(x, g)``.

    Backward, for an incoming ``gg`` shaped like the weight:
    ``dx = conv2d(g, gg)`` (cropped to ``x``) and ``dg = conv_transpose2d(x, gg)``.
    """

    @staticmethod
    def forward(ctx, x, grad, weight, stride, padding, output_padding, groups, dilation):
        ctx.save_for_backward(x, grad)
        ctx.params = (stride, padding, output_padding, groups, dilation)
        return _conv.conv_transpose2d_backward(grad, x, weight, *ctx.params,
                                               needs=(False, True, False))[1]

    @staticmethod
    def backward(ctx, gg):
        x, grad = ctx.saved_tensors
        stride, padding, _, groups, dilation = ctx.params
        needs = ctx.needs_input_grad
        gx = None
        if needs[0]:
            gx = _conv_transpose2d_input_grad(grad, gg, x.shape, stride, padding, dilation,
                                              groups)
        g_grad = ConvTranspose2d.apply(x, gg, None, *ctx.params) if needs[1] else None
        return gx, g_grad, None, None, None, None, None, None


def _conv2d_input_grad(grad, weight, input_shape, stride, padding, dilation, groups):
    """``d/dx <conv2d(x, w), g>`` as a differentiable ``conv_transpose2d`` of ``g``."""
    (sh, sw), (ph, pw), (dh, dw) = (pair(stride, "stride", 1), pair(padding, "padding", 0),
                                    pair(dilation, "dilation", 1))
    kh, kw = weight.shape[2:]
    ho, wo = grad.shape[2:]
    h, w = input_shape[2:]
    # conv2d drops the last (h + 2p - d(k-1) - 1) % s input rows from its windows;
    # output_padding (always < stride) restores them in the transposed convolution.
    oph = h + 2 * ph - dh * (kh - 1) - 1 - (ho - 1) * sh
    opw = w + 2 * pw - dw * (kw - 1) - 1 - (wo - 1) * sw
    return ConvTranspose2d.apply(grad, weight, None, stride, padding, (oph, opw), groups,
                                 dilation)


def _conv_transpose2d_input_grad(grad, weight, input_shape, stride, padding, dilation, groups):
    """``d/dx <conv_transpose2d(x, w), g>`` as a differentiable ``conv2d`` of ``g``."""
    gx = Conv2d.apply(grad, weight, None, stride, padding, dilation, groups)
    h, w = input_shape[2:]
    if gx.shape[2:] != (h, w):  # output_padding >= stride: rows no input reaches
        gx = gx[:, :, :h, :w]
    return gx


def _tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a sandbox.Tensor, got {type(x).__name__}")
    return x


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def string_padding(padding, kernel_size, stride, dilation):
    """``(left, right, top, bottom)`` widths for ``padding="same"`` or ``"valid"``, as torch.

    ``same`` keeps the spatial size (stride 1 only): ``dilation·(k - 1)`` in total per
    axis, the odd one on the right/bottom.
    """
    if padding not in ("same", "valid"):
        raise ValueError(f"padding must be an int, a pair, 'same' or 'valid', got {padding!r}")
    if padding == "valid":
        return (0, 0, 0, 0)
    if _pair(stride) != (1, 1):
        raise ValueError("padding='same' is not supported for strided convolutions (as PyTorch)")
    (kh, kw), (dh, dw) = _pair(kernel_size), _pair(dilation)
    th, tw = dh * (kh - 1), dw * (kw - 1)
    return (tw // 2, tw - tw // 2, th // 2, th - th // 2)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of Tensors, as ``torch.nn.functional.conv2d``.

    ``input`` (N, C_in, H, W), ``weight`` (C_out, C_in/groups, kh, kw), ``bias``
    (C_out,) or None; ``padding`` may also be ``"same"`` or ``"valid"``.  See
    :func:`sandbox.array.conv.conv2d` for the options.
    """
    _tensor(input, "input")
    _tensor(weight, "weight")
    if isinstance(padding, str):
        left, right, top, bottom = string_padding(padding, weight.shape[2:], stride, dilation)
        if (left, top) != (right, bottom):  # uneven: pad explicitly
            from ..ops import pad

            input = pad(input, (left, right, top, bottom))
            left = top = 0
        padding = (top, left)
    return Conv2d.apply(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution of Tensors, as ``torch.nn.functional.conv_transpose2d``.

    ``input`` (N, C_in, H, W), ``weight`` (C_in, C_out/groups, kh, kw), ``bias``
    (C_out,) or None.  See :func:`sandbox.array.conv.conv_transpose2d` for the options.
    """
    _tensor(input, "input")
    _tensor(weight, "weight")
    return ConvTranspose2d.apply(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)
