"""The direct 3x3 convolution of a few input channels, and its weight gradient: a UNet's
first layer (and a volume's of one channel: :func:`forward3d`, :func:`weight_grad3d`).

A first layer (1-4 input channels, 3x3, stride 1) is short products over long rows: its
im2col columns are 9 rows a channel (1.2 MB for a batch of 8 at 64x64), written and read
back by the GEMM, which then spends most of its time storing the outputs.  The direct
kernel (``pyx/conv_direct.h``, :func:`sandbox._C._im2col.direct3x3`) loads the shifted
input vectors of 8 output pixels once and sums them against every output channel's
weights, one output row a ``prange`` iteration.  Each output is the im2col product's sum
in its order (an FMA chain from zero over the channels and taps, the padding's zeros
included), so the values are the im2col product's bit for bit on either of the project's
GEMMs (where im2col would have taken BLAS, fewer than 8 output channels, they may differ
in the last bits; both paths now give the direct kernel's). The AVX-512 path runs the
kernel's 16-pixel form (``wide``).  Each row is written 16 output channels at a time
(the shifted inputs loaded again for each 16): with every channel's plane written for
each block of pixels, 1 input channel -> 24 or more output channels had run at half the
speed per channel of 16, and 1 -> 32 at 2 threads had been 1.18-1.44x slower than im2col.
Measured on an AMD EPYC family 26 model 2 (Zen 5), batch 8, direct over im2col (the time
with ``direct_max_channels=0``), in one process: ``python benchmarks/ab_conv_tuning.py
direct_max_channels=0 --threads 1 2 --parts fwd dw --other-bits --rounds 11 --layers
1-16-64 1-16-128 3-16-64 3-16-128 4-16-128 1-32-64 1-32-128 3-32-64 3-64-64 1-8-128``
(``SANDBOX_ISA=avx2`` for the AVX2 path).  Forward, AVX-512 path: 0.60-0.89 at 1 thread,
0.19-0.98 at 2; AVX2 path 0.61-0.95 and 0.53-0.78.

The weight gradient (:func:`weight_grad`) takes the same route on either path: each task,
whole output rows of a sample, copies its input rows with the padding's zeros into a tile
and sums ``g * shifted x`` in vector lanes, and the tasks' sums are added in task order.
Against im2col + the dot-product GEMM (the same command, 1 -> 32 @ 128² aside, below):
0.77-0.95 of the time at 1 thread and 0.32-0.90 at 2 on the AVX-512 path, 0.71-1.09 and
0.68-1.00 on the AVX2 path.  Its tasks read short runs of every output channel's plane,
where the GEMM streams whole planes, so an output gradient larger than
``TUNING.direct_weight_grad_max_bytes`` (8 MB: 1 -> 32 @ 128², batch 8, 1.14-1.16x slower
direct) goes to im2col (:func:`takes_weight_grad`).  Its sums are in another order than
im2col's, so its bits differ from that path's (not from one thread count to another).
"""

from __future__ import annotations

import numpy as np

from ..._C import _im2col, _vol2col
from ...runtime import simd
from ...runtime.threads import kernel_threads
from ._chunks import add_bias
from ._tuning import TUNING

__all__ = ["eligible", "forward", "forward3d", "takes_weight_grad", "weight_grad",
           "weight_grad3d"]

#: output pixels a weight-gradient task sums (whole rows of one sample: ``ceil(this /
#: width)`` of them): fixed by the shapes, so the order of the sums is too
TASK_PIXELS = 2048

#: by the GEMM of the SIMD path (``Selection.gemm``): whether this CPU runs the kernel's
#: form for it (``avx512``: the 16-pixel form)
_AVAILABLE = {"avx2": _im2col.direct3x3_available(), "avx512": _im2col.direct3x3_available(True)}
_MAX_CHANNELS = _im2col.direct3x3_max_channels()


def eligible(plan, x) -> bool:
    """Whether a convolution runs the direct kernels (:func:`forward`, or :func:`forward3d`
    for a volume): float32 on the path of the project's AVX2 or AVX-512 GEMM, a 3x3 (3x3x3)
    kernel, stride 1, dilation 1, one group and 1 to ``TUNING.direct_max_channels`` input
    channels (at most 4 in 2-D; a volume's only one: its depth taps take the channels'
    place)."""
    nd = plan.nd
    most = min(TUNING.direct_max_channels, _MAX_CHANNELS if nd == 2 else 1)
    return (x.dtype == np.float32 and plan.groups == 1 and 1 <= x.shape[1] <= most
            and plan.kernel == (3,) * nd and plan.stride == (1,) * nd
            and plan.dilation == (1,) * nd and _AVAILABLE.get(simd.current().gemm, False))


def takes_weight_grad(plan, x, g) -> bool:
    """Whether the weight gradient of an :func:`eligible` convolution (either rank) runs
    :func:`weight_grad` / :func:`weight_grad3d`: while the output gradient ``g`` has at
    most ``TUNING.direct_weight_grad_max_bytes`` (a larger one, out of the caches, streams
    better through the columns and the GEMM)."""
    return g.nbytes <= TUNING.direct_weight_grad_max_bytes and eligible(plan, x)


def _band(ho: int, wo: int) -> int:
    """Output rows a weight-gradient task sums: :data:`TASK_PIXELS` in whole rows."""
    return max(1, min(ho, -(-TASK_PIXELS // max(wo, 1))))


def forward(x, wmat, bias, plan, y) -> None:
    """``y = conv2d(x, W) (+ bias)`` for ``wmat`` (O, C*9), the weight as a contiguous
    matrix: ``x`` (N, C, H, W) and ``y`` (N, O, Ho, Wo) C-contiguous float32, ``y``
    overwritten."""
    ph, pw = plan.padding
    # each output a C*9-term sum: the work of a prange pass over the outputs times that
    _im2col.direct3x3(x, wmat, y, ph, pw, kernel_threads(y.size * wmat.shape[1]),
                      simd.current().gemm == "avx512")
    add_bias(y, bias)


def weight_grad(x, g, plan):
    """The weight gradient (O, C, 3, 3) of :func:`forward`'s convolution for the output
    gradient ``g`` (N, O, Ho, Wo), ``x`` C-contiguous float32: tasks of whole output
    rows of a sample (:data:`TASK_PIXELS`), each summed in vector lanes, then added in
    task order (:func:`sandbox._C._im2col.direct3x3_weight_grad`) -- instead of im2col's
    columns (9 rows an input channel, written and read back) and a dot-product GEMM."""
    n, c = x.shape[:2]
    o, ho, wo = g.shape[1:]
    band = _band(ho, wo)
    part = np.empty((n * -(-ho // band), o, 9 * c), np.float32)
    dw = np.empty((o, 9 * c), np.float32)
    ph, pw = plan.padding
    # each output pixel's gradient meets C*9 inputs: a pass over g times that
    _im2col.direct3x3_weight_grad(x, np.ascontiguousarray(g), part, dw, ph, pw, band,
                                  kernel_threads(g.size * 9 * c),
                                  simd.current().gemm == "avx512")
    return dw.reshape(o, c, 3, 3)


# -- 3-D: a volume's first layer of one channel -------------------------------------------
# Output plane z of a one-channel 3x3x3 convolution is the 2-D 3x3 convolution of the input
# planes z - pd .. z - pd + 2 as three channels: the same row kernels, the depth taps as
# channels (pyx/_vol2col.pyx), the vol2col product's k order.  Against vol2col, batch 2,
# Zen 5 VM (``python benchmarks/ab_conv_tuning.py direct_max_channels=0 --nd 3 --batch 2
# --threads 1 2 --parts fwd dw --other-bits --rounds 11 --layers 1-16-32 1-16-16 1-32-32
# 1-24-32 1-8-64``, direct / vol2col): forward 0.39-0.72 at 1 thread and 0.23-0.71 at 2,
# weight gradient 0.74-0.85 and 0.48-0.97 (1 -> 8 @ 64³, 16 MB of output gradient, takes
# vol2col by the byte bound).


def forward3d(x, wmat, bias, plan, y) -> None:
    """``y = conv3d(x, W) (+ bias)`` for ``wmat`` (O, 27): ``x`` (N, 1, D, H, W) and ``y``
    (N, O, Do, Ho, Wo) C-contiguous float32, ``y`` overwritten."""
    pd, ph, pw = plan.padding
    _vol2col.direct3x3x3(x, wmat, y, pd, ph, pw, kernel_threads(y.size * 27),
                         simd.current().gemm == "avx512")
    add_bias(y, bias)


def weight_grad3d(x, g, plan):
    """The weight gradient (O, 1, 3, 3, 3) of :func:`forward3d`'s convolution for the output
    gradient ``g`` (N, O, Do, Ho, Wo): tasks of whole output rows of one output plane of a
    sample (:data:`TASK_PIXELS`), each summed in vector lanes, then added in task order."""
    n = x.shape[0]
    o, do, ho, wo = g.shape[1:]
    band = _band(ho, wo)
    part = np.empty((n * do * -(-ho // band), o, 27), np.float32)
    dw = np.empty((o, 27), np.float32)
    pd, ph, pw = plan.padding
    _vol2col.direct3x3x3_weight_grad(x, np.ascontiguousarray(g), part, dw, pd, ph, pw, band,
                                     kernel_threads(g.size * 27),
                                     simd.current().gemm == "avx512")
    return dw.reshape(o, 1, 3, 3, 3)

