"""The vol2col + GEMM loops of the 3-D convolutions, run in fixed chunks of samples.

This repeats the chunking pattern of the 2-D path (``_im2col.py``) for 5-D arrays,
with the same knobs (:data:`~sandbox.array.conv.TUNING`).  A convolution chunk of
``nb`` samples is one GEMM per group::

    out[n0:n0+nb] (O, nb*do*ho*wo) = weight.reshape(O, C/g*kd*kh*kw) @ vol2col(x)[n0:n0+nb]

with the column layout documented in ``pyx/_vol2col.pyx``.  The plan depends on
the shapes only, never on the thread count (:func:`_plan`): one sample per chunk
when a sample has at least ``TUNING.target_cols`` output voxels, else enough
samples to reach that many columns, never more than ``TUNING.max_slab_bytes`` of
columns.
When one sample's columns would exceed that (a 3x3x3 kernel makes them 27 times
the input), the chunk is one sample processed in *slabs* of output depth planes,
one after the other, so the column buffer stays bounded.  Chunks run on
:func:`~sandbox.array._parallel.parallel_map`; inside a chunk the kernels run on
one thread and the GEMMs call numpy's one-thread BLAS.  Each chunk writes only its
own samples; weight and bias gradients are one partial per chunk (its slabs added
in order), summed in chunk order (:class:`~sandbox.array._parallel.OrderedSum`),
so every result is bitwise identical for any thread count.

* :func:`unfold_loop`: ``vol2col(a)`` per chunk; optionally ``y = W @ col`` and
  ``dW += b @ col.T`` (conv3d forward; conv_transpose3d backward).
* :func:`fold_loop`: ``b`` per chunk; optionally ``dW += b @ vol2col(a).T`` and
  ``y = col2vol(W.T @ b)`` (conv3d backward; conv_transpose3d forward).
"""

from __future__ import annotations

import numpy as np

from ..._C import _vol2col
from .._parallel import OrderedSum, parallel_map, scratch
from ._chunks import (
    _blocks,
    _gather,
    _scatter,
    add_bias,
    chunk_product,
    forward_weight,
    gemm_flops,
    pool_threads,
)
from ._tuning import TUNING, chunk_threads

__all__ = ["fold_loop", "unfold_loop"]


def _plan(n: int, out_size, rows: int, itemsize: int, pointwise: bool):
    """``(samples per chunk, output depth planes per slab)``; shapes only, never threads."""
    do, ho, wo = out_size
    vol = do * ho * wo
    nb = max(1, min(n, -(-TUNING.target_cols // max(vol, 1))))
    limit = TUNING.max_slab_bytes
    if pointwise:  # no column buffer: the input is its own columns
        return nb, do
    plane_bytes = max(rows * ho * wo * itemsize, 1)
    if plane_bytes * do > limit:  # one sample does not fit: slabs of planes
        return 1, max(1, min(do, limit // plane_bytes))
    return max(1, min(nb, limit // (plane_bytes * do))), do


def _gather_slab(arr, n0, od0, nd, name):
    """Depth planes ``od0 .. od0+nd-1`` of sample ``n0`` of ``arr`` (N, K, D, H, W) as
    a (K, nd*H*W) matrix (a copy into this thread's scratch buffer ``name``)."""
    k, _, h, w = arr.shape[1:]
    mat = scratch(name, (k, nd, h * w), arr.dtype)
    np.copyto(mat, arr[n0, :, od0:od0 + nd].reshape(k, nd, h * w))
    return mat.reshape(k, nd * h * w)


def _rows_of(arr, n0, nb, od0, nd, name):
    """The (K, columns) matrix of a chunk (all planes) or of a slab (one sample)."""
    if nd == arr.shape[2]:
        return _gather(arr, n0, nb, name)
    return _gather_slab(arr, n0, od0, nd, name)


def _is_pointwise(geom) -> bool:
    """1x1x1 kernel, stride 1, no padding: vol2col is the identity."""
    return tuple(geom[:9]) == (1, 1, 1, 1, 1, 1, 0, 0, 0)


def _slabs(do: int, nd: int) -> list[tuple[int, int]]:
    """``(first output plane, planes)`` of each slab, in order."""
    return [(od0, min(nd, do - od0)) for od0 in range(0, do, nd)]


def _columns(a, n0, nb, od0, nd, geom, hw, rows, pointwise):
    """The vol2col matrix (rows, nb*nd*ho*wo) of a chunk or slab of ``a``."""
    if pointwise:
        return _gather(a, n0, nb, "col")
    col = scratch("col", (rows, nb * nd * hw[0] * hw[1]), a.dtype)
    _vol2col.vol2col(a, col, n0, nb, od0, nd, *geom, *hw, chunk_threads())
    return col


def _accumulate(total, partial):
    if total is None:
        return partial
    total += partial
    return total


def unfold_loop(a, wmat, geom, out_size, groups, y=None, b=None, bias=None):
    """Per chunk of samples: ``col = vol2col(a)``; ``y = wmat @ col (+ bias)`` if ``y``
    is given; returns ``sum b @ col.T`` (shape of ``wmat``, summed in chunk order)
    if ``b`` is given, else None.

    ``a`` (N, C, D, H, W); ``wmat`` (O, C/g*kd*kh*kw); ``geom`` the 12 ints
    (kernel, stride, padding, dilation; depth, rows, columns); ``y`` and ``b``
    (N, O, *out_size).
    """
    n = a.shape[0]
    o = wmat.shape[0]
    do, ho, wo = out_size
    # read in place by the GEMM, unless too few columns in all (as in 2-D)
    w_lhs, narrow = forward_weight(wmat, n * do * ho * wo) if y is not None else (wmat, 0)
    rows = a.shape[1] * geom[0] * geom[1] * geom[2]
    pointwise = _is_pointwise(geom)
    nb, nd = _plan(n, out_size, rows, a.itemsize, pointwise)
    blocks = _blocks(n, nb)
    whole = len(blocks) == 1  # one chunk: its products are cut up instead
    gw = None if b is None else OrderedSum(len(blocks))
    flops = gemm_flops(o, rows // groups, n * do * ho * wo, (y is not None) + (b is not None))

    def task(block):
        i, n0, nb = block
        partial = None
        for od0, t in _slabs(do, nd):
            col = _columns(a, n0, nb, od0, t, geom, (ho, wo), rows, pointwise)
            if y is not None:
                if nb == 1 and t == do:  # the GEMM writes straight into the output
                    chunk_product(w_lhs, col, y[n0].reshape(o, -1), groups, whole,
                                  blas_below=narrow)
                else:
                    ymat = scratch("out", (o, nb * t * ho * wo), a.dtype)
                    chunk_product(w_lhs, col, ymat, groups, whole, blas_below=narrow)
                    if t == do:
                        _scatter(ymat, y, n0, nb)
                    else:
                        y[n0, :, od0:od0 + t] = ymat.reshape(o, t, ho, wo)
            if b is not None:
                p = np.empty(wmat.shape, wmat.dtype)
                chunk_product(_rows_of(b, n0, nb, od0, t, "grad"), col, p, groups, whole,
                              trans_b=True)
                partial = _accumulate(partial, p)
        if y is not None:
            add_bias(y[n0:n0 + nb], bias, 1)
        if b is not None:
            gw.add(i, partial)

    parallel_map(task, blocks, num_threads=pool_threads(flops))
    return None if gw is None else gw.out


def fold_loop(b, wmat, geom, groups, y=None, a=None, bias_grad=False):
    """Per chunk of samples of ``b`` (N, O, do, ho, wo): returns ``(gw, gb)`` with
    ``gw = sum b @ vol2col(a).T`` if ``a`` (N, C, D, H, W) is given and ``gb`` the
    per-channel sum of ``b`` if ``bias_grad`` (both summed in chunk order, else
    None); writes ``y = col2vol(wmat.T @ b)`` (N, C, D, H, W) if ``y`` is given.
    """
    n, _, do, ho, wo = b.shape
    taps = geom[0] * geom[1] * geom[2]
    c = wmat.shape[1] * groups // taps
    rows = c * taps
    pointwise = _is_pointwise(geom)
    nb, nd = _plan(n, (do, ho, wo), rows, b.itemsize, pointwise)
    blocks = _blocks(n, nb)
    whole = len(blocks) == 1  # one chunk: its products are cut up instead
    gw = None if a is None else OrderedSum(len(blocks))
    gb = OrderedSum(len(blocks)) if bias_grad else None
    flops = gemm_flops(wmat.shape[0], rows // groups, n * do * ho * wo,
                       (y is not None) + (a is not None))

    def task(block):
        i, n0, nb = block
        partial_w = partial_b = None
        for od0, t in _slabs(do, nd):
            bmat = _rows_of(b, n0, nb, od0, t, "grad")
            if gb is not None:
                partial_b = _accumulate(partial_b, bmat.sum(axis=1))
            if a is not None:
                col = _columns(a, n0, nb, od0, t, geom, (ho, wo), rows, pointwise)
                p = np.empty(wmat.shape, wmat.dtype)
                chunk_product(bmat, col, p, groups, whole, trans_b=True)
                partial_w = _accumulate(partial_w, p)
            if y is not None:
                if pointwise and nb == 1:
                    chunk_product(wmat, bmat, y[n0].reshape(c, -1), groups, whole, trans_a=True)
                    continue
                col = scratch("col", (rows, nb * t * ho * wo), b.dtype)  # any vol2col is consumed
                chunk_product(wmat, bmat, col, groups, whole, trans_a=True)
                _vol2col.col2vol(col, y, n0, nb, od0, t, *geom, ho, wo, od0 == 0,
                                 chunk_threads())
        if gb is not None:
            gb.add(i, partial_b)
        if gw is not None:
            gw.add(i, partial_w)

    parallel_map(task, blocks, num_threads=pool_threads(flops))
    return (None if gw is None else gw.out), (None if gb is None else gb.out)
