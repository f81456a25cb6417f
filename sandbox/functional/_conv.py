"""Differentiable 2-D convolution and transposed convolution (array ops in ``sandbox.conv``)."""

from __future__ import annotations

from .. import conv as _conv
from ..autograd import Function, Tensor, once_differentiable
from ..ops import pad

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


PADDING_MODES = ("same", "valid")


def _two(value):
    return (value, value) if isinstance(value, int) else tuple(value)


def same_padding(kernel_size, stride=1, dilation=1):
    """Torch's ``padding="same"`` as explicit pads ``((top, bottom), (left, right))``.

    The total per dim is ``dilation * (k - 1)``; when it is odd the extra row or
    column goes at the bottom or right, as PyTorch does.  Strided convolutions are
    refused, as in PyTorch (the output size would depend on the input size).
    """
    if any(s != 1 for s in _two(stride)):
        raise ValueError(
            f"padding='same' is not supported for strided convolutions (stride={stride}); "
            "use an explicit padding"
        )
    pads = []
    for k, d in zip(_two(kernel_size), _two(dilation), strict=True):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return tuple(pads)


def check_padding_mode(padding, kernel_size, stride, dilation):
    """Validate a string ``padding`` ("same" needs stride 1); returns it."""
    if padding not in PADDING_MODES:
        raise ValueError(
            f"padding must be an int, a pair of ints or one of {PADDING_MODES}, got {padding!r}"
        )
    if padding == "same":
        same_padding(kernel_size, stride, dilation)
    return padding


def _resolve_padding(input, weight, padding, stride, dilation):
    """``(input, padding)`` with a string ``padding`` turned into ints.

    "same" pads symmetrically through the kernel and adds the odd extra row/column
    with :func:`sandbox.ops.pad` first (differentiable), as PyTorch does.
    """
    if check_padding_mode(padding, weight.shape[2:], stride, dilation) == "valid":
        return input, 0
    (top, bottom), (left, right) = same_padding(weight.shape[2:], stride, dilation)
    if bottom != top or right != left:
        input = pad(input, (0, right - left, 0, bottom - top))
    return input, (top, left)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of Tensors, as ``torch.nn.functional.conv2d``.

    ``input`` (N, C_in, H, W), ``weight`` (C_out, C_in/groups, kh, kw), ``bias``
    (C_out,) or None.  ``padding`` is an int, a pair, or ``"valid"`` (none) or
    ``"same"`` (output as large as the input; stride 1 only; an odd total puts the
    extra row/column at the bottom/right, as PyTorch).  See
    :func:`sandbox.conv.conv2d` for the other options.
    """
    _tensor(input, "input")
    _tensor(weight, "weight")
    if isinstance(padding, str):
        input, padding = _resolve_padding(input, weight, padding, stride, dilation)
    return Conv2d.apply(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution of Tensors, as ``torch.nn.functional.conv_transpose2d``.

    ``input`` (N, C_in, H, W), ``weight`` (C_in, C_out/groups, kh, kw), ``bias``
    (C_out,) or None.  See :func:`sandbox.conv.conv_transpose2d` for the options.
    """
    _tensor(input, "input")
    _tensor(weight, "weight")
    return ConvTranspose2d.apply(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)
