"""Winograd F(2x2, 3x3) convolution for 3x3, stride-1, undilated, ungrouped layers.

Used by :mod:`sandbox.array.conv` for the forward pass and the input gradient (a 3x3
stride-1 convolution of ``grad_output`` with the flipped, transposed weight).
Per 2x2 output tile it needs 16 multiplies per (input, output) channel pair
instead of 36, so the GEMM work drops 2.25x; the transforms (``pyx/_winograd.pyx``,
formulas there) are cheap memory passes.  Why: single-threaded OpenBLAS sgemm
reaches about half of oneDNN's direct-convolution throughput on this machine
(measured: im2col+GEMM 5.7 ms vs PyTorch 2.5 ms for a 128-channel 16x16 layer,
batch 8, one thread), so fewer GEMM flops is the lever we have.

Chunks are fixed by the shapes (samples per chunk so that a chunk has at least
``TUNING.winograd_target_tiles`` tiles), run on
:func:`sandbox.array._parallel.parallel_map`, and each
chunk writes only its own samples: results are bitwise identical for any thread
count.  Accuracy: the transforms use only 0, +-1 and +-1/2, the float32 error is
a few ulps of the sum magnitude (tests compare with the direct reference).
"""

from __future__ import annotations

import numpy as np

from ..._C import _winograd
from .._parallel import OrderedSum, parallel_map, scratch
from ._tuning import TUNING

__all__ = [
    "eligible",
    "eligible_weight_grad",
    "weight_transform",
    "winograd_conv3x3",
    "winograd_weight_grad",
]



def eligible(geom, groups: int, c_in: int, c_out: int, height: int, width: int) -> bool:
    """3x3 kernel, stride 1, dilation 1, one group, padding at most 2, enough channels and
    pixels (``height``, ``width``: the input's spatial size)."""
    return (geom.kh == geom.kw == 3 and geom.sh == geom.sw == 1 and geom.dh == geom.dw == 1
            and groups == 1 and geom.ph <= 2 and geom.pw <= 2
            and min(c_in, c_out) >= TUNING.winograd_min_channels
            and (height + 2 * geom.ph - 2) * (width + 2 * geom.pw - 2)
            >= TUNING.winograd_min_pixels)


def eligible_weight_grad(c_in: int, c_out: int) -> bool:
    """Whether an :func:`eligible` conv also takes the Winograd weight gradient."""
    return min(c_in, c_out) >= TUNING.winograd_min_channels_weight_grad


def _points(name: str, rows: int, cols: int, dtype) -> np.ndarray:
    """This thread's scratch (16, rows, cols) for the 16 Winograd points, with the
    points one cache line more than ``rows * cols`` apart: the transforms write or
    read all 16 points at once, and 16 streams a multiple of 4 KiB apart alias in
    the cache (measured: the 384-channel 8x8 input transform 1.4 -> 0.4 ms)."""
    dtype = np.dtype(dtype)
    pitch = rows * cols + 64 // dtype.itemsize
    flat = scratch(name, (16 * pitch,), dtype)
    return np.lib.stride_tricks.as_strided(
        flat, (16, rows, cols), (pitch * dtype.itemsize, cols * dtype.itemsize, dtype.itemsize))


def weight_transform(weight: np.ndarray, flip_transpose: bool = False,
                     kernel_threads: int = 1) -> np.ndarray:
    """``U[xi, o, c] = (G w[o, c] G^T)[xi]`` for ``weight`` (O, C, 3, 3) -> (16, O, C).

    With ``flip_transpose``: the transform of the input gradient's kernel
    ``w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]``, shape (16, C, O).
    """
    o, c = weight.shape[:2]
    u = np.empty((16, c, o) if flip_transpose else (16, o, c), dtype=weight.dtype)
    _winograd.weight_transform(np.ascontiguousarray(weight), u, flip_transpose, kernel_threads)
    return u


def winograd_conv3x3(x, u, y, ph: int, pw: int, kernel_threads: int = 1, bias=None) -> None:
    """``y = conv2d(x, w, bias, stride=1, padding=(ph, pw))`` with ``u = weight_transform(w)``.

    ``x`` (N, C, H, W) and ``y`` (N, O, H + 2*ph - 2, W + 2*pw - 2), C-contiguous,
    same dtype; ``y`` is overwritten.
    """
    n, c = x.shape[:2]
    o, ho, wo = y.shape[1:]
    th, tw, tiles, blocks = _tiling(n, c, o, ho, wo, x.itemsize)

    def task(block, split_gemm=False):
        _, n0, cnt = block
        t = cnt * tiles
        v = _points("wino_v", c, t, x.dtype)
        _winograd.input_transform(x, v, n0, cnt, ph, pw, th, tw, kernel_threads)
        m = _points("wino_m", o, t, x.dtype)
        _matmul16(u, v, m, split_gemm)
        _winograd.output_transform(m, y, n0, cnt, th, tw, kernel_threads)
        if bias is not None:
            y[n0:n0 + cnt] += bias.reshape(-1, 1, 1)

    if len(blocks) == 1:  # small images, many channels: parallelise the 16 GEMMs instead
        task(blocks[0], split_gemm=True)
    else:
        parallel_map(task, blocks)


def _matmul16(a, b, out, split: bool) -> None:
    """``out[k] = a[k] @ b[k]`` for the 16 Winograd points; with ``split`` the points are
    shared among the worker threads (each point is the same GEMM call either way, so the
    result does not depend on the thread count)."""
    if not split:
        np.matmul(a, b, out=out)
        return

    def points(k0):
        np.matmul(a[k0:k0 + 4], b[k0:k0 + 4], out=out[k0:k0 + 4])

    parallel_map(points, range(0, 16, 4))


def _tiling(n, c, o, ho, wo, itemsize):
    th, tw = -(-ho // 2), -(-wo // 2)
    tiles = th * tw
    nb = max(1, min(n, -(-TUNING.winograd_target_tiles // tiles),
                    TUNING.winograd_max_chunk_bytes // max(16 * max(c, o) * tiles * itemsize, 1)))
    return th, tw, tiles, [(i, n0, min(nb, n - n0)) for i, n0 in enumerate(range(0, n, nb))]


def winograd_weight_grad(x, g, ph: int, pw: int, kernel_threads: int = 1) -> np.ndarray:
    """Weight gradient (O, C, 3, 3) of a 3x3 stride-1 conv of ``x`` with output gradient ``g``.

    ``dW = G^T (sum_t Gt_t V_t^T) G`` (see ``grad_transform`` in ``pyx/_winograd.pyx``);
    one (16, O, C) partial per chunk, summed in chunk order.
    """
    n, c = x.shape[:2]
    o, ho, wo = g.shape[1:]
    th, tw, tiles, blocks = _tiling(n, c, o, ho, wo, x.itemsize)
    total = OrderedSum(len(blocks))

    def task(block, split_gemm=False):
        i, n0, cnt = block
        t = cnt * tiles
        v = _points("wino_v", c, t, x.dtype)
        _winograd.input_transform(x, v, n0, cnt, ph, pw, th, tw, kernel_threads)
        gt = _points("wino_m", o, t, x.dtype)
        _winograd.grad_transform(g, gt, n0, cnt, th, tw, kernel_threads)
        partial = np.empty((16, o, c), dtype=x.dtype)
        _matmul16(gt, v.transpose(0, 2, 1), partial, split_gemm)
        total.add(i, partial)

    if len(blocks) == 1:
        task(blocks[0], split_gemm=True)
    else:
        parallel_map(task, blocks)
    gw = np.empty((o, c, 3, 3), dtype=x.dtype)
    _winograd.weight_grad_fold(total.out, gw, kernel_threads)  # dW = G^T P G per (o, c)
    return gw
