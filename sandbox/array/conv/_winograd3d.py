"""3x3x3 convolutions as sums of 2-D Winograd convolutions over depth (used by ``_run3d``).

A 3x3x3 stride-1 convolution is, per output depth plane ``z``, the sum over the three
kernel depths ``kz`` of 2-D 3x3 convolutions of input plane ``z - pd + kz`` with
``w[:, :, kz]``::

    y[n, :, z] = sum_kz conv2d(x[n, :, z - pd + kz], w[:, :, kz])   (planes outside: 0)

so the 2-D Winograd transforms of :mod:`sandbox.array.conv._winograd` serve it as
they are: every input plane is transformed once (``V``), each kernel depth has its
transformed weight ``U_kz``, and in the transformed domain the depth sum is three
GEMMs per Winograd point whose column ranges are shifted by ``kz`` planes::

    M[p][:, planes z] (+)= U_kz[p] @ V[p][:, planes z - pd + kz]

then one output transform per plane.  Against vol2col + GEMM this does 2.25x
(F(2x2)) or 4x (F(4x4)) fewer multiplies and never builds the 27x larger column
matrix.  The input gradient is the same computation with the flipped, transposed
kernel (padding ``2 - p``); the weight gradient pairs the transformed output
gradient of plane ``z`` with the transformed input plane ``z - pd + kz``.

Chunks are (sample, slab of output planes), fixed by the shapes; the three depth
terms are added in a fixed order and weight-gradient partials are summed in chunk
order, so results are bitwise identical for any number of threads.
"""

from __future__ import annotations

import functools

import numpy as np

from ..._C import _elementwise, _winograd
from ...runtime import simd
from ...runtime.threads import threads_now
from .._gemm import lhs, matmul
from .._parallel import OrderedSum, parallel_map, scratch
from . import _winograd as w2d
from ._chunks import add_bias
from ._tuning import TUNING, state

__all__ = ["conv3x3x3", "conv3x3x3_weight_grad", "eligible", "weight_transforms"]


def eligible(geom, groups: int, c_in: int, c_out: int, plane_pixels: int) -> bool:
    """3x3x3 kernel, stride 1, dilation 1, one group, padding at most 2 on every axis,
    and the 2-D Winograd thresholds on channels and output-plane pixels."""
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = geom
    return ((kd, kh, kw, sd, sh, sw, dd, dh, dw) == (3, 3, 3, 1, 1, 1, 1, 1, 1)
            and groups == 1 and max(pd, ph, pw) <= 2
            and min(c_in, c_out) >= TUNING.winograd_min_channels
            and plane_pixels >= TUNING.winograd_min_pixels)


def _slabs(n: int, depth_out: int, tiles: int, rows: int, count: int, itemsize: int,
           target: int | None = None):
    """``(chunk index, sample, first output plane, planes)``: at least ``target`` tiles
    (default ``winograd_target_tiles``) per chunk, at most ``winograd_max_chunk_bytes``
    of transformed input (``rows`` channels, 2 extra planes)."""
    target = TUNING.winograd_target_tiles if target is None else target
    nz = max(1, -(-target // tiles))
    cap = TUNING.winograd_max_chunk_bytes // max(count * rows * tiles * itemsize, 1) - 2
    nz = max(1, min(nz, cap, depth_out))
    chunks = [(s, z0, min(nz, depth_out - z0)) for s in range(n) for z0 in range(0, depth_out, nz)]
    return [(i, *c) for i, c in enumerate(chunks)]


def _bytes(a):
    return a.reshape(-1).view(np.uint8)


def _parallel_copies(threads: int) -> bool:
    """Whether the slab copies run on ``threads`` (several) threads
    (``TUNING.winograd3d_parallel_copies``), not on numpy's one."""
    return threads > 1 and TUNING.winograd3d_parallel_copies


def _input_planes(x, s, first, last, name, threads: int = 1):
    """Planes ``first .. last - 1`` of sample ``s`` of ``x`` (N, C, D, H, W), C-contiguous,
    as a (planes, C, H, W) contiguous scratch array (copied on ``threads`` threads where
    :func:`_parallel_copies`)."""
    c, d, h, w = x.shape[1:]
    planes, plane = last - first, h * w * x.itemsize
    buf = scratch(name, (planes, c, h, w), x.dtype)
    if not _parallel_copies(threads):
        np.copyto(buf, x[s, :, first:last].transpose(1, 0, 2, 3))
        return buf
    _elementwise.copy_blocks(_bytes(x), _bytes(buf), (s * c * d + first) * plane, 0, planes,
                             c, plane, d * plane, c * plane, plane, plane, threads)
    return buf


def _output_planes(out, y, s, z0, threads: int = 1) -> None:
    """``y[s, :, z0:z0 + planes] = out.transpose(1, 0, 2, 3)`` for ``out`` (planes, O, Ho,
    Wo) and ``y`` (N, O, Do, Ho, Wo), C-contiguous (on ``threads`` threads where
    :func:`_parallel_copies`)."""
    planes, o, ho, wo = out.shape
    if not _parallel_copies(threads):
        np.copyto(y[s, :, z0:z0 + planes], out.transpose(1, 0, 2, 3))
        return
    depth, plane = y.shape[2], ho * wo * y.itemsize
    _elementwise.copy_blocks(_bytes(out), _bytes(y), 0, (s * o * depth + z0) * plane, planes,
                             o, o * plane, plane, plane, depth * plane, plane, threads)


def _depth_terms(pd: int, depth_in: int, z0: int, nz: int):
    """For each kernel depth, the output planes ``[za, zb)`` of the slab whose input
    plane ``z - pd + kz`` exists, and that input plane for ``za``; the centre tap
    first (it covers the whole slab whenever ``pd == 1``)."""
    order = (1, 0, 2)
    terms = []
    for kz in order:
        za = max(z0, pd - kz)
        zb = min(z0 + nz, depth_in + pd - kz)
        if za < zb:
            terms.append((kz, za, zb, za - pd + kz))
    return terms


def _plan(n, depth_out, tiles, rows, count, dtype):
    """``(chunks, threads, split, slabs)``: :func:`_planned` for these shapes under the
    settings, SIMD selection and thread count in force (cached: a 3-D UNet step asks it
    37 times)."""
    return _planned(n, depth_out, tiles, rows, count, np.dtype(dtype), state())


@functools.lru_cache(maxsize=512)
def _planned(n, depth_out, tiles, rows, count, dtype, key):
    """``(chunks, threads, split, slabs)``: how a pass runs its slabs (``slabs``: the
    chunks' (sample, first plane, planes) as the region takes them, read-only).

    Where the project's GEMM takes float32 products (``TUNING.split_in_kernels``), the
    slabs have ``TUNING.winograd3d_split_tiles`` tiles and run one after another, every
    step shared among ``threads`` (all of them) inside the kernels (the transforms'
    ``prange`` over channels, the point products' over points: ``split``); else they
    have ``winograd_target_tiles`` and go whole to the worker pool, each chunk's kernels
    on its pool thread alone (``threads`` 1).  The rule does not depend on the thread
    count, so neither do the slabs, whose order fixes the weight gradient's sums: the
    bits are the same for any number of threads.  ``key``: :func:`~._tuning.state`,
    whose settings, selection and thread count are the ones in force."""
    if TUNING.split_in_kernels and simd.current().gemm_own and dtype == np.float32:
        chunks = _slabs(n, depth_out, tiles, rows, count, dtype.itemsize,
                        TUNING.winograd3d_split_tiles)
        threads, split = key[2], True
    else:
        chunks, threads, split = _slabs(n, depth_out, tiles, rows, count, dtype.itemsize), 1, False
    slabs = np.array([chunk[1:] for chunk in chunks], dtype=np.intc).reshape(-1, 3)
    slabs.setflags(write=False)
    return chunks, threads, split, slabs


def _products(a, b, out, accumulate: bool, threads: int) -> None:
    """``out (+)= a @ b`` for the points, shared among ``threads`` inside the kernel where
    it takes them, else on this thread (the same products either way)."""
    if not matmul(a, b, out, accumulate=accumulate, num_threads=threads):
        matmul(a, b, out, accumulate=accumulate)


def _in_one_region(x, y, c: int, o: int) -> bool:
    """Whether the split form's slabs run in one OpenMP region
    (``_winograd_fused.conv3d``, pyx/winograd/wino3d_fused.h) instead of a kernel call
    a step from Python: ``TUNING.winograd_one_region``, arrays of fewer than 2**31
    elements, and at least 8 input and output channels (the products then take the
    packed kernel, which the region runs: :func:`~sandbox.array._gemm.product_form`).
    The same bits either way."""
    return TUNING.winograd_one_region and max(x.size, y.size) < 2**31 and min(c, o) >= 8


def _run(task, chunks, split: bool) -> None:
    """Every chunk: one after another on this thread (:func:`_plan`'s split form, the
    steps shared inside the kernels), or on the worker pool."""
    if not split:
        parallel_map(task, chunks)
        return
    for chunk in chunks:
        task(chunk)


def _transformed_inputs(x, s, z0, nz, pad, count, th, tw, avx, threads: int):
    """``(first, V)``: the input planes of sample ``s`` that output planes ``z0 ..
    z0+nz-1`` read (from ``first`` on, those inside the volume), 2-D Winograd
    transformed into this thread's ``V`` scratch (points, C, planes * tiles), the
    transform on ``threads`` threads."""
    pd, ph, pw = pad
    first = max(0, z0 - pd)
    last = min(x.shape[2], z0 + nz - pd + 2)
    planes = _input_planes(x, s, first, last, "w3_x", threads)
    v = w2d._points("wino_v", count, x.shape[1], (last - first) * th * tw, x.dtype)
    _winograd.input_transform(planes, v, 0, last - first, ph, pw, th, tw, threads, avx)
    return first, v


def conv3x3x3(x, pending, y, pad, bias=None) -> None:
    """``y = conv3d(x, w, bias, stride=1, padding=pad)`` for a 3x3x3 kernel, where
    ``pending`` are the three depth taps' transforms of :func:`weight_transforms`, not
    computed yet: the convolution's own OpenMP region computes them where it runs in one,
    else they are computed first (all threads).

    ``x`` (N, C, D, H, W) and ``y`` (N, O, Do, Ho, Wo) C-contiguous; ``y`` is overwritten.
    """
    n, c, depth_in = x.shape[:3]
    o, depth_out, ho, wo = y.shape[1:]
    pd = pad[0]
    views = [u.view for u in pending]  # the memory each transform is (to be) computed in
    count = views[0].shape[0]
    tile = w2d._TILE_OF_POINTS[count]
    th, tw = -(-ho // tile), -(-wo // tile)
    tiles = th * tw
    chunks, threads, split, slabs = _plan(n, depth_out, tiles, max(c, o), count, x.dtype)
    avx = simd.current().winograd_avx512  # read here, in the caller's thread
    if split and _in_one_region(x, y, c, o):
        w2d._winograd_fused.conv3d(  # the taps' transforms run first in the region
            x, *views, y, *pad, tile, th, tw, slabs, simd.current().gemm == "avx2", avx,
            threads, [(u.weight, u.store) for u in pending], pending[0].flip,
            pending[0].c_major)
        add_bias(y, bias)
        return
    u_depth = [lhs(u.run(threads_now())) for u in pending]

    def task(chunk):
        _, s, z0, nz = chunk
        first, v = _transformed_inputs(x, s, z0, nz, pad, count, th, tw, avx,
                                       threads)
        m = w2d._points("wino_m", count, o, nz * tiles, x.dtype)
        terms = _depth_terms(pd, depth_in, z0, nz)
        if not terms or (terms[0][1], terms[0][2]) != (z0, z0 + nz):
            m[...] = 0
        for i, (kz, za, zb, iz) in enumerate(terms):
            full = i == 0 and (za, zb) == (z0, z0 + nz)
            _products(u_depth[kz],
                      v[:, :, (iz - first) * tiles:(iz - first + zb - za) * tiles],
                      m[:, :, (za - z0) * tiles:(zb - z0) * tiles], not full, threads)
        out = scratch("w3_y", (nz, o, ho, wo), x.dtype)
        _winograd.output_transform(m, out, 0, nz, th, tw, threads, avx)
        _output_planes(out, y, s, z0, threads)
        if bias is not None:
            y[s, :, z0:z0 + nz] += bias.reshape(-1, 1, 1, 1)

    _run(task, chunks, split)


def conv3x3x3_weight_grad(x, g, pad) -> np.ndarray:
    """Weight gradient (O, C, 3, 3, 3) of :func:`conv3x3x3` for output gradient ``g``."""
    n, c, depth_in = x.shape[:3]
    o, depth_out, ho, wo = g.shape[1:]
    pd = pad[0]
    tile = w2d.tile_size_weight_grad(ho, wo)
    count = w2d._POINTS[tile]
    th, tw = -(-ho // tile), -(-wo // tile)
    tiles = th * tw
    chunks, threads, split, slabs = _plan(n, depth_out, tiles, max(c, o), count, x.dtype)
    avx = simd.current().winograd_avx512
    if split and _in_one_region(x, g, c, o):
        sums = np.empty((3, count, o, c), dtype=x.dtype)
        taps = np.empty((3, o, c, 3, 3), dtype=x.dtype)  # each depth tap's fold
        gw = np.empty((o, c, 3, 3, 3), dtype=x.dtype)  # the folds laid out, in the region
        w2d._winograd_fused.weight_grad3d(x, g, sums, np.empty_like(sums), *pad, tile, th, tw,
                                          slabs, simd.current().gemm == "avx2", avx, threads,
                                          taps, gw)
        return gw
    total = OrderedSum(len(chunks))

    def task(chunk):
        i, s, z0, nz = chunk
        first, v = _transformed_inputs(x, s, z0, nz, pad, count, th, tw, avx,
                                       threads)
        grads = _input_planes(g, s, z0, z0 + nz, "w3_g", threads)
        gt = w2d._points("wino_m", count, o, nz * tiles, x.dtype)
        _winograd.grad_transform(grads, gt, 0, nz, th, tw, threads, avx)
        partial = np.zeros((3, count, o, c), dtype=x.dtype)
        for kz, za, zb, iz in _depth_terms(pd, depth_in, z0, nz):
            cols = (zb - za) * tiles
            _products(gt[:, :, (za - z0) * tiles:(za - z0) * tiles + cols],
                      v[:, :, (iz - first) * tiles:(iz - first) * tiles + cols]
                      .transpose(0, 2, 1), partial[kz], True, threads)
        total.add(i, partial)

    _run(task, chunks, split)
    return _fold_taps(total.out)


def _fold_taps(sums) -> np.ndarray:
    """The weight gradient (O, C, 3, 3, 3) from each depth tap's point sums ``sums[kz]``
    (P, O, C): the 2-D fold of each."""
    o, c = sums.shape[2:]
    gw = np.empty((o, c, 3, 3, 3), dtype=sums.dtype)
    for kz in range(3):
        fold = np.empty((o, c, 3, 3), dtype=sums.dtype)
        w2d._winograd_weights.weight_grad_fold(sums[kz], fold, 1)
        gw[:, :, kz] = fold
    return gw


def weight_transforms(weight, flip_transpose: bool, tile: int) -> list:
    """The pending transforms (:func:`sandbox.array.conv._winograd.pending_transform`,
    not computed yet: :func:`conv3x3x3` runs them) of ``weight_transform(w[:, :, kz])``
    for the forward, or for the input gradient (``flip_transpose``: the kernel flipped in
    depth too, so depth tap ``kz`` of the gradient's kernel is ``w[:, :, 2 - kz]`` flipped
    in-plane and transposed).  The taps are views of ``weight`` (its 3x3 kernels 27
    elements apart), which the transforms read in place: three copies of a deep layer's
    taps had cost 26 us each a call, serial numpy (a cProfile of the bench's 3-D UNet
    step, AMD EPYC family 26 model 2)."""
    weight = np.ascontiguousarray(weight)
    return [w2d.pending_transform(weight[:, :, 2 - kz if flip_transpose else kz],
                                  flip_transpose=flip_transpose, tile=tile)
            for kz in range(3)]
