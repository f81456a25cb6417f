"""Transposed convolutions whose kernel equals their stride (no padding, dilation or
output padding, one group): the up-convolution of the original UNet,
``ConvTranspose2d(c, c // 2, kernel_size=2, stride=2)``.

Each input pixel then writes its own ``k x k`` block of the output and no two blocks
overlap, so the op is a 1x1 convolution to ``O * k*k`` channels (the batched products of
``_pointwise``) followed by depth-to-space, a permutation; the input gradient is
space-to-depth and the 1x1 product back, the weight gradient the 1x1 weight gradient
of those.  im2col ran it as a column buffer, a fold and chunk loops: about 1 ms a pass
whatever the layer's size, where these take a product and one kernel copy.  Forward and
both gradients, batch 8, ours over PyTorch's time at 1 / 2 threads on the AMD EPYC family
25 model 1 VM (``python benchmarks/bench_ops_vs_torch.py --threads 1 2 --ops up_conv
--shape 8 C S S``): 16->8 @64 0.63-0.67 / 0.59-0.64, 32->16 @32 and 64->32 @16
0.66-0.73 (im2col's: 1.06-1.16 at 2 threads).  Written for any rank, run in 2-D: 3-D's
permutations cost more than vol2col's loops save (1.2-1.6 of the time at (2, 32, 16^3)
in a one-off A/B when this was written, not kept as a script).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..._C import _elementwise
from ...runtime.threads import kernel_threads
from . import _pointwise as pointwise
from ._chunks import add_bias

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

__all__ = ["eligible", "transpose_backward", "transpose_forward"]


def eligible(plan, in_size, out_size) -> bool:
    """Whether a transposed convolution is kernel == stride, no padding, dilation 1, one
    group, and its output exactly ``in_size * kernel`` (no output padding)."""
    kernel = plan.kernel
    return (plan.groups == 1 and kernel == plan.stride and plan.padding == (0,) * plan.nd
            and plan.dilation == (1,) * plan.nd
            and tuple(out_size) == tuple(s * k for s, k in zip(in_size, kernel, strict=True)))


def _kernel_form(a) -> bool:
    """Whether ``a`` takes the 2-D permutation kernels (float32/float64, C-contiguous)."""
    return a.ndim == 4 and a.dtype in _KERNEL_DTYPES and a.flags.c_contiguous


def _to_space(cols, kernel):
    """(N, O * prod(kernel), *size) -> (N, O, *(size * kernel)), C-contiguous.  2-D:
    one kernel pass, its output rows shared among the threads
    (``_elementwise.depth_to_space_2d``); else one numpy copy per kernel offset, each a
    contiguous block of ``cols`` into a strided view of the output (a single transposed
    copy, whose innermost axis is the kernel's, ran 5 times slower)."""
    size = cols.shape[2:]
    n, o = cols.shape[0], cols.shape[1] // math.prod(kernel)
    y = np.empty((n, o, *(s * k for s, k in zip(size, kernel, strict=True))), cols.dtype)
    if _kernel_form(cols):
        _elementwise.depth_to_space_2d(cols.reshape(-1), y.reshape(-1), n * o, *kernel, *size,
                                       kernel_threads(y.size))
        return y
    blocks = cols.reshape(n, o, *kernel, *size)
    split = y.reshape(n, o, *(v for s, k in zip(size, kernel, strict=True) for v in (s, k)))
    for offset in itertools.product(*(range(k) for k in kernel)):
        dst = (slice(None), slice(None), *(v for a in offset for v in (slice(None), a)))
        split[dst] = blocks[(slice(None), slice(None), *offset)]
    return y


def _to_depth(y, kernel):
    """(N, O, *(size * kernel)) -> (N, O * prod(kernel), *size), a C-contiguous copy
    (2-D: ``_elementwise.space_to_depth_2d`` on every thread)."""
    nd = len(kernel)
    n, o = y.shape[:2]
    size = tuple(s // k for s, k in zip(y.shape[2:], kernel, strict=True))
    if _kernel_form(y):
        out = np.empty((n, o * math.prod(kernel), *size), y.dtype)
        _elementwise.space_to_depth_2d(y.reshape(-1), out.reshape(-1), n * o, *kernel, *size,
                                       kernel_threads(y.size))
        return out
    split = y.reshape(n, o, *(v for s, k in zip(size, kernel, strict=True) for v in (s, k)))
    order = [0, 1] + [3 + 2 * i for i in range(nd)] + [2 + 2 * i for i in range(nd)]
    return np.ascontiguousarray(split.transpose(order)).reshape(n, o * math.prod(kernel),
                                                                *size)


def transpose_forward(x, weight, bias):
    """``conv_transpose(x, weight, bias)``: ``x`` (N, C, *size) C-contiguous, ``weight``
    (C, O, *kernel)."""
    kernel = tuple(weight.shape[2:])
    n, c = x.shape[:2]
    wmat = np.ascontiguousarray(weight.reshape(c, -1).T)  # (O * prod(kernel), C)
    cols = np.empty((n, wmat.shape[0], *x.shape[2:]), dtype=x.dtype)
    pointwise.forward(x, wmat, None, cols)
    y = _to_space(cols, kernel)
    add_bias(y, bias)
    return y


def transpose_backward(grad_output, x, weight, needs):
    """``(gx, gw, gb)`` of :func:`transpose_forward` (None where ``needs`` says)."""
    kernel = tuple(weight.shape[2:])
    c = x.shape[1]
    gp = _to_depth(grad_output, kernel)  # (N, O * prod(kernel), *size)
    gx = gw = gb = None
    if needs[0]:
        gx = np.empty(x.shape, dtype=x.dtype)
        pointwise.forward(gp, np.ascontiguousarray(weight.reshape(c, -1)), None, gx)
    if needs[1]:
        gw = pointwise.weight_grad(gp, x).reshape(weight.shape)
    if needs[2]:
        gb = grad_output.sum(axis=(0, *range(2, grad_output.ndim)))
    return gx, gw, gb
