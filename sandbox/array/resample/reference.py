"""Float64 dense-matrix reference for :mod:`sandbox.resample` (tests and docs).

Written straight from the formulas in docs/design.md §2, one output index at a time in
plain Python, sharing no code with the weight tables in ``_weights.py``:
per spatial axis a dense ``(out, in)`` matrix, applied with ``einsum``.  Slow
by design; use small shapes.
"""

from __future__ import annotations

import math

import numpy as np

_CANON = {"bilinear": "linear", "trilinear": "linear", "lanczos": "lanczos3"}


def _sinc(x):
    return 1.0 if x == 0 else math.sin(math.pi * x) / (math.pi * x)


def _keys(x, a):
    x = abs(x)
    if x <= 1:
        return (a + 2) * x**3 - (a + 3) * x**2 + 1
    if x < 2:
        return a * x**3 - 5 * a * x**2 + 8 * a * x - 4 * a
    return 0.0


def _filter(mode):
    if mode == "linear":
        return lambda x: max(0.0, 1.0 - abs(x)), 1.0
    if mode in ("bicubic", "cubic"):  # antialias uses a = -0.5 for both
        return lambda x: _keys(x, -0.5), 2.0
    lobes = 3 if mode == "lanczos3" else 5
    return (lambda x: _sinc(x) * _sinc(x / lobes) if abs(x) < lobes else 0.0), float(lobes)


def axis_matrix(mode, n_in, n_out, scale_factor=None, align_corners=False, antialias=False):
    """Dense float64 (n_out, n_in) matrix of one axis.

    ``scale_factor``: the user's factor when PyTorch would use ``1/scale_factor``
    (None when the size was given or recomputed).
    """
    mode = _CANON.get(mode, mode)
    m = np.zeros((n_out, n_in))
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor else n_in / n_out

    if mode in ("nearest", "nearest-exact"):
        f32 = np.float32
        sc = f32(1.0 / scale_factor) if scale_factor else f32(n_in) / f32(n_out)
        for o in range(n_out):
            if mode == "nearest-exact":
                i = math.floor(float(f32(float(o + 0.5) * float(sc))))
            elif n_out == n_in:
                i = o
            elif n_out == 2 * n_in:
                i = o // 2
            else:
                i = math.floor(float(f32(o) * sc))
            m[o, min(i, n_in - 1)] = 1.0
        return m

    if mode == "area":
        for o in range(n_out):
            lo = (o * n_in) // n_out
            hi = -((-(o + 1) * n_in) // n_out)
            m[o, lo:hi] = 1.0 / (hi - lo)
        return m

    if antialias:
        if n_in == n_out:
            return np.eye(n_in)
        filt, half = _filter(mode)
        stretch = max(scale, 1.0)
        support = half * stretch
        for o in range(n_out):
            center = scale * (o + 0.5)
            xmin = max(int(center - support + 0.5), 0)
            xmax = min(int(center + support + 0.5), n_in)
            ws = [filt((j - center + 0.5) / stretch) for j in range(xmin, xmax)]
            total = sum(ws)
            for j, wv in zip(range(xmin, xmax), ws, strict=True):
                m[o, j] = wv / total if total != 0 else wv
        return m

    def src(o):
        return scale * o if align_corners else scale * (o + 0.5) - 0.5

    if mode == "linear":
        if n_in == n_out:
            return np.eye(n_in)
        for o in range(n_out):
            s = max(src(o), 0.0)
            i0 = min(math.floor(s), n_in - 1)
            lam = min(max(s - i0, 0.0), 1.0)
            i1 = i0 + 1 if i0 < n_in - 1 else i0
            m[o, i0] += 1 - lam
            m[o, i1] += lam
        return m

    if mode == "bicubic":  # A = -0.75, replicate border
        for o in range(n_out):
            s = src(o)
            i = min(math.floor(s), n_in - 1)
            t = min(max(s - i, 0.0), 1.0)
            for k in range(-1, 3):
                m[o, min(max(i + k, 0), n_in - 1)] += _keys(t - k, -0.75)
        return m

    # skip + renormalise: cubic (a = -0.5), lanczos3, lanczos5
    if mode == "cubic":

        def kern(x):
            return _keys(x, -0.5)

        lo_k, hi_k = -1, 2
    else:
        lobes = 3 if mode == "lanczos3" else 5

        def kern(x):
            return _sinc(x) * _sinc(x / lobes) if abs(x) < lobes else 0.0

        lo_k, hi_k = 1 - lobes, lobes
    for o in range(n_out):
        s = src(o)
        base = math.floor(s)
        taps = [(j, kern(s - j)) for j in range(base + lo_k, base + hi_k + 1) if 0 <= j < n_in]
        total = sum(wv for _, wv in taps)
        for j, wv in taps:
            m[o, j] = wv / total if total != 0 else wv
    return m


def reference_resize(x, matrices):
    """Apply per-axis dense matrices to the spatial axes of ``x`` in float64."""
    y = np.asarray(x, dtype=np.float64)
    for axis, m in enumerate(matrices):
        y = np.moveaxis(np.tensordot(m, np.moveaxis(y, 2 + axis, 0), axes=1), 0, 2 + axis)
    return y


def reference_adjoint(g, matrices):
    """Apply the transposed per-axis matrices (the adjoint) in float64."""
    return reference_resize(g, [m.T for m in matrices])
