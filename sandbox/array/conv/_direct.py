"""The direct 3x3 convolution of a few input channels: a UNet's first layer.

A first layer (1-4 input channels, 3x3, stride 1) is short products over long rows: its
im2col columns are 9 rows a channel (1.2 MB for a batch of 8 at 64x64), written and read
back by the GEMM, which then spends most of its time storing the outputs.  The direct
kernel (``pyx/conv_direct.h``, :func:`sandbox._C._im2col.direct3x3`) loads the shifted
input vectors of 8 output pixels once and sums them against every output channel's
weights, one output row a ``prange`` iteration.  Each output is the im2col product's sum
in its order (an FMA chain from zero over the channels and taps, the padding's zeros
included), so on the AVX2 GEMM's path the values are the im2col path's bit for bit; the
route is taken only there (the AVX-512 path keeps its own GEMM, unmeasured against it).
"""

from __future__ import annotations

import numpy as np

from ..._C import _im2col
from ...runtime import simd
from ...runtime.threads import kernel_threads
from ._chunks import add_bias
from ._tuning import TUNING

__all__ = ["eligible", "forward"]

_AVAILABLE = _im2col.direct3x3_available()
_MAX_CHANNELS = _im2col.direct3x3_max_channels()


def eligible(plan, x) -> bool:
    """Whether a 2-D convolution runs :func:`forward`: float32 on the AVX2 GEMM's path, a
    3x3 kernel, stride 1, dilation 1, one group and 1 to ``TUNING.direct_max_channels``
    input channels (at most 4)."""
    return (_AVAILABLE and x.dtype == np.float32 and plan.groups == 1
            and 1 <= x.shape[1] <= min(TUNING.direct_max_channels, _MAX_CHANNELS)
            and plan.kernel == (3, 3) and plan.stride == (1, 1) and plan.dilation == (1, 1)
            and simd.current().gemm == "avx2")


def forward(x, wmat, bias, plan, y) -> None:
    """``y = conv2d(x, W) (+ bias)`` for ``wmat`` (O, C*9), the weight as a contiguous
    matrix: ``x`` (N, C, H, W) and ``y`` (N, O, Ho, Wo) C-contiguous float32, ``y``
    overwritten."""
    ph, pw = plan.padding
    # each output a C*9-term sum: the work of a prange pass over the outputs times that
    _im2col.direct3x3(x, wmat, y, ph, pw, kernel_threads(y.size * wmat.shape[1]))
    add_bias(y, bias)
