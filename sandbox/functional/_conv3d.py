"""Differentiable 3-D convolution and transposed convolution (arrays: ``sandbox.array.conv_3d``).

The Functions come from :func:`sandbox.functional._convnd.conv_family`, shared with
2-D; this module adds the PyTorch-style wrappers.
"""

from __future__ import annotations

from ..array import conv_3d as _conv
from ..array._validate import triple
from ._convnd import check_tensor, conv_family

__all__ = ["conv3d", "conv_transpose3d"]


_FAMILY = conv_family(3, _conv, triple)
Conv3d = _FAMILY.conv
ConvTranspose3d = _FAMILY.conv_transpose
Conv3dWeightGrad = _FAMILY.conv_weight_grad
ConvTranspose3dWeightGrad = _FAMILY.conv_transpose_weight_grad


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of Tensors, as ``torch.nn.functional.conv3d``.

    ``input`` (N, C_in, D, H, W), ``weight`` (C_out, C_in/groups, kd, kh, kw), ``bias``
    (C_out,) or None.  See :func:`sandbox.array.conv_3d.conv3d` for the options.
    """
    check_tensor(input, "input")
    check_tensor(weight, "weight")
    return Conv3d.apply(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution of Tensors, as ``torch.nn.functional.conv_transpose3d``.

    ``input`` (N, C_in, D, H, W), ``weight`` (C_in, C_out/groups, kd, kh, kw), ``bias``
    (C_out,) or None.  See :func:`sandbox.array.conv_3d.conv_transpose3d` for the options.
    """
    check_tensor(input, "input")
    check_tensor(weight, "weight")
    return ConvTranspose3d.apply(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)
