"""Depthwise convolutions: ``groups`` equal to the input and output channels, each
channel of each sample convolved with its own kernel, in 2-D and 3-D alike.

im2col ran them as one product of one row per group over a column buffer
kernel-size times the input: a 3x3 depthwise layer of a (8, 32, 32, 32) float32 batch,
forward and both gradients, took 6.4 ms at 1 thread and 4.3 at 2 that way, 3.2 and 1.6
with the tap-by-tap walk of ``pyx/_depthwise.pyx`` (AMD EPYC family 25 model 1 VM,
interleaved pairs).  With every stride 1 the kernels now copy each volume into a
zero-padded box and run whole rows (``pyx/depthwise_rows.h``): through ``F.conv2d``,
forward and both gradients, against PyTorch's time, (8, 16, 64, 64) went from 1.71x at
1 thread and 1.32x at 2 to 0.90-0.97x and 0.72-0.79x, (8, 96, 28, 28) from 1.59x and
1.90x to 0.87-1.01x and 0.77-0.98x (``python benchmarks/bench_ops_vs_torch.py --threads
1 2 --ops depthwise_conv --shape 8 96 28 28``, the same machine, two runs).

``pyx/_depthwise.pyx`` runs the stencil itself on (N, C, D, H, W) arrays (2-D as depth
1): the forward and the input gradient own a (sample, channel) volume each, the weight
gradient a channel (its samples in order; each volume's sum in the input's dtype, then
in double), so the bits do not depend on the thread count.  Any kernel size, stride,
padding and dilation; a channel multiplier (more output channels than groups) and
transposed depthwise convolutions take the im2col loops.  A box's padding is read as
zeros where the walk skips the tap, which differs only where an infinity or NaN meets
it (0 * inf): PyTorch skips those taps, so a non-finite weight takes the walk, and so
does a weight gradient the box made non-finite (recomputed: it is rare).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ..._C import _depthwise
from ...runtime.threads import kernel_threads
from ._chunks import add_bias

__all__ = ["backward", "eligible", "forward", "input_grad", "weight_grad"]


def eligible(plan, c_in: int, c_out: int) -> bool:
    """Whether a convolution is depthwise: more than one group, one input and one output
    channel each."""
    return 1 < plan.groups == c_in == c_out


def _geometry(plan) -> tuple:
    """Stride, padding and dilation, three each (depth first; 2-D: depth 1, no padding)."""
    s, p, d = plan.stride, plan.padding, plan.dilation
    if plan.nd == 2:
        s, p, d = (1, *s), (0, *p), (1, *d)
    return (*s, *p, *d)


def _volume(a: np.ndarray, nd: int) -> np.ndarray:
    """``a`` (N, C, ...) as a C-contiguous (N, C, D, H, W) array (a view where it can)."""
    a = np.ascontiguousarray(a)
    return a[:, :, None] if nd == 2 else a


def _kernel(weight: np.ndarray, nd: int) -> np.ndarray:
    """The (C, 1, *k) weight as the kernels' (C, kd, kh, kw)."""
    w = np.ascontiguousarray(weight)
    return w.reshape(w.shape[0], *((1,) if nd == 2 else ()), *w.shape[2:])


_VECTOR_ELEMENTS = 8  # depthwise_rows.h's vectors: 32 bytes, 8 floats at most


class _Box(NamedTuple):
    """Where the stride-1 kernels place a source volume: at ``place`` (per axis, depth
    first) in a zeroed box of ``shape``, read at ``offsets`` (one a tap, in the taps'
    order) from each output's position."""

    place: tuple
    shape: tuple
    offsets: np.ndarray


def _box(plan, kernel, source, adjoint_of=None) -> _Box | None:
    """The box of the stride-1 path, or None where a stride is not 1 or an axis is empty.

    ``kernel`` is the kernels' (C, kd, kh, kw) weight, ``source`` the (N, C, D, H, W)
    shape of the volume read.  The forward's and the weight gradient's box
    (``adjoint_of`` None) holds the input at the padding, tap t read at ``t d``:
    ``y[i] = sum w[t] x[i + t d - p]``.  The input gradient's (``adjoint_of``: its
    (D, H, W)) holds the output gradient at ``(k - 1) d - p``, tap t read at
    ``(k - 1 - t) d``: ``gx[i] = sum w[t] g[i + p - t d]``."""
    geometry = _geometry(plan)
    if any(v != 1 for v in geometry[0:3]) or 0 in source[2:]:
        return None
    return _box_of(geometry[3:6], geometry[6:9], kernel.shape[1:], tuple(source[2:]),
                   None if adjoint_of is None else tuple(adjoint_of))


@functools.lru_cache(maxsize=256)
def _box_of(pad, dil, k, size, adjoint_of) -> _Box:
    """:func:`_box` of padding, dilation, kernel and source sizes (depth first; cached:
    a layer asks for the same box at every call)."""
    reach = [(k[i] - 1) * dil[i] for i in range(3)]
    if adjoint_of is None:
        place = pad
        shape = tuple(size[i] + 2 * pad[i] for i in range(3))
        taps = np.indices(k).reshape(3, -1)
    else:
        place = tuple(reach[i] - pad[i] for i in range(3))
        shape = tuple(adjoint_of[i] + reach[i] for i in range(3))
        taps = (np.array(k) - 1)[:, None] - np.indices(k).reshape(3, -1)
    step = taps * np.array(dil)[:, None]
    offsets = np.ascontiguousarray((step[0] * shape[1] + step[1]) * shape[2] + step[2],
                                   dtype=np.intp)
    offsets.setflags(write=False)
    return _Box(place, shape, offsets)


def _scratch(box, threads, dtype) -> np.ndarray:
    """A zeroed box a thread (the kernels write only the cells the source lands on: the
    padding stays zero), and a vector's elements after it: a row's last vector may
    read past the box's end (its lanes past the row are not stored)."""
    return np.zeros((threads, math.prod(box.shape) + _VECTOR_ELEMENTS), dtype)


def _stencil(walk, source, weight, out, plan, adjoint):
    """``out`` (overwritten) from ``source`` and ``weight``: the forward (``walk`` the
    kernels' forward) or the input gradient (``walk`` their input_grad, ``source`` the
    output gradient, ``adjoint`` True), on the padded box where every stride is 1 and
    the weight is finite (an infinity must skip the padding, as PyTorch's does), else on
    the walk."""
    nd = plan.nd
    sv, wv, ov = _volume(source, nd), _kernel(weight, nd), _volume(out, nd)
    threads = kernel_threads(out.size)
    box = _box(plan, wv, sv.shape, adjoint_of=ov.shape[2:] if adjoint else None)
    if box is None or out.size == 0 or not np.isfinite(wv).all():
        walk(sv, wv, ov, *_geometry(plan), threads)
    else:
        _depthwise.correlate(sv, wv.reshape(wv.shape[0], -1), ov, box.offsets, *box.place,
                             *box.shape, _scratch(box, threads, out.dtype), threads)


def forward(x, weight, bias, plan, y) -> None:
    """``y = conv(x, weight, bias)`` (``y`` (N, C, *out_size) C-contiguous, overwritten)."""
    _stencil(_depthwise.forward, x, weight, y, plan, adjoint=False)
    add_bias(y, bias)


def input_grad(grad_output, weight, plan, gx) -> None:
    """The input gradient into ``gx`` (the input's shape, C-contiguous, overwritten)."""
    _stencil(_depthwise.input_grad, grad_output, weight, gx, plan, adjoint=True)


def weight_grad(grad_output, x, plan, weight_shape) -> np.ndarray:
    """The weight gradient, ``weight_shape`` (C, 1, *k)."""
    nd = plan.nd
    gw = np.empty(weight_shape, dtype=x.dtype)
    gv, xv, gwv = _volume(grad_output, nd), _volume(x, nd), _kernel(gw, nd)
    threads = kernel_threads(x.size)
    box = _box(plan, gwv, xv.shape)
    if box is None or grad_output.size == 0:
        _depthwise.weight_grad(gv, xv, gwv, *_geometry(plan), threads)
    else:
        _depthwise.weight_dots(gv, xv, gwv.reshape(gwv.shape[0], -1), box.offsets, *box.place,
                               *box.shape, _scratch(box, threads, x.dtype),
                               np.zeros(gwv.shape[:1] + (box.offsets.size,)), threads)
        if not np.isfinite(gw).all():  # an infinity may have met the padding: skip it
            _depthwise.weight_grad(gv, xv, gwv, *_geometry(plan), threads)
    return gw


def backward(grad_output, x, weight, plan, gx, needs):
    """``(gx, gw, gb)`` of a depthwise convolution (None where ``needs`` says; ``gx`` the
    preallocated input gradient)."""
    if needs[0]:
        input_grad(grad_output, weight, plan, gx)
    gw = weight_grad(grad_output, x, plan, weight.shape) if needs[1] else None
    gb = grad_output.sum(axis=(0, *range(2, grad_output.ndim))) if needs[2] else None
    return gx, gw, gb
