"""Chunks of samples, shared by the 2-D (``_im2col``) and 3-D (``_vol2col``) loops.

A chunk is ``nb`` consecutive samples of an ``(N, K, *spatial)`` array; the GEMMs
see it as one ``(K, nb * P)`` matrix, ``P`` the size of one sample's spatial block
(pixels in 2-D, voxels in 3-D).
"""

from __future__ import annotations

import functools

import numpy as np

from ..._C import _norm
from ...runtime import simd
from ...runtime.threads import kernel_threads
from .._gemm import NARROW_COLUMNS, backend, grouped_matmul, lhs, matmul, product_form
from .._parallel import parallel_map, scratch
from ._tuning import MIN_PARALLEL_FLOPS, TUNING

#: an im2col / vol2col forward copies its weight into :func:`~sandbox.array._gemm.lhs`'s
#: layout only from this many output columns (samples x pixels or voxels) in all; below,
#: the weight stays in place and products of fewer than ``NARROW_COLUMNS`` columns go to
#: BLAS.  Measured (AMD EPYC family 25 model 17, Zen 4; 1 thread, where a batch-1 call is
#: one product anyway; us, 2-D forward with the copy vs without; a throwaway script over
#: ``sandbox.array.conv.conv2d`` with the two constants patched): 256->256@4 batch 1 1110
#: vs 365, batch 2 1132 vs 703, batch 8 2967 vs 2249; 128->128@8 batch 1 500 vs 347;
#: 64->64@16 batch 1 299 vs 281; 32->32@32 batch 1 298 vs 321 (1024 columns: the copy
#: pays)
LHS_MIN_COLUMNS = 512


#: multiply-adds of a product that count as one element of work for
#: :func:`~sandbox.runtime.threads.kernel_threads` (a ``prange`` over elements): an AVX2
#: core retires 16 float32 multiply-adds a cycle, about what an elementwise pass spends
#: on one element.  The first layer's weight gradient (1->16 @ 64^2, batch 8: 8 products
#: of 16 x 9 outputs over 4096 pixels) then runs on every thread.
PRODUCT_WORK_PER_ELEMENT = 16


def _blocks(n: int, nb: int) -> list[tuple[int, int, int]]:
    """``(chunk index, first sample, samples)`` for chunks of ``nb`` samples."""
    return [(i, n0, min(nb, n - n0)) for i, n0 in enumerate(range(0, n, nb))]


def pool_threads(flops: int) -> int | None:
    """Worker-pool threads for a loop of chunks whose GEMMs do ``flops`` flops: 1 (the
    calling thread) below ``TUNING.min_parallel_flops`` (by default the SIMD path's
    ``MIN_PARALLEL_FLOPS``), else all of them (None).  The chunks and their order of
    sums do not change, so neither do the results."""
    limit = TUNING.min_parallel_flops
    if limit is None:
        limit = MIN_PARALLEL_FLOPS[simd.current().isa]
    return 1 if flops < limit else None


def forward_weight(wmat, columns: int):
    """``(left operand, blas_below)`` of a forward's products for ``columns`` output
    columns in all: ``wmat`` in :func:`~sandbox.array._gemm.lhs`'s layout, or (under
    :data:`LHS_MIN_COLUMNS`) ``wmat`` itself with narrow products to BLAS."""
    if columns >= LHS_MIN_COLUMNS:
        return lhs(wmat), 0
    return wmat, NARROW_COLUMNS


def sample_products(a, b, out, blas_below: int = 0) -> None:
    """``out[i] = a[i] @ b[i]`` for every sample ``i`` (3-D operands; ``a`` may be a
    stride-0 batch of one matrix): float32 in one kernel call sharing the samples'
    products among the threads; else, or where the kernel does not take them (BLAS's
    form), one :func:`~sandbox.array._gemm.matmul` a sample, as the chunk loops make
    them, on the worker pool when they are worth its start-up.  Each product is one
    thread's: the bits do not depend on the thread count.

    The kernel takes all threads from :data:`PRODUCT_WORK_PER_ELEMENT` multiply-adds of
    work per element of a ``prange`` pass: sized by the output alone, a weight
    gradient's products (a few hundred outputs, each a sum over a whole sample's pixels)
    ran on one thread."""
    a, b, out = _product_blocks(a, b, out)
    if blas_below and a.dtype == np.float32:
        b = _unit_k(a, b, blas_below)
    work = out.size * a.shape[-1] // PRODUCT_WORK_PER_ELEMENT
    if a.dtype == np.float32 and matmul(a, b, out, num_threads=kernel_threads(work),
                                        blas_below=blas_below):
        return
    n, m, k = a.shape

    def one(i):
        matmul(a[i], b[i], out[i], blas_below=blas_below)

    parallel_map(one, range(n), num_threads=pool_threads(gemm_flops(m, k, b.shape[2] * n, 1)))


def _product_blocks(a, b, out):
    """A single product (one sample) of at least :data:`PRODUCT_BLOCKS_MIN_MACS`
    multiply-adds as products of blocks of its longer side, rows of ``a`` and ``out`` or
    columns of ``b`` and ``out`` (views; the other operand a stride-0 batch): each product
    is one thread's, so a single one can run on more than one.  The blocks are whole
    multiples of :data:`PRODUCT_BLOCK`, at most :data:`MAX_PRODUCT_BLOCKS` of them, of
    equal size (a side that ``PRODUCT_BLOCK`` does not divide is not cut).  A rule of the
    shapes alone: the same products, so the same bits, at any thread count.  Anything
    else is returned as it is."""
    n, m, k = a.shape
    cols = b.shape[2]
    side = max(m, cols)
    if (n != 1 or side % PRODUCT_BLOCK or side < 2 * PRODUCT_BLOCK
            or m * k * cols < PRODUCT_BLOCKS_MIN_MACS):
        return a, b, out
    size = PRODUCT_BLOCK * -(-side // PRODUCT_BLOCK // MAX_PRODUCT_BLOCKS)  # at most the max
    while side % size:  # of equal size (PRODUCT_BLOCK divides side: this ends at side at worst)
        size += PRODUCT_BLOCK
    blocks = side // size
    # splitting one axis in two is always a view (any strides): the blocks write into out
    if m >= cols:
        return (a[0].reshape(blocks, size, k), np.broadcast_to(b[0], (blocks, k, cols)),
                out[0].reshape(blocks, size, cols))
    return (np.broadcast_to(a[0], (blocks, m, k)),
            b[0].reshape(k, blocks, size).transpose(1, 0, 2),
            out[0].reshape(m, blocks, size).transpose(1, 0, 2))


def _unit_k(a, b, blas_below: int):
    """``b`` (P, K, N) with unit stride along K (its transpose copied, a stride-0 batch
    once) where that turns products the kernels would leave to BLAS on one thread (fewer
    than ``blas_below`` columns, the packed form's) into the dot form's, which the
    project's kernels share among threads by product; else ``b`` itself.  The forward of
    a 4x4 layer at batch 1 (256 -> 256, 256 x 2304 x 16), BLAS before, this form (cut into
    blocks of rows) after: 0.25 -> 0.23-0.24 ms at 1 thread, 0.25 -> 0.16 ms at 2 (AMD EPYC
    family 26 model 2, ``python benchmarks/bench_conv_passes.py --threads 1 2 --batch 1
    --layers 256-256-4``, docs/benchmarks.md, eleventh session)."""
    _, m, k = a.shape
    cols = b.shape[2]
    if (cols >= blas_below or a.strides[2] != a.itemsize or b.strides[1] == b.itemsize
            or backend() == "blas" or product_form(m, cols, k, True) != "dot"):
        return b
    if b.strides[0] == 0:
        bt = np.ascontiguousarray(b[0].T)
        return np.broadcast_to(bt.T, b.shape)
    return np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)


#: :func:`_product_blocks`: the rows or columns of a product block (a multiple of), at most
#: so many blocks, and the multiply-adds from which a single product is cut into them.
#: A batch-1 UNet's 4x4 layers (256 -> 256: 256 x 2304 x 16 forward, 2304 x 256 x 16
#: input gradient, 256 x 16 x 2304 weight gradient; 9.4M multiply-adds each) had run each
#: of their products on one thread (see benchmarks/bench_conv_passes.py --batch 1).
PRODUCT_BLOCK = 64
MAX_PRODUCT_BLOCKS = 8
PRODUCT_BLOCKS_MIN_MACS = 1 << 21


def chunk_product(a, b, out, groups, whole, trans_a=False, trans_b=False, blas_below=0):
    """``out = op(a) @ op(b)`` per group of a chunk of an im2col or vol2col loop
    (:func:`~sandbox.array._gemm.grouped_matmul`), on the thread that runs the chunk;
    where the chunk is the ``whole`` batch (a batch of one or two on a small map: nothing
    else for the other threads to do) and there is one group, the product goes to
    :func:`sample_products`, which cuts a large one into blocks shared among the threads
    (by shapes alone: the same bits at any count)."""
    if not (whole and groups == 1):
        grouped_matmul(a, b, out, groups, trans_a=trans_a, trans_b=trans_b,
                       blas_below=blas_below)
        return
    a = a.T if trans_a else a
    b = b.T if trans_b else b
    sample_products(a[None], b[None], out[None], blas_below)


def gemm_flops(m: int, k: int, cols: int, products: int) -> int:
    """Flops of ``products`` (m, k) x (k, cols) matrix products."""
    return 2 * m * k * cols * products


def _gather(arr, n0, nb, name):
    """``arr[n0:n0+nb]`` (N, K, ...) as a (K, nb*P) matrix: a view when nb == 1,
    else a copy into this thread's scratch buffer ``name``."""
    k = arr.shape[1]
    plane = arr[0, 0].size
    if nb == 1:
        return arr[n0].reshape(k, plane)
    mat = scratch(name, (k, nb, plane), arr.dtype)
    np.copyto(mat, arr[n0:n0 + nb].reshape(nb, k, plane).transpose(1, 0, 2))
    return mat.reshape(k, nb * plane)


def _scatter(mat, arr, n0, nb):
    """Inverse of :func:`_gather`: ``arr[n0:n0+nb] = mat`` (K, nb*P)."""
    k = arr.shape[1]
    np.copyto(arr[n0:n0 + nb].reshape(nb, k, -1), mat.reshape(k, nb, -1).transpose(1, 0, 2))


def add_bias(y, bias, num_threads: int | None = None) -> None:
    """``y += bias`` along the channel axis (1) of ``y`` (N, C, ...), in place.

    A C-contiguous ``y`` of the bias's dtype goes through batch norm's per-channel
    affine kernel with scale 1 (``y * 1 + b`` is ``y + b``, bit for bit): parallel over
    the (n, c) planes, with ``num_threads`` (default: by the size of ``y``), and 4-5x
    faster than numpy's broadcast add on (8, 16, 64, 64) float32 (0.03 against 0.12 ms
    on the AMD EPYC family 25 VM).  Other layouts take the broadcast add."""
    if bias is None:
        return
    if not (y.flags.c_contiguous and y.dtype == bias.dtype and y.ndim >= 3
            and y.dtype in (np.float32, np.float64)):
        y += bias.reshape(-1, *(1,) * (y.ndim - 2))
        return
    planes = y.reshape(y.shape[0], y.shape[1], -1)
    threads = kernel_threads(y.size) if num_threads is None else num_threads
    _norm.affine(planes, _ones(y.shape[1], y.dtype), np.ascontiguousarray(bias), planes,
                 threads)


@functools.lru_cache(maxsize=64)
def _ones(count: int, dtype) -> np.ndarray:
    """``count`` read-only ones of ``dtype``: the scale of :func:`add_bias`."""
    ones = np.ones(count, dtype)
    ones.setflags(write=False)
    return ones
