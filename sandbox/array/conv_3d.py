"""3-D convolution and transposed convolution on plain ndarrays (``(N, C, D, H, W)``).

(Named ``conv_3d`` so that ``sandbox.array.conv3d`` can be the function, as ``conv2d`` is.)

Public ops, as ``torch.nn.functional``'s: :func:`conv3d`, :func:`conv3d_backward`,
:func:`conv_transpose3d`, :func:`conv_transpose3d_backward` and the output-size
helpers.  Each validates its arguments once and then runs, for 3x3x3 stride-1 kernels
with enough channels, 2-D Winograd convolutions summed over depth
(:mod:`sandbox.array._winograd3d`), and otherwise vol2col + GEMM in fixed chunks of
samples (:mod:`sandbox.array._vol2col`); a transposed convolution is the adjoint of
a convolution with the same weight, so it runs the same two loops the other way
round.  Every result is bitwise identical for any number of threads.
"""

from __future__ import annotations

import numpy as np

from . import _winograd3d as wino3d
from ._validate import check_float, check_groups, check_ndim, check_same_dtype, triple
from ._vol2col import fold_loop, unfold_loop
from .conv import _winograd as wino2d
from .conv._tuning import TUNING

__all__ = [
    "conv3d",
    "conv3d_backward",
    "conv3d_output_size",
    "conv_transpose3d",
    "conv_transpose3d_backward",
    "conv_transpose3d_output_size",
]


def _conv_out(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _transpose_out(size, k, s, p, op, d):
    return (size - 1) * s - 2 * p + d * (k - 1) + op + 1


def conv3d_output_size(size, kernel_size, stride=1, padding=0, dilation=1) -> tuple[int, ...]:
    """Spatial output size ``(do, ho, wo)`` of :func:`conv3d` for input ``size`` (D, H, W)."""
    k, s = triple(kernel_size, "kernel_size", 1), triple(stride, "stride", 1)
    p, d = triple(padding, "padding", 0), triple(dilation, "dilation", 1)
    return tuple(_conv_out(*args) for args in zip(size, k, s, p, d, strict=True))


def conv_transpose3d_output_size(size, kernel_size, stride=1, padding=0, output_padding=0,
                                 dilation=1) -> tuple[int, ...]:
    """Spatial output size of :func:`conv_transpose3d` for input ``size`` (D, H, W)."""
    k, s = triple(kernel_size, "kernel_size", 1), triple(stride, "stride", 1)
    p, d = triple(padding, "padding", 0), triple(dilation, "dilation", 1)
    op = triple(output_padding, "output_padding", 0)
    return tuple(_transpose_out(*args) for args in zip(size, k, s, p, op, d, strict=True))


def _check(input, weight, bias, stride, padding, dilation, groups, transposed):
    """Validate the shared arguments; return (geom (12 ints), groups, bias)."""
    check_float(input, "input")
    check_float(weight, "weight")
    check_same_dtype(weight, input, "weight")
    check_ndim(input, "input", 5, "(N, C, D, H, W)")
    layout = ("(C_in, C_out/groups, kd, kh, kw)" if transposed
              else "(C_out, C_in/groups, kd, kh, kw)")
    check_ndim(weight, "weight", 5, layout)
    groups = check_groups(groups)
    kernel = weight.shape[2:]
    if min(kernel) < 1:
        raise ValueError(f"weight kernel size must be positive, got {kernel}")
    geom = (*kernel, *triple(stride, "stride", 1), *triple(padding, "padding", 0),
            *triple(dilation, "dilation", 1))
    c_in = input.shape[1]
    if c_in % groups:
        raise ValueError(f"groups={groups} must divide the input channels ({c_in})")
    if transposed:
        if weight.shape[0] != c_in:
            raise ValueError(
                f"weight of shape {weight.shape} expects {weight.shape[0]} input channels "
                f"(weight.shape[0]), but input of shape {input.shape} has {c_in}")
        c_out = weight.shape[1] * groups
    else:
        if weight.shape[1] * groups != c_in:
            raise ValueError(
                f"weight of shape {weight.shape} with groups={groups} expects "
                f"{weight.shape[1] * groups} input channels, but input of shape "
                f"{input.shape} has {c_in}")
        c_out = weight.shape[0]
        if c_out % groups:
            raise ValueError(
                f"groups={groups} must divide the output channels (weight.shape[0]={c_out})")
    if bias is not None:
        check_float(bias, "bias")
        check_same_dtype(bias, input, "bias")
        if bias.shape != (c_out,):
            raise ValueError(f"bias must have shape ({c_out},), got {bias.shape}")
    return geom, groups, bias


def _conv_size(input, geom):
    size = input.shape[2:]
    out = tuple(_conv_out(size[i], geom[i], geom[3 + i], geom[6 + i], geom[9 + i])
                for i in range(3))
    if min(out) <= 0:
        raise ValueError(
            f"output size {out} is not positive: input spatial size {size} (padded by "
            f"{geom[6:9]}) is smaller than the dilated kernel "
            f"{tuple(geom[9 + i] * (geom[i] - 1) + 1 for i in range(3))}")
    return out


def _transpose_size(input, geom, output_padding):
    op = triple(output_padding, "output_padding", 0)
    stride, dilation = geom[3:6], geom[9:12]
    if not all(op[i] < stride[i] or op[i] < dilation[i] for i in range(3)):
        raise ValueError(f"output_padding {op} must be smaller than either stride {stride} "
                         f"or dilation {dilation}")
    size = input.shape[2:]
    out = tuple(_transpose_out(size[i], geom[i], geom[3 + i], geom[6 + i], op[i], geom[9 + i])
                for i in range(3))
    if min(out) <= 0:
        raise ValueError(
            f"output size {out} is not positive for input spatial size {size}, kernel "
            f"{geom[:3]}, stride {stride} and padding {geom[6:9]}")
    return out


def _check_grad_output(grad_output, input, expected):
    check_float(grad_output, "grad_output")
    check_same_dtype(grad_output, input, "grad_output")
    if grad_output.shape != expected:
        raise ValueError(f"grad_output must have shape {expected}, got {grad_output.shape}")


def _wmat(weight):
    return np.ascontiguousarray(weight).reshape(weight.shape[0], -1)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D cross-correlation, as ``torch.nn.functional.conv3d``.

    Parameters
    ----------
    input : ndarray, shape (N, C_in, D, H, W), float32 or float64
    weight : ndarray, shape (C_out, C_in/groups, kd, kh, kw), same dtype
    bias : ndarray, shape (C_out,), optional
    stride, padding, dilation : int or (int, int, int)
        Positive stride and dilation, non-negative zero padding.
    groups : int
        Positive, dividing both ``C_in`` and ``C_out``.

    Returns
    -------
    ndarray, shape (N, C_out, D_out, H_out, W_out) with, per axis,
    ``out = (size + 2*padding - dilation*(k-1) - 1) // stride + 1``.
    """
    geom, groups, bias = _check(input, weight, bias, stride, padding, dilation, groups, False)
    out_size = _conv_size(input, geom)
    x = np.ascontiguousarray(input)
    y = np.empty((input.shape[0], weight.shape[0], *out_size), dtype=input.dtype)
    c_out, c_in = weight.shape[:2]
    if TUNING.winograd and wino3d.eligible(geom, groups, c_in, c_out,
                                           out_size[1] * out_size[2]):
        tile = wino2d.tile_size(c_in, c_out, *out_size[1:])
        wino3d.conv3x3x3(x, wino3d.weight_transforms(weight, False, tile), y, geom[6:9], bias)
    else:
        unfold_loop(x, _wmat(weight), geom, out_size, groups, y=y, bias=bias)
    return y


def conv3d_backward(grad_output, input, weight, stride=1, padding=0, dilation=1, groups=1,
                    needs=(True, True, True)):
    """Gradients of :func:`conv3d` with respect to (input, weight, bias).

    ``needs`` (three bools) skips the gradients not wanted; those come back as
    None.  ``grad_output`` must have the shape :func:`conv3d` returns.
    """
    geom, groups, _ = _check(input, weight, None, stride, padding, dilation, groups, False)
    out_size = _conv_size(input, geom)
    _check_grad_output(grad_output, input, (input.shape[0], weight.shape[0], *out_size))
    gout = np.ascontiguousarray(grad_output)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    a = np.ascontiguousarray(input) if needs[1] else None
    gw, gb = None, None
    c_out, c_in = weight.shape[:2]
    depth, h, w = input.shape[2:]
    pad = geom[6:9]
    wino_dx = needs[0] and TUNING.winograd and wino3d.eligible(geom, groups, c_in, c_out, h * w)
    wino_dw = (needs[1] and TUNING.winograd and wino3d.eligible(geom, groups, c_in, c_out, h * w)
               and min(c_in, c_out) >= TUNING.winograd_min_channels_weight_grad)
    if wino_dx:  # dx = conv3d(dy, flip(w)^T, padding=2-p): 3x3x3 stride 1 again
        tile = wino2d.tile_size(c_out, c_in, h, w)
        wino3d.conv3x3x3(gout, wino3d.weight_transforms(weight, True, tile), gx,
                         tuple(2 - p for p in pad))
    if wino_dw:
        gw = wino3d.conv3x3x3_weight_grad(a, gout, pad)
    fold_dx, fold_dw = needs[0] and not wino_dx, needs[1] and not wino_dw
    if fold_dx or fold_dw:
        gw_fold, gb = fold_loop(gout, _wmat(weight), geom, groups, y=gx if fold_dx else None,
                                a=a if fold_dw else None, bias_grad=needs[2])
        gw = gw_fold if fold_dw else gw
    elif needs[2]:
        gb = gout.sum(axis=(0, 2, 3, 4))
    gw = gw.reshape(weight.shape) if needs[1] else None
    return gx, gw, gb


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution, as ``torch.nn.functional.conv_transpose3d``.

    Parameters
    ----------
    input : ndarray, shape (N, C_in, D, H, W), float32 or float64
    weight : ndarray, shape (C_in, C_out/groups, kd, kh, kw), same dtype
    bias : ndarray, shape (C_out,), optional
    stride, padding, output_padding, dilation : int or (int, int, int)
        ``output_padding`` must be smaller than the stride or the dilation.
    groups : int

    Returns
    -------
    ndarray, shape (N, C_out, D_out, H_out, W_out) with, per axis,
    ``out = (size-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.
    """
    geom, groups, bias = _check(input, weight, bias, stride, padding, dilation, groups, True)
    out_size = _transpose_size(input, geom, output_padding)
    x = np.ascontiguousarray(input)
    y = np.empty((input.shape[0], weight.shape[1] * groups, *out_size), dtype=input.dtype)
    fold_loop(x, _wmat(weight), geom, groups, y=y)
    if bias is not None:
        y += bias.reshape(1, -1, 1, 1, 1)
    return y


def conv_transpose3d_backward(grad_output, input, weight, stride=1, padding=0, output_padding=0,
                              groups=1, dilation=1, needs=(True, True, True)):
    """Gradients of :func:`conv_transpose3d` with respect to (input, weight, bias).

    The input gradient is a convolution of ``grad_output`` with ``weight``; the
    weight gradient pairs ``input`` with the columns of ``grad_output``.
    """
    geom, groups, _ = _check(input, weight, None, stride, padding, dilation, groups, True)
    out_size = _transpose_size(input, geom, output_padding)
    _check_grad_output(grad_output, input,
                       (input.shape[0], weight.shape[1] * groups, *out_size))
    gout = np.ascontiguousarray(grad_output)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    b = np.ascontiguousarray(input) if needs[1] else None
    gw = None
    if needs[0] or needs[1]:
        gw = unfold_loop(gout, _wmat(weight), geom, input.shape[2:], groups, y=gx, b=b)
    gw = gw.reshape(weight.shape) if needs[1] else None
    gb = gout.sum(axis=(0, 2, 3, 4)) if needs[2] else None
    return gx, gw, gb
