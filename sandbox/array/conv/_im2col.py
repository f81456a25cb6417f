"""The im2col + GEMM path of the 2-D convolutions, run in fixed chunks of samples.

A convolution chunk of ``nb`` samples is one GEMM per group::

    out[n0:n0+nb] (O, nb*ho*wo) = weight.reshape(O, C/g*kh*kw) @ im2col(x)[n0:n0+nb]

with the column layout documented in ``pyx/_im2col.pyx``.  The chunk size ``nb``
depends on the shapes only, never on the thread count: one sample when a sample
has at least ``TUNING.target_cols`` output pixels (the GEMM then writes straight
into the output), else enough samples to reach that many columns, and never more
than ``TUNING.max_col_bytes`` of columns.  Column buffers are never kept between
forward and backward: the backward recomputes them.

Chunks run on :func:`sandbox.array._parallel.parallel_map`; inside a chunk the
im2col/col2im kernels run serially and the GEMMs call numpy's BLAS, which
:mod:`sandbox.runtime.threads` pins to one thread.  Each chunk writes only its own samples
of the output; weight and bias gradients are one partial per chunk, summed in
chunk order (:class:`~sandbox.array._parallel.OrderedSum`), so every result is
bitwise identical for any thread count.

The same two loops serve both ops, because a transposed convolution is the
adjoint of a convolution with the same weight:

* :func:`unfold_loop`: ``im2col(a)`` per chunk; optionally ``y = W @ col`` and
  ``dW += b @ col.T`` (conv2d forward; conv_transpose2d backward).
* :func:`fold_loop`: ``b`` per chunk; optionally ``dW += b @ im2col(a).T`` and
  ``y = col2im(W.T @ b)`` (conv2d backward; conv_transpose2d forward).
"""

from __future__ import annotations

import numpy as np

from ..._C import _im2col
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
    sample_products,
)
from ._tuning import TUNING, chunk_threads

__all__ = ["fold_loop", "unfold_loop"]


def _chunk(n: int, plane: int, rows: int, itemsize: int) -> int:
    """Samples per chunk (see module docstring); never depends on the thread count."""
    nb = max(1, min(n, -(-TUNING.target_cols // max(plane, 1))))
    cap = TUNING.max_col_bytes // max(plane * rows * itemsize, 1)
    return max(1, min(nb, cap))


def _one_pass(n: int, nb: int, groups: int, pointwise: bool, flops: int, rows: int,
              col_bytes: int) -> bool:
    """Whether a loop runs all its samples in one pass instead of chunk by chunk: chunks
    of one sample (each sample's product is then the same either way), one group, the
    whole batch's columns within ``TUNING.max_col_bytes``, and either too little work
    for the worker pool (its chunks would run one after the other on the calling
    thread) or columns of at most ``TUNING.one_pass_max_rows`` rows and
    ``TUNING.one_pass_max_bytes`` in all (a first layer, 1-3 input channels, on a map
    whose columns stay in cache: short products, whose chunks cost the pool more than
    the pass).  The pass makes the columns of every sample in one kernel call and their
    products in another, each on every thread (an input gradient: its products in one
    more call, folded by one col2im)."""
    small_rows = rows <= TUNING.one_pass_max_rows and col_bytes <= TUNING.one_pass_max_bytes
    return (n > 1 and nb == 1 and groups == 1 and not pointwise
            and (pool_threads(flops) == 1 or small_rows)
            and col_bytes <= TUNING.max_col_bytes)


def unfold_loop(a, wmat, geom, ho, wo, groups, y=None, b=None, bias=None):
    """Per chunk of samples: ``col = im2col(a)``; ``y = wmat @ col (+ bias)`` if ``y``
    is given; returns ``sum b @ col.T`` (shape of ``wmat``, summed in chunk order)
    if ``b`` is given, else None.

    ``a`` (N, C, H, W); ``wmat`` (O, C/g*kh*kw); ``y`` and ``b`` (N, O, ho, wo).
    """
    n, c = a.shape[:2]
    o = wmat.shape[0]
    plane = ho * wo
    # read in place by the GEMM, unless too few columns in all (a batch-1 call on a small
    # map: the transposed copy would cost more than it saves)
    w_lhs, narrow = forward_weight(wmat, n * plane) if y is not None else (wmat, 0)
    rows = c * geom.kh * geom.kw
    nt = chunk_threads()
    # im2col is the identity only if the plane keeps its size (a transposed conv's
    # output_padding with dilation > 1 grows it by a zero border)
    pointwise = geom.is_pointwise() and a.shape[2:] == (ho, wo)
    nb_chunk = _chunk(n, plane, rows, a.itemsize)
    blocks = _blocks(n, nb_chunk)
    whole = len(blocks) == 1  # one chunk: its products are cut up instead
    gw = None if b is None else OrderedSum(len(blocks))
    flops = gemm_flops(o, rows // groups, n * plane, (y is not None) + (b is not None))
    if y is not None and b is None and _one_pass(n, nb_chunk, groups, pointwise, flops, rows,
                                                 rows * n * plane * a.itemsize):
        col = scratch("col", (rows, n * plane), a.dtype)
        _im2col.im2col(a, col, 0, n, *geom.args(), ho, wo, nt)
        cols = col.reshape(rows, n, plane).transpose(1, 0, 2)  # sample i: (rows, plane)
        sample_products(np.broadcast_to(w_lhs, (n, o, rows)), cols, y.reshape(n, o, plane),
                        narrow)
        add_bias(y, bias)
        return None

    def task(block):
        i, n0, nb = block
        if pointwise:
            col = _gather(a, n0, nb, "col")
        else:
            col = scratch("col", (rows, nb * plane), a.dtype)
            _im2col.im2col(a, col, n0, nb, *geom.args(), ho, wo, nt)
        if y is not None:
            ymat = y[n0].reshape(o, plane) if nb == 1 else scratch("out", (o, nb * plane), a.dtype)
            chunk_product(w_lhs, col, ymat, groups, whole, blas_below=narrow)
            if nb > 1:
                _scatter(ymat, y, n0, nb)
            add_bias(y[n0:n0 + nb], bias, 1)
        if b is not None:
            partial = np.empty(wmat.shape, wmat.dtype)
            chunk_product(_gather(b, n0, nb, "grad"), col, partial, groups, whole,
                           trans_b=True)
            gw.add(i, partial)

    parallel_map(task, blocks, num_threads=pool_threads(flops))
    return None if gw is None else gw.out


def fold_loop(b, wmat, geom, h, w, groups, y=None, a=None, bias_grad=False):
    """Per chunk of samples of ``b`` (N, O, ho, wo): returns ``(gw, gb)`` with
    ``gw = sum b @ im2col(a).T`` if ``a`` (N, C, h, w) is given and ``gb`` the
    per-channel sum of ``b`` if ``bias_grad`` (both summed in chunk order, else
    None); writes ``y = col2im(wmat.T @ b)`` (N, C, h, w) if ``y`` is given.
    """
    n, o, ho, wo = b.shape
    rg = wmat.shape[1]
    c = rg * groups // (geom.kh * geom.kw)
    plane = ho * wo
    rows = c * geom.kh * geom.kw
    nt = chunk_threads()
    pointwise = geom.is_pointwise() and (h, w) == (ho, wo)  # as in unfold_loop
    nb_chunk = _chunk(n, plane, rows, b.itemsize)
    blocks = _blocks(n, nb_chunk)
    whole = len(blocks) == 1  # one chunk: its products are cut up instead
    gw = None if a is None else OrderedSum(len(blocks))
    gb = OrderedSum(len(blocks)) if bias_grad else None
    flops = gemm_flops(o, rows // groups, n * plane, (y is not None) + (a is not None))
    if (y is not None or a is not None) and _one_pass(n, nb_chunk, groups, pointwise, flops,
                                                      rows, rows * n * plane * b.itemsize):
        col = scratch("col", (rows, n * plane), b.dtype)
        cols = col.reshape(rows, n, plane).transpose(1, 0, 2)  # sample i: (rows, plane)
        bmats = b.reshape(n, o, plane)
        if a is not None:
            _im2col.im2col(a, col, 0, n, *geom.args(), ho, wo, nt)
            partial = np.empty((n, *wmat.shape), wmat.dtype)
            sample_products(bmats, cols.transpose(0, 2, 1), partial)
        if y is not None:  # the columns above are consumed: the input gradient's go there
            sample_products(np.broadcast_to(wmat.T, (n, rows, o)), bmats, cols)
            _im2col.col2im(col, y, 0, n, *geom.args(), ho, wo, nt)
        for i in range(n):  # in sample order, as OrderedSum adds the chunks' partials
            if gw is not None:
                gw.add(i, partial[i])
            if gb is not None:
                gb.add(i, bmats[i].sum(axis=1))
        return (None if gw is None else gw.out), (None if gb is None else gb.out)

    def task(block):
        i, n0, nb = block
        bmat = _gather(b, n0, nb, "grad")
        if gb is not None:
            gb.add(i, bmat.sum(axis=1))
        if a is not None:
            if pointwise:
                col = _gather(a, n0, nb, "col")
            else:
                col = scratch("col", (rows, nb * plane), b.dtype)
                _im2col.im2col(a, col, n0, nb, *geom.args(), ho, wo, nt)
            partial = np.empty(wmat.shape, wmat.dtype)
            chunk_product(bmat, col, partial, groups, whole, trans_b=True)
            gw.add(i, partial)
        if y is not None:
            if pointwise and nb == 1:
                chunk_product(wmat, bmat, y[n0].reshape(c, plane), groups, whole, trans_a=True)
                return
            col = scratch("col", (rows, nb * plane), b.dtype)  # the im2col above is consumed
            chunk_product(wmat, bmat, col, groups, whole, trans_a=True)
            _im2col.col2im(col, y, n0, nb, *geom.args(), ho, wo, nt)

    parallel_map(task, blocks, num_threads=pool_threads(flops))
    return (None if gw is None else gw.out), (None if gb is None else gb.out)
