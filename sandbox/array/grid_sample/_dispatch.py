"""Calls into the kernels (``sandbox._C._grid_sample``): flat contiguous arrays, the
output allocation, the thread count and the push's slabs.

The push (input gradient) is a scatter.  A batch of at least
``_grid_sample.per_sample_batch`` samples pushes each sample on one thread, its points in
their order.  To run a smaller batch in parallel over the output points of one sample
and still be bitwise identical for any thread count, the input
rows (2-D) or planes (3-D) are cut into slabs whose height :func:`push_slabs` chooses
from the shapes alone; each parallel task owns a slab and pushes the points whose
taps start in it, even slabs first, then odd ones (see pyx/_grid_sample.pyx).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..._C import _grid_sample
from ..._C._grid_sample import page_offset
from ...runtime import calibration, simd
from ...runtime.threads import kernel_threads

# Aim for this many slabs per sample, so that a batch of one still fills up to 8
# threads per phase; a slab is at least 4 rows, so that two slabs of the same parity
# never touch the same row (a point's taps span at most 4 rows).
_TARGET_SLABS = 16
_MIN_SLAB = 4


def push_slabs(input) -> tuple[int, int]:
    """``(slab height, slab count)`` of the push: a function of the shape, not the threads."""
    rows = input.shape[2]  # H in 2-D, D in 3-D
    slab = max(_MIN_SLAB, -(-rows // _TARGET_SLABS))
    return slab, -(-rows // slab)


def _push_indices(grid, mode) -> int:
    """Indices per output point of the push's scratch: one (the tap offset) for a nearest
    push (by ranges of values), two (key, order) when the slabs share a sample among the
    threads (batches under ``_grid_sample.per_sample_batch``), else none."""
    if mode == 0:
        return 1
    return 2 if grid.shape[0] < _grid_sample.per_sample_batch else 0


def push_bytes(grid, mode) -> int:
    """Scratch bytes of the push (for the memory check); ``mode`` is the mode code."""
    return _push_indices(grid, mode) * np.dtype(np.intp).itemsize * math.prod(grid.shape[:-1])


def simd_code() -> int:
    """The explicit-SIMD form of the 2-D float32 nearest/bilinear blocks: 2, their AVX-512
    passes (the ``avx512`` path of :mod:`sandbox.runtime.simd` on a CPU that has it,
    unless ``sandbox calibrate`` measured the other loops faster here); 1, the loops
    with their coordinate pass in AVX2 (the ``avx2`` path, or ``avx512`` when
    calibration preferred them); 0, the portable loops (``portable``).  Every form gives
    the same values."""
    isa = simd.current().isa
    if isa == "portable":
        return 0
    if (isa == "avx512" and _grid_sample.isa_available() == 2
            and calibration.preferred("grid_gathers") == "avx512"):
        return 2
    return 1 if _AVX2 else 0


_AVX2 = _grid_sample.avx2_available() == 1


@functools.lru_cache(maxsize=64)
def slab_rows(rows: int, slab: int) -> np.ndarray:
    """The push slab of each input row (2-D) or plane (3-D), for the kernels' key pass
    (read-only: one array per shape, shared by the calls)."""
    out = (np.arange(rows, dtype=np.int32) // slab).astype(np.int32)
    out.setflags(write=False)
    return out


def _flat(a):
    """``a`` as a contiguous 1-D array: a view when it is C-contiguous, else a copy (so a
    broadcast array, whose reshape can be a view of stride 0, is copied)."""
    return a.ravel()


# The float32 and float64 specialisations of the kernels, by (module, kernel, dtype):
# calling one directly skips the fused function's dispatch on its arguments' types
# (0.8 of 4.3 us a call of a tiny forward, timeit at 1 thread on the AMD EPYC family 23
# VM).  Keyed by the module, so that benchmarks/ab_grid_builds.py can swap it.
_SPECIALISED = {}


def _kernel(name: str, dtype):
    """``_grid_sample.<name>`` specialised for ``dtype`` (float32 or float64)."""
    key = (_grid_sample, name, dtype)
    fn = _SPECIALISED.get(key)
    if fn is None:
        fn = getattr(_grid_sample, name).__signatures__[
            "float" if dtype == np.float32 else "double"]
        _SPECIALISED[key] = fn
    return fn


# An output the kernels write at the index they read another array at (the forward's
# output against a near-identity grid's input, the input gradient against the output
# gradient) starts this many bytes away from it modulo 4 KiB: where the two start at the
# same place modulo 4 KiB, each load waits for the store before it that has the same low
# 12 address bits (4K aliasing).  The 2-D nearest forward of (1, 4, 128, 128) took 88.6 us
# at 1 thread with its output so placed and 67-68 us 1-3 KiB away (62 against 39-45 at 2
# threads; AMD EPYC family 23, the kernel called on views at chosen offsets), and which
# placement a call got depended on the allocator: the bench's times of one case moved
# 1.5-2x between runs.  Arrays under _APART_MIN_BYTES are allocated as usual.
_APART = 2048
_APART_MIN_BYTES = 1 << 16


def _empty_apart(shape, dtype, other):
    """An empty C-contiguous array of ``shape`` and ``dtype`` whose data starts
    :data:`_APART` bytes away from ``other``'s modulo 4 KiB (a view of a buffer 4 KiB
    larger)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < _APART_MIN_BYTES:
        return np.empty(shape, dtype)
    buf = np.empty(nbytes + 4096, np.uint8)
    start = (page_offset(other) + _APART - page_offset(buf)) % 4096
    return np.ndarray(shape, dtype, buf, start - start % dtype.itemsize)


def forward(input, grid, plan, isa=None):
    """The kernel's forward of a validated request (``plan``: :func:`._checks.plan`);
    ``isa`` (2, 1 or 0) overrides :func:`simd_code` (calibration)."""
    out = _empty_apart(plan.out_shape, input.dtype, input)
    if out.size:
        _kernel("forward", input.dtype)(
            _flat(input), _flat(grid), out.reshape(-1), *plan.sizes, plan.mode, plan.padding,
            plan.align_corners, kernel_threads(out.size * 4), simd_code() if isa is None else isa)
    return out


def backward(grad_output, input, grid, plan, input_grad, grid_grad, isa=None):
    """The kernel's gradients (input, grid; None where not asked) of a validated request;
    ``isa`` as in :func:`forward`."""
    n, c, d, h, w, p, nd = plan.sizes
    mode = plan.mode
    dtype = input.dtype
    empty = np.empty(0, dtype)
    wants_grid = grid_grad and mode != 0  # nearest: the grid gradient is zero
    if (not input_grad and not wants_grid) or n * p == 0 or (c == 0):
        return ((np.zeros(input.shape, dtype) if input_grad else None),
                np.zeros(grid.shape, dtype) if grid_grad else None)
    # the grid gradient's zeros: nearest's all written by the kernel on every thread (a
    # serial np.zeros of a batch's grid had been a third of the push); the others' for
    # the points the kernel leaves out
    gg = (np.empty if mode == 0 else np.zeros)(grid.shape, dtype) if grid_grad else None
    # the kernel zeroes the input gradient, plane by plane on every thread (a serial
    # np.zeros of it had cost as much as a small push)
    gx = _empty_apart(input.shape, dtype, grad_output) if input_grad else None
    slab, nslabs = push_slabs(input)
    indices = _push_indices(grid, mode) if input_grad else 0
    slabs = indices == 2  # the slab sort's scratch: order, starts, cursor
    keys = np.empty(n * p if indices else 0, np.intp)
    order = np.empty(n * p if slabs else 0, np.intp)
    starts = np.empty(n * (nslabs + 1) if slabs else 0, np.intp)
    cursor = np.empty(n * _grid_sample.sort_chunks * nslabs if slabs else 0, np.intp)
    _kernel("backward", dtype)(
        _flat(grad_output), _flat(input), _flat(grid), empty if gx is None else gx.reshape(-1),
        empty if gg is None else gg.reshape(-1), keys, order, starts, cursor, n, c, d, h, w, p,
        nd, mode, plan.padding, plan.align_corners, slab, nslabs, kernel_threads(n * c * p * 4),
        slab_rows(input.shape[2], slab), simd_code() if isa is None else isa, zero_gx=True)
    return gx, gg
