"""The 3-D convolutions on a validated :class:`~._checks.ConvPlan` (``(N, C, D, H, W)``).

For 3x3x3 stride-1 kernels with enough channels: 2-D Winograd convolutions summed
over depth (``_winograd3d``); 1x1x1 ones are a batch of products (``_pointwise``, as
in 2-D); otherwise vol2col + GEMM in fixed chunks of samples (``_vol2col``).  A
transposed convolution is the adjoint of a convolution with the same weight, so it
runs the same two loops the other way round.  Nothing here validates; every result
is bitwise identical for any number of threads.
"""

from __future__ import annotations

import math

import numpy as np

from ..copy import contiguous
from . import _depthwise as depthwise
from . import _direct as direct
from . import _pointwise as pointwise
from . import _winograd as wino2d
from . import _winograd3d as wino3d
from ._chunks import add_bias
from ._tuning import TUNING
from ._vol2col import fold_loop, unfold_loop

__all__ = ["conv_backward", "conv_forward", "transpose_backward", "transpose_forward"]


def _wmat(weight):
    return np.ascontiguousarray(weight).reshape(weight.shape[0], -1)


def _winograd_on(n: int, out_size, input_grad: bool = False) -> bool:
    """Whether 3-D Winograd may run for ``n`` samples of ``out_size`` output voxels:
    switched on, and at least ``TUNING.winograd3d_min_batch_voxels`` of them in all
    (``winograd3d_min_batch_voxels_input_grad`` for an input gradient)."""
    least = (TUNING.winograd3d_min_batch_voxels_input_grad if input_grad
             else TUNING.winograd3d_min_batch_voxels)
    return TUNING.winograd and n * math.prod(out_size) >= least


def conv_forward(input, weight, bias, plan):
    geom, groups, out_size = plan.geom, plan.groups, plan.out_size
    x = contiguous(input)
    y = np.empty((input.shape[0], weight.shape[0], *out_size), dtype=input.dtype)
    c_out, c_in = weight.shape[:2]
    if _winograd_on(input.shape[0], out_size) and wino3d.eligible(geom, groups, c_in, c_out,
                                                                   out_size[1] * out_size[2]):
        tile = wino2d.tile_size(c_in, c_out, *out_size[1:])
        wino3d.conv3x3x3(x, wino3d.weight_transforms(weight, False, tile), y, geom[6:9], bias)
    elif pointwise.eligible(plan):
        pointwise.forward(x, _wmat(weight), bias, y)
    elif direct.eligible(plan, x):  # a volume's first layer: no columns
        direct.forward3d(x, _wmat(weight), bias, plan, y)
    elif depthwise.eligible(plan, x.shape[1], c_out):
        depthwise.forward(x, weight, bias, plan, y)
    else:
        unfold_loop(x, _wmat(weight), geom, out_size, groups, y=y, bias=bias)
    return y


def conv_backward(grad_output, input, weight, plan, needs):
    geom, groups = plan.geom, plan.groups
    gout = contiguous(grad_output)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    a = contiguous(input) if needs[1] else None
    gw, gb = None, None
    if pointwise.eligible(plan):  # a batch of products
        return pointwise.backward(gout, a, weight, gx, needs)
    if depthwise.eligible(plan, input.shape[1], weight.shape[0]):  # a stencil a channel
        return depthwise.backward(gout, a, weight, plan, gx, needs)
    c_out, c_in = weight.shape[:2]
    h, w = input.shape[3:]
    pad = geom[6:9]
    wino = _winograd_on(input.shape[0], grad_output.shape[2:])
    wino_dx = (needs[0] and _winograd_on(input.shape[0], grad_output.shape[2:], True)
               and wino3d.eligible(geom, groups, c_in, c_out, h * w))
    wino_dw = (needs[1] and wino and wino3d.eligible(geom, groups, c_in, c_out, h * w)
               and min(c_in, c_out) >= TUNING.winograd_min_channels_weight_grad)
    if wino_dx:  # dx = conv3d(dy, flip(w)^T, padding=2-p): 3x3x3 stride 1 again
        tile = wino2d.tile_size(c_out, c_in, h, w)
        wino3d.conv3x3x3(gout, wino3d.weight_transforms(weight, True, tile), gx,
                         tuple(2 - p for p in pad))
    direct_dw = needs[1] and not wino_dw and direct.takes_weight_grad(plan, input, gout)
    if wino_dw:
        gw = wino3d.conv3x3x3_weight_grad(a, gout, pad)
    elif direct_dw:  # a volume's first layer: no columns
        gw = direct.weight_grad3d(a, gout, plan)
    fold_dx, fold_dw = needs[0] and not wino_dx, needs[1] and not (wino_dw or direct_dw)
    if fold_dx or fold_dw:
        gw_fold, gb = fold_loop(gout, _wmat(weight), geom, groups, y=gx if fold_dx else None,
                                a=a if fold_dw else None, bias_grad=needs[2])
        gw = gw_fold if fold_dw else gw
    elif needs[2]:
        gb = gout.sum(axis=(0, 2, 3, 4))
    gw = gw.reshape(weight.shape) if needs[1] else None
    return gx, gw, gb


def transpose_forward(input, weight, bias, plan):
    x = contiguous(input)
    y = np.empty((input.shape[0], weight.shape[1] * plan.groups, *plan.out_size),
                 dtype=input.dtype)
    fold_loop(x, _wmat(weight), plan.geom, plan.groups, y=y)
    add_bias(y, bias)
    return y


def transpose_backward(grad_output, input, weight, plan, needs):
    gout = contiguous(grad_output)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    b = contiguous(input) if needs[1] else None
    gw = None
    if needs[0] or needs[1]:
        gw = unfold_loop(gout, _wmat(weight), plan.geom, input.shape[2:], plan.groups, y=gx,
                         b=b)
    gw = gw.reshape(weight.shape) if needs[1] else None
    gb = gout.sum(axis=(0, 2, 3, 4)) if needs[2] else None
    return gx, gw, gb
