"""The 2-D convolutions on a validated :class:`~._checks.ConvPlan`: Winograd or im2col.

``_winograd`` runs F(2x2, 3x3), or F(4x4, 3x3) on large maps, for 3x3 stride-1
ungrouped convolutions with enough channels and pixels (forward, input gradient and
weight gradient); ``_im2col`` runs everything else, and the transposed convolution
as the adjoint of the same two loops.  Nothing here validates.
"""

from __future__ import annotations

import functools

import numpy as np

from ..copy import contiguous
from . import _depthwise as depthwise
from . import _direct as direct
from . import _patches as patches
from . import _pointwise as pointwise
from . import _winograd as winograd
from ._chunks import add_bias
from ._im2col import fold_loop, unfold_loop
from ._tuning import TUNING, chunk_threads, settings_stamp

__all__ = ["conv_backward", "conv_forward", "transpose_backward", "transpose_forward"]


@functools.lru_cache(maxsize=1024)
def _winograd_tiles(geom, groups, n, c_in, c_out, h, w, ho, wo,
                    stamp) -> tuple[int, int, int]:
    """The Winograd tile (2 or 4) of the forward, the input gradient and the weight
    gradient of a 2-D convolution of ``n`` samples (input h x w, output ho x wo), 0 for
    each that runs im2col: the rules of ``_winograd`` under the settings in force, whose
    :func:`~._tuning.settings_stamp` is ``stamp`` (decided once, then cached), and none
    for fewer than ``TUNING.winograd_min_batch_pixels`` output pixels in all."""
    if not TUNING.winograd or n * ho * wo < TUNING.winograd_min_batch_pixels:
        return 0, 0, 0
    fwd = (winograd.tile_size(c_in, c_out, ho, wo)
           if winograd.eligible(geom, groups, c_in, c_out, h, w) else 0)
    dx = (winograd.tile_size(c_out, c_in, h, w)
          if winograd.eligible(geom, groups, c_in, c_out, h, w, True) else 0)
    dw = (winograd.tile_size_weight_grad(ho, wo)
          if winograd.eligible_weight_grad(geom, groups, c_in, c_out, h, w) else 0)
    return fwd, dx, dw


def _tiles(plan, input, weight):
    c_out, c_in = weight.shape[:2]
    (h, w), (ho, wo) = input.shape[2:], plan.out_size
    return _winograd_tiles(plan.geom, plan.groups, input.shape[0], c_in, c_out, h, w, ho, wo,
                           settings_stamp())


def _wmat(weight):
    return np.ascontiguousarray(weight).reshape(weight.shape[0], -1)


def conv_forward(input, weight, bias, plan):
    geom, groups, (ho, wo) = plan.geom, plan.groups, plan.out_size
    x = contiguous(input)
    y = np.empty((input.shape[0], weight.shape[0], ho, wo), dtype=input.dtype)
    tile = _tiles(plan, input, weight)[0]
    if tile:
        # the weight transform runs before any chunk, on all threads (each kernel is one
        # thread's, so the result does not depend on their number): in the convolution's
        # region when it runs in one
        u = winograd.pending_transform(weight, tile=tile)
        winograd.winograd_conv3x3(x, u, y, geom.ph, geom.pw, chunk_threads(), bias)
    elif pointwise.eligible(plan):
        pointwise.forward(x, _wmat(weight), bias, y)
    elif depthwise.eligible(plan, x.shape[1], y.shape[1]):
        depthwise.forward(x, weight, bias, plan, y)
    elif direct.eligible(plan, x):
        direct.forward(x, _wmat(weight), bias, plan, y)
    else:
        unfold_loop(x, _wmat(weight), geom, ho, wo, groups, y=y, bias=bias)
    return y


def conv_backward(grad_output, input, weight, plan, needs):
    geom, groups = plan.geom, plan.groups
    h, w = input.shape[2:]
    gout = contiguous(grad_output)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    a = contiguous(input) if needs[1] else None
    gw, gb = None, None
    if pointwise.eligible(plan):  # a batch of products
        return pointwise.backward(gout, a, weight, gx, needs)
    if depthwise.eligible(plan, input.shape[1], weight.shape[0]):  # a stencil a channel
        return depthwise.backward(gout, a, weight, plan, gx, needs)
    _, tile_dx, tile_dw = _tiles(plan, input, weight)
    wino = needs[0] and tile_dx
    wino_dw = needs[1] and tile_dw
    if wino:
        # dx = conv2d(dy, flip(w)^T, padding=2-p): a 3x3 stride-1 conv again
        u = winograd.pending_transform(weight, flip_transpose=True, tile=tile_dx)
        winograd.winograd_conv3x3(gout, u, gx, 2 - geom.ph, 2 - geom.pw, chunk_threads())
    direct_dw = needs[1] and not wino_dw and direct.takes_weight_grad(plan, input, gout)
    if wino_dw:
        gw = winograd.winograd_weight_grad(a, gout, geom.ph, geom.pw, chunk_threads(),
                                           tile=tile_dw)
    elif direct_dw:  # a first layer: no columns
        gw = direct.weight_grad(a, gout, plan)
    if wino_dw or direct_dw:
        gb = gout.sum(axis=(0, 2, 3)) if needs[2] else None
    fold_dx = needs[0] and not wino
    fold_dw = needs[1] and not wino_dw and not direct_dw
    if fold_dx or fold_dw or (needs[2] and gb is None):
        gw_fold, gb_fold = fold_loop(gout, _wmat(weight), geom, h, w, groups,
                                     y=gx if fold_dx else None, a=a if fold_dw else None,
                                     bias_grad=needs[2] and gb is None)
        gw = gw_fold if fold_dw else gw
        gb = gb_fold if gb is None else gb
    gw = gw.reshape(weight.shape) if needs[1] else None
    return gx, gw, gb


def transpose_forward(input, weight, bias, plan):
    ho, wo = plan.out_size
    x = contiguous(input)
    if patches.eligible(plan, input.shape[2:], (ho, wo)):  # kernel == stride: 1x1 + shuffle
        return patches.transpose_forward(x, weight, bias)
    y = np.empty((input.shape[0], weight.shape[1] * plan.groups, ho, wo), dtype=input.dtype)
    fold_loop(x, _wmat(weight), plan.geom, ho, wo, plan.groups, y=y)
    add_bias(y, bias)
    return y


def transpose_backward(grad_output, input, weight, plan, needs):
    h, w = input.shape[2:]
    gout = contiguous(grad_output)
    if patches.eligible(plan, (h, w), gout.shape[2:]):
        return patches.transpose_backward(gout, contiguous(input), weight, needs)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    b = contiguous(input) if needs[1] else None
    gw = None
    if needs[0] or needs[1]:
        gw = unfold_loop(gout, _wmat(weight), plan.geom, h, w, plan.groups, y=gx, b=b)
    gw = gw.reshape(weight.shape) if needs[1] else None
    gb = gout.sum(axis=(0, 2, 3)) if needs[2] else None
    return gx, gw, gb
