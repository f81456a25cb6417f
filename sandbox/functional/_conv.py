"""Differentiable 2-D convolution and transposed convolution (arrays: ``sandbox.array.conv``)."""

from __future__ import annotations

from ..array import conv as _conv
from ..autograd import Function, Tensor, once_differentiable

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
    @once_differentiable
    def backward(ctx, grad):
        x, weight = ctx.saved_arrays
        needs = ctx.needs_input_grad
        gx, gw, gb = _conv.conv2d_backward(
            grad, x, weight, *ctx.params,
            needs=(needs[0], needs[1], ctx.has_bias and needs[2]))
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
    @once_differentiable
    def backward(ctx, grad):
        x, weight = ctx.saved_arrays
        needs = ctx.needs_input_grad
        gx, gw, gb = _conv.conv_transpose2d_backward(
            grad, x, weight, *ctx.params,
            needs=(needs[0], needs[1], ctx.has_bias and needs[2]))
        return gx, gw, gb, None, None, None, None, None


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
