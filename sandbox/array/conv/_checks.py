"""Argument checks and output-size arithmetic of the 2-D convolutions.

Everything here is plain Python on shapes; the public ops in
:mod:`sandbox.array.conv` call :func:`check_conv` / :func:`check_transpose` once and
pass the resulting :class:`Geometry` down to the im2col and Winograd paths.
"""

from __future__ import annotations

from typing import NamedTuple

from .._validate import check_float, check_groups, check_ndim, check_same_dtype, pair

__all__ = [
    "Geometry",
    "check_conv",
    "check_grad_output",
    "check_transpose",
    "conv2d_output_size",
    "conv_out",
    "conv_transpose2d_output_size",
]


def _check_bias(bias, channels: int, ref):
    if bias is None:
        return None
    check_float(bias, "bias")
    check_same_dtype(bias, ref, "bias")
    if bias.shape != (channels,):
        raise ValueError(f"bias must have shape ({channels},), got {bias.shape}")
    return bias


class Geometry(NamedTuple):
    """Kernel size, stride, padding and dilation (rows, columns)."""

    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int

    def args(self):
        return tuple(self)

    def is_pointwise(self) -> bool:
        """1x1 kernel, stride 1, no padding: im2col is the identity."""
        return (self.kh, self.kw, self.sh, self.sw, self.ph, self.pw) == (1, 1, 1, 1, 0, 0)


def _geometry(weight, stride, padding, dilation) -> Geometry:
    sh, sw = pair(stride, "stride", 1)
    ph, pw = pair(padding, "padding", 0)
    dh, dw = pair(dilation, "dilation", 1)
    kh, kw = weight.shape[2], weight.shape[3]
    if kh < 1 or kw < 1:
        raise ValueError(f"weight kernel size must be positive, got {(kh, kw)}")
    return Geometry(kh, kw, sh, sw, ph, pw, dh, dw)


def conv_out(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv2d_output_size(h, w, kernel_size, stride=1, padding=0, dilation=1) -> tuple[int, int]:
    """Spatial output size of :func:`conv2d` (PyTorch's formula)."""
    kh, kw = pair(kernel_size, "kernel_size", 1)
    sh, sw = pair(stride, "stride", 1)
    ph, pw = pair(padding, "padding", 0)
    dh, dw = pair(dilation, "dilation", 1)
    return conv_out(h, kh, sh, ph, dh), conv_out(w, kw, sw, pw, dw)


def conv_transpose2d_output_size(h, w, kernel_size, stride=1, padding=0, output_padding=0,
                                 dilation=1) -> tuple[int, int]:
    """Spatial output size of :func:`conv_transpose2d` (PyTorch's formula)."""
    kh, kw = pair(kernel_size, "kernel_size", 1)
    sh, sw = pair(stride, "stride", 1)
    ph, pw = pair(padding, "padding", 0)
    oph, opw = pair(output_padding, "output_padding", 0)
    dh, dw = pair(dilation, "dilation", 1)
    return ((h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1,
            (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1)


def check_conv(input, weight, bias, stride, padding, dilation, groups, transposed=False):
    """Validate conv2d / conv_transpose2d arguments; return (geom, groups, bias)."""
    check_float(input, "input")
    check_float(weight, "weight")
    check_same_dtype(weight, input, "weight")
    check_ndim(input, "input", 4, "(N, C, H, W)")
    layout = "(C_in, C_out/groups, kh, kw)" if transposed else "(C_out, C_in/groups, kh, kw)"
    check_ndim(weight, "weight", 4, layout)
    groups = check_groups(groups)
    geom = _geometry(weight, stride, padding, dilation)
    c_in = input.shape[1]
    if transposed:
        if weight.shape[0] != c_in:
            raise ValueError(
                f"weight of shape {weight.shape} expects {weight.shape[0]} input channels "
                f"(weight.shape[0]), but input of shape {input.shape} has {c_in}")
        if c_in % groups:
            raise ValueError(f"groups={groups} must divide the input channels ({c_in})")
        c_out = weight.shape[1] * groups
    else:
        if c_in % groups:
            raise ValueError(f"groups={groups} must divide the input channels ({c_in})")
        if weight.shape[1] * groups != c_in:
            raise ValueError(
                f"weight of shape {weight.shape} with groups={groups} expects "
                f"{weight.shape[1] * groups} input channels, but input of shape "
                f"{input.shape} has {c_in}")
        c_out = weight.shape[0]
        if c_out % groups:
            raise ValueError(
                f"groups={groups} must divide the output channels (weight.shape[0]={c_out})")
    bias = _check_bias(bias, c_out, input)
    return geom, groups, bias


def check_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation):
    """Validate conv_transpose2d arguments; return (geom, groups, bias, (ho, wo))."""
    geom, groups, bias = check_conv(input, weight, bias, stride, padding, dilation, groups,
                                    transposed=True)
    oph, opw = pair(output_padding, "output_padding", 0)
    if not ((oph < geom.sh or oph < geom.dh) and (opw < geom.sw or opw < geom.dw)):
        raise ValueError(
            f"output_padding {(oph, opw)} must be smaller than either stride "
            f"{(geom.sh, geom.sw)} or dilation {(geom.dh, geom.dw)}")
    h, w = input.shape[2:]
    ho = (h - 1) * geom.sh - 2 * geom.ph + geom.dh * (geom.kh - 1) + oph + 1
    wo = (w - 1) * geom.sw - 2 * geom.pw + geom.dw * (geom.kw - 1) + opw + 1
    if ho <= 0 or wo <= 0:
        raise ValueError(
            f"output size ({ho}, {wo}) is not positive for input spatial size {(h, w)}, "
            f"kernel {(geom.kh, geom.kw)}, stride {(geom.sh, geom.sw)} and padding "
            f"{(geom.ph, geom.pw)}")
    return geom, groups, bias, (ho, wo)


def check_grad_output(grad_output, input, expected) -> None:
    """``grad_output`` must be a float array of the input's dtype and the forward's shape."""
    check_float(grad_output, "grad_output")
    check_same_dtype(grad_output, input, "grad_output")
    if grad_output.shape != expected:
        raise ValueError(f"grad_output must have shape {expected}, got {grad_output.shape}")
