"""2-D convolution and transposed convolution on plain ndarrays.

Public ops, as ``torch.nn.functional``'s: :func:`conv2d`, :func:`conv2d_backward`,
:func:`conv_transpose2d`, :func:`conv_transpose2d_backward` and the output-size
helpers.  Each validates its arguments once (``_checks``) and then picks a path:

``_winograd``
    Winograd F(2x2, 3x3), or F(4x4, 3x3) on large maps, for 3x3 stride-1
    ungrouped convs with enough channels and pixels: forward, input gradient and
    weight gradient.
``_im2col``
    im2col + GEMM in fixed chunks of samples, for everything else (and for the
    transposed convolution, the adjoint of the same two loops).

Which path runs depends on the shapes and on the knobs in :data:`TUNING` (see
``_tuning``), never on the thread count; every result is bitwise identical for
any number of threads.
"""

from __future__ import annotations

import numpy as np

from ...runtime.threads import get_num_threads
from . import _winograd as winograd
from ._checks import (
    check_conv,
    check_grad_output,
    check_transpose,
    conv2d_output_size,
    conv_out,
    conv_transpose2d_output_size,
)
from ._im2col import fold_loop, unfold_loop
from ._tuning import TUNING, ConvTuning, kernel_threads, tuned

__all__ = [
    "TUNING",
    "ConvTuning",
    "conv2d",
    "conv2d_backward",
    "conv2d_output_size",
    "conv_transpose2d",
    "conv_transpose2d_backward",
    "conv_transpose2d_output_size",
    "tuned",
]


def _use_winograd(geom, groups, weight, height, width, input_grad=False) -> bool:
    c_out, c_in = weight.shape[:2]
    return TUNING.winograd and winograd.eligible(geom, groups, c_in, c_out, height, width,
                                                 input_grad)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation, as ``torch.nn.functional.conv2d``.

    Parameters
    ----------
    input : ndarray, shape (N, C_in, H, W), float32 or float64
    weight : ndarray, shape (C_out, C_in/groups, kh, kw), same dtype
    bias : ndarray, shape (C_out,), optional
    stride, padding, dilation : int or (int, int)
        Positive stride and dilation, non-negative zero padding.
    groups : int
        Positive, dividing both ``C_in`` and ``C_out``.

    Returns
    -------
    ndarray, shape (N, C_out, H_out, W_out) with
    ``H_out = (H + 2*padding - dilation*(kh-1) - 1) // stride + 1``.
    """
    geom, groups, bias = check_conv(input, weight, bias, stride, padding, dilation, groups)
    n, _, h, w = input.shape
    ho = conv_out(h, geom.kh, geom.sh, geom.ph, geom.dh)
    wo = conv_out(w, geom.kw, geom.sw, geom.pw, geom.dw)
    if ho <= 0 or wo <= 0:
        raise ValueError(
            f"output size ({ho}, {wo}) is not positive: input spatial size {(h, w)} (padded by "
            f"{(geom.ph, geom.pw)}) is smaller than the dilated kernel "
            f"{(geom.dh * (geom.kh - 1) + 1, geom.dw * (geom.kw - 1) + 1)}")
    x = np.ascontiguousarray(input)
    y = np.empty((n, weight.shape[0], ho, wo), dtype=input.dtype)
    if _use_winograd(geom, groups, weight, h, w):
        # the weight transform runs before any chunk: all threads may share it (each
        # kernel is one thread's, so the result does not depend on their number)
        u = winograd.weight_transform(weight, kernel_threads=get_num_threads(),
                                      tile=winograd.tile_size(*weight.shape[:2], ho, wo))
        winograd.winograd_conv3x3(x, u, y, geom.ph, geom.pw, kernel_threads(), bias)
    else:
        wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
        unfold_loop(x, wmat, geom, ho, wo, groups, y=y, bias=bias)
    return y


def conv2d_backward(grad_output, input, weight, stride=1, padding=0, dilation=1, groups=1,
                    needs=(True, True, True)):
    """Gradients of :func:`conv2d` with respect to (input, weight, bias).

    ``needs`` (three bools) skips the gradients not wanted; those come back as
    None.  ``grad_output`` must have the shape :func:`conv2d` returns.
    """
    geom, groups, _ = check_conv(input, weight, None, stride, padding, dilation, groups)
    n, _, h, w = input.shape
    expected = (n, weight.shape[0], conv_out(h, geom.kh, geom.sh, geom.ph, geom.dh),
                conv_out(w, geom.kw, geom.sw, geom.pw, geom.dw))
    check_grad_output(grad_output, input, expected)
    gout = np.ascontiguousarray(grad_output)
    wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    a = np.ascontiguousarray(input) if needs[1] else None
    gw, gb = None, None
    c_out, c_in = weight.shape[:2]
    wino = needs[0] and _use_winograd(geom, groups, weight, h, w, input_grad=True)
    wino_dw = needs[1] and TUNING.winograd and winograd.eligible_weight_grad(
        geom, groups, c_in, c_out, h, w)
    if wino:
        # dx = conv2d(dy, flip(w)^T, padding=2-p): a 3x3 stride-1 conv again
        u = winograd.weight_transform(weight, flip_transpose=True,
                                      kernel_threads=get_num_threads(),
                                      tile=winograd.tile_size(c_out, c_in, h, w))
        winograd.winograd_conv3x3(gout, u, gx, 2 - geom.ph, 2 - geom.pw, kernel_threads())
    if wino_dw:
        gw = winograd.winograd_weight_grad(a, gout, geom.ph, geom.pw, kernel_threads(),
                                           tile=winograd.tile_size_weight_grad(*gout.shape[2:]))
        gb = gout.sum(axis=(0, 2, 3)) if needs[2] else None
    fold_dx = needs[0] and not wino
    fold_dw = needs[1] and not wino_dw
    if fold_dx or fold_dw or (needs[2] and gb is None):
        gw_fold, gb_fold = fold_loop(gout, wmat, geom, h, w, groups, y=gx if fold_dx else None,
                                     a=a if fold_dw else None, bias_grad=needs[2] and gb is None)
        gw = gw_fold if fold_dw else gw
        gb = gb_fold if gb is None else gb
    gw = gw.reshape(weight.shape) if needs[1] else None
    return gx, gw, gb


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution, as ``torch.nn.functional.conv_transpose2d``.

    Parameters
    ----------
    input : ndarray, shape (N, C_in, H, W), float32 or float64
    weight : ndarray, shape (C_in, C_out/groups, kh, kw), same dtype
    bias : ndarray, shape (C_out,), optional
    stride, padding, output_padding, dilation : int or (int, int)
        ``output_padding`` must be smaller than the stride or the dilation.
    groups : int

    Returns
    -------
    ndarray, shape (N, C_out, H_out, W_out) with
    ``H_out = (H-1)*stride - 2*padding + dilation*(kh-1) + output_padding + 1``.
    """
    geom, groups, bias, (ho, wo) = check_transpose(input, weight, bias, stride, padding,
                                                   output_padding, groups, dilation)
    x = np.ascontiguousarray(input)
    wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
    y = np.empty((input.shape[0], weight.shape[1] * groups, ho, wo), dtype=input.dtype)
    fold_loop(x, wmat, geom, ho, wo, groups, y=y)
    if bias is not None:
        y += bias.reshape(1, -1, 1, 1)
    return y


def conv_transpose2d_backward(grad_output, input, weight, stride=1, padding=0, output_padding=0,
                              groups=1, dilation=1, needs=(True, True, True)):
    """Gradients of :func:`conv_transpose2d` with respect to (input, weight, bias).

    The input gradient is a convolution of ``grad_output`` with ``weight``; the
    weight gradient pairs ``input`` with the columns of ``grad_output``.
    """
    geom, groups, _, (ho, wo) = check_transpose(input, weight, None, stride, padding,
                                                output_padding, groups, dilation)
    n, _, h, w = input.shape
    check_grad_output(grad_output, input, (n, weight.shape[1] * groups, ho, wo))
    gout = np.ascontiguousarray(grad_output)
    wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    b = np.ascontiguousarray(input) if needs[1] else None
    gw = None
    if needs[0] or needs[1]:
        gw = unfold_loop(gout, wmat, geom, h, w, groups, y=gx, b=b)
    gw = gw.reshape(weight.shape) if needs[1] else None
    gb = gout.sum(axis=(0, 2, 3)) if needs[2] else None
    return gx, gw, gb
