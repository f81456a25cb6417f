"""Per-axis banded weight tables: every resampling mode is one of these.

A table for an axis ``in -> out`` holds, per output index ``o``, a ``start``
input index, a tap count ``ntap[o]`` and ``weights[o, :ntap[o]]``:

    y[o] = sum_k weights[o, k] * x[start[o] + k]

Taps are contiguous and always in range: replicate borders fold the
out-of-range weights onto the edge tap, skip borders drop them (and the
weights are renormalised).  The transposed table (the adjoint, used by the
backward) has the same format with the roles of in and out swapped: for every
input index, the contiguous range of outputs that read it.

Weights are computed in the data's dtype, with the same coordinate arithmetic
PyTorch uses (its ``opmath_t`` is float32 for float32 tensors), which makes
float32 parity with PyTorch tighter than rounding float64 weights.
Tables are cached per (mode, in, out, scale_factor, align_corners, antialias,
dtype).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np


class Table(NamedTuple):
    start: np.ndarray  # (out,) intp, first input index of each output
    ntap: np.ndarray  # (out,) intp, number of taps (0 = output is zero)
    weights: np.ndarray  # (out, K) float32/float64, zero past ntap
    n_in: int
    identity: bool


# --------------------------------------------------------------------- filters
def _keys(x, a):
    """Keys cubic convolution kernel with parameter ``a`` (|x| < 2)."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0 * x))


def _lanczos(x, lobes):
    """sinc(x) * sinc(x / lobes) for |x| < lobes, else 0."""
    return np.where(np.abs(x) < lobes, np.sinc(x) * np.sinc(x / lobes), 0 * x)


def _triangle(x):
    return np.maximum(1 - np.abs(x), 0 * x)


_AA_FILTERS = {  # mode -> (filter, interp_size) as in PyTorch / Pillow antialias
    "linear": (_triangle, 2),
    "bicubic": (lambda x: _keys(x, -0.5), 4),
    "cubic": (lambda x: _keys(x, -0.5), 4),
    "lanczos3": (lambda x: _lanczos(x, 3), 6),
    "lanczos5": (lambda x: _lanczos(x, 5), 10),
}


# ---------------------------------------------------------------- coordinates
def _scale(n_in, n_out, sf, align_corners, dt):
    """PyTorch's area_pixel_compute_scale, in dtype ``dt``."""
    if align_corners:
        return dt(n_in - 1) / dt(n_out - 1) if n_out > 1 else dt(0)
    if sf is not None:
        return dt(1.0 / sf)
    return dt(n_in) / dt(n_out)


def _source(n_in, n_out, sf, align_corners, dt):
    """Source coordinate of each output (``s = scale*o`` or half-pixel)."""
    scale = _scale(n_in, n_out, sf, align_corners, dt)
    o = np.arange(n_out, dtype=dt)
    if align_corners:
        return scale * o
    return scale * (o + dt(0.5)) - dt(0.5)


def _guard(s, n_in):
    """PyTorch's guard_index_and_lambda: i = min(floor(s), in-1), t = clamp(s-i, 0, 1)."""
    i = np.minimum(np.floor(s).astype(np.intp), n_in - 1)
    t = np.clip(s - i.astype(s.dtype), 0, 1).astype(s.dtype)
    return i, t


# ----------------------------------------------------------------- band build
def _band(idx, w, n_in, border):
    """Turn per-output taps (out, T) into a Table.

    border='replicate' clamps indices onto the edge (summing their weights);
    border='skip' drops out-of-range taps and renormalises by the kept sum.
    """
    n_out, _ = idx.shape
    if border == "replicate":
        idx = np.clip(idx, 0, n_in - 1)
        valid = np.ones(idx.shape, dtype=bool)
    else:
        valid = (idx >= 0) & (idx < n_in)
        w = np.where(valid, w, 0 * w)
        total = w.sum(axis=1, keepdims=True, dtype=w.dtype)
        w = np.where(total != 0, w / np.where(total != 0, total, 1), w)
    big = np.iinfo(np.intp).max
    lo = np.where(valid, idx, big).min(axis=1)
    hi = np.where(valid, idx, -1).max(axis=1)
    has = hi >= 0
    start = np.where(has, lo, 0).astype(np.intp)
    ntap = np.where(has, hi - lo + 1, 0).astype(np.intp)
    k = max(int(ntap.max()), 1)
    weights = np.zeros((n_out, k), dtype=w.dtype)
    rows, cols = np.nonzero(valid)
    np.add.at(weights, (rows, idx[rows, cols] - start[rows]), w[rows, cols])
    return _finish(start, ntap, weights, n_in)


def _finish(start, ntap, weights, n_in):
    n_out = start.shape[0]
    identity = bool(
        n_in == n_out
        and weights.shape[1] == 1
        and np.all(ntap == 1)
        and np.all(start == np.arange(n_out))
        and np.all(weights[:, 0] == 1)
    )
    for a in (start, ntap, weights):
        a.setflags(write=False)
    return Table(start, ntap, weights, n_in, identity)


def _identity(n, dt):
    return _finish(
        np.arange(n, dtype=np.intp), np.ones(n, dtype=np.intp), np.ones((n, 1), dtype=dt), n
    )


# ---------------------------------------------------------------------- modes
def _nearest(n_in, n_out, sf, exact, dt):
    # PyTorch's nearest_idx / nearest_exact_idx: float32 index math, scale in float32.
    scale = np.float32(1.0 / sf) if sf is not None else np.float32(n_in) / np.float32(n_out)
    o = np.arange(n_out)
    if exact:
        # floorf((o + 0.5) * scale): the product is double, rounded to float by floorf.
        src = np.floor(((o + 0.5) * np.float64(scale)).astype(np.float32))
    elif n_out == n_in:
        src = o
    elif n_out == 2 * n_in:
        src = o >> 1
    else:
        src = np.floor(o.astype(np.float32) * scale)
    idx = np.minimum(src.astype(np.intp), n_in - 1)
    return _band(idx[:, None], np.ones((n_out, 1), dtype=dt), n_in, "replicate")


def _linear(n_in, n_out, sf, ac, dt):
    if n_in == n_out:  # PyTorch's identity special case (also when scale != 1)
        return _identity(n_in, dt)
    s = _source(n_in, n_out, sf, ac, dt)
    if not ac:
        s = np.maximum(s, dt(0))
    i0, lam = _guard(s, n_in)
    i1 = i0 + (i0 < n_in - 1)
    return _band(np.stack([i0, i1], 1), np.stack([dt(1) - lam, lam], 1), n_in, "replicate")


def _cubic(n_in, n_out, sf, ac, dt, a, border):
    s = _source(n_in, n_out, sf, ac, dt)
    i, t = _guard(s, n_in)
    a = dt(a)
    one = dt(1)
    w = np.stack([_keys(t + one, a), _keys(t, a), _keys(one - t, a), _keys(one - t + one, a)], 1)
    idx = i[:, None] + np.arange(-1, 3)
    return _band(idx, w.astype(dt), n_in, border)


def _lanczos_interp(n_in, n_out, sf, ac, dt, lobes):
    s = _source(n_in, n_out, sf, ac, dt)
    base = np.floor(s).astype(np.intp)
    idx = base[:, None] + np.arange(1 - lobes, lobes + 1)
    w = _lanczos(s[:, None] - idx.astype(dt), dt(lobes)).astype(dt)
    return _band(idx, w, n_in, "skip")


def _area(n_in, n_out, dt):
    o = np.arange(n_out)
    lo = (o * n_in) // n_out
    hi = ((o + 1) * n_in + n_out - 1) // n_out
    n = hi - lo
    k = int(n.max())
    cols = np.arange(k)
    w = np.where(cols < n[:, None], dt(1) / n[:, None].astype(dt), dt(0)).astype(dt)
    weights = np.ascontiguousarray(w)
    return _finish(lo.astype(np.intp), n.astype(np.intp), weights, n_in)


def _antialias(mode, n_in, n_out, sf, ac, dt):
    """PyTorch's _compute_indices_min_size_weights_aa (= Pillow's precompute_coeffs)."""
    if n_in == n_out:  # PyTorch skips axes whose size does not change
        return _identity(n_in, dt)
    filt, interp = _AA_FILTERS[mode]
    scale = _scale(n_in, n_out, sf, ac, dt)
    stretch = scale >= 1
    support = dt(interp / 2) * scale if stretch else dt(interp / 2)
    max_size = int(np.ceil(support)) * 2 + 1
    invscale = dt(1) / scale if stretch else dt(1)
    center = scale * (np.arange(n_out, dtype=dt) + dt(0.5))
    xmin = np.maximum(np.trunc(center - support + dt(0.5)).astype(np.intp), 0)
    xmax = np.minimum(np.trunc(center + support + dt(0.5)).astype(np.intp), n_in)
    xsize = np.clip(xmax - xmin, 0, max_size)
    j = np.arange(max_size)
    x = (j.astype(dt) + xmin[:, None].astype(dt) - center[:, None] + dt(0.5)) * invscale
    w = np.where(j < xsize[:, None], filt(x.astype(dt)), dt(0)).astype(dt)
    total = w.sum(axis=1, keepdims=True, dtype=dt)
    w = np.where(total != 0, w / np.where(total != 0, total, dt(1)), w).astype(dt)
    k = max(int(xsize.max()), 1)
    start = np.where(xsize > 0, xmin, 0).astype(np.intp)
    return _finish(start, xsize.astype(np.intp), np.ascontiguousarray(w[:, :k]), n_in)


def _build(mode, n_in, n_out, sf, ac, aa, dt):
    if mode == "nearest" or mode == "nearest-exact":
        return _nearest(n_in, n_out, sf, mode == "nearest-exact", dt)
    if mode == "area":
        return _area(n_in, n_out, dt)
    if aa:
        return _antialias(mode, n_in, n_out, sf, ac, dt)
    if mode == "linear":
        return _linear(n_in, n_out, sf, ac, dt)
    if mode == "bicubic":
        return _cubic(n_in, n_out, sf, ac, dt, -0.75, "replicate")
    if mode == "cubic":
        return _cubic(n_in, n_out, sf, ac, dt, -0.5, "skip")
    if mode == "lanczos3":
        return _lanczos_interp(n_in, n_out, sf, ac, dt, 3)
    if mode == "lanczos5":
        return _lanczos_interp(n_in, n_out, sf, ac, dt, 5)
    raise AssertionError(mode)  # unreachable: modes are validated in _options


def transpose(tab: Table, n_out: int) -> Table:
    """The adjoint table: per input index, the contiguous range of outputs reading it."""
    n_in = tab.n_in
    k = tab.weights.shape[1]
    rows, cols = np.nonzero(np.arange(k) < tab.ntap[:, None])
    idx = tab.start[rows] + cols
    lo = np.full(n_in, np.iinfo(np.intp).max, dtype=np.intp)
    hi = np.full(n_in, -1, dtype=np.intp)
    np.minimum.at(lo, idx, rows)
    np.maximum.at(hi, idx, rows)
    has = hi >= 0
    start = np.where(has, lo, 0).astype(np.intp)
    ntap = np.where(has, hi - lo + 1, 0).astype(np.intp)
    weights = np.zeros((n_in, max(int(ntap.max()), 1)), dtype=tab.weights.dtype)
    weights[idx, rows - start[idx]] = tab.weights[rows, cols]
    return _finish(start, ntap, weights, n_out)


@lru_cache(maxsize=512)
def get_table(mode, n_in, n_out, sf, align_corners, antialias, dtype, adjoint=False) -> Table:
    """Cached weight table for one axis (``dtype``: ``'f'`` or ``'d'``).

    With ``adjoint=True`` the transposed table (maps ``n_out`` values back to
    ``n_in``) is returned.
    """
    if adjoint:
        return transpose(get_table(mode, n_in, n_out, sf, align_corners, antialias, dtype), n_out)
    return _build(mode, n_in, n_out, sf, align_corners, antialias, np.dtype(dtype).type)


def dense_matrix(tab: Table) -> np.ndarray:
    """The (out, in) dense matrix of a table (for docs and debugging)."""
    n_out, k = tab.weights.shape
    m = np.zeros((n_out, tab.n_in), dtype=tab.weights.dtype)
    rows, cols = np.nonzero(np.arange(k) < tab.ntap[:, None])
    m[rows, tab.start[rows] + cols] = tab.weights[rows, cols]
    return m
