"""Differentiable 2-D convolution and transposed convolution (arrays: ``sandbox.array.conv``).

The Functions come from :func:`sandbox.functional._convnd.conv_family` (shared with
3-D); this module adds the PyTorch-style wrappers and ``padding="same"``.
"""

from __future__ import annotations

from ..array import conv as _conv
from ..array._validate import pair
from ._convnd import check_tensor, conv_family

__all__ = ["conv2d", "conv_transpose2d"]


_FAMILY = conv_family(2, _conv, pair)
Conv2d = _FAMILY.conv
ConvTranspose2d = _FAMILY.conv_transpose
Conv2dWeightGrad = _FAMILY.conv_weight_grad
ConvTranspose2dWeightGrad = _FAMILY.conv_transpose_weight_grad


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
    check_tensor(input, "input")
    check_tensor(weight, "weight")
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
    check_tensor(input, "input")
    check_tensor(weight, "weight")
    return ConvTranspose2d.apply(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)
