"""Winograd convolution for 3x3, stride-1, undilated, ungrouped layers.

Used by :mod:`sandbox.array.conv` for the forward pass, the input gradient (a 3x3
stride-1 convolution of ``grad_output`` with the flipped, transposed weight) and
the weight gradient.  F(2x2, 3x3) on small maps, F(4x4, 3x3) on large ones (both
``pyx/winograd/_winograd.pyx``): :func:`tile_size` and
:func:`tile_size_weight_grad` pick it from the output pixels (thresholds and
measurements in ``_tuning``).
Per 2x2 output tile it needs 16 multiplies per (input, output) channel pair
instead of 36, so the GEMM work drops 2.25x; the transforms (``pyx/winograd/_winograd.pyx``,
formulas there) are cheap memory passes.  Why: single-threaded OpenBLAS sgemm
reaches about half of oneDNN's direct-convolution throughput on this machine
(measured: im2col+GEMM 5.7 ms vs PyTorch 2.5 ms for a 128-channel 16x16 layer,
batch 8, one thread), so fewer GEMM flops is the lever we have.

Chunks are fixed by the shapes (samples per chunk so that a chunk has at least
``TUNING.winograd_target_tiles`` tiles), and each chunk writes only its own samples (the
weight gradient: its own partial, summed in chunk order), so results are bitwise
identical for any thread count.  With two chunks a thread or more, each thread takes
whole chunks in one OpenMP region (``_winograd_fused``, pyx/winograd/wino_fused.h; large
maps in bands of tile rows); otherwise the chunks run one after another, each step
shared among the threads inside its kernel (:func:`_run_blocks`).  Both forms give the
same bits.  Accuracy: the F(2x2) transforms use only 0, +-1 and +-1/2, the float32
error is a few ulps of the sum magnitude; F(4x4)'s factors (up to 8 and 1/24)
give about 10x more (tests compare both with the direct float64 reference).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..._C import _winograd, _winograd_fused, _winograd_weights
from ...runtime import simd
from ...runtime.threads import threads_now
from .._gemm import backend, lhs, matmul, product_form
from .._parallel import OrderedSum, parallel_map, scratch
from ._chunks import add_bias
from ._tuning import TUNING, WEIGHT_GRAD_TARGET_TILES, state

__all__ = [
    "eligible",
    "eligible_weight_grad",
    "weight_transform",
    "winograd_conv3x3",
    "winograd_weight_grad",
]



def _geometry_ok(geom, groups: int) -> bool:
    """3x3 kernel, stride 1, dilation 1, one group, padding at most 2."""
    return (geom.kh == geom.kw == 3 and geom.sh == geom.sw == 1 and geom.dh == geom.dw == 1
            and groups == 1 and geom.ph <= 2 and geom.pw <= 2)


def eligible(geom, groups: int, c_in: int, c_out: int, height: int, width: int,
             input_grad: bool = False) -> bool:
    """Winograd forward (or, with ``input_grad``, input gradient): the geometry above,
    enough channels and output pixels (``height``, ``width``: the input's spatial size)."""
    min_pixels = TUNING.winograd_min_pixels_input_grad if input_grad else TUNING.winograd_min_pixels
    return (_geometry_ok(geom, groups) and min(c_in, c_out) >= TUNING.winograd_min_channels
            and (height + 2 * geom.ph - 2) * (width + 2 * geom.pw - 2) >= min_pixels)


def tile_size(c_in: int, c_out: int, height: int, width: int) -> int:
    """Output tile of the Winograd forward/input-gradient conv: 4 (F(4x4, 3x3)) or 2
    (F(2x2, 3x3)), from the shapes only (``height``, ``width``: the conv's output)."""
    f4, pixels = TUNING.winograd_f4_min_pixels, height * width
    if f4 and pixels >= f4:
        return 4
    narrow = TUNING.winograd_f4_min_pixels_narrow
    return (4 if narrow and pixels >= narrow
            and c_in + c_out <= TUNING.winograd_f4_narrow_max_channels else 2)


def tile_size_weight_grad(height: int, width: int) -> int:
    """Output tile of the Winograd weight gradient (``height``, ``width``: the conv's output)."""
    f4 = TUNING.winograd_f4_min_pixels_weight_grad
    return 4 if f4 and height * width >= f4 else 2


def eligible_weight_grad(geom, groups: int, c_in: int, c_out: int, height: int,
                         width: int) -> bool:
    """Winograd weight gradient: as :func:`eligible`, with its own thresholds."""
    return (_geometry_ok(geom, groups)
            and min(c_in, c_out) >= TUNING.winograd_min_channels_weight_grad
            and (height + 2 * geom.ph - 2) * (width + 2 * geom.pw - 2)
            >= TUNING.winograd_min_pixels_weight_grad)


#: output tile size m -> points per tile: F(2x2, 3x3) and F(4x4, 3x3) (the transforms of
#: ``_winograd`` take either, by the points of their arrays)
_POINTS = {2: 16, 4: 36}
_TILE_OF_POINTS = {points: tile for tile, points in _POINTS.items()}


def _points(name: str, count: int, rows: int, cols: int, dtype) -> np.ndarray:
    """This thread's scratch (count, rows, cols) for the Winograd points, with the
    points one cache line more than ``rows * cols`` apart: the transforms write or
    read all points at once, and streams a multiple of 4 KiB apart alias in the
    cache (measured: the 384-channel 8x8 input transform 1.4 -> 0.4 ms)."""
    dtype = np.dtype(dtype)
    pitch = rows * cols + 64 // dtype.itemsize
    flat = scratch(name, (count, pitch), dtype)
    # a view, not np.lib.stride_tricks.as_strided (~65 us a call, twice per chunk)
    return flat[:, :rows * cols].reshape(count, rows, cols)


class PendingWeights(NamedTuple):
    """A weight transform not run yet (:func:`pending_transform`): ``view`` is ``U`` as the
    point products read it, ``store`` the same memory as the transform writes it.  A
    convolution in one OpenMP region runs it there, before its chunks; else
    :meth:`run` does."""

    weight: np.ndarray
    store: np.ndarray
    view: np.ndarray
    flip: bool
    c_major: bool

    def run(self, kernel_threads: int = 1) -> np.ndarray:
        """Compute ``U`` (the weight transform kernel, ``kernel_threads`` threads); returns
        ``view``."""
        _winograd_weights.weight_transform(self.weight, self.store, self.flip, self.c_major,
                                           kernel_threads)
        return self.view


def _kernels_in_place(weight: np.ndarray) -> np.ndarray:
    """``weight`` (O, C, 3, 3) as the weight transform reads it: itself where each 3x3
    kernel is contiguous and the kernels are evenly spaced, rows ``C`` kernels apart (a
    C-contiguous weight, or one depth tap ``w[:, :, kz]`` of a C-contiguous 3x3x3
    weight); else a C-contiguous copy."""
    s = weight.strides
    item = weight.itemsize
    if (s[3] == item and s[2] == 3 * item and s[1] >= 9 * item and s[1] % item == 0
            and s[0] == weight.shape[1] * s[1]):
        return weight
    return np.ascontiguousarray(weight)


def pending_transform(weight: np.ndarray, flip_transpose: bool = False,
                      tile: int = 2) -> PendingWeights:
    """The storage of :func:`weight_transform`'s result, not computed yet.

    Its storage suits the GEMM in use: rows adjacent in memory for the project's AVX-512
    and AVX2 kernels, which then read it without packing (:func:`sandbox.array._gemm.lhs`),
    row-major for BLAS.  The matrix is (O, C) without flip, (C, O) with it; ``c_major``
    stores it (P, C, O).  For the AVX2 kernel, whose general products gained nothing from
    it (``lhs``), the point products do: their few columns (32 tiles on the 4x4 maps of a
    batch of 8) left the packing of U a large share.  Measured on an AMD EPYC family 25
    model 1 VM (Zen 3), batch 8, 1 thread, by a throwaway script that made
    :func:`pending_transform` see ``"avx512"`` or not around interleaved calls of
    ``conv2d`` / ``conv2d_backward`` (21 rounds, medians), time rows adjacent / packed:
    forward and input gradient of 256->256@4 0.95 / 0.88, 128->256@4 0.91 / 0.94,
    128->128@8 0.98 / 0.98, 64->64@16 0.95 / 0.98, 32->32@32 0.99 / 0.93, 16->16@64
    1.01 / 0.99 (the same products in the same order: the same bits).  Not measured
    alone at 2 threads; with the AVX2 GEMM's narrow panels (the same commit) the 13
    Winograd layers of the UNet, forward and both gradients, took 0.944 of their time at
    1 thread and 0.967 at 2 (docs/benchmarks.md, seventh session of 6 December 2026).
    """
    o, c = weight.shape[:2]
    count = _POINTS[tile]
    weight = _kernels_in_place(weight)
    rows_adjacent = backend() in ("avx512", "avx2") and weight.dtype == np.float32
    c_major = rows_adjacent != flip_transpose
    store = np.empty((count, c, o) if c_major else (count, o, c), dtype=weight.dtype)
    return PendingWeights(weight, store, store.transpose(0, 2, 1) if rows_adjacent else store,
                          flip_transpose, c_major)


def weight_transform(weight: np.ndarray, flip_transpose: bool = False,
                     kernel_threads: int = 1, tile: int = 2) -> np.ndarray:
    """``U[xi, o, c] = (G w[o, c] G^T)[xi]`` for ``weight`` (O, C, 3, 3) -> (P, O, C),
    ``P = (tile + 2)**2`` points of F(tile x tile, 3x3) (``tile`` 2 or 4).

    With ``flip_transpose``: the transform of the input gradient's kernel
    ``w.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]``, shape (P, C, O).

    The result is the left operand of the point GEMMs, stored as
    :func:`pending_transform` says.
    """
    return pending_transform(weight, flip_transpose, tile).run(kernel_threads)


class _Pass(NamedTuple):
    """How one Winograd pass (a forward or input gradient, or a weight gradient) runs:
    decided from the shapes and :func:`~._tuning.state` once, then cached."""

    tile: int
    count: int  # points per tile: 16 or 36
    th: int
    tw: int
    tiles: int  # per sample
    blocks: tuple  # the split form's chunks (index, first sample, samples)
    avx: bool  # the AVX-512 transforms (else the portable ones)
    fused: bool  # each chunk on one thread (_winograd_fused)
    one_region: bool  # else the split form in one OpenMP region (_winograd_fused, split)
    chunk: int  # samples a chunk of those two forms, or 1 with bands
    band: int  # the fused form's tile rows a chunk (0: whole samples)
    chunks: int
    gemm_avx2: bool
    dot_full: bool  # the dot-product GEMM for full chunks
    dot_last: bool  # and for a shorter last one
    threads: int


def _pass(tile, count, th, tw, tiles, blocks, selection, threads, fused_chunks, many,
          forms_of, float32) -> _Pass:
    """The :class:`_Pass` from the chunks of both forms: ``fused_chunks`` (chunk, band,
    count, (tiles, shorter tiles)) of the fused form, which runs where ``many`` (its
    rule of the chunk count) holds, ``blocks`` of the split form; ``forms_of(tiles)``
    the GEMM form of a chunk of so many tiles."""
    chunk, band, chunks, sizes = fused_chunks
    forms = [forms_of(t) for t in sizes]
    fused = many and TUNING.winograd_fused and _in_one_region(float32, selection, forms)
    one_region = False
    if not fused:  # the split form's chunks: (index, first sample, samples)
        chunk, band, chunks = blocks[0][2], 0, len(blocks)
        forms = [forms_of(chunk * tiles), forms_of(blocks[-1][2] * tiles)]
        one_region = (TUNING.winograd_one_region and TUNING.split_in_kernels
                      and _in_one_region(float32, selection, forms))
    return _Pass(tile, count, th, tw, tiles, tuple(blocks), selection.winograd_avx512, fused,
                 one_region, chunk, band, chunks, selection.gemm == "avx2", forms[0] == "dot",
                 forms[1] == "dot", threads)


@functools.lru_cache(maxsize=1024)
def _conv_pass(n, c, o, ho, wo, itemsize, small, tile, u_unit, key) -> _Pass:
    """The :class:`_Pass` of :func:`winograd_conv3x3` for these shapes (``small``: the
    input has fewer than 2**31 elements; ``u_unit``: the transformed kernels' columns
    are contiguous) under ``key`` (:func:`~._tuning.state`, whose settings are the ones
    in force)."""
    _, selection, threads = key
    count = _POINTS[tile]
    th, tw, tiles, blocks = _tiling(n, c, o, ho, wo, itemsize, tile)
    # the point GEMMs' kernel for a chunk of t tiles, as matmul picks it: the dot form
    # only for one-tile chunks, where V's columns are contiguous
    tile_bytes = count * (c + o) * itemsize
    fused_chunks = _fused_chunks(n, th, tw, blocks[0][2], tile_bytes)
    # the forward's bits do not depend on its chunks: smaller ones where they help,
    # down to winograd_fused_min_tiles tiles (whole samples)
    least = max(-(-TUNING.winograd_fused_min_tiles // tiles), 1)
    two_each = 2 * threads  # the fused form's chunks at least
    if fused_chunks[2] < two_each and fused_chunks[0] > least:
        # too few chunks for two a thread (the small maps of a UNet, whose split form's
        # chunk is the whole batch): chunks of the least size, if that gives two
        smaller = _fused_chunks(n, th, tw, least, tile_bytes)
        if smaller[2] >= two_each:
            fused_chunks = smaller
    many = fused_chunks[2] >= two_each
    pieces = TUNING.winograd_fused_pieces * threads
    if many and threads > 1 and fused_chunks[2] < pieces and fused_chunks[0] > least:
        # so that a thread on a slower core takes fewer of them
        fused_chunks = _fused_chunks(n, th, tw, max(n // pieces, least), tile_bytes)
    return _pass(tile, count, th, tw, tiles, blocks, selection, threads, fused_chunks, many,
                 lambda t: product_form(o, t, c, u_unit and t == 1), itemsize == 4 and small)


def winograd_conv3x3(x, u, y, ph: int, pw: int, kernel_threads: int = 1, bias=None) -> None:
    """``y = conv2d(x, w, bias, stride=1, padding=(ph, pw))`` with
    ``u = weight_transform(w, tile=m)``; the tile size follows from ``u`` (16 or 36 points).
    ``u`` may also be :func:`pending_transform`'s, computed here: in the convolution's
    own OpenMP region where it runs in one, else first (all threads).

    ``x`` (N, C, H, W) and ``y`` (N, O, H + 2*ph - 2, W + 2*pw - 2), C-contiguous,
    same dtype (float32 or float64); ``y`` is overwritten.
    """
    n, c = x.shape[:2]
    o, ho, wo = y.shape[1:]
    pending = u if isinstance(u, PendingWeights) else None
    # read in place by the GEMMs of every chunk (a pending transform's storage already
    # suits them: lhs would copy nothing)
    u = pending.view if pending is not None else lhs(u)
    plan = _conv_pass(n, c, o, ho, wo, x.itemsize, x.size < 2**31,
                      _TILE_OF_POINTS[u.shape[0]], u.strides[2] == u.itemsize, state())
    if plan.fused or plan.one_region:
        transform = () if pending is None else (pending.weight, pending.store, pending.flip,
                                                pending.c_major)
        _winograd_fused.conv(x, u, y, ph, pw, plan.tile, plan.th, plan.tw, plan.chunk,
                             plan.band, plan.gemm_avx2, plan.dot_full, plan.dot_last, plan.avx,
                             plan.threads, plan.one_region, *transform)
        add_bias(y, bias)
        return
    if pending is not None:
        pending.run(threads_now())
    count, th, tw, tiles, avx = plan.count, plan.th, plan.tw, plan.tiles, plan.avx

    def task(block, split=False):
        _, n0, cnt = block
        t = cnt * tiles
        v = _points("wino_v", count, c, t, x.dtype)
        _by_channels(split, c, lambda c0, c1, nt: _winograd.input_transform(
            x, v, n0, cnt, ph, pw, th, tw, max(nt, kernel_threads), avx, c0, c1))
        m = _points("wino_m", count, o, t, x.dtype)
        _matmul_points(u, v, m, split)
        _by_channels(split, o, lambda o0, o1, nt: _winograd.output_transform(
            m, y, n0, cnt, th, tw, max(nt, kernel_threads), avx, o0, o1))
        add_bias(y[n0:n0 + cnt], bias, None if split else 1)

    _run_blocks(task, plan.blocks, x.dtype)


def _fused_chunks(n: int, th: int, tw: int, samples: int, tile_bytes: int,
                  keep_samples: bool = False):
    """The chunks of the fused form: ``(chunk, band, count, (tiles, shorter tiles))``.

    Chunks of ``samples`` samples (the split form's) where their points (``tile_bytes``
    a tile, input and output) fit ``TUNING.winograd_fused_max_bytes``; else, unless
    ``keep_samples``, as many samples as fit; and where one sample does not fit (large
    maps), bands of ``band`` tile rows of one sample.  The forward's bits do not depend
    on its chunks; the weight gradient's do (they fix the order of its sums), so it
    keeps the split form's samples unless it takes bands."""
    fit = max(TUNING.winograd_fused_max_bytes // tile_bytes, 1)
    tiles = th * tw
    if tiles <= fit:
        chunk = samples if keep_samples or samples * tiles <= fit else fit // tiles
        rest = n % chunk
        return chunk, 0, -(-n // chunk), (chunk * tiles, (rest or chunk) * tiles)
    band = max(fit // tw, 1)
    rest = th % band
    return 1, band, n * -(-th // band), (band * tw, (rest or band) * tw)


def _in_one_region(float32: bool, selection, forms) -> bool:
    """Whether a Winograd pass can run in one OpenMP region (``_winograd_fused``, fused
    or split): float32 arrays of fewer than 2**31 elements (``float32``) with the
    project's GEMM for every product (``forms``, from
    :func:`~sandbox.array._gemm.product_form`), with the AVX-512 transforms or the
    portable ones, as the split form from Python would run them
    (``Selection.winograd_avx512``).  The fused form also takes two chunks a thread (a
    single chunk, the 4x4 maps of a UNet at batch 8, runs faster with its steps shared:
    ``python benchmarks/ab_simd_step.py``; the 16x16 and 8x8 maps take chunks of two
    samples, ``TUNING.winograd_fused_min_tiles``).  Rules of the shapes and the SIMD
    selection; the thread count only chooses between forms that give the same bits."""
    return float32 and selection.gemm_own and "blas" not in forms


def _run_blocks(task, blocks, dtype) -> None:
    """Run ``task(block, split)`` for every chunk of samples.

    When the point GEMMs run on one of the project's kernels (float32 with the AVX-512
    or the AVX2 GEMM: ``Selection.gemm_own``) and ``TUNING.split_in_kernels`` is on:
    one chunk after another, each step shared among the threads inside its kernel, so
    the threads meet in OpenMP regions that spin briefly instead of the worker pool's
    locks.  Otherwise the chunks go to the worker
    pool, where BLAS runs each chunk's GEMMs (a BLAS call cannot run inside a
    ``prange``); a single chunk then shares its steps there.  Measured with
    ``benchmarks/bench_conv_passes.py --threads 2`` (see ``ConvTuning.split_in_kernels``;
    on the AVX2 path, ``SANDBOX_ISA=avx2``, 0.71x against 0.62x of PyTorch's speed
    with the knob off).  Every chunk
    is computed the same way in each case."""
    in_kernels = (TUNING.split_in_kernels and simd.current().gemm_own
                  and np.dtype(dtype) == np.float32)
    if in_kernels or len(blocks) == 1:
        for block in blocks:
            task(block, split=True)
    else:
        parallel_map(task, blocks)


def _by_channels(split: bool, channels: int, run) -> None:
    """``run(c0, c1, threads)`` over all channels: at once on the calling thread, or
    (``split``) shared among the threads: inside the kernel (its ``prange`` over
    channels) or, with ``TUNING.split_in_kernels`` off, in 4 channel ranges on the
    worker pool.  Every channel's transform is computed the same way either way, so
    results do not depend on the thread count."""
    if not split or channels < 8:
        run(0, channels, 1)
        return
    if TUNING.split_in_kernels:
        run(0, channels, threads_now())
        return
    bounds = [channels * i // 4 for i in range(5)]
    parallel_map(lambda i: run(bounds[i], bounds[i + 1], 1), range(4))


def _matmul_points(a, b, out, split: bool) -> None:
    """``out[k] = a[k] @ b[k]`` for the Winograd points; with ``split`` the points are
    shared among the threads: inside the GEMM kernel (each point on one thread), or
    on the worker pool in groups of 4 (BLAS, or ``TUNING.split_in_kernels`` off).
    Each point is the same GEMM call either way, so the result does not depend on
    the thread count."""
    if not split:
        matmul(a, b, out)
        return
    if TUNING.split_in_kernels and matmul(a, b, out, num_threads=threads_now()):
        return

    def points(k0):
        matmul(a[k0:k0 + 4], b[k0:k0 + 4], out[k0:k0 + 4])

    parallel_map(points, range(0, a.shape[0], 4))


def _tiling(n, c, o, ho, wo, itemsize, tile=2, target=None):
    th, tw = -(-ho // tile), -(-wo // tile)
    tiles = th * tw
    count = (tile + 2) ** 2
    target = TUNING.winograd_target_tiles if target is None else target
    nb = max(1, min(n, -(-target // tiles),
                    TUNING.winograd_max_chunk_bytes
                    // max(count * max(c, o) * tiles * itemsize, 1)))
    return th, tw, tiles, [(i, n0, min(nb, n - n0)) for i, n0 in enumerate(range(0, n, nb))]


@functools.lru_cache(maxsize=1024)
def _weight_grad_pass(n, c, o, ho, wo, itemsize, small, tile, key) -> _Pass:
    """The :class:`_Pass` of :func:`winograd_weight_grad` (``small``: input and output
    gradient have fewer than 2**31 elements each), as :func:`_conv_pass`."""
    _, selection, threads = key
    count = _POINTS[tile]
    target = TUNING.winograd_target_tiles_weight_grad
    if target is None:
        target = WEIGHT_GRAD_TARGET_TILES[selection.isa]
    # ... no more tiles than keep a chunk's transformed points (input and output
    # gradient) within winograd_weight_grad_chunk_bytes, down to winograd_target_tiles
    sample_tiles = -(-ho // tile) * -(-wo // tile)
    fit = max(TUNING.winograd_weight_grad_chunk_bytes
              // (count * (c + o) * itemsize * sample_tiles), 1)  # whole samples
    target = max(min(target, fit * sample_tiles), TUNING.winograd_target_tiles)
    th, tw, tiles, blocks = _tiling(n, c, o, ho, wo, itemsize, tile, target)
    tile_bytes = count * (c + o) * itemsize
    chunk, band, chunks, sizes = _fused_chunks(n, th, tw, blocks[0][2], tile_bytes,
                                               keep_samples=True)
    # bands (a sample's points beyond the cap) only exist in the fused form, and only
    # while their partial sums (one (P, O, C) a chunk) stay small; chunks of samples run
    # fused where they fit and there are two a thread, else split.  Both rules are of the
    # shapes alone.
    fits = chunk * th * tw * tile_bytes <= TUNING.winograd_fused_max_bytes
    partials = chunks * count * o * c * itemsize
    if band and partials > TUNING.winograd_max_chunk_bytes:
        band, fits = 0, False  # the split form's chunks of samples
    return _pass(tile, count, th, tw, tiles, blocks, selection, threads,
                 (chunk, band, chunks, sizes), bool(band or (fits and chunks >= 2 * threads)),
                 lambda t: product_form(o, c, t, True), itemsize == 4 and small)


def winograd_weight_grad(x, g, ph: int, pw: int, kernel_threads: int = 1,
                         tile: int = 2) -> np.ndarray:
    """Weight gradient (O, C, 3, 3) of a 3x3 stride-1 conv of ``x`` with output gradient ``g``,
    with F(tile x tile, 3x3) (``tile`` 2 or 4).

    ``dW = G^T (sum_t Gt_t V_t^T) G`` (see ``grad_transform`` in ``pyx/winograd/_winograd.pyx``);
    one (P, O, C) partial per chunk, summed in chunk order.
    """
    n, c = x.shape[:2]
    o, ho, wo = g.shape[1:]
    plan = _weight_grad_pass(n, c, o, ho, wo, x.itemsize, x.size < 2**31 and g.size < 2**31,
                             tile, state())
    count, th, tw, tiles, avx, blocks = (plan.count, plan.th, plan.tw, plan.tiles, plan.avx,
                                         plan.blocks)
    gw = np.empty((o, c, 3, 3), dtype=x.dtype)
    if plan.fused or plan.one_region:
        total = np.empty((count, o, c), dtype=x.dtype)
        partial = np.empty((1 if plan.one_region else plan.chunks, count, o, c), dtype=x.dtype)
        # the fold dW = G^T total G in the same region, after the sums
        _winograd_fused.weight_grad(np.ascontiguousarray(x), np.ascontiguousarray(g), partial,
                                    total, ph, pw, tile, th, tw, plan.chunk, plan.band,
                                    plan.gemm_avx2, plan.dot_full, plan.dot_last, avx,
                                    plan.threads, plan.one_region, gw)
        return gw
    total = OrderedSum(len(blocks))

    def task(block, split=False):
        i, n0, cnt = block
        t = cnt * tiles
        v = _points("wino_v", count, c, t, x.dtype)
        gt = _points("wino_m", count, o, t, x.dtype)
        if split and TUNING.split_in_kernels:  # each transform on every thread
            nt = threads_now()
            _winograd.input_transform(x, v, n0, cnt, ph, pw, th, tw, nt, avx)
            _winograd.grad_transform(g, gt, n0, cnt, th, tw, nt, avx)
        elif split:  # both transforms in one round of the pool
            bc = [c * k // 2 for k in range(3)]
            bo = [o * k // 2 for k in range(3)]
            parallel_map(lambda k: (
                _winograd.input_transform(x, v, n0, cnt, ph, pw, th, tw, kernel_threads,
                                          avx, bc[k], bc[k + 1]) if k < 2 else
                _winograd.grad_transform(g, gt, n0, cnt, th, tw, kernel_threads,
                                         avx, bo[k - 2], bo[k - 1])), range(4))
        else:
            _winograd.input_transform(x, v, n0, cnt, ph, pw, th, tw, kernel_threads, avx)
            _winograd.grad_transform(g, gt, n0, cnt, th, tw, kernel_threads, avx)
        partial = np.empty((count, o, c), dtype=x.dtype)
        _matmul_points(gt, v.transpose(0, 2, 1), partial, split)
        total.add(i, partial)

    _run_blocks(task, blocks, x.dtype)
    # dW = G^T P G per (o, c); after the chunks, so every thread may help
    _winograd_weights.weight_grad_fold(total.out, gw, threads_now())
    return gw
