"""The vol2col + GEMM loops of the 3-D convolutions, run in fixed chunks of samples.

This repeats the chunking pattern of the 2-D path (``sandbox/array/conv/_im2col.py``)
for 5-D arrays; it is a separate file while the 2-D path is being tuned, and the
two can be unified later.  A convolution chunk of ``nb`` samples is one GEMM per
group::

    out[n0:n0+nb] (O, nb*do*ho*wo) = weight.reshape(O, C/g*kd*kh*kw) @ vol2col(x)[n0:n0+nb]

with the column layout documented in ``pyx/_vol2col.pyx``.  The chunk size depends
on the shapes only, never on the thread count: one sample when a sample has at
least :data:`TARGET_COLS` output voxels, else enough samples to reach that many
columns, never more than :data:`MAX_COL_BYTES` of columns (one sample always
fits).  Chunks run on :func:`~sandbox.array._parallel.parallel_map`; inside a chunk
the kernels run on one thread and the GEMMs call numpy's one-thread BLAS.  Each
chunk writes only its own samples; weight and bias gradients are one partial per
chunk summed in chunk order (:class:`~sandbox.array._parallel.OrderedSum`), so
every result is bitwise identical for any thread count.

* :func:`unfold_loop`: ``vol2col(a)`` per chunk; optionally ``y = W @ col`` and
  ``dW += b @ col.T`` (conv3d forward; conv_transpose3d backward).
* :func:`fold_loop`: ``b`` per chunk; optionally ``dW += b @ vol2col(a).T`` and
  ``y = col2vol(W.T @ b)`` (conv3d backward; conv_transpose3d forward).
"""

from __future__ import annotations

import numpy as np

from .._C import _vol2col
from ._parallel import OrderedSum, parallel_map, scratch

__all__ = ["MAX_COL_BYTES", "TARGET_COLS", "fold_loop", "unfold_loop"]

#: a chunk gets at least this many GEMM columns (the 2-D path's measured value)
TARGET_COLS = 64
#: upper bound for one column buffer (bytes); one sample always fits
MAX_COL_BYTES = 32 * 2**20
#: threads of the kernels inside a chunk: the chunks are the parallelism
_KERNEL_THREADS = 1


def _chunk(n: int, vol: int, rows: int, itemsize: int) -> int:
    """Samples per chunk (see module docstring); never depends on the thread count."""
    nb = max(1, min(n, -(-TARGET_COLS // max(vol, 1))))
    cap = MAX_COL_BYTES // max(vol * rows * itemsize, 1)
    return max(1, min(nb, cap))


def _blocks(n: int, nb: int) -> list[tuple[int, int, int]]:
    """``(chunk index, first sample, samples)`` for chunks of ``nb`` samples."""
    return [(i, n0, min(nb, n - n0)) for i, n0 in enumerate(range(0, n, nb))]


def _gather(arr, n0, nb, name):
    """``arr[n0:n0+nb]`` (N, K, ...) as a (K, nb*V) matrix: a view when nb == 1,
    else a copy into this thread's scratch buffer ``name``."""
    k = arr.shape[1]
    vol = arr[0, 0].size
    if nb == 1:
        return arr[n0].reshape(k, vol)
    mat = scratch(name, (k, nb, vol), arr.dtype)
    np.copyto(mat, arr[n0:n0 + nb].reshape(nb, k, vol).transpose(1, 0, 2))
    return mat.reshape(k, nb * vol)


def _scatter(mat, arr, n0, nb):
    """Inverse of :func:`_gather`: ``arr[n0:n0+nb] = mat`` (K, nb*V)."""
    k = arr.shape[1]
    np.copyto(arr[n0:n0 + nb].reshape(nb, k, -1), mat.reshape(k, nb, -1).transpose(1, 0, 2))


def _grouped_matmul(a, b, out, groups, trans_a=False, trans_b=False):
    """``out[g] = op(a[g]) @ op(b[g])`` for row blocks ``g`` of ``a``/``b``/``out``."""
    ra, rb, ro = a.shape[0] // groups, b.shape[0] // groups, out.shape[0] // groups
    for g in range(groups):
        ag = a[g * ra:(g + 1) * ra]
        bg = b[g * rb:(g + 1) * rb]
        np.matmul(ag.T if trans_a else ag, bg.T if trans_b else bg, out=out[g * ro:(g + 1) * ro])


def _is_pointwise(geom) -> bool:
    """1x1x1 kernel, stride 1, no padding: vol2col is the identity."""
    return tuple(geom[:9]) == (1, 1, 1, 1, 1, 1, 0, 0, 0)


def _unfold(a, col, n0, nb, geom, out_size):
    _vol2col.vol2col(a, col, n0, nb, *geom, *out_size, _KERNEL_THREADS)


def unfold_loop(a, wmat, geom, out_size, groups, y=None, b=None, bias=None):
    """Per chunk of samples: ``col = vol2col(a)``; ``y = wmat @ col (+ bias)`` if ``y``
    is given; returns ``sum b @ col.T`` (shape of ``wmat``, summed in chunk order)
    if ``b`` is given, else None.

    ``a`` (N, C, D, H, W); ``wmat`` (O, C/g*kd*kh*kw); ``geom`` the 12 ints
    (kernel, stride, padding, dilation; depth, rows, columns); ``y`` and ``b``
    (N, O, *out_size).
    """
    n, c = a.shape[:2]
    o = wmat.shape[0]
    vol = int(np.prod(out_size))
    rows = c * geom[0] * geom[1] * geom[2]
    pointwise = _is_pointwise(geom)
    blocks = _blocks(n, _chunk(n, vol, rows, a.itemsize))
    gw = None if b is None else OrderedSum(len(blocks))

    def task(block):
        i, n0, nb = block
        if pointwise:
            col = _gather(a, n0, nb, "col")
        else:
            col = scratch("col", (rows, nb * vol), a.dtype)
            _unfold(a, col, n0, nb, geom, out_size)
        if y is not None:
            ymat = y[n0].reshape(o, vol) if nb == 1 else scratch("out", (o, nb * vol), a.dtype)
            _grouped_matmul(wmat, col, ymat, groups)
            if nb > 1:
                _scatter(ymat, y, n0, nb)
            if bias is not None:
                y[n0:n0 + nb] += bias.reshape(-1, 1, 1, 1)
        if b is not None:
            partial = np.empty_like(wmat)
            _grouped_matmul(_gather(b, n0, nb, "grad"), col, partial, groups, trans_b=True)
            gw.add(i, partial)

    parallel_map(task, blocks)
    return None if gw is None else gw.out


def fold_loop(b, wmat, geom, groups, y=None, a=None, bias_grad=False):
    """Per chunk of samples of ``b`` (N, O, do, ho, wo): returns ``(gw, gb)`` with
    ``gw = sum b @ vol2col(a).T`` if ``a`` (N, C, D, H, W) is given and ``gb`` the
    per-channel sum of ``b`` if ``bias_grad`` (both summed in chunk order, else
    None); writes ``y = col2vol(wmat.T @ b)`` (N, C, D, H, W) if ``y`` is given.
    """
    n = b.shape[0]
    col_size = b.shape[2:]
    vol = int(np.prod(col_size))
    taps = geom[0] * geom[1] * geom[2]
    c = wmat.shape[1] * groups // taps
    rows = c * taps
    pointwise = _is_pointwise(geom)
    blocks = _blocks(n, _chunk(n, vol, rows, b.itemsize))
    gw = None if a is None else OrderedSum(len(blocks))
    gb = OrderedSum(len(blocks)) if bias_grad else None

    def task(block):
        i, n0, nb = block
        bmat = _gather(b, n0, nb, "grad")
        if gb is not None:
            gb.add(i, bmat.sum(axis=1))
        if a is not None:
            if pointwise:
                col = _gather(a, n0, nb, "col")
            else:
                col = scratch("col", (rows, nb * vol), b.dtype)
                _unfold(a, col, n0, nb, geom, col_size)
            partial = np.empty_like(wmat)
            _grouped_matmul(bmat, col, partial, groups, trans_b=True)
            gw.add(i, partial)
        if y is not None:
            if pointwise and nb == 1:
                _grouped_matmul(wmat, bmat, y[n0].reshape(c, vol), groups, trans_a=True)
                return
            col = scratch("col", (rows, nb * vol), b.dtype)  # the vol2col above is consumed
            _grouped_matmul(wmat, bmat, col, groups, trans_a=True)
            _vol2col.col2vol(col, y, n0, nb, *geom, *col_size, _KERNEL_THREADS)

    parallel_map(task, blocks)
    return (None if gw is None else gw.out), (None if gb is None else gb.out)
