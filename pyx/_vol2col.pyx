# Directives: none in this file; setup.py's compiler_directives() sets them for every
# kernel.  Bounds, initialisation and None checks are off in a release build and on
# with SANDBOX_DEBUG=1; negative indices never wrap and / and % always truncate as in
# C, in both builds.  So every index must be in range and non-negative.
"""vol2col / col2vol kernels for 3-D convolution as GEMM (kernel contract: pyx/fused.pxd).

The 3-D twin of ``pyx/_im2col.pyx`` (kept separate while the 2-D path is being
tuned; the two can be unified later).  A chunk is ``nb`` samples starting at
sample ``n0`` and, so that columns of large volumes stay small, a slab of ``nd``
output depth planes starting at ``od0``.  Column layout, with ``P = nd * ho * wo``
and ``t = od - od0``::

    col[((c * kd + kz) * kh + ki) * kw + kj, s * P + (t * ho + oh) * wo + ow]
        = x[n0 + s, c, od*sd - pd + kz*dd, oh*sh - ph + ki*dh, ow*sw - pw + kj*dw]
          (0 outside the input)

* ``vol2col`` runs one row ``(c, kz, ki, kj)`` per ``prange`` iteration: every
  row is written by exactly one thread.
* ``col2vol`` (the adjoint, a scatter-add) runs one ``(sample, channel)`` volume
  per iteration; the thread owning the volume adds every contribution in a fixed
  order, so results are bitwise identical for any thread count (no atomics).
  Slabs of one sample are folded one after the other (``zero_first`` on the
  first), so the sum order is fixed by the shapes too.
"""

from cython.parallel cimport prange
from libc.string cimport memset

from cols cimport _fold_row, _unfold_row, _valid_hi, _valid_lo
from fused cimport real


def vol2col(const real[:, :, :, :, ::1] x,   # IN  (N, C, D, H, W)
            real[:, ::1] col,                # OUT (C*kd*kh*kw, nb*nd*ho*wo)
            Py_ssize_t n0, Py_ssize_t nb, Py_ssize_t od0, Py_ssize_t nd,
            int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
            int dd, int dh, int dw,
            Py_ssize_t ho, Py_ssize_t wo, int num_threads):
    """Unfold output planes ``od0 .. od0+nd-1`` of samples ``n0 .. n0+nb-1`` of ``x``
    into ``col`` (layout in the module doc).

    Parameters
    ----------
    x : ndarray, shape (N, C, D, H, W), float32 or float64, C-contiguous
    col : ndarray, shape (C*kd*kh*kw, nb*nd*ho*wo), same dtype, C-contiguous; overwritten
    n0, nb : int
        First sample and number of samples of the chunk.
    od0, nd : int
        First output depth plane and number of planes of the slab.
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw : int
        Kernel size, stride, padding and dilation (depth, rows, columns).
    ho, wo : int
        Output rows and columns.
    num_threads : int
        Threads for the ``prange`` loop (>= 1).
    """
    cdef Py_ssize_t C = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4]
    cdef Py_ssize_t taps = kd * kh * kw, rows = C * taps, vol = nd * ho * wo
    cdef Py_ssize_t r, c, kz, ki, kj, s, od, oh, iz, ih, off, lo, hi
    cdef real* dst
    with nogil:
        for r in prange(rows, schedule="static", num_threads=num_threads):
            c = r // taps
            kz = (r // (kh * kw)) % kd
            ki = (r // kw) % kh
            kj = r % kw
            off = pw - kj * dw
            lo = _valid_lo(off, sw, wo)
            hi = _valid_hi(off, sw, W, wo)
            for s in range(nb):
                dst = &col[r, s * vol]
                for od in range(od0, od0 + nd):
                    iz = od * sd - pd + kz * dd
                    if iz < 0 or iz >= D or lo >= hi:
                        memset(dst, 0, ho * wo * sizeof(real))
                        dst = dst + ho * wo
                        continue
                    for oh in range(ho):
                        ih = oh * sh - ph + ki * dh
                        if ih < 0 or ih >= H:
                            memset(dst, 0, wo * sizeof(real))
                        else:
                            _unfold_row(&x[n0 + s, c, iz, ih, 0], dst, off, sw, lo, hi, wo)
                        dst = dst + wo


def col2vol(const real[:, ::1] col,           # IN  (C*kd*kh*kw, nb*nd*ho*wo)
            real[:, :, :, :, ::1] out,         # OUT (N, C, D, H, W); samples n0..n0+nb-1
            Py_ssize_t n0, Py_ssize_t nb, Py_ssize_t od0, Py_ssize_t nd,
            int kd, int kh, int kw, int sd, int sh, int sw, int pd, int ph, int pw,
            int dd, int dh, int dw,
            Py_ssize_t ho, Py_ssize_t wo, bint zero_first, int num_threads):
    """Adjoint of :func:`vol2col`: fold ``col`` back, summing overlapping taps.

    Parameters are those of :func:`vol2col`; samples ``n0 .. n0+nb-1`` of ``out``
    are zeroed first when ``zero_first``, else accumulated into (the later slabs
    of a sample).  Deterministic: each ``(sample, channel)`` volume is owned by one
    iteration and summed in a fixed order.
    """
    cdef Py_ssize_t C = out.shape[1], D = out.shape[2], H = out.shape[3], W = out.shape[4]
    cdef Py_ssize_t vol = nd * ho * wo
    cdef Py_ssize_t p, c, s, kz, ki, kj, od, oh, iz, ih, off, lo, hi, j
    cdef const real* src
    cdef real* dst
    with nogil:
        for p in prange(nb * C, schedule="static", num_threads=num_threads):
            s = p // C
            c = p % C
            dst = &out[n0 + s, c, 0, 0, 0]
            if zero_first:
                memset(dst, 0, D * H * W * sizeof(real))
            for kz in range(kd):
                for ki in range(kh):
                    for kj in range(kw):
                        off = pw - kj * dw
                        lo = _valid_lo(off, sw, wo)
                        hi = _valid_hi(off, sw, W, wo)
                        if lo >= hi:
                            continue
                        src = &col[((c * kd + kz) * kh + ki) * kw + kj, s * vol]
                        for od in range(od0, od0 + nd):
                            iz = od * sd - pd + kz * dd
                            if iz < 0 or iz >= D:
                                continue
                            for oh in range(ho):
                                ih = oh * sh - ph + ki * dh
                                if ih < 0 or ih >= H:
                                    continue
                                j = ((od - od0) * ho + oh) * wo
                                _fold_row(src + j, dst + (iz * H + ih) * W - off, sw, lo, hi)
