"""Calls into the kernels (``sandbox._C._grid_sample``): flat contiguous arrays, the
output allocation, the thread count and the push's fixed chunking.

The push (input gradient) is a scatter.  To run it in parallel over the output
points of one sample and still be bitwise identical for any thread count, the
points of each sample are cut into :func:`push_chunks` fixed ranges, chosen from the
shapes alone; each range pushes into its own zeroed buffer and the buffers are added
in range order (see pyx/_grid_sample.pyx).
"""

from __future__ import annotations

import math

import numpy as np

from ..._C import _grid_sample
from ...runtime.threads import kernel_threads

# Aim for this many push chunks per call (over the batch), so that a batch of one
# still fills up to 8 threads; each chunk gets at least _MIN_CHUNK_POINTS points and
# the extra buffers are kept under _MAX_BUFFER_BYTES.
_TARGET_CHUNKS = 8
_MIN_CHUNK_POINTS = 1024
_MAX_BUFFER_BYTES = 256 << 20


def _sizes(input, grid):
    n, c = input.shape[:2]
    nd = input.ndim - 2
    d, h, w = (1, *input.shape[2:]) if nd == 2 else input.shape[2:]
    return n, c, d, h, w, math.prod(grid.shape[1:-1]), nd


def push_chunks(input, grid) -> int:
    """Point ranges per sample of the push (a function of the shapes, not the threads)."""
    n = input.shape[0]
    points = math.prod(grid.shape[1:-1])
    sample_bytes = input.itemsize * math.prod(input.shape[1:])
    chunks = min(-(-_TARGET_CHUNKS // max(n, 1)), max(1, points // _MIN_CHUNK_POINTS))
    if sample_bytes * n:
        chunks = min(chunks, 1 + _MAX_BUFFER_BYTES // (sample_bytes * n))
    return max(chunks, 1)


def push_buffers(input, grid) -> int:
    """Extra input-sized arrays the push allocates (for the memory check)."""
    return push_chunks(input, grid) - 1


def forward(input, grid, mode, padding, align_corners):
    n, c, d, h, w, p, nd = _sizes(input, grid)
    out = np.empty((n, c, *grid.shape[1:-1]), input.dtype)
    if out.size:
        _grid_sample.forward(np.ascontiguousarray(input).reshape(-1),
                             np.ascontiguousarray(grid).reshape(-1), out.reshape(-1),
                             n, c, d, h, w, p, nd, mode, padding, int(align_corners),
                             kernel_threads(out.size * 4))
    return out


def backward(grad_output, input, grid, mode, padding, align_corners, input_grad, grid_grad):
    n, c, d, h, w, p, nd = _sizes(input, grid)
    dtype = input.dtype
    empty = np.empty(0, dtype)
    gx = np.zeros(input.shape, dtype) if input_grad else None
    gg = np.zeros(grid.shape, dtype) if grid_grad else None
    wants_grid = grid_grad and mode != 0  # nearest: the grid gradient is zero
    if (gx is None and not wants_grid) or n * p == 0 or (c == 0):
        return gx, gg
    chunks = push_chunks(input, grid) if input_grad else 1
    bufs = np.zeros((chunks - 1) * input.size, dtype) if chunks > 1 else empty
    _grid_sample.backward(np.ascontiguousarray(grad_output).reshape(-1),
                          np.ascontiguousarray(input).reshape(-1),
                          np.ascontiguousarray(grid).reshape(-1),
                          empty if gx is None else gx.reshape(-1), bufs,
                          gg.reshape(-1) if wants_grid else empty,
                          n, c, d, h, w, p, nd, mode, padding, int(align_corners), chunks,
                          kernel_threads(n * c * p * 4))
    return gx, gg
